// The OAuth login credgate runs for an MCP server (docs/mcp.md#the-login): discovery (discovery.ts), a client —
// the one given at registration, or one credgate registers itself (RFC 7591) and keeps, sealed — then the
// authorization-code flow with PKCE S256 and the RFC 8707 `resource` in the authorization and token requests. The
// signed `state` carries the flow (no server-side session); the PKCE verifier is derived from its nonce.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { ApiError } from "../../core/errors.ts";
import { randomHex } from "../../core/ids.ts";
import { log } from "../../observability/log.ts";
import type { ServiceDeps } from "../deps.ts";
import { MCP_SERVER_NOT_FOUND, type McpServerRow, type McpServerService } from "../mcpServers.ts";
import type { ClientAuthMethod, McpCredential, McpOAuthClient, McpOAuthEndpoints } from "./credential.ts";
import { discover, type AuthorizationServer } from "./discovery.ts";
import { boundedJson, boundedText, OutboundRefused, type McpFetch } from "./egressFetch.ts";

export const MCP_STATE_COOKIE = "credgate_oauth_state";
export const MCP_CALLBACK_PATH = "/v1/mcp-servers/callback";
const STATE_TTL_MS = 10 * 60 * 1000;
const MAX_TOKEN_BYTES = 64 * 1024;

interface FlowState {
  /** The server's id and project. */
  s: string;
  p: string;
  /** The client the flow was started with (a later authorize may have registered another). */
  c: string;
  n: string;
  exp: number;
}

/** The token endpoint refused, with its OAuth `error` code when it gave one. */
export class TokenRefused extends Error {
  constructor(
    message: string,
    readonly code: string | null,
  ) {
    super(message);
  }
}

export class McpLogin {
  readonly #stateKey: Buffer;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly servers: McpServerService,
  ) {
    this.#stateKey = deps.sealer.deriveKey("mcp-oauth-state");
  }

  private get publicUrl(): string {
    return this.deps.config.publicUrl.replace(/\/+$/, "");
  }

  get redirectUri(): string {
    return `${this.publicUrl}${MCP_CALLBACK_PATH}`;
  }

  #sign(payload: string): string {
    return createHmac("sha256", this.#stateKey).update(payload).digest("base64url");
  }

  #encode(state: FlowState): string {
    const payload = Buffer.from(JSON.stringify(state)).toString("base64url");
    return `${payload}.${this.#sign(payload)}`;
  }

  #decode(raw: string): FlowState | null {
    const dot = raw.indexOf(".");
    if (dot <= 0) return null;
    const payload = raw.slice(0, dot);
    const given = Buffer.from(raw.slice(dot + 1));
    const expected = Buffer.from(this.#sign(payload));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    try {
      const state = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as FlowState;
      return typeof state.exp === "number" && state.exp > Date.now() && typeof state.s === "string" ? state : null;
    } catch {
      return null;
    }
  }

  #verifier(nonce: string): string {
    return createHmac("sha256", this.#stateKey).update(`pkce:${nonce}`).digest("base64url");
  }

  /**
   * `GET /mcp-servers/{id}/authorize`: discovers where to log in, makes sure credgate has a client there, and
   * answers the consent URL with the state cookie. A discovery or registration failure is a 400 saying why.
   */
  async authorize(row: McpServerRow): Promise<{ location: string; cookie: string }> {
    if (row.authKind !== "oauth") throw ApiError.envelope(400, "This MCP server uses a static credential; there is nothing to log in to");
    let client: McpOAuthClient & { endpoints: McpOAuthEndpoints };
    try {
      client = await this.#client(row);
    } catch (err) {
      const message = (err as Error).message;
      await this.servers.setStatus(row.id, row.status, row.refreshFailures, `The login could not start: ${message}`).catch(() => {});
      throw ApiError.envelope(400, `The login could not start: ${message}`);
    }
    const nonce = randomHex(16);
    const url = new URL(client.endpoints.authorizationEndpoint);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("client_id", client.clientId);
    url.searchParams.set("redirect_uri", this.redirectUri);
    url.searchParams.set("state", this.#encode({ s: row.id, p: row.projectId, c: client.clientId, n: nonce, exp: Date.now() + STATE_TTL_MS }));
    url.searchParams.set("code_challenge", createHash("sha256").update(this.#verifier(nonce)).digest("base64url"));
    url.searchParams.set("code_challenge_method", "S256");
    url.searchParams.set("resource", client.endpoints.resource);
    if (client.endpoints.scope) url.searchParams.set("scope", client.endpoints.scope);
    const secure = this.publicUrl.startsWith("https:") ? "; Secure" : "";
    const cookie = `${MCP_STATE_COOKIE}=${nonce}; HttpOnly; SameSite=Lax; Path=${MCP_CALLBACK_PATH}; Max-Age=${STATE_TTL_MS / 1000}${secure}`;
    return { location: url.toString(), cookie };
  }

  /** The client to log in with: discovered afresh each time (metadata may move), registered once per issuer and redirect URI. */
  async #client(row: McpServerRow): Promise<McpOAuthClient & { endpoints: McpOAuthEndpoints }> {
    const found = await discover(this.servers.fetch, row.url, this.deps.config.mode);
    const endpoints: McpOAuthEndpoints = {
      issuer: found.server.issuer,
      authorizationEndpoint: found.server.authorizationEndpoint,
      tokenEndpoint: found.server.tokenEndpoint,
      resource: found.resource,
      scope: found.scope,
      redirectUri: this.redirectUri,
    };
    const kept = this.servers.oauthClient(row);
    const fromEnv = this.#configuredFor(found.server.issuer);
    let client: McpOAuthClient;
    if (kept?.configured) client = { ...kept, authMethod: kept.clientSecret ? secretMethod(found.server) : "none" };
    else if (fromEnv) client = { ...fromEnv, authMethod: fromEnv.clientSecret ? secretMethod(found.server) : "none", configured: true, endpoints: null };
    else if (kept && kept.endpoints?.issuer === endpoints.issuer && kept.endpoints.redirectUri === endpoints.redirectUri) client = kept;
    else client = await this.#register(found.server, endpoints);
    const next = { ...client, endpoints };
    await this.servers.saveClient(row.id, next);
    return next;
  }

  /**
   * The operator's client for an authorization server: `CREDGATE_OAUTH_MCP_<HOST>_CLIENT_ID` (and `_CLIENT_SECRET`),
   * the issuer's host with every character other than a letter or digit written `_` (docs/mcp.md#the-login).
   */
  #configuredFor(issuer: string): { clientId: string; clientSecret: string | null } | null {
    const host = new URL(issuer).hostname.toLowerCase().replace(/[^a-z0-9]/g, "-");
    const found = this.deps.config.oauthClients.get(`mcp-${host}`);
    return found ? { clientId: found.clientId, clientSecret: found.clientSecret || null } : null;
  }

  /** RFC 7591 dynamic client registration, as a confidential client when the server takes client secrets. */
  async #register(server: AuthorizationServer, endpoints: McpOAuthEndpoints): Promise<McpOAuthClient> {
    if (!server.registrationEndpoint)
      throw new OutboundRefused(`${server.issuer} does not offer dynamic client registration; register the server with auth: {clientId, clientSecret}`);
    const method: ClientAuthMethod = server.tokenAuthMethods && !server.tokenAuthMethods.some((m) => m.startsWith("client_secret_")) ? "none" : secretMethod(server);
    const res = await this.servers.fetch(new URL(server.registrationEndpoint), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", "user-agent": "credgate" },
      body: JSON.stringify({
        client_name: "credgate",
        redirect_uris: [endpoints.redirectUri],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: method,
        ...(endpoints.scope ? { scope: endpoints.scope } : {}),
      }),
    });
    if (res.status !== 201 && res.status !== 200) {
      const text = (await boundedText(res, MAX_TOKEN_BYTES).catch(() => "")).slice(0, 300);
      throw new OutboundRefused(`the client registration was refused (HTTP ${res.status}${text ? `: ${text}` : ""})`);
    }
    const answer = await boundedJson(res, MAX_TOKEN_BYTES, "The registration answer");
    if (typeof answer.client_id !== "string" || !answer.client_id) throw new OutboundRefused("the registration answer has no client_id");
    const secret = typeof answer.client_secret === "string" && answer.client_secret ? answer.client_secret : null;
    const given = answer.token_endpoint_auth_method;
    const authMethod: ClientAuthMethod = !secret ? "none" : given === "client_secret_basic" || given === "client_secret_post" ? given : method === "none" ? "client_secret_post" : method;
    log.info("mcp oauth client registered", { issuer: server.issuer, authMethod });
    return { clientId: answer.client_id, clientSecret: secret, authMethod, configured: false, endpoints: null };
  }

  /** Completes a flow; always answers with the dashboard URL to redirect to (success or error). */
  async callback(query: URLSearchParams, cookieNonce: string | null): Promise<string> {
    const raw = query.get("state");
    const state = raw ? this.#decode(raw) : null;
    const page = (id: string | null, params: Record<string, string>) => `${this.publicUrl}/mcp-servers${id ? `/${encodeURIComponent(id)}` : ""}?${new URLSearchParams(params)}`;
    if (!raw) return page(null, { status: "error", message: "Missing state parameter" });
    if (!state || cookieNonce !== state.n) return page(null, { status: "error", message: "Invalid state parameter" });
    const fail = (message: string) => page(state.s, { status: "error", message });
    const row = await this.servers.byId(state.s);
    if (!row || row.projectId !== state.p) return fail(MCP_SERVER_NOT_FOUND);
    if (query.get("error")) {
      const described = query.get("error_description");
      await this.servers.setStatus(row.id, row.status, row.refreshFailures, "Authorization was denied").catch(() => {});
      return fail(described ? `Authorization was denied: ${described.slice(0, 200)}` : "Authorization was denied");
    }
    const code = query.get("code");
    if (!code) return fail("Missing authorization code");
    const client = this.servers.oauthClient(row);
    if (!client?.endpoints) return fail("The login was not started for this server");
    if (client.clientId !== state.c) return fail("A newer login was started for this server: finish that one, or connect again");
    let credential: McpCredential;
    try {
      credential = await tokenRequest(this.servers.fetch, client, { grant_type: "authorization_code", code, redirect_uri: client.endpoints.redirectUri, code_verifier: this.#verifier(state.n) }, null);
    } catch (err) {
      const message = `Token exchange failed: ${(err as Error).message}`;
      await this.servers.setStatus(row.id, row.status === "pending" ? "pending" : "error", row.refreshFailures, message).catch(() => {});
      return fail(message);
    }
    const connected = await this.servers.connect(row, credential);
    log.info("mcp server connected", { mcpServerId: row.id });
    await this.servers.discoverTools(connected, credential);
    return page(row.id, { status: "success" });
  }
}

/** The client-secret method the server prefers among those credgate speaks (client_secret_post when it does not say). */
function secretMethod(server: AuthorizationServer): ClientAuthMethod {
  if (!server.tokenAuthMethods || server.tokenAuthMethods.includes("client_secret_post")) return "client_secret_post";
  return server.tokenAuthMethods.includes("client_secret_basic") ? "client_secret_basic" : "client_secret_post";
}

/** A token request (code exchange or refresh) with the client's authentication and the resource; the answer as a credential. */
export async function tokenRequest(fetch: McpFetch, client: McpOAuthClient, params: Record<string, string>, previousRefresh: string | null): Promise<McpCredential> {
  const endpoints = client.endpoints!;
  const body = new URLSearchParams({ ...params, resource: endpoints.resource });
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json", "user-agent": "credgate" };
  if (client.authMethod === "client_secret_basic" && client.clientSecret) {
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString("base64")}`;
  } else {
    body.set("client_id", client.clientId);
    if (client.authMethod === "client_secret_post" && client.clientSecret) body.set("client_secret", client.clientSecret);
  }
  let res: Response;
  try {
    res = await fetch(new URL(endpoints.tokenEndpoint), { method: "POST", headers, body });
  } catch (err) {
    throw new TokenRefused((err as Error).message, null);
  }
  let answer: Record<string, unknown>;
  try {
    answer = await boundedJson(res, MAX_TOKEN_BYTES, "The token answer");
  } catch (err) {
    throw new TokenRefused(res.ok ? (err as Error).message : `the token endpoint answered ${res.status}`, null);
  }
  const code = typeof answer.error === "string" ? answer.error : null;
  if (!res.ok || code) {
    const description = typeof answer.error_description === "string" ? answer.error_description.slice(0, 300) : null;
    throw new TokenRefused(description ?? code ?? `the token endpoint answered ${res.status}`, code);
  }
  if (typeof answer.access_token !== "string" || !answer.access_token) throw new TokenRefused("the token answer has no access_token", null);
  const expiresIn = Number(answer.expires_in);
  return {
    kind: "oauth",
    accessToken: answer.access_token,
    refreshToken: typeof answer.refresh_token === "string" && answer.refresh_token ? answer.refresh_token : previousRefresh,
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? Date.now() + expiresIn * 1000 : null,
  };
}
