// OAuth app connections end to end, part two (docs/injection.md#app-connections BYOC config and "client credentials resolve
// enabled project config → enabled organization config → env", docs/injection.md#resource-limits grant `resources` and the legacy
// `sessionPolicy`, docs/injection.md#resource-limits resources guard, docs/agent-errors.md#resource_access_denied, docs/injection.md#app-connections connected → expired): the real
// credgate process, started WITHOUT an env OAuth client for GitHub, against the GitHub-shaped test OAuth
// server (test/support/oauthServer.ts), which is also the upstream of api.github.com, uploads.github.com,
// github.com and raw.githubusercontent.com (CREDGATE_CONNECT_TO). The browser and agent helpers are shared
// with oauth-connection.test.ts (test/support/oauthFlow.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { freePort } from "../support/ports.ts";
import { startOAuthServer, type OAuthSeenRequest, type OAuthTestServer } from "../support/oauthServer.ts";
import { gatewayCa } from "../support/gateway.ts";
import { oauthFlow, type AgentResponse } from "../support/oauthFlow.ts";

const PROJECT_CLIENT = { clientId: "Iv1.byoc-project", clientSecret: "byoc-project-secret-0123456789" };
const ORG_CLIENT = { clientId: "Iv1.byoc-org", clientSecret: "byoc-org-secret-9876543210" };
const LOGIN = "octo-byoc";
const HOSTS = ["github.com", "api.github.com", "uploads.github.com", "raw.githubusercontent.com"];
const NOT_CONFIGURED = "GitHub is not configured. Missing required credentials.";

let oauth: OAuthTestServer;
let cg: RunningCredgate;
let caFile: string;
let publicUrl: string;

beforeAll(async () => {
  const apiPort = await freePort();
  publicUrl = `http://127.0.0.1:${apiPort}`;
  const redirectUris = [`${publicUrl}/v1/apps/github/callback`];
  oauth = await startOAuthServer({
    clients: [
      { ...PROJECT_CLIENT, redirectUris },
      { ...ORG_CLIENT, redirectUris },
    ],
    user: { login: LOGIN, id: 5151 },
    names: [...HOSTS, "127.0.0.1"],
  });
  cg = await startCredgate({
    apiPort,
    env: {
      CREDGATE_PUBLIC_URL: publicUrl,
      // No env client, whatever the runner's environment says: BYOC configs are the only source.
      CREDGATE_OAUTH_GITHUB_CLIENT_ID: "",
      CREDGATE_OAUTH_GITHUB_CLIENT_SECRET: "",
      CREDGATE_UPSTREAM_CA_FILE: oauth.caFile,
      CREDGATE_CONNECT_TO: HOSTS.map((h) => `${h}:443:127.0.0.1:${oauth.port}`).join(","),
    },
  });
  caFile = (await gatewayCa(cg)).file;
}, 30_000);

afterAll(async () => {
  await cg?.stop();
  await oauth?.close();
});

const { startAuthorize, connectFlow, expectSuccess, viaGateway, apiGet, connection, lastIssued } = oauthFlow(() => ({
  cg,
  oauth,
  publicUrl,
  caFile,
  agentToken: cg.keys.defaultAgentToken,
}));

/** The client id and secret a token request authenticated with (form body or HTTP Basic). */
function clientOf(r: OAuthSeenRequest): string {
  const form = new URLSearchParams(r.body);
  const basic = r.headers.authorization?.startsWith("Basic ") ? Buffer.from(r.headers.authorization.slice(6), "base64").toString() : null;
  return basic ?? `${form.get("client_id")}:${form.get("client_secret")}`;
}

const lastTokenRequest = () => oauth.requests.filter((r) => r.route === "token").at(-1)!;

async function expectNotConfigured(): Promise<void> {
  const a = await startAuthorize();
  expect(a.status).toBe(400);
  expect(JSON.parse(a.body)).toEqual({ error: NOT_CONFIGURED });
  expect(a.location).toBeNull();
  expect(a.setCookie).toBeNull();
}

let connectionId = "";

describe("BYOC OAuth client (docs/injection.md#app-connections config rows and client resolution)", () => {
  test("no project, organization or env client: authorize answers 400 not configured", async () => {
    expect((await cg.api("GET", "/v1/apps/github/config")).body).toEqual({ settings: {}, hasCredentials: false, enabled: false });
    expect((await cg.api("GET", "/v1/apps/github")).body.available).toBe(false);
    await expectNotConfigured();
  });

  test("POST /v1/apps/github/config: authorize uses that client_id and the code exchange authenticates with its secret", async () => {
    const save = await cg.api("POST", "/v1/apps/github/config", { body: { ...PROJECT_CLIENT, extra: "stripped" } });
    expect(save.status).toBe(200);
    expect(save.body).toEqual({ success: true });
    const view = await cg.api("GET", "/v1/apps/github/config");
    expect(view.body).toEqual({ settings: { clientId: PROJECT_CLIENT.clientId }, hasCredentials: true, enabled: true });
    expect(view.text).not.toContain(PROJECT_CLIENT.clientSecret);
    expect((await cg.api("GET", "/v1/apps/github")).body.available).toBe(true);

    const a = await startAuthorize();
    expect(a.status).toBe(302);
    expect(a.location!.origin + a.location!.pathname).toBe("https://github.com/login/oauth/authorize");
    expect(a.location!.searchParams.get("client_id")).toBe(PROJECT_CLIENT.clientId);
    expect(a.location!.toString()).not.toContain(PROJECT_CLIENT.clientSecret);

    const before = oauth.tokenRequests.authorization_code ?? 0;
    connectionId = expectSuccess(await connectFlow());
    expect(oauth.tokenRequests.authorization_code).toBe(before + 1);
    const exchange = lastTokenRequest();
    expect(exchange.status).toBe(200);
    expect(clientOf(exchange)).toBe(`${PROJECT_CLIENT.clientId}:${PROJECT_CLIENT.clientSecret}`);
    expect(lastIssued().clientId).toBe(PROJECT_CLIENT.clientId);
    expect(await connection(connectionId)).toMatchObject({ provider: "github", label: LOGIN, status: "connected" });
    // The default agent (mode all) gets the BYOC-issued token injected.
    expect((await apiGet()).seenAuth).toBe(`Bearer ${lastIssued().accessToken}`);
  });

  test("PATCH …/config/toggle {enabled:false}: authorize answers 400 not configured; the connection is kept", async () => {
    const off = await cg.api("PATCH", "/v1/apps/github/config/toggle", { body: { enabled: false } });
    expect(off.status).toBe(200);
    expect(off.body).toEqual({ success: true });
    expect((await cg.api("GET", "/v1/apps/github/config")).body).toEqual({ settings: { clientId: PROJECT_CLIENT.clientId }, hasCredentials: true, enabled: false });
    expect((await cg.api("GET", "/v1/apps/github")).body.available).toBe(false);
    await expectNotConfigured();
    expect((await connection(connectionId)).status).toBe("connected");
  });

  test("an organization config (org key) makes GitHub available again: its client_id, its secret at the exchange", async () => {
    const save = await cg.api("POST", "/v1/org/apps/github/config", { key: cg.keys.orgApiKey, body: ORG_CLIENT });
    expect(save.status).toBe(200);
    expect(save.body).toEqual({ success: true });
    expect((await cg.api("GET", "/v1/apps/github")).body.available).toBe(true);

    const a = await startAuthorize();
    expect(a.status).toBe(302);
    expect(a.location!.searchParams.get("client_id")).toBe(ORG_CLIENT.clientId);
    // Same GitHub account: the flow lands on the existing connection.
    expect(expectSuccess(await connectFlow())).toBe(connectionId);
    expect(clientOf(lastTokenRequest())).toBe(`${ORG_CLIENT.clientId}:${ORG_CLIENT.clientSecret}`);
    expect(lastIssued().clientId).toBe(ORG_CLIENT.clientId);

    // Without a project config of its own, the project's view is the organization's (no client id shown).
    expect((await cg.api("DELETE", "/v1/apps/github/config")).status).toBe(200);
    const view = await cg.api("GET", "/v1/apps/github/config");
    expect(view.body).toEqual({ settings: {}, hasCredentials: true, enabled: true, source: "organization" });
    expect(view.text).not.toContain(ORG_CLIENT.clientId);
    expect((await startAuthorize()).location!.searchParams.get("client_id")).toBe(ORG_CLIENT.clientId);
    expect((await connection(connectionId)).status).toBe("connected");
  });
});

// ————— resources guard —————

interface Probe {
  name: string;
  url: string;
  method?: string;
  body?: string;
}

/** Sends every probe at once through the gateway, each tagged; returns the answers and what the upstream saw. */
async function probe(token: string, probes: Probe[]): Promise<Record<string, { res: AgentResponse; seen: OAuthSeenRequest | undefined }>> {
  const tags = probes.map(() => crypto.randomUUID());
  const answers = await viaGateway(
    probes.map((p, i) => ({
      url: `${p.url}${p.url.includes("?") ? "&" : "?"}tag=${tags[i]}`,
      method: p.method ?? "GET",
      ...(p.body !== undefined ? { body: p.body, headers: { "content-type": "application/json" } } : {}),
    })),
    token,
  );
  const out: Record<string, { res: AgentResponse; seen: OAuthSeenRequest | undefined }> = {};
  probes.forEach((p, i) => {
    out[p.name] = { res: answers[i]!, seen: oauth.requests.find((r) => r.url.endsWith(`tag=${tags[i]}`)) };
  });
  return out;
}

function expectDenied(r: { res: AgentResponse; seen: OAuthSeenRequest | undefined }, resource: string, allowed: string[]): void {
  expect(r.res.status).toBe(403);
  expect(r.res.headers["content-type"]).toContain("application/json");
  expect(r.res.headers["x-should-retry"]).toBe("false");
  expect(JSON.parse(r.res.body)).toEqual({
    error: "resource_access_denied",
    message: `This GitHub connection is limited to specific repositories; ${resource} is not one of them.`,
    provider: "github",
    allowed,
  });
  expect(r.res.headers["x-credgate-connections"]).toBeUndefined();
  expect(r.seen).toBeUndefined();
}

function expectInjected(r: { res: AgentResponse; seen: OAuthSeenRequest | undefined }, auth = `Bearer ${lastIssued().accessToken}`): void {
  expect(r.res.status).toBe(200);
  expect(r.seen).toBeDefined();
  expect(r.seen!.headers.authorization).toBe(auth);
}

const gitBasic = () => `Basic ${Buffer.from(`x-access-token:${lastIssued().accessToken}`).toString("base64")}`;

describe("resources guard (docs/injection.md#resource-limits grant resources, docs/injection.md#resource-limits, docs/agent-errors.md#resource_access_denied)", () => {
  let agentId = "";
  let agentToken = "";
  const putGrant = (body: unknown) => cg.api("PUT", `/v1/agents/${agentId}/grants/connections/${connectionId}`, { body });

  beforeAll(async () => {
    const made = await cg.api("POST", "/v1/agents", { body: { name: "Repo bot", identifier: "repo-bot", mode: "grants" } });
    expect(made.status).toBe(201);
    agentId = made.body.id;
    agentToken = (await cg.api("GET", "/v1/agents")).body.find((x: any) => x.id === agentId).accessToken;
  });

  test("a full grant limited to acme/api: only that repository (any case), no GraphQL; paths naming no repository pass", async () => {
    const put = await putGrant({ access: "full", resources: { repositories: ["acme/api"] } });
    expect(put.status).toBe(200);
    expect(put.body.connections).toEqual([expect.objectContaining({ connectionId, provider: "github", access: "full", allow: [], ask: [], resources: { repositories: ["acme/api"] } })]);

    const r = await probe(agentToken, [
      { name: "allowed", url: "https://api.github.com/repos/acme/api/issues" },
      { name: "upperCase", url: "https://api.github.com/repos/ACME/API/issues" },
      { name: "other", url: "https://api.github.com/repos/acme/other/issues" },
      { name: "gitOther", url: "https://github.com/acme/other.git/info/refs?service=git-upload-pack" },
      { name: "gitAllowed", url: "https://github.com/acme/api.git/info/refs?service=git-upload-pack" },
      { name: "graphql", url: "https://api.github.com/graphql", method: "POST", body: '{"query":"{ viewer { login } }"}' },
      { name: "user", url: "https://api.github.com/user" },
      { name: "uploadsOther", url: "https://uploads.github.com/repos/acme/other/releases/1/assets?name=x.zip", method: "POST", body: "{}" },
      { name: "rawOther", url: "https://raw.githubusercontent.com/acme/other/main/README.md" },
      { name: "rawAllowed", url: "https://raw.githubusercontent.com/Acme/Api/main/README.md" },
      { name: "byId", url: "https://api.github.com/repositories/1296269/issues" },
    ]);
    expectInjected(r.allowed!);
    expect(JSON.parse(r.allowed!.res.headers["x-credgate-connections"]!).map((c: any) => c.id)).toEqual([connectionId]);
    expectInjected(r.upperCase!);
    expectDenied(r.other!, "acme/other", ["acme/api"]);
    expectDenied(r.gitOther!, "acme/other", ["acme/api"]);
    expectInjected(r.gitAllowed!, gitBasic());
    expectDenied(r.graphql!, "the GraphQL API", ["acme/api"]);
    // /user is the OAuth server's account route: 200 only for a valid bearer, so the token was injected.
    expectInjected(r.user!);
    expect(JSON.parse(r.user!.res.body)).toMatchObject({ login: LOGIN });
    expectDenied(r.uploadsOther!, "acme/other", ["acme/api"]);
    expectDenied(r.rawOther!, "acme/other", ["acme/api"]);
    expectInjected(r.rawAllowed!);
    // A repository named by its numeric id cannot be checked against names: denied.
    expectDenied(r.byId!, "repository id 1296269", ["acme/api"]);

    // The exact body of docs/agent-errors.md#summary, byte for byte.
    expect(r.other!.res.body).toBe(
      '{"error":"resource_access_denied","message":"This GitHub connection is limited to specific repositories; acme/other is not one of them.","provider":"github","allowed":["acme/api"]}',
    );
  });

  test("the guard is per agent: the default agent (mode all, no grant) reaches acme/other", async () => {
    const r = await probe(cg.keys.defaultAgentToken, [{ name: "other", url: "https://api.github.com/repos/acme/other/issues" }]);
    expectInjected(r.other!);
  });

  test("a PUT without resources keeps them; resources: null clears them", async () => {
    const kept = await putGrant({ access: "full" });
    expect(kept.status).toBe(200);
    expect(kept.body.connections[0].resources).toEqual({ repositories: ["acme/api"] });
    expectDenied((await probe(agentToken, [{ name: "other", url: "https://api.github.com/repos/acme/other/issues" }])).other!, "acme/other", ["acme/api"]);

    const cleared = await putGrant({ access: "full", resources: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.connections[0].resources).toBeNull();
    const r = await probe(agentToken, [
      { name: "other", url: "https://api.github.com/repos/acme/other/issues" },
      { name: "graphql", url: "https://api.github.com/graphql", method: "POST", body: '{"query":"{ viewer { login } }"}' },
    ]);
    expectInjected(r.other!);
    expectInjected(r.graphql!);
  });

  test("the legacy PUT /agents/{id}/connections with sessionPolicy sets the same guard; null clears it", async () => {
    const put = await cg.api("PUT", `/v1/agents/${agentId}/connections`, {
      body: { connections: [{ appConnectionId: connectionId, sessionPolicy: { repositories: ["acme/other", "Acme/Tools"] } }] },
    });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ success: true });
    expect((await cg.api("GET", `/v1/agents/${agentId}/connections`)).body).toEqual([{ appConnectionId: connectionId, sessionPolicy: { repositories: ["acme/other", "Acme/Tools"] } }]);
    const grants = (await cg.api("GET", `/v1/agents/${agentId}/grants`)).body;
    expect(grants.connections).toEqual([expect.objectContaining({ connectionId, access: "full", resources: { repositories: ["acme/other", "Acme/Tools"] } })]);

    const r = await probe(agentToken, [
      { name: "api", url: "https://api.github.com/repos/acme/api/issues" },
      { name: "other", url: "https://api.github.com/repos/acme/other/issues" },
      { name: "tools", url: "https://api.github.com/repos/acme/tools/pulls" },
      { name: "git", url: "https://github.com/acme/api.git/info/refs?service=git-upload-pack" },
    ]);
    expectDenied(r.api!, "acme/api", ["acme/other", "Acme/Tools"]);
    expectInjected(r.other!);
    expectInjected(r.tools!);
    expectDenied(r.git!, "acme/api", ["acme/other", "Acme/Tools"]);

    const cleared = await cg.api("PUT", `/v1/agents/${agentId}/connections`, { body: { connections: [{ appConnectionId: connectionId, sessionPolicy: null }] } });
    expect(cleared.status).toBe(200);
    expect((await cg.api("GET", `/v1/agents/${agentId}/connections`)).body).toEqual([{ appConnectionId: connectionId, sessionPolicy: null }]);
    expectInjected((await probe(agentToken, [{ name: "api", url: "https://api.github.com/repos/acme/api/issues" }])).api!);
  });
});

// ————— connected → expired —————

describe("no refresh token: connected → expired (docs/injection.md#app-connections), not injected (docs/injection.md#app-connections)", () => {
  const LIFETIME = 3;

  test("inside the refresh window the token is still used; once it has expired the connection is expired and skipped", async () => {
    oauth.setIssueRefreshTokens(false);
    oauth.setAccessTokenLifetime(LIFETIME);
    try {
      expect(expectSuccess(await connectFlow(`?connectionId=${connectionId}`))).toBe(connectionId);
    } finally {
      oauth.setAccessTokenLifetime(3600);
      oauth.setIssueRefreshTokens(true);
    }
    const issued = lastIssued();
    expect(issued.grantType).toBe("authorization_code");
    expect(issued.refreshToken).toBeUndefined();
    const exchange = lastTokenRequest();
    expect(exchange.status).toBe(200);
    const refreshesBefore = oauth.tokenRequests.refresh_token ?? 0;

    // Inside the 60 s refresh window from the start, but not expired: nothing to refresh with, the token is used.
    const early = await apiGet();
    expect(early.res.status).toBe(200);
    expect(early.seenAuth).toBe(`Bearer ${issued.accessToken}`);
    expect((await connection(connectionId)).status).toBe("connected");

    const left = issued.accessTokenExpiresAt.getTime() + 500 - Date.now();
    if (left > 0) await Bun.sleep(left);
    // Reads report the expiry by themselves, before any gateway request tries the token.
    expect((await connection(connectionId)).status).toBe("expired");

    // The first request after expiry finds the token dead: it is not forwarded with it.
    const trigger = await apiGet("/repos/acme/api/issues", cg.keys.defaultAgentToken, { authorization: "Bearer agent-placeholder" });
    if (trigger.res.status === 502) {
      expect(JSON.parse(trigger.res.body).error).toBe("credential_unavailable");
      expect(trigger.seen).toBe(false);
    } else {
      expect(trigger.res.status).toBe(200);
      expect(trigger.seenAuth).not.toBe(`Bearer ${issued.accessToken}`);
    }
    expect(await connection(connectionId)).toMatchObject({ id: connectionId, status: "expired" });
    expect((await cg.api("GET", "/v1/connections?provider=github")).body.find((c: any) => c.id === connectionId).status).toBe("expired");

    // Not a candidate any more: the agent's own header goes through untouched, no connections header.
    const after = await apiGet("/repos/acme/api/issues", cg.keys.defaultAgentToken, { authorization: "Bearer agent-placeholder" });
    expect(after.res.status).toBe(200);
    expect(after.seenAuth).toBe("Bearer agent-placeholder");
    expect(after.res.headers["x-credgate-connections"]).toBeUndefined();
    const git = await probe(cg.keys.defaultAgentToken, [{ name: "git", url: "https://github.com/acme/api.git/info/refs?service=git-upload-pack" }]);
    expect(git.git!.res.status).toBe(200);
    expect(git.git!.seen!.headers.authorization).toBeUndefined();
    // There was never anything to refresh with.
    expect(oauth.tokenRequests.refresh_token ?? 0).toBe(refreshesBefore);

    // Reconnecting brings it back.
    expect(expectSuccess(await connectFlow(`?connectionId=${connectionId}`))).toBe(connectionId);
    expect((await connection(connectionId)).status).toBe("connected");
    expect((await apiGet()).seenAuth).toBe(`Bearer ${lastIssued().accessToken}`);
  }, 30_000);
});
