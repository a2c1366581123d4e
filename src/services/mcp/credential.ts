// What credgate authenticates to an MCP server with (docs/mcp.md#registering), sealed at rest: a static bearer
// token, a static header, or the OAuth tokens of the login; and the OAuth client the login uses.
import type { AuthHeader } from "./toolList.ts";

export type McpCredential =
  | { kind: "bearer"; token: string }
  | { kind: "header"; name: string; value: string }
  | { kind: "oauth"; accessToken: string; refreshToken: string | null; /** epoch ms */ expiresAt: number | null };

/** How the client proves itself at the token endpoint (RFC 7591 `token_endpoint_auth_method`). */
export type ClientAuthMethod = "client_secret_post" | "client_secret_basic" | "none";

/** The OAuth client credgate logs in as, with the endpoints it was found for (discovered at the first authorize). */
export interface McpOAuthClient {
  clientId: string;
  clientSecret: string | null;
  authMethod: ClientAuthMethod;
  /** Given at registration (`auth: {clientId}`) rather than registered by credgate. */
  configured: boolean;
  /** Set once discovery ran. */
  endpoints: McpOAuthEndpoints | null;
}

export interface McpOAuthEndpoints {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  /** The RFC 8707 resource indicator: the server's canonical URL, or the one its protected-resource metadata names. */
  resource: string;
  /** Space-separated scopes to ask for, or null. */
  scope: string | null;
  /** The redirect URI the client was registered with (a changed public URL registers again). */
  redirectUri: string;
}

/** The header the gateway and credgate's own listing send, or null while there is no usable credential. */
export function authHeaderOf(credential: McpCredential | null): AuthHeader | null {
  if (!credential) return null;
  if (credential.kind === "header") return { header: credential.name, value: credential.value };
  return { header: "authorization", value: `Bearer ${credential.kind === "bearer" ? credential.token : credential.accessToken}` };
}
