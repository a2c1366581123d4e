// The cloud token endpoints the fakes serve (fakeClouds.ts for the cloud identities, fakeSecretStores.ts for the
// secret stores), checking what the real issuers check:
// - oauth2.googleapis.com `POST /token`: a JWT-bearer assertion RS256-signed with the service account's key (checked
//   with its public key), `iss` the account, `aud` the token endpoint, a `scope`, at most an hour long;
// - login.microsoftonline.com `POST /<tenant>/oauth2/v2.0/token`: client credentials with the exact tenant, client
//   and secret and a scope the fake knows; and the authority metadata MSAL may ask for.
// A minted token is remembered with its scope in `live`, so the fake's resource servers accept only tokens it issued.
import { randomBytes, type KeyObject } from "node:crypto";
import { lifetimeOk, rs256Claims } from "./rs256Jwt.ts";

export const GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token";

/** What a fake decides around a mint: where tokens and refusals go, and how it answers. */
export interface MintRules {
  /** Tokens minted → the scope they carry. */
  live: Map<string, string>;
  /** Why a grant was refused (the tests read these). */
  refused(why: string): void;
  minted(token: string, scope: string): void;
  /** `expires_in` of the token, seconds. */
  seconds: number;
  /** Waited before answering (so concurrent callers overlap), ms. */
  delayMs?: number;
  /** Answer grants that pass with this status instead, when set (the issuer's outage). */
  failWith?: number | null;
  /** Added to a refusal's error_description (a canary the tests look for where it must not appear). */
  refusalSuffix?: string;
}

/** A service account's JWT-bearer assertion as Google checks it: RS256 with the account's key, iss, aud, scope, ≤ 1 h. */
export function verifyAssertion(jwt: string, key: KeyObject, email: string, aud = GOOGLE_TOKEN_URI): { scope: string } | string {
  const claims = rs256Claims(jwt, key);
  if (typeof claims === "string") return claims;
  if (claims.iss !== email) return `iss ${claims.iss}`;
  if (claims.aud !== aud) return `aud ${claims.aud}`;
  if (typeof claims.scope !== "string" || claims.scope === "") return "no scope";
  if (!lifetimeOk(claims, 3600)) return "iat/exp out of range";
  return { scope: claims.scope };
}

const suffixed = (description: string, rules: MintRules) => (rules.refusalSuffix ? `${description} ${rules.refusalSuffix}` : description);

/** Google's token endpoint for the service account `email` (public key `key`); `acceptsScope` narrows the scopes it grants. */
export async function googleToken(req: Request, account: { key: KeyObject; email: string; acceptsScope?: (scope: string) => boolean }, rules: MintRules): Promise<Response> {
  if (rules.delayMs) await Bun.sleep(rules.delayMs);
  const form = new URLSearchParams(await req.text());
  if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") {
    rules.refused(`grant ${form.get("grant_type")}`);
    return Response.json({ error: "unsupported_grant_type", error_description: suffixed(`Invalid grant_type: ${form.get("grant_type")}`, rules) }, { status: 400 });
  }
  const checked = verifyAssertion(form.get("assertion") ?? "", account.key, account.email);
  if (typeof checked === "string" || (account.acceptsScope && !account.acceptsScope(checked.scope))) {
    rules.refused(typeof checked === "string" ? checked : `scope ${checked.scope}`);
    return Response.json({ error: "invalid_grant", error_description: suffixed("Invalid JWT Signature.", rules) }, { status: 400 });
  }
  if (rules.failWith) return Response.json({ error: "internal_failure" }, { status: rules.failWith });
  const token = `ya29.${randomBytes(24).toString("base64url")}`;
  rules.live.set(token, checked.scope);
  rules.minted(token, checked.scope);
  return Response.json({ access_token: token, expires_in: rules.seconds, token_type: "Bearer" });
}

/** Azure AD's token endpoint of `tenantId` (from the path) for the one app `account`, granting the `scopes` it knows. */
export async function azureToken(req: Request, tenantId: string, account: { tenantId: string; clientId: string; clientSecret: string; scopes: Set<string> }, rules: MintRules): Promise<Response> {
  if (rules.delayMs) await Bun.sleep(rules.delayMs);
  const form = new URLSearchParams(await req.text());
  const why =
    tenantId !== account.tenantId
      ? `tenant ${tenantId}`
      : form.get("grant_type") !== "client_credentials"
        ? `grant ${form.get("grant_type")}`
        : form.get("client_id") !== account.clientId
          ? `client ${form.get("client_id")}`
          : form.get("client_secret") !== account.clientSecret
            ? "bad client secret"
            : !account.scopes.has(form.get("scope") ?? "")
              ? `scope ${form.get("scope")}`
              : null;
  if (why) {
    rules.refused(why);
    return Response.json({ error: "invalid_client", error_description: suffixed("AADSTS7000215: Invalid client secret provided.", rules) }, { status: 401 });
  }
  if (rules.failWith) return Response.json({ error: "temporarily_unavailable" }, { status: rules.failWith });
  const token = `eyJ0eXAiOiJKV1QifQ.${randomBytes(24).toString("base64url")}.${randomBytes(16).toString("base64url")}`;
  const scope = form.get("scope")!;
  rules.live.set(token, scope);
  rules.minted(token, scope);
  return Response.json({ token_type: "Bearer", expires_in: rules.seconds, ext_expires_in: rules.seconds, access_token: token });
}

/** The Azure AD authority metadata MSAL asks for (OpenID configuration, instance discovery) for `tenantId`. */
export function azureAuthorityMetadata(url: URL, tenantId: string): Response {
  const tenant = url.pathname.split("/")[1]!;
  if (url.pathname.endsWith("/.well-known/openid-configuration")) {
    const base = `https://login.microsoftonline.com/${tenant}`;
    return Response.json({
      token_endpoint: `${base}/oauth2/v2.0/token`,
      authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
      end_session_endpoint: `${base}/oauth2/v2.0/logout`,
      issuer: `https://login.microsoftonline.com/${tenant}/v2.0`,
      jwks_uri: `${base}/discovery/v2.0/keys`,
      response_types_supported: ["code", "id_token", "code id_token", "id_token token"],
    });
  }
  if (url.pathname.endsWith("/discovery/instance")) {
    return Response.json({
      tenant_discovery_endpoint: `https://login.microsoftonline.com/${tenantId}/v2.0/.well-known/openid-configuration`,
      "api-version": "1.1",
      metadata: [{ preferred_network: "login.microsoftonline.com", preferred_cache: "login.windows.net", aliases: ["login.microsoftonline.com", "login.windows.net", "login.microsoft.com", "sts.windows.net"] }],
    });
  }
  return Response.json({ error: "not_found" }, { status: 404 });
}
