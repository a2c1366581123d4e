// A Google service account's signed JWT for the JWT-bearer grant (docs/cloud-identities.md#minting): RS256 with
// the account's key, `iss` = client_email, `scope`, `aud` = token_uri, for one hour. Used for the gateway's
// minted tokens and for credgate's own identity at Google Secret Manager (docs/secret-stores.md#google-secret-manager).
import { createPrivateKey, sign } from "node:crypto";
import type { GcpKey } from "../core/cloudIdentity.ts";

/** What Google allows for a JWT-bearer assertion. */
const ASSERTION_SECONDS = 3600;

const b64url = (s: string | Buffer) => Buffer.from(s).toString("base64url");

/** The service account's assertion for `scopes` (space-separated). */
export function gcpAssertion(key: GcpKey, scopes: string, nowMs = Date.now()): string {
  const now = Math.floor(nowMs / 1000);
  const head = b64url(JSON.stringify({ alg: "RS256", typ: "JWT", ...(key.privateKeyId ? { kid: key.privateKeyId } : {}) }));
  const body = b64url(JSON.stringify({ iss: key.clientEmail, scope: scopes, aud: key.tokenUri, iat: now, exp: now + ASSERTION_SECONDS }));
  const signature = sign("RSA-SHA256", Buffer.from(`${head}.${body}`), createPrivateKey(key.privateKey));
  return `${head}.${body}.${b64url(signature)}`;
}
