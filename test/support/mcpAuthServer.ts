// An MCP server that requires OAuth tokens, and the authorization server that issues them, for the login tests:
// the authorization server is the official SDK's own (`mcpAuthRouter` from @modelcontextprotocol/sdk/server/auth,
// on express) with a provider written here that keeps what it was asked — registered clients, the `resource` and
// PKCE challenge of each authorization, token and refresh requests — and refuses what a real one refuses: an
// unregistered client or redirect URI, a wrong PKCE verifier (the SDK checks it), a `resource` other than the MCP
// server's, a refresh token it did not issue. Refresh tokens rotate with reuse detection, as Auth0 and Okta do: a
// spent refresh token presented again revokes its whole grant (every access and refresh token issued from the same
// authorization code) and is refused (`revokedGrants`). The consent page has Approve and Deny buttons. The MCP server
// (test/support/mcpUpstream.ts) accepts only live access tokens issued for its URL, names its protected-resource
// metadata in its 401, and serves that metadata.
import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type Response } from "express";
import { mcpAuthRouter } from "@modelcontextprotocol/sdk/server/auth/router.js";
import type { AuthorizationParams, OAuthServerProvider } from "@modelcontextprotocol/sdk/server/auth/provider.js";
import type { OAuthRegisteredClientsStore } from "@modelcontextprotocol/sdk/server/auth/clients.js";
import { InvalidGrantError, InvalidRequestError, InvalidTargetError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import type { OAuthClientInformationFull, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { startMcpUpstream, type McpUpstream, type McpUpstreamTool } from "./mcpUpstream.ts";

interface Issued {
  clientId: string;
  resource: string | undefined;
  expiresAt: number;
  /** The authorization code's grant the token belongs to. */
  grant: string;
}

export interface McpAuthServerOptions {
  transport?: "streamable" | "sse";
  tools?: McpUpstreamTool[];
  /** Lifetime of access tokens, in seconds (under 60: due for refresh as soon as issued). Default 3600. */
  expiresIn?: number;
  /** Lifetime of the tokens a refresh issues, when it differs. */
  refreshedExpiresIn?: number;
  /** Whether the protected-resource metadata is named in the 401 (else found at the well-known URL). Default true. */
  challengeNamesMetadata?: boolean;
  /** What the protected-resource metadata says its resource is (default: the MCP server's URL). */
  metadataResource?: (mcpUrl: string) => string;
}

export interface McpAuthServer {
  mcp: McpUpstream;
  issuer: string;
  registrations: OAuthClientInformationFull[];
  /** Each authorization request as the provider saw it. */
  authorizations: { clientId: string; resource: string | undefined; scopes: string[]; codeChallenge: string; redirectUri: string }[];
  tokenRequests: { grant: "authorization_code" | "refresh_token"; clientId: string; resource: string | undefined }[];
  /** Access tokens issued, in order. */
  accessTokens: string[];
  /** Refresh tokens the server no longer accepts (tests revoke them). */
  revokeRefreshTokens(): void;
  /**
   * Successful refresh answers wait this long after the old refresh token is spent: a second refresh sent
   * meanwhile reaches the server with the spent token. Default 0.
   */
  delayRefreshAnswers(ms: number): void;
  /** Grants revoked because a spent refresh token was presented again, oldest first. */
  revokedGrants: { grant: string; reusedRefreshToken: string }[];
  /** Whether an access token is still good (issued, unexpired, its grant not revoked). */
  accessTokenLive(token: string): boolean;
  close(): Promise<void>;
}

export async function startMcpAuthServer(opts: McpAuthServerOptions = {}): Promise<McpAuthServer> {
  const registrations: OAuthClientInformationFull[] = [];
  const authorizations: McpAuthServer["authorizations"] = [];
  const tokenRequests: McpAuthServer["tokenRequests"] = [];
  const accessTokens: string[] = [];
  const clients = new Map<string, OAuthClientInformationFull>();
  const pending = new Map<string, { client: OAuthClientInformationFull; params: AuthorizationParams }>();
  const codes = new Map<string, { client: OAuthClientInformationFull; params: AuthorizationParams }>();
  const tokens = new Map<string, Issued>();
  const refreshTokens = new Map<string, { clientId: string; resource: string | undefined; grant: string }>();
  /** Spent refresh tokens and their grant. */
  const spent = new Map<string, string>();
  const revokedGrants: McpAuthServer["revokedGrants"] = [];
  let mcpUrl = "";
  let refreshAnswerDelayMs = 0;

  const clientsStore: OAuthRegisteredClientsStore = {
    getClient: async (id) => clients.get(id),
    registerClient: async (client) => {
      const full = client as OAuthClientInformationFull;
      clients.set(full.client_id, full);
      registrations.push(full);
      return full;
    },
  };

  const issue = (clientId: string, resource: string | undefined, grant: string, refreshed = false): OAuthTokens => {
    const token = `at-${randomUUID()}`;
    const refresh = `rt-${randomUUID()}`;
    const expiresIn = (refreshed ? opts.refreshedExpiresIn : undefined) ?? opts.expiresIn ?? 3600;
    tokens.set(token, { clientId, resource, expiresAt: Date.now() + expiresIn * 1000, grant });
    refreshTokens.set(refresh, { clientId, resource, grant });
    accessTokens.push(token);
    return { access_token: token, token_type: "bearer", expires_in: expiresIn, refresh_token: refresh };
  };

  const checkResource = (resource: URL | undefined) => {
    if (resource?.href !== new URL(mcpUrl).href) throw new InvalidTargetError(`resource must be ${mcpUrl}, got ${resource?.href ?? "none"}`);
  };

  const provider: OAuthServerProvider = {
    get clientsStore() {
      return clientsStore;
    },
    async authorize(client, params, res: Response) {
      if (!client.redirect_uris.includes(params.redirectUri)) throw new InvalidRequestError("Unregistered redirect_uri");
      authorizations.push({ clientId: client.client_id, resource: params.resource?.href, scopes: params.scopes ?? [], codeChallenge: params.codeChallenge, redirectUri: params.redirectUri });
      const id = randomUUID();
      pending.set(id, { client, params });
      res
        .status(200)
        .type("html")
        .send(
          `<!doctype html><title>Test authorization server</title><h1>Allow credgate to use the MCP server?</h1>` +
            `<form method="post" action="/consent"><input type="hidden" name="id" value="${id}">` +
            `<button name="decision" value="approve">Approve</button> <button name="decision" value="deny">Deny</button></form>`,
        );
    },
    async challengeForAuthorizationCode(_client, code) {
      const data = codes.get(code);
      if (!data) throw new InvalidGrantError("Invalid authorization code");
      return data.params.codeChallenge;
    },
    async exchangeAuthorizationCode(client, code, _verifier, redirectUri, resource) {
      const data = codes.get(code);
      tokenRequests.push({ grant: "authorization_code", clientId: client.client_id, resource: resource?.href });
      if (!data || data.client.client_id !== client.client_id) throw new InvalidGrantError("Invalid authorization code");
      if (redirectUri !== data.params.redirectUri) throw new InvalidGrantError("redirect_uri does not match");
      checkResource(resource);
      checkResource(data.params.resource);
      codes.delete(code);
      return issue(client.client_id, resource?.href, `grant-${randomUUID()}`);
    },
    async exchangeRefreshToken(client, refreshToken, _scopes, resource) {
      tokenRequests.push({ grant: "refresh_token", clientId: client.client_id, resource: resource?.href });
      const data = refreshTokens.get(refreshToken);
      const reusedGrant = spent.get(refreshToken);
      if (!data && reusedGrant !== undefined) {
        // Reuse detection: the grant is revoked, whoever holds its newer tokens.
        for (const [k, t] of tokens) if (t.grant === reusedGrant) tokens.delete(k);
        for (const [k, r] of refreshTokens) if (r.grant === reusedGrant) refreshTokens.delete(k);
        revokedGrants.push({ grant: reusedGrant, reusedRefreshToken: refreshToken });
      }
      if (!data || data.clientId !== client.client_id) throw new InvalidGrantError("Invalid refresh token");
      checkResource(resource);
      // Refresh tokens rotate: the old one is spent.
      refreshTokens.delete(refreshToken);
      spent.set(refreshToken, data.grant);
      const answer = issue(client.client_id, data.resource, data.grant, true);
      if (refreshAnswerDelayMs > 0) await new Promise((r) => setTimeout(r, refreshAnswerDelayMs));
      return answer;
    },
    async verifyAccessToken(token): Promise<AuthInfo> {
      const data = tokens.get(token);
      if (!data || data.expiresAt < Date.now()) throw new InvalidGrantError("Invalid or expired token");
      return { token, clientId: data.clientId, scopes: [], expiresAt: Math.floor(data.expiresAt / 1000), ...(data.resource ? { resource: new URL(data.resource) } : {}) };
    },
  };

  const app = express();
  const http: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}/`;
  app.use(express.urlencoded({ extended: false }));
  app.post("/consent", (req, res) => {
    const form = req.body ?? {};
    const entry = pending.get(String(form.id));
    if (!entry) return void res.status(400).send("unknown request");
    pending.delete(String(form.id));
    const target = new URL(entry.params.redirectUri);
    if (form.decision === "approve") {
      const code = `code-${randomUUID()}`;
      codes.set(code, entry);
      target.searchParams.set("code", code);
    } else target.searchParams.set("error", "access_denied");
    if (entry.params.state !== undefined) target.searchParams.set("state", entry.params.state);
    res.redirect(302, target.href);
  });
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(issuer),
      scopesSupported: ["mcp:tools"],
      authorizationOptions: { rateLimit: false },
      tokenOptions: { rateLimit: false },
      clientRegistrationOptions: { rateLimit: false },
    }),
  );

  const mcp = await startMcpUpstream({
    transport: opts.transport ?? "streamable",
    tools: opts.tools,
    acceptsToken: async (token) => {
      const data = tokens.get(token);
      return !!data && data.expiresAt > Date.now() && data.resource === new URL(mcpUrl).href;
    },
    ...(opts.challengeNamesMetadata === false ? {} : { resourceMetadataUrl: () => `${new URL(mcpUrl).origin}/.well-known/oauth-protected-resource${new URL(mcpUrl).pathname}` }),
    routes: (req, res) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (req.method !== "GET" || path !== `/.well-known/oauth-protected-resource${new URL(mcpUrl).pathname}`) return false;
      const body = { resource: opts.metadataResource?.(mcpUrl) ?? mcpUrl, authorization_servers: [issuer], scopes_supported: ["mcp:tools"] };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      return true;
    },
  });
  mcpUrl = mcp.url;

  return {
    mcp,
    issuer,
    registrations,
    authorizations,
    tokenRequests,
    accessTokens,
    revokeRefreshTokens: () => refreshTokens.clear(),
    revokedGrants,
    delayRefreshAnswers: (ms) => {
      refreshAnswerDelayMs = ms;
    },
    accessTokenLive: (token) => (tokens.get(token)?.expiresAt ?? 0) > Date.now(),
    close: async () => {
      await mcp.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
