// The OAuth login credgate runs for an MCP server (docs/mcp.md#the-login), through the in-process API against a
// real authorization server — the MCP SDK's own (`mcpAuthRouter`) with dynamic client registration — and an MCP
// server that accepts only its tokens for its own URL: discovery from the 401's challenge (or the well-known URL),
// registration, PKCE S256 (the SDK checks the verifier) with `resource` in every authorization and token request,
// the callback's checks, sealed tokens, and refresh once for concurrent callers with compare-and-swap. The browser
// is played by fetch here; test/e2e/dashboard-mcp.test.ts drives the same login through the dashboard in Chromium.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, storedText, type TestApi } from "../support/app.ts";
import { startMcpAuthServer, type McpAuthServer } from "../support/mcpAuthServer.ts";
import { GatewaySnapshot } from "../../src/gateway/snapshot.ts";
import { expectEnvelope } from "./helpers.ts";
import { McpAuthService } from "../../src/services/mcpAuth.ts";
import { SharedCaches } from "../../src/core/sharedCache.ts";

const PUBLIC = "https://credgate.test";
let api: TestApi;
const started: McpAuthServer[] = [];

beforeAll(async () => {
  api = await createTestApi({ CREDGATE_PUBLIC_URL: PUBLIC });
});

afterAll(async () => {
  for (const s of started) await s.close();
  await api?.core.close();
});

async function authServer(opts: Parameters<typeof startMcpAuthServer>[0] = {}) {
  const s = await startMcpAuthServer(opts);
  started.push(s);
  return s;
}

async function register(url: string, auth?: unknown) {
  const res = await api.call("POST", "/v1/mcp-servers", { body: { name: "Login test", url, ...(auth ? { auth } : {}) } });
  expect(res.status).toBe(201);
  return res.body as { id: string; status: string };
}

/** The browser's part: follow authorize to the consent page, press a button, come back with the redirect. */
async function consent(location: string, decision: "approve" | "deny"): Promise<URL> {
  const page = await fetch(location, { redirect: "manual" });
  expect(page.status).toBe(200);
  const id = /name="id" value="([^"]+)"/.exec(await page.text())![1]!;
  const back = await fetch(new URL("/consent", location), { method: "POST", body: new URLSearchParams({ id, decision }), redirect: "manual" });
  expect(back.status).toBe(302);
  return new URL(back.headers.get("location")!);
}

async function startLogin(serverId: string) {
  const res = await api.call("GET", `/v1/mcp-servers/${serverId}/authorize`);
  expect(res.status).toBe(302);
  const cookie = res.headers.get("set-cookie")!;
  const nonce = /credgate_oauth_state=([^;]+)/.exec(cookie)![1]!;
  return { location: res.headers.get("location")!, cookie, nonce };
}

async function callback(redirect: URL, nonce: string | null) {
  const res = await api.call("GET", `/v1/mcp-servers/callback${redirect.search}`, { key: null, headers: nonce ? { cookie: `credgate_oauth_state=${nonce}` } : {} });
  expect(res.status).toBe(302);
  expect(res.headers.get("set-cookie")).toContain("Max-Age=0");
  return new URL(res.headers.get("location")!);
}

async function login(s: McpAuthServer, serverId: string) {
  const { location, nonce } = await startLogin(serverId);
  return callback(await consent(location, "approve"), nonce);
}

describe("the login", () => {
  test("discovery, dynamic registration, PKCE S256 and resource; tokens sealed; tools listed with the token", async () => {
    const as = await authServer();
    const server = await register(as.mcp.url);
    const { location, cookie } = await startLogin(server.id);

    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(cookie).toContain("Path=/v1/mcp-servers/callback");
    expect(cookie).toContain("Secure");
    const url = new URL(location);
    expect(`${url.origin}/`).toBe(as.issuer);
    expect(url.pathname).toBe("/authorize");
    expect(as.registrations).toHaveLength(1);
    const client = as.registrations[0]!;
    expect(client.redirect_uris).toEqual([`${PUBLIC}/v1/mcp-servers/callback`]);
    expect(client.token_endpoint_auth_method).toBe("client_secret_post");
    expect(client.client_secret).toBeString();
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: `${PUBLIC}/v1/mcp-servers/callback`,
      code_challenge_method: "S256",
      resource: as.mcp.url,
      scope: "mcp:tools",
    });
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const redirect = await consent(location, "approve");
    const { nonce } = { nonce: /credgate_oauth_state=([^;]+)/.exec(cookie)![1]! };
    const done = await callback(redirect, nonce);
    expect(done.href).toBe(`${PUBLIC}/mcp-servers/${server.id}?status=success`);
    // The SDK's token handler checked the PKCE verifier against the challenge; the provider checked the resource.
    expect(as.tokenRequests).toEqual([{ grant: "authorization_code", clientId: client.client_id, resource: as.mcp.url }]);
    expect(as.authorizations[0]!.resource).toBe(as.mcp.url);

    const read = (await api.call("GET", `/v1/mcp-servers/${server.id}`)).body;
    expect(read).toMatchObject({ authKind: "oauth", status: "connected", error: null });
    expect(read.tools.map((t: { name: string }) => t.name)).toEqual(["read_file", "write_file", "delete_repository"]);
    const token = as.accessTokens[0]!;
    expect(as.mcp.authorizations).toContain(`Bearer ${token}`);
    const stored = await storedText(api);
    for (const secret of [token, client.client_secret!]) expect(stored).not.toContain(secret);

    const snapshot = await GatewaySnapshot.create(api.core.services);
    const agents = (await api.call("GET", "/v1/agents")).body as { isDefault: boolean; accessToken: string }[];
    const entry = await snapshot.agentForToken(agents.find((a) => a.isDefault)!.accessToken);
    const compiled = (await snapshot.credentials(entry!)).mcpServers.find((s) => s.id === server.id)!;
    expect(compiled.auth).toEqual({ header: "authorization", value: `Bearer ${token}` });
    expect(compiled.expiresAt).toBeGreaterThan(Date.now() + 3_000_000);
    expect(compiled.grant).toEqual({ access: "full" });

    // A second login reuses the registered client.
    await login(as, server.id);
    expect(as.registrations).toHaveLength(1);
  });

  test("the metadata found at the well-known URL when the 401 does not name it; the HTTP+SSE transport", async () => {
    const as = await authServer({ transport: "sse", challengeNamesMetadata: false });
    const server = await register(as.mcp.url);
    expect((await login(as, server.id)).searchParams.get("status")).toBe("success");
    const read = (await api.call("GET", `/v1/mcp-servers/${server.id}`)).body;
    expect(read).toMatchObject({ status: "connected", error: null });
    expect(read.tools).toHaveLength(3);
  });

  test("a configured client: no registration, its secret sent to the token endpoint", async () => {
    const as = await authServer();
    // Register the client first, as an operator would have done at the authorization server.
    const reg = await fetch(new URL("/register", as.issuer), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ redirect_uris: [`${PUBLIC}/v1/mcp-servers/callback`], client_name: "preconfigured", token_endpoint_auth_method: "client_secret_post" }),
    });
    const client = (await reg.json()) as { client_id: string; client_secret: string };
    const server = await register(as.mcp.url, { clientId: client.client_id, clientSecret: client.client_secret });
    expect((await login(as, server.id)).searchParams.get("status")).toBe("success");
    expect(as.registrations).toHaveLength(1);
    expect(as.tokenRequests.at(-1)).toEqual({ grant: "authorization_code", clientId: client.client_id, resource: as.mcp.url });
  });

  test("the operator's client for an authorization server (CREDGATE_OAUTH_MCP_<HOST>_CLIENT_ID): no registration", async () => {
    const as = await authServer();
    const reg = await fetch(new URL("/register", as.issuer), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ redirect_uris: [`${PUBLIC}/v1/mcp-servers/callback`], client_name: "operator", token_endpoint_auth_method: "client_secret_post" }),
    });
    const client = (await reg.json()) as { client_id: string; client_secret: string };
    const operator = await createTestApi({ CREDGATE_PUBLIC_URL: PUBLIC, CREDGATE_OAUTH_MCP_127_0_0_1_CLIENT_ID: client.client_id, CREDGATE_OAUTH_MCP_127_0_0_1_CLIENT_SECRET: client.client_secret });
    try {
      const server = (await operator.call("POST", "/v1/mcp-servers", { body: { name: "Operator client", url: as.mcp.url } })).body;
      const start = await operator.call("GET", `/v1/mcp-servers/${server.id}/authorize`);
      expect(new URL(start.headers.get("location")!).searchParams.get("client_id")).toBe(client.client_id);
      const nonce = /credgate_oauth_state=([^;]+)/.exec(start.headers.get("set-cookie")!)![1]!;
      const back = await consent(start.headers.get("location")!, "approve");
      const done = await operator.call("GET", `/v1/mcp-servers/callback${back.search}`, { key: null, headers: { cookie: `credgate_oauth_state=${nonce}` } });
      expect(new URL(done.headers.get("location")!).searchParams.get("status")).toBe("success");
      expect(as.registrations).toHaveLength(1);
      expect(as.tokenRequests.at(-1)).toEqual({ grant: "authorization_code", clientId: client.client_id, resource: as.mcp.url });
    } finally {
      await operator.core.close();
    }
  });

  test("the callback refuses what it did not start: no state, a forged or foreign state, a missing cookie, a denial, a replayed code", async () => {
    const as = await authServer();
    const server = await register(as.mcp.url);
    const first = await startLogin(server.id);
    const redirect = await consent(first.location, "approve");

    expect((await callback(new URL(`${PUBLIC}/x?code=abc`), first.nonce)).searchParams.get("message")).toBe("Missing state parameter");
    const forged = new URL(redirect);
    const state = forged.searchParams.get("state")!;
    forged.searchParams.set("state", `${state.slice(0, -2)}xx`);
    expect((await callback(forged, first.nonce)).searchParams.get("message")).toBe("Invalid state parameter");
    expect((await callback(redirect, null)).searchParams.get("message")).toBe("Invalid state parameter");
    expect((await callback(redirect, "0123456789abcdef0123456789abcdef")).searchParams.get("message")).toBe("Invalid state parameter");

    const ok = await callback(redirect, first.nonce);
    expect(ok.searchParams.get("status")).toBe("success");
    const replay = await callback(redirect, first.nonce);
    expect(replay.pathname).toBe(`/mcp-servers/${server.id}`);
    expect(replay.searchParams.get("status")).toBe("error");
    expect(replay.searchParams.get("message")).toStartWith("Token exchange failed: ");

    const second = await startLogin(server.id);
    const denied = await callback(await consent(second.location, "deny"), second.nonce);
    expect(denied.searchParams.get("message")).toBe("Authorization was denied");

    // A flow started with a client credgate no longer holds (a later authorize registered another) says so.
    const third = await startLogin(server.id);
    const { mcpServers } = api.core.services;
    const row = (await mcpServers.byId(server.id))!;
    await mcpServers.saveClient(server.id, { ...mcpServers.oauthClient(row)!, clientId: "another-client" });
    const stale = await callback(await consent(third.location, "approve"), third.nonce);
    expect(stale.searchParams.get("message")).toBe("A newer login was started for this server: finish that one, or connect again");
  });

  test("discovery refuses metadata for another resource, and a static server has nothing to log in to", async () => {
    const as = await authServer({ metadataResource: () => "https://elsewhere.example.com/mcp" });
    const server = await register(as.mcp.url);
    const res = await api.call("GET", `/v1/mcp-servers/${server.id}/authorize`);
    expectEnvelope(res, 400, "The login could not start: The server's protected-resource metadata is for another resource (https://elsewhere.example.com/mcp)");
    expect((await api.call("GET", `/v1/mcp-servers/${server.id}`)).body.error).toStartWith("The login could not start: ");
    expect(as.registrations).toHaveLength(0);

    const fixed = await register(as.mcp.url, { bearer: "static" });
    expectEnvelope(await api.call("GET", `/v1/mcp-servers/${fixed.id}/authorize`), 400, "This MCP server uses a static credential; there is nothing to log in to");
  });
});

describe("refresh", () => {
  test("a token due for refresh is refreshed once for concurrent callers, with resource, and compare-and-swapped", async () => {
    const as = await authServer({ expiresIn: 30 });
    const server = await register(as.mcp.url);
    await login(as, server.id);
    const { mcpAuth, mcpServers } = api.core.services;
    const before = (await mcpServers.byId(server.id))!;

    const results = await Promise.all(Array.from({ length: 5 }, () => mcpAuth.fresh(server.id)));
    const refreshes = as.tokenRequests.filter((r) => r.grant === "refresh_token");
    expect(refreshes).toEqual([{ grant: "refresh_token", clientId: as.registrations[0]!.client_id, resource: as.mcp.url }]);
    const newToken = as.accessTokens[1]!;
    for (const r of results) expect(r).toMatchObject({ kind: "oauth", accessToken: newToken });
    const after = (await mcpServers.byId(server.id))!;
    expect(after.version).toBe(before.version + 1);

    // A writer that read the old version loses: the newer token stays.
    const lost = await mcpServers.swapCredential(server.id, before.version, { kind: "oauth", accessToken: "stale", refreshToken: null, expiresAt: null });
    expect(lost.swapped).toBe(false);
    expect(mcpServers.credential(lost.row!)).toMatchObject({ accessToken: newToken });

    // refresh-tools lists with the current (refreshed) token.
    const listed = await api.call("POST", `/v1/mcp-servers/${server.id}/refresh-tools`);
    expect(listed.body).toMatchObject({ status: "connected", error: null });
  });

  test("two instances refreshing at once (separate single-flights, one database): one refresh under the lease, the other takes its token", async () => {
    const as = await authServer({ expiresIn: 30, refreshedExpiresIn: 3600 });
    const server = await register(as.mcp.url);
    await login(as, server.id);
    const { deps, mcpServers } = api.core.services;
    const instances = [new McpAuthService(deps, mcpServers, new SharedCaches()), new McpAuthService(deps, mcpServers, new SharedCaches())];
    const [a, b] = await Promise.all(instances.map((i) => i.fresh(server.id)));
    expect(a).not.toBeNull();
    expect(b).toEqual(a);
    const stored = (await mcpServers.byId(server.id))!;
    expect(stored.status).toBe("connected");
    expect(mcpServers.credential(stored)).toEqual(a!);
    // The token both use is one the authorization server issued last and still accepts.
    expect(a!.kind === "oauth" && a!.accessToken).toBe(as.accessTokens.at(-1)!);
    // The refresh token reached the authorization server once: its reuse detection never fired.
    expect(as.tokenRequests.filter((r) => r.grant === "refresh_token")).toHaveLength(1);
    expect(as.revokedGrants).toEqual([]);
    expect(as.accessTokens).toHaveLength(2);
  });

  test("a refused refresh token makes the server revoked, and nothing is injected", async () => {
    const as = await authServer({ expiresIn: 30 });
    const server = await register(as.mcp.url);
    await login(as, server.id);
    as.revokeRefreshTokens();
    expect(await api.core.services.mcpAuth.fresh(server.id)).toBeNull();
    const read = (await api.call("GET", `/v1/mcp-servers/${server.id}`)).body;
    expect(read.status).toBe("revoked");
    expect(read.error).toContain("refused the refresh token");
  });
});
