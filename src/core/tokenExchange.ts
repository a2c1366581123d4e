// The OAuth token requests credgate makes for cloud identities (docs/cloud-identities.md#minting) and for its own
// identity at a secret store (docs/secret-stores.md): Google's JWT-bearer grant at a service account's token_uri,
// Azure AD's client-credentials grant at a tenant's v2.0 endpoint, and how their answers are read. Pure: the
// caller sends the request through its own egress path.

export const AZURE_LOGIN = "https://login.microsoftonline.com";

/** A form POST to an OAuth token endpoint. */
export interface TokenRequest {
  url: URL;
  form: URLSearchParams;
}

export const TOKEN_REQUEST_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/x-www-form-urlencoded",
  accept: "application/json",
  "user-agent": "credgate",
};

/** Google: the service account's signed assertion (crypto/gcpAssertion.ts) exchanged at its token_uri. */
export function gcpTokenRequest(tokenUri: string, assertion: string): TokenRequest {
  return { url: new URL(tokenUri), form: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }) };
}

/** Azure AD: an app's client secret for a `<resource>/.default` scope at its tenant's endpoint. */
export function azureTokenRequest(tenantId: string, clientId: string, clientSecret: string, scope: string): TokenRequest {
  return {
    url: new URL(`${AZURE_LOGIN}/${encodeURIComponent(tenantId)}/oauth2/v2.0/token`),
    form: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret, scope }),
  };
}

export type TokenAnswer = { ok: true; token: string; expiresInSeconds: number } | { ok: false; reason: string };

/**
 * The token in an issuer's answer, or why there is none: the status and the issuer's `error` code only — an
 * `error_description` may quote what was sent. `issuer` names it in the reason ("Google", "Azure AD").
 */
export function readTokenAnswer(issuer: string, status: number, body: unknown): TokenAnswer {
  const b = (typeof body === "object" && body !== null ? body : {}) as { access_token?: unknown; expires_in?: unknown; error?: unknown };
  const expiresIn = Number(b.expires_in);
  if (status === 200 && typeof b.access_token === "string" && b.access_token !== "" && expiresIn > 0) return { ok: true, token: b.access_token, expiresInSeconds: expiresIn };
  const code = typeof b.error === "string" && /^[\x21-\x7e]{1,100}$/.test(b.error) ? `: ${b.error}` : "";
  return { ok: false, reason: `${issuer} answered ${status}${code}` };
}
