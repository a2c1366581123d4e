// An RS256 JWT checked as the issuers the fakes stand in for check one (fakeTokenEndpoints.ts: a Google service
// account's assertion; fakeGithub.ts: a GitHub App's JWT; fakeSecretStores.ts: a self-signed service-account JWT):
// its signature with the signer's public key first, then the claims each issuer asks for.
import { verify, type KeyObject } from "node:crypto";

/** The claims of `jwt` when it is an RS256 JWT signed by `key`; else why not. Throws on a part that is no JSON. */
export function rs256Claims(jwt: string, key: KeyObject): Record<string, any> | string {
  const parts = jwt.split(".");
  if (parts.length !== 3) return "not a JWT";
  const header = JSON.parse(Buffer.from(parts[0]!, "base64url").toString());
  if (header.alg !== "RS256") return `alg ${header.alg}`;
  if (!verify("RSA-SHA256", Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2]!, "base64url"))) return "bad signature";
  return JSON.parse(Buffer.from(parts[1]!, "base64url").toString());
}

/** Issued now or before (5 s of clock skew), not expired, and living at most `maxSeconds`. */
export function lifetimeOk(claims: Record<string, any>, maxSeconds: number): boolean {
  const now = Math.floor(Date.now() / 1000);
  return claims.iat <= now + 5 && claims.exp > now && claims.exp - claims.iat <= maxSeconds;
}
