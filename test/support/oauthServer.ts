// A real OAuth 2.0 authorization server standing in for GitHub in tests: @node-oauth/oauth2-server (the
// authorize and token handlers, PKCE, refresh-token rotation, bearer authentication) behind node:https with
// a throwaway CA and a leaf for github.com and api.github.com (makePki, openssl), and an in-memory model
// written for the library's model interface. It speaks GitHub's wire format:
//
//   GET  /login/oauth/authorize   code + PKCE (S256); auto-approves as a fixed test user, or denies
//   POST /login/oauth/access_token authorization_code and refresh_token grants; client credentials in the
//                                  form body or HTTP Basic; JSON when the client asks for it (Accept:
//                                  application/json), form-encoded otherwise, like GitHub
//   GET  /user                     `{"login","id"}` for a valid bearer (`Bearer` or GitHub's `token` scheme)
//
// Every other request is answered with a JSON echo `{method, path, url, host, headers}` and recorded, so the
// same server can be the api.github.com / github.com upstream of gateway tests (credgate reaches it with
// CREDGATE_CONNECT_TO or CREDGATE_RESOLVE, trusting `caFile` through CREDGATE_UPSTREAM_CA_FILE).
//
// Deliberate difference from github.com: token-endpoint errors are the library's RFC 6749 answers (400
// `invalid_grant` for a revoked or unknown refresh token); GitHub answers 200 with `bad_refresh_token`.
//
// Refresh tokens rotate with reuse detection, as Auth0 and Okta do (and OAuth 2.1 advises): every token belongs to
// the grant its authorization code started, a refresh spends the refresh token it was given, and a spent refresh
// token presented again revokes the whole grant — every access and refresh token of it — and is refused
// (`revokedGrants` records it).
import OAuth2Server from "@node-oauth/oauth2-server";
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import * as https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { makePki } from "./upstream.ts";
import type { IssuedToken, OAuthClientConfig, OAuthSeenRequest, OAuthServerOptions, OAuthTestServer, OAuthTestUser } from "./oauthServerTypes.ts";

export type { IssuedToken, OAuthClientConfig, OAuthSeenRequest, OAuthServerOptions, OAuthTestServer, OAuthTestUser } from "./oauthServerTypes.ts";

const { Request: OAuthRequest, Response: OAuthResponse, OAuthError } = OAuth2Server;

interface StoredClient {
  id: string;
  secret: string;
  grants: string[];
  redirectUris: string[];
  /** Registered callbacks for GitHub's prefix rule (empty: any URL). */
  registered: string[];
  accessTokenLifetime?: number;
}

interface StoredCode {
  authorizationCode: string;
  expiresAt: Date;
  redirectUri: string;
  scope?: string[];
  codeChallenge?: string;
  codeChallengeMethod?: string;
  client: StoredClient;
  user: OAuthTestUser;
}

interface StoredToken {
  accessToken: string;
  accessTokenExpiresAt?: Date;
  refreshToken?: string;
  refreshTokenExpiresAt?: Date;
  scope?: string[];
  client: StoredClient;
  user: OAuthTestUser;
  /** The grant (one authorization code and every refresh after it) the token belongs to. */
  grant: string;
}

/** What the token request being handled has learnt (saveToken runs inside it, requests may overlap). */
interface TokenContext {
  grantType: string;
  /** The grant of the refresh token being spent, for the tokens saved next. */
  grant?: string;
}

/** GitHub's redirect_uri rule: same scheme, host and port as a registered callback, path at or below its path. */
function redirectAllowed(candidate: string, registered: string[]): boolean {
  let u: URL;
  try {
    u = new URL(candidate);
  } catch {
    return false;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return false;
  if (registered.length === 0) return true;
  return registered.some((r) => {
    const reg = new URL(r);
    if (reg.protocol !== u.protocol || reg.host !== u.host) return false;
    const base = reg.pathname.endsWith("/") ? reg.pathname : `${reg.pathname}/`;
    return u.pathname === reg.pathname || u.pathname.startsWith(base);
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

export async function startOAuthServer(opts: OAuthServerOptions = {}): Promise<OAuthTestServer> {
  const pki = opts.pki ?? makePki(opts.names ?? ["github.com", "api.github.com", "127.0.0.1"]);
  const caPem = readFileSync(pki.caFile, "utf8");
  let user: OAuthTestUser = opts.user ?? { login: "octo-tester", id: 1 };
  let accessTokenLifetime = opts.accessTokenLifetime ?? 3600;
  let deny = false;
  let issueRefreshTokens = true;
  let failures: { left: number; status: number } = { left: 0, status: 500 };
  let refreshAnswerDelayMs = 0;
  let holdRefreshes = false;
  const held: (() => void)[] = [];
  let abandonedRefreshes = 0;

  const clients = new Map<string, StoredClient>();
  const codes = new Map<string, StoredCode>();
  const accessTokens = new Map<string, StoredToken>();
  const refreshTokens = new Map<string, StoredToken>();
  /** Spent refresh tokens and their grant: presented again, the grant is revoked. */
  const spent = new Map<string, string>();
  const revokedGrants: { grant: string; reusedRefreshToken: string; at: number }[] = [];
  const requests: OAuthSeenRequest[] = [];
  const apiRequests: OAuthSeenRequest[] = [];
  const tokenRequests: Record<string, number> = {};
  const issued: IssuedToken[] = [];
  const current = new AsyncLocalStorage<TokenContext>();

  /** Reuse detection: every access and refresh token of the grant dies. */
  const revokeGrant = (grant: string, reused: string) => {
    for (const [k, t] of accessTokens) if (t.grant === grant) accessTokens.delete(k);
    for (const [k, t] of refreshTokens) if (t.grant === grant) refreshTokens.delete(k);
    revokedGrants.push({ grant, reusedRefreshToken: reused, at: Date.now() });
  };

  const addClient = (c: OAuthClientConfig) => {
    const registered = c.redirectUris ?? [];
    clients.set(c.clientId, {
      id: c.clientId,
      secret: c.clientSecret,
      grants: ["authorization_code", "refresh_token"],
      // The library wants at least one; it is only its default when a request names none.
      redirectUris: registered.length > 0 ? registered : ["http://localhost/"],
      registered,
    });
  };
  for (const c of opts.clients ?? [{ clientId: "test-client-id", clientSecret: "test-client-secret" }]) addClient(c);

  const random = (prefix: string) => `${prefix}${randomBytes(20).toString("hex")}`;

  // The library's model interface (authorization code + refresh token + bearer authentication).
  const model = {
    async getClient(clientId: string, clientSecret: string | null) {
      const c = clients.get(clientId);
      if (!c) return false;
      // The authorize step looks the client up without a secret; the token step must present it (PKCE alone
      // does not make a confidential GitHub client public).
      if (clientSecret === null) return { ...c, accessTokenLifetime };
      if (clientSecret === undefined || clientSecret !== c.secret) return false;
      return { ...c, accessTokenLifetime };
    },
    async validateRedirectUri(redirectUri: string, client: StoredClient) {
      return redirectAllowed(redirectUri, client.registered);
    },
    async validateScope(_user: unknown, _client: unknown, scope?: string[]) {
      return scope ?? [];
    },
    async generateAuthorizationCode() {
      return random("");
    },
    async generateAccessToken() {
      return random("gho_");
    },
    async generateRefreshToken() {
      return random("ghr_");
    },
    async saveAuthorizationCode(code: Omit<StoredCode, "client" | "user">, client: StoredClient, u: OAuthTestUser) {
      const stored: StoredCode = { ...code, client, user: u };
      codes.set(code.authorizationCode, stored);
      return stored;
    },
    async getAuthorizationCode(code: string) {
      return codes.get(code) ?? false;
    },
    async revokeAuthorizationCode(code: StoredCode) {
      return codes.delete(code.authorizationCode);
    },
    async saveToken(token: Omit<StoredToken, "client" | "user" | "grant">, client: StoredClient, u: OAuthTestUser) {
      if (!issueRefreshTokens) {
        delete token.refreshToken;
        delete token.refreshTokenExpiresAt;
      }
      const stored: StoredToken = { ...token, client, user: u, grant: current.getStore()?.grant ?? random("grant-") };
      accessTokens.set(token.accessToken, stored);
      if (token.refreshToken) refreshTokens.set(token.refreshToken, stored);
      issued.push({
        accessToken: token.accessToken,
        refreshToken: token.refreshToken,
        accessTokenExpiresAt: token.accessTokenExpiresAt!,
        grantType: current.getStore()?.grantType ?? "",
        clientId: client.id,
        scope: token.scope ?? [],
        at: Date.now(),
      });
      return stored;
    },
    async getAccessToken(accessToken: string) {
      return accessTokens.get(accessToken) ?? false;
    },
    async getRefreshToken(refreshToken: string) {
      const live = refreshTokens.get(refreshToken);
      if (live) return live;
      const grant = spent.get(refreshToken);
      if (grant !== undefined) revokeGrant(grant, refreshToken);
      return false;
    },
    async revokeToken(token: StoredToken) {
      // Rotation: the used refresh token is spent; the tokens saved next belong to its grant.
      if (token.refreshToken === undefined || !refreshTokens.delete(token.refreshToken)) return false;
      spent.set(token.refreshToken, token.grant);
      const ctx = current.getStore();
      if (ctx) ctx.grant = token.grant;
      return true;
    },
  };

  const oauth = new OAuth2Server({
    model,
    accessTokenLifetime,
    refreshTokenLifetime: opts.refreshTokenLifetime ?? 15_897_600,
    authorizationCodeLifetime: 600,
    alwaysIssueNewRefreshToken: true,
    allowEmptyState: false,
  });

  const libRequest = (req: IncomingMessage, url: URL, body: Record<string, string>) =>
    new OAuthRequest({ headers: flatHeaders(req), method: req.method ?? "GET", query: Object.fromEntries(url.searchParams), body });

  async function authorize(req: IncomingMessage, res: ServerResponse, url: URL): Promise<number> {
    const query = Object.fromEntries(url.searchParams);
    // GitHub needs no response_type; the library does.
    query.response_type ??= "code";
    // The library's own denial path (`allowed=false`): AccessDeniedError, redirected as error=access_denied.
    if (deny) query.allowed = "false";
    else delete query.allowed;
    const request = new OAuthRequest({ headers: flatHeaders(req), method: "GET", query, body: {} });
    const response = new OAuthResponse();
    try {
      await oauth.authorize(request, response, { authenticateHandler: { handle: () => user } });
    } catch (e) {
      if (response.status !== 302) {
        const err = e as InstanceType<typeof OAuthError>;
        sendJson(res, err.code ?? 400, { error: err.name, error_description: err.message });
        return err.code ?? 400;
      }
    }
    res.writeHead(302, { location: String(response.get("location")), "content-length": 0 });
    res.end();
    return 302;
  }

  async function token(req: IncomingMessage, res: ServerResponse, url: URL, rawBody: string, seen: OAuthSeenRequest): Promise<number> {
    const form = Object.fromEntries(new URLSearchParams(rawBody));
    seen.grantType = form.grant_type ?? "";
    tokenRequests[seen.grantType] = (tokenRequests[seen.grantType] ?? 0) + 1;
    if (seen.grantType === "refresh_token" && holdRefreshes) {
      // Held before it is looked at: a client that goes away meanwhile never spent its refresh token.
      const gone = await new Promise<boolean>((resolve) => {
        const onClose = () => resolve(true);
        req.socket.once("close", onClose);
        held.push(() => {
          req.socket.off("close", onClose);
          resolve(false);
        });
      });
      if (gone) {
        abandonedRefreshes++;
        return 0;
      }
    }
    if (failures.left > 0) {
      failures.left--;
      sendJson(res, failures.status, { error: "server_error", error_description: "Injected failure" });
      return failures.status;
    }
    const request = libRequest(req, url, form);
    const response = new OAuthResponse();
    const wantsJson = (req.headers.accept ?? "").toLowerCase().includes("json");
    let status: number;
    let body: Record<string, unknown>;
    try {
      const saved = await current.run({ grantType: seen.grantType }, () => oauth.token(request, response));
      // The refresh token is already spent (rotated) here: a concurrent refresh with it has its invalid_grant at once.
      if (seen.grantType === "refresh_token" && refreshAnswerDelayMs > 0) await new Promise((r) => setTimeout(r, refreshAnswerDelayMs));
      const lib = response.body as Record<string, unknown>;
      status = 200;
      // GitHub's shape: lowercase token type, comma-separated scopes, the refresh token's lifetime. The
      // library floors the remaining lifetime (a 62 s token would say 61, a 1 s token nothing); GitHub
      // states the full lifetime, so round up.
      const expiresAt = saved.accessTokenExpiresAt;
      body = {
        access_token: lib.access_token,
        expires_in: expiresAt ? Math.ceil((expiresAt.getTime() - Date.now()) / 1000) : lib.expires_in,
        refresh_token: saved.refreshToken,
        refresh_token_expires_in: saved.refreshToken ? (opts.refreshTokenLifetime ?? 15_897_600) : undefined,
        scope: typeof lib.scope === "string" ? lib.scope.split(" ").filter(Boolean).join(",") : "",
        token_type: "bearer",
      };
    } catch (e) {
      if (!(e instanceof OAuthError)) throw e;
      status = response.status ?? e.code;
      body = response.body as Record<string, unknown>;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(response.headers ?? {})) headers[k] = String(v);
    if (wantsJson) {
      sendJson(res, status, body, headers);
    } else {
      const text = new URLSearchParams(Object.entries(body).filter(([, v]) => v !== undefined).map(([k, v]): [string, string] => [k, String(v)])).toString();
      res.writeHead(status, { ...headers, "content-type": "application/x-www-form-urlencoded; charset=utf-8", "content-length": Buffer.byteLength(text) });
      res.end(text);
    }
    return status;
  }

  async function account(req: IncomingMessage, res: ServerResponse, url: URL): Promise<number> {
    const headers = flatHeaders(req);
    // GitHub accepts both `Bearer <t>` and its older `token <t>`.
    if (headers.authorization && /^token\s+/i.test(headers.authorization)) headers.authorization = `Bearer ${headers.authorization.replace(/^token\s+/i, "")}`;
    const request = new OAuthRequest({ headers, method: req.method ?? "GET", query: Object.fromEntries(url.searchParams), body: {} });
    try {
      const t = (await oauth.authenticate(request, new OAuthResponse())) as unknown as StoredToken;
      sendJson(res, 200, { login: t.user.login, id: t.user.id, type: "User" });
      return 200;
    } catch {
      sendJson(res, 401, { message: "Bad credentials", documentation_url: "https://docs.github.com/rest", status: "401" });
      return 401;
    }
  }

  const server = https.createServer({ cert: readFileSync(pki.certFile), key: readFileSync(pki.keyFile) }, (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "https://localhost");
      const body = await readBody(req);
      const route: OAuthSeenRequest["route"] =
        url.pathname === "/login/oauth/authorize" ? "authorize" : url.pathname === "/login/oauth/access_token" ? "token" : url.pathname === "/user" ? "user" : "api";
      const seen: OAuthSeenRequest = { method: req.method ?? "", host: req.headers.host ?? "", url: req.url ?? "", path: url.pathname, headers: flatHeaders(req), body, route, at: Date.now() };
      requests.push(seen);
      try {
        if (route === "authorize" && req.method === "GET") seen.status = await authorize(req, res, url);
        else if (route === "token" && req.method === "POST") seen.status = await token(req, res, url, body, seen);
        else if (route === "user" && req.method === "GET") seen.status = await account(req, res, url);
        else {
          if (route !== "api") seen.route = "api";
          apiRequests.push(seen);
          seen.status = 200;
          sendJson(res, 200, { method: seen.method, path: url.pathname, url: seen.url, host: seen.host, headers: seen.headers });
        }
      } catch (e) {
        seen.status = 500;
        if (!res.headersSent) sendJson(res, 500, { error: "server_error", error_description: String(e) });
        else res.destroy();
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    url: `https://127.0.0.1:${port}`,
    pki,
    caFile: pki.caFile,
    caPem,
    get user() {
      return user;
    },
    requests,
    apiRequests,
    tokenRequests,
    issued,
    issuedAccessTokens: () => issued.map((t) => t.accessToken),
    revokeRefreshTokens: () => refreshTokens.clear(),
    revokeAccessTokens: () => accessTokens.clear(),
    failNextTokenRequests(n, status = 500) {
      failures = { left: n, status };
    },
    delayRefreshAnswers(ms) {
      refreshAnswerDelayMs = ms;
    },
    holdRefreshRequests(hold) {
      holdRefreshes = hold;
      if (!hold) for (const release of held.splice(0)) release();
    },
    get heldRefreshRequests() {
      return held.length;
    },
    get abandonedRefreshRequests() {
      return abandonedRefreshes;
    },
    revokedGrants,
    accessTokenLive: (accessToken) => accessTokens.has(accessToken),
    setAccessTokenLifetime(seconds) {
      accessTokenLifetime = seconds;
    },
    setIssueRefreshTokens(issue) {
      issueRefreshTokens = issue;
    },
    setDeny(d) {
      deny = d;
    },
    setUser(u) {
      user = u;
    },
    addClient,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
