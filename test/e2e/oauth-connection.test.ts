// OAuth app connections end to end (docs/injection.md#app-connections OAuth bullets and the authorize/callback rows, docs/injection.md#app-connections
// connection transitions, docs/injection.md#app-connections injection and token refresh): the real credgate process against a real
// OAuth 2.0 authorization server standing in for GitHub (test/support/oauthServer.ts, @node-oauth/oauth2-server
// over HTTPS with a certificate for github.com and api.github.com). The test plays the browser: credgate's
// authorize redirect → the provider's consent (auto-approved) → credgate's callback with the state cookie.
// The same server is the api.github.com / github.com upstream of the gateway (its API echo records every
// header), reached through CREDGATE_CONNECT_TO (curl --connect-to semantics: port 443 dialled elsewhere,
// Host and TLS name kept) and trusted through CREDGATE_UPSTREAM_CA_FILE. Agents are Node with undici's
// ProxyAgent, run asynchronously (the OAuth server lives in this process). The browser and agent helpers are
// in test/support/oauthFlow.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { freePort } from "../support/ports.ts";
import { startOAuthServer, type OAuthTestServer } from "../support/oauthServer.ts";
import { gatewayCa } from "../support/gateway.ts";
import { oauthFlow, SHORT_LIFETIME } from "../support/oauthFlow.ts";

const CLIENT_ID = "Iv1.credgate-e2e";
const CLIENT_SECRET = "e2e-client-secret-0123456789";
const LOGIN = "octo-e2e";

let oauth: OAuthTestServer;
let cg: RunningCredgate;
let ca: { pem: string; file: string };
let publicUrl: string;
let agentToken: string;

beforeAll(async () => {
  const apiPort = await freePort();
  publicUrl = `http://127.0.0.1:${apiPort}`;
  oauth = await startOAuthServer({
    clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${publicUrl}/v1/apps/github/callback`] }],
    user: { login: LOGIN, id: 4242 },
  });
  cg = await startCredgate({
    apiPort,
    env: {
      CREDGATE_PUBLIC_URL: publicUrl,
      CREDGATE_OAUTH_GITHUB_CLIENT_ID: CLIENT_ID,
      CREDGATE_OAUTH_GITHUB_CLIENT_SECRET: CLIENT_SECRET,
      CREDGATE_UPSTREAM_CA_FILE: oauth.caFile,
      CREDGATE_CONNECT_TO: `github.com:443:127.0.0.1:${oauth.port},api.github.com:443:127.0.0.1:${oauth.port}`,
    },
  });
  ca = await gatewayCa(cg);
  agentToken = cg.keys.defaultAgentToken;
}, 30_000);

afterAll(async () => {
  await cg?.stop();
  await oauth?.close();
});

const { startAuthorize, consent, callback, connectFlow, expectSuccess, expectError, viaGateway, apiGet, connection, lastIssued, reconnectWithLifetime, waitForRefreshWindow } = oauthFlow(() => ({
  cg,
  oauth,
  publicUrl,
  caFile: ca.file,
  agentToken,
}));

// ————— tests —————

let connectionId = "";

describe("authorize (docs/injection.md#app-connections)", () => {
  test("302 to GitHub's consent URL with client_id, redirect_uri, scope, state and PKCE S256; the state cookie is HttpOnly, Lax, scoped to the callback", async () => {
    const a = await startAuthorize();
    expect(a.status).toBe(302);
    const loc = a.location!;
    expect(loc.origin + loc.pathname).toBe("https://github.com/login/oauth/authorize");
    const q = loc.searchParams;
    expect(q.get("client_id")).toBe(CLIENT_ID);
    expect(q.get("redirect_uri")).toBe(`${publicUrl}/v1/apps/github/callback`);
    expect(q.get("scope")!.split(/[ ,]/)).toEqual(expect.arrayContaining(["repo"]));
    expect(q.get("state")!.length).toBeGreaterThan(16);
    expect(q.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get("code_challenge_method")).toBe("S256");
    expect(q.get("client_secret")).toBeNull();
    expect(loc.toString()).not.toContain(CLIENT_SECRET);
    // Set-Cookie: credgate_oauth_state=…; HttpOnly; SameSite=Lax; Path=/v1/apps/github/callback
    expect(a.cookie).toMatch(/^credgate_oauth_state=.+/);
    const attrs = a.setCookie!.split(";").slice(1).map((s) => s.trim().toLowerCase());
    expect(attrs).toContain("httponly");
    expect(attrs).toContain("samesite=lax");
    expect(attrs).toContain("path=/v1/apps/github/callback");
    // http public URL: no Secure attribute (a browser would drop the cookie).
    expect(attrs).not.toContain("secure");
  });

  test("the browser query bridge: _token in the query stands for the Authorization header", async () => {
    const a = await startAuthorize(`?_token=${cg.keys.projectApiKey}`, { headers: {} });
    expect(a.status).toBe(302);
    expect(a.location!.host).toBe("github.com");
  });

  test("refusals: no key 401, unknown provider 404, API-key app 400, unknown connectionId 404", async () => {
    expect((await startAuthorize("", { headers: {} })).status).toBe(401);
    const unknown = await startAuthorize("", { provider: "nope" });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toMatchObject({ error: "Unknown provider: nope" });
    const apiKeyApp = await startAuthorize("", { provider: "resend" });
    expect(apiKeyApp.status).toBe(400);
    expect(JSON.parse(apiKeyApp.body)).toMatchObject({ error: 'Provider "resend" is not available' });
    const missing = await startAuthorize(`?connectionId=${crypto.randomUUID()}`);
    expect(missing.status).toBe(404);
    expect(missing.body).toContain("Connection not found");
    expect(missing.setCookie).toBeNull();
  });
});

describe("callback (docs/injection.md#app-connections) and the connection (docs/injection.md#app-connections)", () => {
  test("consent → callback: a code+PKCE exchange with the client credentials, /user labels the connection, 302 to /app-connect/github?status=success", async () => {
    const before = { code: oauth.tokenRequests.authorization_code ?? 0, issued: oauth.issued.length };
    const final = await connectFlow();
    connectionId = expectSuccess(final);
    expect(final.searchParams.get("agent_name")).toBeNull();

    // Exactly one code exchange, which the library accepted (PKCE verifier, redirect_uri, client secret).
    expect(oauth.tokenRequests.authorization_code).toBe(before.code + 1);
    const exchange = oauth.requests.filter((r) => r.route === "token").at(-1)!;
    expect(exchange.status).toBe(200);
    const form = new URLSearchParams(exchange.body);
    expect(form.get("grant_type")).toBe("authorization_code");
    expect(form.get("code_verifier")).toMatch(/^[A-Za-z0-9._~-]{43,128}$/);
    expect(form.get("redirect_uri")).toBe(`${publicUrl}/v1/apps/github/callback`);
    // The client authenticated with its id and secret (form body or HTTP Basic), over github.com.
    const basicAuth = exchange.headers.authorization?.startsWith("Basic ") ? Buffer.from(exchange.headers.authorization.slice(6), "base64").toString() : null;
    expect(basicAuth ?? `${form.get("client_id")}:${form.get("client_secret")}`).toBe(`${CLIENT_ID}:${CLIENT_SECRET}`);
    expect(exchange.host).toBe("github.com");
    expect(oauth.issued.length).toBe(before.issued + 1);

    // credgate asked https://api.github.com/user with the fresh token.
    const me = oauth.requests.filter((r) => r.route === "user").at(-1)!;
    expect(me.host).toBe("api.github.com");
    expect(me.status).toBe(200);
    expect(me.headers.authorization).toMatch(new RegExp(`^(Bearer|token) ${lastIssued().accessToken}$`, "i"));
  });

  test("GET /v1/connections lists it: provider github, label = the GitHub login, connected; no token in any read", async () => {
    const list = await cg.api("GET", "/v1/connections");
    expect(list.status).toBe(200);
    const item = list.body.find((c: any) => c.id === connectionId);
    expect(item).toMatchObject({ provider: "github", label: LOGIN, status: "connected", scope: "project" });
    expect(Array.isArray(item.scopes)).toBe(true);
    expect(typeof item.connectedAt).toBe("string");
    const filtered = await cg.api("GET", "/v1/connections?provider=github");
    expect(filtered.body.map((c: any) => c.id)).toContain(connectionId);
    expect((await cg.api("GET", "/v1/connections?provider=slack")).body).toEqual([]);
    const one = await connection(connectionId);
    expect(one).toMatchObject({ id: connectionId, provider: "github", label: LOGIN, status: "connected" });
    for (const text of [list.text, JSON.stringify(one), (await cg.api("GET", "/v1/apps/github")).text]) {
      for (const t of oauth.issued) {
        expect(text).not.toContain(t.accessToken);
        if (t.refreshToken) expect(text).not.toContain(t.refreshToken);
      }
    }
    const app = await cg.api("GET", "/v1/apps/github");
    expect(app.status).toBe(200);
    expect(app.body.connections.map((c: any) => c.id)).toContain(connectionId);
  });

  test("missing state → status=error, Missing state parameter", async () => {
    const final = await callback(`${publicUrl}/v1/apps/github/callback?code=whatever`, null);
    expectError(final, "Missing state parameter");
    // The message is form-encoded by URLSearchParams (spaces as +) or percent-encoded; either decodes the same.
    expect(final.search).toMatch(/message=Missing(\+|%20)state(\+|%20)parameter/);
  });

  test("tampered state → Invalid state parameter, and no code exchange happens", async () => {
    const a = await startAuthorize();
    const back = await consent(a.location!);
    const state = back.searchParams.get("state")!;
    const flipped = (state[0] === "A" ? "B" : "A") + state.slice(1);
    back.searchParams.set("state", flipped);
    const before = oauth.tokenRequests.authorization_code ?? 0;
    expectError(await callback(back, a.cookie), "Invalid state parameter");
    expect(oauth.tokenRequests.authorization_code ?? 0).toBe(before);
  });

  test("a valid state without its cookie (another browser) → Invalid state parameter", async () => {
    const a = await startAuthorize();
    const back = await consent(a.location!);
    const before = oauth.tokenRequests.authorization_code ?? 0;
    expectError(await callback(back, null), "Invalid state parameter");
    expect(oauth.tokenRequests.authorization_code ?? 0).toBe(before);
  });

  test("the provider redirects with error=access_denied → Authorization was denied; nothing is created", async () => {
    const before = (await cg.api("GET", "/v1/connections")).body.length;
    oauth.setDeny(true);
    try {
      const a = await startAuthorize();
      const back = await consent(a.location!);
      expect(back.searchParams.get("error")).toBe("access_denied");
      expectError(await callback(back, a.cookie), "Authorization was denied");
    } finally {
      oauth.setDeny(false);
    }
    expect((await cg.api("GET", "/v1/connections")).body.length).toBe(before);
  });

  test("the token endpoint failing the exchange → status=error with the exchange's failure text", async () => {
    oauth.failNextTokenRequests(1, 500);
    const final = await connectFlow();
    expect(final.searchParams.get("status")).toBe("error");
    expect(final.searchParams.get("message")).toMatch(/token/i);
    expect(final.searchParams.get("connectionId")).toBeNull();
  });
});

describe("gateway injection (docs/injection.md#app-connections)", () => {
  test("api.github.com: Authorization: Bearer <issued token>; the response lists the connection in x-credgate-connections", async () => {
    // Nothing was issued since the connect flow (the later callbacks failed before or at the exchange).
    const token = lastIssued().accessToken;
    expect(lastIssued().grantType).toBe("authorization_code");
    const { res, seenAuth, seen } = await apiGet("/repos/acme/api/issues", agentToken, { authorization: "Bearer credgate-managed" });
    expect(res.status).toBe(200);
    expect(seen).toBe(true);
    expect(seenAuth).toBe(`Bearer ${token}`);
    const header = JSON.parse(res.headers["x-credgate-connections"]!);
    expect(header).toEqual([{ id: connectionId, label: LOGIN, provider: "github", display_name: "GitHub" }]);
    // The echo body carries what the upstream saw; the agent itself never gets the token otherwise.
    expect(res.headers.authorization).toBeUndefined();
  });

  test("github.com git smart HTTP: Authorization: Basic base64(x-access-token:<token>)", async () => {
    const token = lastIssued().accessToken;
    const tag = crypto.randomUUID();
    const url = `/acme/api.git/info/refs?service=git-upload-pack&tag=${tag}`;
    const [res] = await viaGateway([{ url: `https://github.com${url}` }]);
    expect(res!.status).toBe(200);
    const rec = oauth.apiRequests.find((s) => s.url === url)!;
    expect(rec.host).toBe("github.com");
    expect(rec.headers.authorization).toBe(`Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`);
  });

  test("a grants-mode agent without a grant on the connection gets nothing injected", async () => {
    const g = await cg.api("POST", "/v1/agents", { body: { name: "No grants", identifier: "oauth-nogrant", mode: "grants" } });
    expect(g.status).toBe(201);
    const tok = (await cg.api("GET", "/v1/agents")).body.find((x: any) => x.id === g.body.id).accessToken;
    const { res, seenAuth, seen } = await apiGet("/repos/acme/api/issues", tok);
    expect(res.status).toBe(200);
    expect(seen).toBe(true);
    expect(seenAuth).toBeUndefined();
  });
});

describe("token refresh (docs/injection.md#app-connections) and connection transitions (docs/injection.md#app-connections)", () => {
  test("20 concurrent requests inside the refresh window: exactly one refresh_token grant, all 20 carry the new token", async () => {
    const old = await reconnectWithLifetime(connectionId, SHORT_LIFETIME);
    const refreshesBefore = oauth.tokenRequests.refresh_token ?? 0;
    await waitForRefreshWindow();
    const run = crypto.randomUUID();
    const reqs = Array.from({ length: 20 }, (_, i) => ({ url: `https://api.github.com/repos/acme/api/issues/${i}?run=${run}` }));
    const answers = await viaGateway(reqs);
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect((oauth.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(1);
    const refreshed = lastIssued();
    expect(refreshed.grantType).toBe("refresh_token");
    expect(refreshed.accessToken).not.toBe(old);
    const seen = oauth.apiRequests.filter((s) => s.url.endsWith(`?run=${run}`));
    expect(seen.length).toBe(20);
    expect(new Set(seen.map((s) => s.headers.authorization))).toEqual(new Set([`Bearer ${refreshed.accessToken}`]));
    // The refresh used the client credentials and the rotated refresh token; the connection stays connected.
    const refreshReq = oauth.requests.filter((r) => r.route === "token" && r.grantType === "refresh_token").at(-1)!;
    expect(refreshReq.status).toBe(200);
    expect((await connection(connectionId)).status).toBe("connected");
    // The new token is long-lived: later requests neither refresh again nor change token.
    const after = await apiGet();
    expect(after.seenAuth).toBe(`Bearer ${refreshed.accessToken}`);
    expect((oauth.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(1);
  }, 45_000);

  test("refresh failing for another reason 3 times → error, still injected with the last token; a later successful refresh → connected", async () => {
    const old = await reconnectWithLifetime(connectionId, SHORT_LIFETIME);
    const refreshesBefore = oauth.tokenRequests.refresh_token ?? 0;
    oauth.failNextTokenRequests(3, 500);
    await waitForRefreshWindow();
    const deadline = Date.now() + 40_000;
    let status = "connected";
    while (Date.now() < deadline) {
      const { res, seenAuth } = await apiGet();
      expect(res.status).toBe(200);
      expect(seenAuth).toBe(`Bearer ${old}`);
      status = (await connection(connectionId)).status;
      if (status === "error") break;
      expect(status).toBe("connected");
      await Bun.sleep(500);
    }
    expect(status).toBe("error");
    expect((oauth.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(3);
    // Still a candidate while in error: injected with the last token, listed in the response header.
    const still = await apiGet();
    expect(still.seenAuth).toBe(`Bearer ${old}`);
    expect(JSON.parse(still.res.headers["x-credgate-connections"]!)[0].id).toBe(connectionId);
    // The injected failures are used up: the next attempt succeeds and the connection is connected again.
    let fresh: string | undefined;
    while (Date.now() < deadline) {
      const r = await apiGet();
      if (r.seenAuth !== `Bearer ${old}`) {
        fresh = r.seenAuth;
        break;
      }
      await Bun.sleep(500);
    }
    expect(lastIssued().grantType).toBe("refresh_token");
    expect(fresh).toBe(`Bearer ${lastIssued().accessToken}`);
    expect((await connection(connectionId)).status).toBe("connected");
  }, 60_000);

  test("the refresh token revoked at the provider: invalid_grant → revoked, and the gateway stops injecting", async () => {
    const old = await reconnectWithLifetime(connectionId, SHORT_LIFETIME);
    oauth.revokeRefreshTokens();
    const refreshesBefore = oauth.tokenRequests.refresh_token ?? 0;
    await waitForRefreshWindow();
    // The request that meets the refresh window triggers the refresh. Its own fate is left open (docs/injection.md#app-connections "a
    // failed refresh uses the old token" vs docs/api.md#states "revoked: not used for injection"): credgate currently answers
    // it 502 credential_unavailable without forwarding; forwarded, it may carry only the old token or none.
    const trigger = await apiGet();
    if (trigger.res.status === 502) {
      expect(JSON.parse(trigger.res.body).error).toBe("credential_unavailable");
      expect(trigger.seen).toBe(false);
    } else {
      expect(trigger.res.status).toBe(200);
      expect([`Bearer ${old}`, undefined]).toContain(trigger.seenAuth);
    }
    expect((oauth.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(1);
    const refused = oauth.requests.filter((r) => r.route === "token" && r.grantType === "refresh_token").at(-1)!;
    expect(refused.status).toBe(400);
    expect((await connection(connectionId)).status).toBe("revoked");
    const listed = (await cg.api("GET", "/v1/connections")).body.find((c: any) => c.id === connectionId);
    expect(listed.status).toBe("revoked");

    const { res, seenAuth, seen } = await apiGet("/repos/acme/api/issues", agentToken, { authorization: "Bearer credgate-managed" });
    expect(seen).toBe(true);
    expect(res.status).toBe(200);
    // Not a candidate any more: the agent's placeholder goes through untouched, no token, no connections header.
    expect(seenAuth).toBe("Bearer credgate-managed");
    expect(res.headers["x-credgate-connections"]).toBeUndefined();
    const git = await viaGateway([{ url: `https://github.com/acme/api.git/info/refs?service=git-upload-pack&rv=${crypto.randomUUID()}` }]);
    expect(git[0]!.status).toBe(200);
    expect(oauth.apiRequests.at(-1)!.headers.authorization).toBeUndefined();
    // And no further refresh attempts for a revoked connection.
    expect((oauth.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(1);
  }, 45_000);

  test("reconnect (authorize with connectionId): the same connection is connected again and injected with the new token", async () => {
    const final = await connectFlow(`?connectionId=${connectionId}`);
    expect(expectSuccess(final)).toBe(connectionId);
    expect((await connection(connectionId)).status).toBe("connected");
    const token = lastIssued().accessToken;
    const { seenAuth } = await apiGet();
    expect(seenAuth).toBe(`Bearer ${token}`);
    const list = (await cg.api("GET", "/v1/connections?provider=github")).body;
    expect(list.filter((c: any) => c.id === connectionId).length).toBe(1);
  });

  test("a flow without connectionId for the same account (login matched case-insensitively) reuses the connection", async () => {
    const count = (await cg.api("GET", "/v1/connections?provider=github")).body.length;
    oauth.setUser({ login: LOGIN.toUpperCase(), id: 4242 });
    try {
      expect(expectSuccess(await connectFlow())).toBe(connectionId);
    } finally {
      oauth.setUser({ login: LOGIN, id: 4242 });
    }
    expect((await cg.api("GET", "/v1/connections?provider=github")).body.length).toBe(count);
    const { seenAuth } = await apiGet();
    expect(seenAuth).toBe(`Bearer ${lastIssued().accessToken}`);
  });
});

describe("agent_name (docs/injection.md#app-connections callback success)", () => {
  test("authorize with agent_name of a project agent: the redirect carries it and the connection is granted full to that agent", async () => {
    const c = await cg.api("POST", "/v1/agents", { body: { name: "OAuth bot", identifier: "oauth-bot", mode: "grants" } });
    expect(c.status).toBe(201);
    const agentId = c.body.id as string;
    const botToken = (await cg.api("GET", "/v1/agents")).body.find((x: any) => x.id === agentId).accessToken as string;
    // A grants-mode agent without grants: nothing injected yet.
    expect((await apiGet("/repos/acme/api/issues", botToken)).seenAuth).toBeUndefined();

    const final = await connectFlow("?agent_name=oauth-bot");
    expect(expectSuccess(final)).toBe(connectionId);
    expect(final.searchParams.get("agent_name")).toBe("oauth-bot");
    expect(final.search).toMatch(/[?&]status=success&connectionId=[^&]+&agent_name=oauth-bot$/);

    const grants = await cg.api("GET", `/v1/agents/${agentId}/grants`);
    expect(grants.status).toBe(200);
    expect(grants.body.connections).toEqual([
      expect.objectContaining({ connectionId, provider: "github", label: LOGIN, scope: "project", access: "full", allow: [], ask: [] }),
    ]);
    expect((await apiGet("/repos/acme/api/issues", botToken)).seenAuth).toBe(`Bearer ${lastIssued().accessToken}`);
  });

  test("the default agent's identifier works the same way", async () => {
    const def = (await cg.api("GET", "/v1/agents/default")).body;
    const final = await connectFlow(`?agent_name=${def.identifier}`);
    expect(expectSuccess(final)).toBe(connectionId);
    expect(final.searchParams.get("agent_name")).toBe(def.identifier);
    const grants = (await cg.api("GET", `/v1/agents/${def.id}/grants`)).body;
    expect(grants.connections.find((g: any) => g.connectionId === connectionId)).toMatchObject({ access: "full" });
  });

  test("an agent_name naming no agent still completes the flow, carries the name back and grants nothing", async () => {
    const final = await connectFlow("?agent_name=nobody-here");
    expect(expectSuccess(final)).toBe(connectionId);
    expect(final.searchParams.get("agent_name")).toBe("nobody-here");
  });
});

describe("several connections of one provider (docs/injection.md#winning-connection)", () => {
  test("a second GitHub account makes a second connection: 409 multiple_connections, x-credgate-connection-id picks one", async () => {
    oauth.setUser({ login: "second-account", id: 777 });
    let second = "";
    try {
      second = expectSuccess(await connectFlow());
    } finally {
      oauth.setUser({ login: LOGIN, id: 4242 });
    }
    expect(second).not.toBe(connectionId);
    const secondToken = lastIssued().accessToken;
    expect((await connection(second)).label).toBe("second-account");

    const ambiguous = await apiGet();
    expect(ambiguous.res.status).toBe(409);
    const body = JSON.parse(ambiguous.res.body);
    expect(body.error).toBe("multiple_connections");
    expect(body.connections.map((c: any) => c.id).sort()).toEqual([connectionId, second].sort());
    expect(body.header).toBe("x-credgate-connection-id");
    expect(ambiguous.seen).toBe(false);
    expect(ambiguous.res.headers["x-credgate-connections"]).toBeUndefined();

    const picked = await apiGet("/repos/acme/api/issues", agentToken, { "x-credgate-connection-id": second });
    expect(picked.res.status).toBe(200);
    expect(picked.seenAuth).toBe(`Bearer ${secondToken}`);
    const rec = oauth.apiRequests.at(-1)!;
    expect(rec.headers["x-credgate-connection-id"]).toBeUndefined();

    // DELETE removes it; the first connection wins alone again.
    expect((await cg.api("DELETE", `/v1/connections/${second}`)).status).toBe(204);
    expect((await apiGet()).res.status).toBe(200);
  });
});

describe("tokens at rest and in logs", () => {
  test("no issued access or refresh token, nor the client secret, appears in credgate's output or its database file", async () => {
    expect(oauth.issued.length).toBeGreaterThan(3);
    // A WAL checkpoint puts every written page into the main file before it is read.
    const db = new Database(join(cg.dataDir, "credgate.db"));
    db.run("PRAGMA wal_checkpoint(TRUNCATE)");
    db.close();
    const file = readFileSync(join(cg.dataDir, "credgate.db")).toString("latin1");
    const output = cg.output();
    expect(output).toContain("app connected");
    for (const t of oauth.issued) {
      for (const value of [t.accessToken, t.refreshToken].filter((v): v is string => !!v)) {
        expect(file.includes(value)).toBe(false);
        expect(output.includes(value)).toBe(false);
      }
    }
    expect(file.includes(CLIENT_SECRET)).toBe(false);
    expect(output.includes(CLIENT_SECRET)).toBe(false);
  });
});
