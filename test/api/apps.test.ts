// Apps (docs/injection.md#app-connections, docs/api.md#organization-level-routes organization variants, docs/api.md#records, "App
// configuration"; docs/api.md#how-a-request-is-authenticated query bridge; docs/api.md#error-messages app rows): catalog reads, OAuth authorize and the callback's
// error redirects (no network), direct connect of API-key apps, BYOC configuration.
import { sql } from "drizzle-orm";
import { describe, expect, test } from "bun:test";
import { APPS } from "../../src/apps/index.ts";
import { createTestApi, storedText, type TestApi } from "../support/app.ts";
import { addMember, addOrganization, expectEnvelope, expectFlat, expectUnauthorized, ISO_MS, UUID_V4 } from "./helpers.ts";

const PUBLIC = "https://credgate.example.com";
const GITHUB_ENV = { CREDGATE_PUBLIC_URL: PUBLIC, CREDGATE_OAUTH_GITHUB_CLIENT_ID: "env-client-id", CREDGATE_OAUTH_GITHUB_CLIENT_SECRET: "env-client-secret" };
const UNKNOWN = "00000000-0000-4000-8000-000000000000";
const API_KEY_APPS = ["resend", "cloudflare", "vercel", "datadog"];
const ITEM_KEYS = ["available", "config", "configurable", "connectionType", "connections", "description", "fields", "id", "name"];
const DEFAULT_CONFIG = { settings: {}, hasCredentials: false, enabled: false };
const ORG_CONFIG = { settings: {}, hasCredentials: true, enabled: true, source: "organization" };

type Res = Awaited<ReturnType<TestApi["call"]>>;

/** Every response text seen by a test, to prove a stored value never comes back. */
function recorder(a: TestApi) {
  const seen: string[] = [];
  const call: TestApi["call"] = async (method, path, opts) => {
    const res = await a.call(method, path, opts);
    seen.push(res.text, [...res.headers.entries()].map(([k, v]) => `${k}: ${v}`).join("\n"));
    return res;
  };
  return { call, seen };
}

/** The data dir's SQLite files (db, WAL, SHM), as one latin1 string. */

function redirectParams(res: Res): { base: string; params: Record<string, string> } {
  expect(res.status).toBe(302);
  const location = res.headers.get("location")!;
  const url = new URL(location);
  return { base: `${url.origin}${url.pathname}`, params: Object.fromEntries(url.searchParams) };
}

async function connectResend(a: TestApi, body: Record<string, unknown> = {}, key?: string, prefix = "/v1/apps") {
  const res = await a.call("POST", `${prefix}/resend/connect`, { key, body: { fields: { apiKey: "re_default_value" }, ...body } });
  expect(res.status).toBe(200);
  return res.body.connection as { id: string; label: string };
}

describe("GET /apps", () => {
  test("every catalog app in catalog order with the App item shape; API-key apps available, OAuth apps not until a client is configured", async () => {
    const a = await createTestApi();
    const res = await a.call("GET", "/v1/apps");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.body.map((i: any) => i.id)).toEqual(APPS.map((x) => x.id));
    for (const item of res.body) {
      const app = APPS.find((x) => x.id === item.id)!;
      expect(Object.keys(item).sort()).toEqual(ITEM_KEYS);
      const apiKey = API_KEY_APPS.includes(item.id);
      expect(item).toEqual({
        id: app.id,
        name: app.name,
        description: app.description,
        available: apiKey,
        connectionType: apiKey ? "api_key" : "oauth",
        // What the dashboard's connect and BYOC forms ask for: API-key fields, or the OAuth client pair.
        fields: app.fields.map((f) => ({ name: f.name, label: f.label, secret: f.secret })),
        configurable: !apiKey,
        config: null,
        connections: [],
      });
    }
    expect(res.body.filter((i: any) => i.connectionType === "api_key").map((i: any) => i.id)).toEqual(API_KEY_APPS);
    expect(res.body.find((i: any) => i.id === "resend").fields).toEqual([{ name: "apiKey", label: "API Key", secret: true }]);
    expect(res.body.find((i: any) => i.id === "github").fields.map((f: any) => f.name)).toEqual(["clientId", "clientSecret"]);
  });

  test("CREDGATE_OAUTH_GITHUB_CLIENT_ID/_SECRET make github (only) available; config stays null", async () => {
    const a = await createTestApi(GITHUB_ENV);
    const items = (await a.call("GET", "/v1/apps")).body;
    for (const item of items) expect(item.available).toBe(item.id === "github" || API_KEY_APPS.includes(item.id));
    expect(items.find((i: any) => i.id === "github").config).toBeNull();
    expect((await a.call("GET", "/v1/apps/github")).body.available).toBe(true);
  });

  test("a project config makes the app available; its item shows the config and the visible connections", async () => {
    const a = await createTestApi();
    expect((await a.call("POST", "/v1/apps/gitlab/config", { body: { clientId: "gl-id", clientSecret: "gl-secret" } })).status).toBe(200);
    const gitlab = (await a.call("GET", "/v1/apps/gitlab")).body;
    expect(gitlab.available).toBe(true);
    expect(gitlab.config).toEqual({ settings: { clientId: "gl-id" }, hasCredentials: true, enabled: true });

    const own = await connectResend(a, { label: "Own" });
    await Bun.sleep(3);
    const org = await connectResend(a, { label: "Shared" }, a.orgKey, "/v1/org/apps");
    const resend = (await a.call("GET", "/v1/apps/resend")).body;
    expect(resend.connections.map((c: any) => c.id)).toEqual([org.id, own.id]);
    for (const c of resend.connections) {
      expect(Object.keys(c).sort()).toEqual(["connectedAt", "id", "label", "scopes", "status"]);
      expect(c.status).toBe("connected");
      expect(c.scopes).toEqual([]);
      expect(c.connectedAt).toMatch(ISO_MS);
    }
    expect(resend.connections[0].label).toBe("Shared");
    expect((await a.call("GET", "/v1/apps")).body.find((i: any) => i.id === "resend")).toEqual(resend);
    // Another organization's connections are not listed.
    const other = await addOrganization(a, "Apps other org");
    const theirs = (await a.call("GET", "/v1/apps/resend", { key: other.projectKey })).body;
    expect(theirs.connections).toEqual([]);
  });

  test("GET /apps/{provider}: unknown → flat 404 Unknown provider; auth failures are envelopes", async () => {
    const a = await createTestApi();
    const res = await a.call("GET", "/v1/apps/x");
    expect(res.text).toBe('{"error":"Unknown provider: x"}');
    expectFlat(res, 404, "Unknown provider: x");
    expectFlat(await a.call("GET", "/v1/apps/GitHub"), 404, "Unknown provider: GitHub");
    expectUnauthorized(await a.call("GET", "/v1/apps", { key: null }));
    expectUnauthorized(await a.call("GET", "/v1/apps/github", { key: "svc_nope" }));
    // P: an org key needs X-Project-Id.
    expectUnauthorized(await a.call("GET", "/v1/apps", { key: a.orgKey }));
    expect((await a.call("GET", "/v1/apps", { key: a.orgKey, headers: { "x-project-id": a.projectId } })).status).toBe(200);
  });
});

describe("permission definitions", () => {
  test("GET /apps/permission-definitions: every app with tools, groups read then write, tools {id, name, description} only", async () => {
    const a = await createTestApi();
    const res = await a.call("GET", "/v1/apps/permission-definitions");
    expect(res.status).toBe(200);
    expect(res.body.map((d: any) => d.provider)).toEqual(APPS.filter((x) => x.tools.length > 0).map((x) => x.id));
    for (const def of res.body) {
      const app = APPS.find((x) => x.id === def.provider)!;
      expect(Object.keys(def).sort()).toEqual(["groups", "provider"]);
      const expected = (["read", "write"] as const)
        .map((category) => ({ category, tools: app.tools.filter((t) => t.category === category).map((t) => ({ id: t.id, name: t.name, description: t.description })) }))
        .filter((g) => g.tools.length > 0);
      expect(def.groups).toEqual(expected);
    }
    // Host, path and method mappings are never returned.
    for (const leak of ['"host"', '"path"', '"method"', "api.resend.com", "api.github.com", "/repos/"]) expect(res.text).not.toContain(leak);
  });

  test("GET /apps/{provider}/permission-definition; unknown → flat 404; O·any: org key without a project header", async () => {
    const a = await createTestApi();
    const res = await a.call("GET", "/v1/apps/resend/permission-definition");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      provider: "resend",
      groups: [
        {
          category: "read",
          tools: [
            { id: "list_emails", name: "List emails", description: "List sent emails." },
            { id: "get_email", name: "Get email", description: "Read one sent email." },
            { id: "list_domains", name: "List domains", description: "List sending domains." },
          ],
        },
        {
          category: "write",
          tools: [
            { id: "send_email", name: "Send email", description: "Send one email." },
            { id: "create_batch", name: "Send batch", description: "Send up to 100 emails at once." },
            { id: "cancel_email", name: "Cancel email", description: "Cancel a scheduled email." },
          ],
        },
      ],
    });
    const gh = await a.call("GET", "/v1/apps/github/permission-definition", { key: a.orgKey });
    expect(gh.status).toBe(200);
    expect(gh.body.groups.find((g: any) => g.category === "write").tools.map((t: any) => t.id)).toContain("create_issue");
    expect(gh.text).not.toContain("api.github.com");
    expect((await a.call("GET", "/v1/apps/permission-definitions", { key: a.orgKey })).status).toBe(200);
    expect((await a.call("GET", "/v1/apps/resend/permission-definition", { key: (await addMember(a, "member")).projectKey })).status).toBe(200);
    expectFlat(await a.call("GET", "/v1/apps/x/permission-definition"), 404, "Unknown provider: x");
    expectUnauthorized(await a.call("GET", "/v1/apps/permission-definitions", { key: null }));
  });
});

describe("GET /apps/{provider}/authorize", () => {
  test("302 to the consent URL: client_id, redirect_uri, scope, state, PKCE S256; the state cookie scoped to the callback", async () => {
    const a = await createTestApi(GITHUB_ENV);
    const res = await a.call("GET", "/v1/apps/github/authorize");
    expect(res.status).toBe(302);
    expect(res.text).toBe("");
    const { base, params } = redirectParams(res);
    expect(base).toBe("https://github.com/login/oauth/authorize");
    expect(params.client_id).toBe("env-client-id");
    expect(params.redirect_uri).toBe(`${PUBLIC}/v1/apps/github/callback`);
    expect(params.response_type).toBe("code");
    expect(params.scope).toBe("repo read:user user:email");
    expect(params.state).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(params.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.code_challenge_method).toBe("S256");
    expect(res.headers.get("location")).not.toContain("env-client-secret");
    const cookie = res.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^credgate_oauth_state=[0-9a-f]+; /);
    expect(cookie).toContain("; HttpOnly");
    expect(cookie).toContain("; SameSite=Lax");
    expect(cookie).toContain("; Path=/v1/apps/github/callback");
    expect(cookie).toContain("; Secure"); // the public URL is https
    // Each start is a new flow.
    const again = redirectParams(await a.call("GET", "/v1/apps/github/authorize"));
    expect(again.params.state).not.toBe(params.state);
    expect(again.params.code_challenge).not.toBe(params.code_challenge);
  });

  test("a non-PKCE app gets no challenge; a project config's client id wins over the env", async () => {
    const a = await createTestApi({ ...GITHUB_ENV, CREDGATE_OAUTH_SLACK_CLIENT_ID: "slack-id", CREDGATE_OAUTH_SLACK_CLIENT_SECRET: "s" });
    const slack = redirectParams(await a.call("GET", "/v1/apps/slack/authorize"));
    expect(slack.params.client_id).toBe("slack-id");
    expect(slack.params.code_challenge).toBeUndefined();
    expect(slack.params.code_challenge_method).toBeUndefined();
    await a.call("POST", "/v1/apps/github/config", { body: { clientId: "byoc-id", clientSecret: "byoc-secret" } });
    expect(redirectParams(await a.call("GET", "/v1/apps/github/authorize")).params.client_id).toBe("byoc-id");
  });

  test("errors: not configured, API-key app, unknown provider (flat); unknown connectionId (envelope)", async () => {
    const bare = await createTestApi({ CREDGATE_PUBLIC_URL: PUBLIC });
    const res = await bare.call("GET", "/v1/apps/github/authorize");
    expect(res.text).toBe('{"error":"GitHub is not configured. Missing required credentials."}');
    expectFlat(res, 400, "GitHub is not configured. Missing required credentials.");
    expectFlat(await bare.call("GET", "/v1/apps/google-drive/authorize"), 400, "Google Drive is not configured. Missing required credentials.");
    expectFlat(await bare.call("GET", "/v1/apps/resend/authorize"), 400, 'Provider "resend" is not available');
    expectFlat(await bare.call("GET", "/v1/apps/x/authorize"), 404, "Unknown provider: x");

    const a = await createTestApi(GITHUB_ENV);
    expectEnvelope(await a.call("GET", `/v1/apps/github/authorize?connectionId=${UNKNOWN}`), 404, "Connection not found");
    expectFlat(await a.call("GET", `/v1/apps/github/authorize?agent_name=${"a".repeat(129)}`), 400, "agent_name must be at most 128 characters");
    expect((await a.call("GET", `/v1/apps/github/authorize?agent_name=${"a".repeat(128)}`)).status).toBe(302);
  });

  test("connectionId of an owned connection reconnects; another scope's connection is not found", async () => {
    const a = await createTestApi(GITHUB_ENV);
    const { connections } = a.core.services;
    const project = { scope: "project" as const, projectId: a.projectId, organizationId: a.organizationId };
    const mine = await connections.save(project, { provider: "github", label: "octocat", credential: { kind: "oauth", accessToken: "gho_x", refreshToken: null, expiresAt: null, tokenType: "bearer" }, scopes: [] });
    expect((await a.call("GET", `/v1/apps/github/authorize?connectionId=${mine.id}`)).status).toBe(302);
    // A connection of another provider is not a reconnect target.
    const resend = (await a.call("POST", "/v1/apps/resend/connect", { body: { fields: { apiKey: "k" } } })).body.connection.id;
    expectEnvelope(await a.call("GET", `/v1/apps/github/authorize?connectionId=${resend}`), 404, "Connection not found");
    // An organization connection is reconnected through the org route, not the project one.
    const org = await connections.save({ scope: "organization", organizationId: a.organizationId }, { provider: "github", label: "org", credential: { kind: "oauth", accessToken: "gho_y", refreshToken: null, expiresAt: null, tokenType: "bearer" }, scopes: [] });
    expectEnvelope(await a.call("GET", `/v1/apps/github/authorize?connectionId=${org.id}`), 404, "Connection not found");
    expect((await a.call("GET", `/v1/org/apps/github/authorize?connectionId=${org.id}`, { key: a.orgKey })).status).toBe(302);
    expectEnvelope(await a.call("GET", `/v1/org/apps/github/authorize?connectionId=${mine.id}`, { key: a.orgKey }), 404, "Connection not found");
  });

  test("query bridge: _token (and _project for an org key) stand in for absent headers", async () => {
    const a = await createTestApi(GITHUB_ENV);
    expect((await a.call("GET", `/v1/apps/github/authorize?_token=${a.projectKey}`, { key: null })).status).toBe(302);
    expect((await a.call("GET", `/v1/apps/github/authorize?_token=${a.orgKey}&_project=${a.projectId}`, { key: null })).status).toBe(302);
    expectUnauthorized(await a.call("GET", "/v1/apps/github/authorize?_token=svc_nope", { key: null }));
    expectUnauthorized(await a.call("GET", "/v1/apps/github/authorize", { key: null }));
    // A header wins over the query parameter.
    expectUnauthorized(await a.call("GET", `/v1/apps/github/authorize?_token=${a.projectKey}`, { key: "svc_nope" }));
    // Values no header can carry (found by test/e2e/fuzz.test.ts: once a 500) name nothing: 401 / 403.
    expectUnauthorized(await a.call("GET", "/v1/apps/github/authorize?_token=%F0%9F%99%82", { key: null }));
    expectUnauthorized(await a.call("GET", `/v1/apps/github/authorize?_token=${a.orgKey}&_project=%C3%A9`, { key: null }));
    expectEnvelope(await a.call("GET", "/v1/org/apps/github/authorize?org=%F0%9F%99%82", { key: a.orgKey }), 403, "Not a member of this organization");
    // Only the two browser routes bridge.
    expectUnauthorized(await a.call("GET", `/v1/apps?_token=${a.projectKey}`, { key: null }));
    expectUnauthorized(await a.call("GET", `/v1/apps/github/config?_token=${a.projectKey}`, { key: null }));
  });

  test("project-explicit: an org key without X-Project-Id → 400 envelope; an unknown project → 401", async () => {
    const a = await createTestApi(GITHUB_ENV);
    const res = await a.call("GET", "/v1/apps/github/authorize", { key: a.orgKey });
    expect(res.text).toBe('{"error":{"message":"X-Project-Id header is required","type":"invalid_request_error"}}');
    expectEnvelope(res, 400, "X-Project-Id header is required");
    expectEnvelope(await a.call("GET", `/v1/apps/github/authorize?_token=${a.orgKey}`, { key: null }), 400, "X-Project-Id header is required");
    expect((await a.call("GET", "/v1/apps/github/authorize", { key: a.orgKey, headers: { "x-project-id": a.projectId } })).status).toBe(302);
    expectUnauthorized(await a.call("GET", "/v1/apps/github/authorize", { key: a.orgKey, headers: { "x-project-id": "abcdefghijklmnop" } }));
  });

  test("organization authorize: O·admin, org key without a project header; org=<other id> → 403", async () => {
    const a = await createTestApi(GITHUB_ENV);
    const res = await a.call("GET", "/v1/org/apps/github/authorize", { key: a.orgKey });
    const { params } = redirectParams(res);
    expect(params.client_id).toBe("env-client-id");
    expect(params.redirect_uri).toBe(`${PUBLIC}/v1/apps/github/callback`);
    expect(res.headers.get("set-cookie")).toContain("; Path=/v1/apps/github/callback");
    expect((await a.call("GET", `/v1/org/apps/github/authorize?_token=${a.orgKey}`, { key: null })).status).toBe(302);
    expect((await a.call("GET", `/v1/org/apps/github/authorize?org=${a.organizationId}`, { key: a.orgKey })).status).toBe(302);
    const other = await addOrganization(a, "Authorize other");
    expectEnvelope(await a.call("GET", `/v1/org/apps/github/authorize?org=${other.org.id}`, { key: a.orgKey }), 403, "Not a member of this organization");
    expectEnvelope(await a.call("GET", `/v1/org/apps/github/authorize?_token=${a.orgKey}&org=${other.org.id}`, { key: null }), 403, "Not a member of this organization");
    const member = await addMember(a, "member");
    expectEnvelope(await a.call("GET", "/v1/org/apps/github/authorize", { key: member.projectKey }), 403, "Insufficient permissions");
    const admin = await addMember(a, "admin");
    expect((await a.call("GET", "/v1/org/apps/github/authorize", { key: admin.orgKey })).status).toBe(302);
    expectFlat(await a.call("GET", "/v1/org/apps/resend/authorize", { key: a.orgKey }), 400, 'Provider "resend" is not available');
    expectFlat(await a.call("GET", "/v1/org/apps/x/authorize", { key: a.orgKey }), 404, "Unknown provider: x");
    expectFlat(await a.call("GET", "/v1/org/apps/slack/authorize", { key: a.orgKey }), 400, "Slack is not configured. Missing required credentials.");
  });
});

describe("GET /apps/{provider}/callback: error redirects (no network)", () => {
  const errorUrl = (provider: string, message: string) => `${PUBLIC}/app-connect/${provider}?${new URLSearchParams({ status: "error", message })}`;

  async function start(a: TestApi, path = "/v1/apps/github/authorize", key?: string) {
    const res = await a.call("GET", path, { key });
    const state = new URL(res.headers.get("location")!).searchParams.get("state")!;
    const cookie = /^credgate_oauth_state=([^;]*)/.exec(res.headers.get("set-cookie")!)![1]!;
    return { state, cookie };
  }

  test("missing state → Missing+state+parameter (URLSearchParams encoding); no authentication needed; the state cookie is cleared", async () => {
    const a = await createTestApi(GITHUB_ENV);
    const res = await a.call("GET", "/v1/apps/github/callback?code=abc", { key: null });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(`${PUBLIC}/app-connect/github?status=error&message=Missing+state+parameter`);
    const clear = res.headers.get("set-cookie")!;
    expect(clear).toStartWith("credgate_oauth_state=;");
    expect(clear).toContain("Max-Age=0");
    expect(clear).toContain("Path=/v1/apps/github/callback");
    expect((await a.call("GET", "/v1/apps/github/callback", { key: null })).headers.get("location")).toBe(errorUrl("github", "Missing state parameter"));
  });

  test("bad state, a state of another provider, a valid state without (or with a wrong) cookie → Invalid state parameter", async () => {
    const a = await createTestApi(GITHUB_ENV);
    const invalid = errorUrl("github", "Invalid state parameter");
    expect(invalid).toBe(`${PUBLIC}/app-connect/github?status=error&message=Invalid+state+parameter`);
    for (const state of ["nope", "a.b", "."]) {
      expect((await a.call("GET", `/v1/apps/github/callback?state=${state}&code=c`, { key: null })).headers.get("location")).toBe(invalid);
    }
    const { state, cookie } = await start(a);
    const cb = (q: string, c?: string) => a.call("GET", `/v1/apps/github/callback?${q}`, { key: null, headers: c ? { cookie: `credgate_oauth_state=${c}` } : {} });
    expect((await cb(`state=${encodeURIComponent(state)}&code=c`)).headers.get("location")).toBe(invalid);
    expect((await cb(`state=${encodeURIComponent(state)}&code=c`, "0".repeat(cookie.length))).headers.get("location")).toBe(invalid);
    // A tampered payload fails the signature.
    const [payload, sig] = state.split(".");
    const tampered = `${payload!.slice(0, -2)}AA.${sig}`;
    expect((await cb(`state=${encodeURIComponent(tampered)}&code=c`, cookie)).headers.get("location")).toBe(invalid);
    // The state names github; the gitlab callback rejects it.
    const gl = await a.call("GET", `/v1/apps/gitlab/callback?state=${encodeURIComponent(state)}&code=c`, { key: null, headers: { cookie: `credgate_oauth_state=${cookie}` } });
    expect(gl.headers.get("location")).toBe(errorUrl("gitlab", "Invalid state parameter"));
  });

  test("error=access_denied with a valid state and cookie → Authorization was denied; nothing is created", async () => {
    const a = await createTestApi(GITHUB_ENV);
    const { state, cookie } = await start(a);
    const res = await a.call("GET", `/v1/apps/github/callback?error=access_denied&state=${encodeURIComponent(state)}`, { key: null, headers: { cookie: `credgate_oauth_state=${cookie}` } });
    expect(res.headers.get("location")).toBe(`${PUBLIC}/app-connect/github?status=error&message=Authorization+was+denied`);
    expect((await a.call("GET", "/v1/connections")).body).toEqual([]);
    // Same for an organization flow, on the shared callback.
    const org = await start(a, "/v1/org/apps/github/authorize", a.orgKey);
    const res2 = await a.call("GET", `/v1/apps/github/callback?error=access_denied&state=${encodeURIComponent(org.state)}`, { key: null, headers: { cookie: `credgate_oauth_state=${org.cookie}` } });
    expect(res2.headers.get("location")).toBe(errorUrl("github", "Authorization was denied"));
  });

  test("a deleted project → Project not found; an unknown provider → an error redirect", async () => {
    const a = await createTestApi(GITHUB_ENV);
    const second = await a.core.services.orgs.createProject(a.organizationId, "Doomed");
    await a.core.services.agents.createDefault(second.id);
    const key = await a.core.services.apiKeys.keyFor({ kind: "project", userId: a.core.bootstrap.userId, projectId: second.id, organizationId: a.organizationId });
    const { state, cookie } = await start(a, "/v1/apps/github/authorize", key);
    await a.core.store.query(sql`DELETE FROM projects WHERE id = ${second.id}`);
    const res = await a.call("GET", `/v1/apps/github/callback?code=c&state=${encodeURIComponent(state)}`, { key: null, headers: { cookie: `credgate_oauth_state=${cookie}` } });
    expect(res.headers.get("location")).toBe(errorUrl("github", "Project not found"));
    const unknown = await a.call("GET", "/v1/apps/nope/callback?state=x", { key: null });
    expect(unknown.status).toBe(302);
    expect(unknown.headers.get("location")).toBe(errorUrl("nope", "Unknown provider: nope"));
  });
});

describe("POST /apps/{provider}/connect", () => {
  test("success: {success, connection:{id, label}}; label defaults to the app name; the connection is listed", async () => {
    const a = await createTestApi();
    const res = await a.call("POST", "/v1/apps/resend/connect", { body: { fields: { apiKey: "re_first" } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, connection: { id: expect.stringMatching(UUID_V4), label: "Resend" } });
    const list = (await a.call("GET", "/v1/connections")).body;
    expect(list).toEqual([
      { id: res.body.connection.id, provider: "resend", label: "Resend", status: "connected", scopes: [], scope: "project", metadata: null, connectedAt: expect.stringMatching(ISO_MS) },
    ]);
    const cf = await a.call("POST", "/v1/apps/cloudflare/connect", { body: { fields: { apiToken: "cf_token" }, label: "  Prod CF  " } });
    expect(cf.body.connection.label).toBe("Prod CF");
    const dd = await a.call("POST", "/v1/apps/datadog/connect", { body: { fields: { apiKey: "dd_api", appKey: "dd_app" } } });
    expect(dd.body.connection.label).toBe("Datadog");
    expect((await a.call("POST", "/v1/apps/vercel/connect", { body: { fields: { apiToken: "v" } } })).body.connection.label).toBe("Vercel");
  });

  test("seed messages: Missing fields, `<label> is required` (absent and blank), unknown provider, OAuth app not available", async () => {
    const a = await createTestApi();
    for (const body of [{}, { fields: null }, { fields: "re_x" }, { fields: ["re_x"] }, { label: "x" }]) {
      expectFlat(await a.call("POST", "/v1/apps/resend/connect", { body }), 400, "Missing fields in request body");
    }
    expectFlat(await a.call("POST", "/v1/apps/resend/connect"), 400, "Missing fields in request body");
    for (const fields of [{}, { apiKey: "" }, { apiKey: "   " }, { apiKey: null }, { apiKey: 5 }, { apikey: "re_x" }]) {
      expectFlat(await a.call("POST", "/v1/apps/resend/connect", { body: { fields } }), 400, "API Key is required");
    }
    expectFlat(await a.call("POST", "/v1/apps/cloudflare/connect", { body: { fields: {} } }), 400, "API Token is required");
    expectFlat(await a.call("POST", "/v1/apps/datadog/connect", { body: { fields: { apiKey: "k" } } }), 400, "Application Key is required");
    expectFlat(await a.call("POST", "/v1/apps/x/connect", { body: { fields: { apiKey: "k" } } }), 404, "Unknown provider: x");
    const gh = await a.call("POST", "/v1/apps/github/connect", { body: { fields: { apiKey: "k" } } });
    expect(gh.text).toBe('{"error":"Provider \\"github\\" is not available"}');
    expectFlat(gh, 400, 'Provider "github" is not available');
    expectFlat(await a.call("POST", "/v1/apps/resend/connect", { body: "{bad" }), 400, "Request body must be valid JSON");
    expectFlat(await a.call("POST", "/v1/apps/resend/connect", { body: { fields: { apiKey: "k" }, label: 5 } }), 400, "label must be a string");
    expectEnvelope(await a.call("POST", "/v1/apps/resend/connect", { body: { fields: { apiKey: "k" }, connectionId: UNKNOWN } }), 404, "Connection not found");
    expect((await a.call("GET", "/v1/connections")).body).toEqual([]);
  });

  test("same label (case-insensitive) reconnects the same connection; connectionId reconnects; a new label creates another", async () => {
    const a = await createTestApi();
    const first = await connectResend(a, { label: "Prod" });
    const again = await connectResend(a, { label: "prod", fields: { apiKey: "re_rotated" } });
    expect(again.id).toBe(first.id);
    expect(again.label).toBe("prod");
    const defaultLabel = await connectResend(a);
    expect(defaultLabel.id).not.toBe(first.id);
    expect((await connectResend(a, { label: "RESEND" })).id).toBe(defaultLabel.id);
    const byId = await connectResend(a, { connectionId: first.id, label: "Prod again" });
    expect(byId).toEqual({ id: first.id, label: "Prod again" });
    const list = (await a.call("GET", "/v1/connections?provider=resend")).body;
    expect(list.map((c: any) => c.id).sort()).toEqual([first.id, defaultLabel.id].sort());
    // Reconnecting stores the new value.
    const row = (await a.core.services.connections.byId(first.id))!;
    expect(a.core.services.connections.credential(row)).toEqual({ kind: "api_key", fields: { apiKey: "re_default_value" } });
    // A connection of another provider or scope is not a reconnect target.
    const cf = (await a.call("POST", "/v1/apps/cloudflare/connect", { body: { fields: { apiToken: "t" } } })).body.connection.id;
    expectEnvelope(await a.call("POST", "/v1/apps/resend/connect", { body: { fields: { apiKey: "k" }, connectionId: cf } }), 404, "Connection not found");
    const org = await connectResend(a, { label: "Org" }, a.orgKey, "/v1/org/apps");
    expectEnvelope(await a.call("POST", "/v1/apps/resend/connect", { body: { fields: { apiKey: "k" }, connectionId: org.id } }), 404, "Connection not found");
    // The same label at project level is a new project connection, not the org one.
    expect((await connectResend(a, { label: "org" })).id).not.toBe(org.id);
    expect((await connectResend(a, { label: "ORG" }, a.orgKey, "/v1/org/apps")).id).toBe(org.id);
  });

  test("unknown keys in fields are dropped; values are trimmed", async () => {
    const a = await createTestApi();
    const { id } = await connectResend(a, { fields: { apiKey: "  re_trim  ", extra: "dropped", other: 1 } });
    const row = (await a.core.services.connections.byId(id))!;
    expect(a.core.services.connections.credential(row)).toEqual({ kind: "api_key", fields: { apiKey: "re_trim" } });
  });

  test("the stored value never appears in a response nor in plaintext in the data dir", async () => {
    const a = await createTestApi();
    const { call, seen } = recorder(a);
    const secret = `re_${crypto.randomUUID().replaceAll("-", "")}`;
    const res = await call("POST", "/v1/apps/resend/connect", { body: { fields: { apiKey: secret }, label: "Secret holder" } });
    expect(res.status).toBe(200);
    const id = res.body.connection.id;
    const agent = (await call("GET", "/v1/agents/default")).body.id;
    for (const [m, p] of [
      ["GET", "/v1/apps"],
      ["GET", "/v1/apps/resend"],
      ["GET", "/v1/connections"],
      ["GET", `/v1/connections/${id}`],
      ["GET", `/v1/connections/${id}/grants`],
      ["GET", `/v1/agents/${agent}/grants`],
      ["GET", `/v1/agents/${agent}/effective-credentials`],
      ["GET", "/v1/policy/rules?include=managed"],
    ] as const) {
      expect((await call(m, p)).status).toBe(200);
    }
    expect((await call("PUT", `/v1/agents/${agent}/grants/connections/${id}`, { body: { access: "full" } })).status).toBe(200);
    expect((await call("PATCH", `/v1/connections/${id}`, { body: { label: "Renamed" } })).status).toBe(200);
    const org = await call("POST", "/v1/org/apps/resend/connect", { key: a.orgKey, body: { fields: { apiKey: secret } } });
    expect(org.status).toBe(200);
    expect((await call("GET", "/v1/org/connections", { key: a.orgKey })).status).toBe(200);
    for (const text of seen) expect(text).not.toContain(secret);
    const bytes = await storedText(a);
    expect(bytes.length).toBeGreaterThan(0);
    expect(bytes).not.toContain(secret);
    expect(bytes).not.toContain(secret.slice(3));
  });

  test("project-explicit: an org key without X-Project-Id → 400 envelope; with it, the project's connection", async () => {
    const a = await createTestApi();
    expectEnvelope(await a.call("POST", "/v1/apps/resend/connect", { key: a.orgKey, body: { fields: { apiKey: "k" } } }), 400, "X-Project-Id header is required");
    const res = await a.call("POST", "/v1/apps/resend/connect", { key: a.orgKey, headers: { "x-project-id": a.projectId }, body: { fields: { apiKey: "k" } } });
    expect(res.status).toBe(200);
    expect((await a.call("GET", `/v1/connections/${res.body.connection.id}`)).body.scope).toBe("project");
    expectUnauthorized(await a.call("POST", "/v1/apps/resend/connect", { key: null, body: { fields: { apiKey: "k" } } }));
  });

  test("organization connect: O·admin, scope organization, visible to the projects", async () => {
    const a = await createTestApi();
    const res = await a.call("POST", "/v1/org/apps/resend/connect", { key: a.orgKey, body: { fields: { apiKey: "k" } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, connection: { id: expect.stringMatching(UUID_V4), label: "Resend" } });
    expect((await a.call("GET", `/v1/connections/${res.body.connection.id}`)).body.scope).toBe("organization");
    const member = await addMember(a, "member");
    expectEnvelope(await a.call("POST", "/v1/org/apps/resend/connect", { key: member.projectKey, body: { fields: { apiKey: "k" } } }), 403, "Insufficient permissions");
    // A member may connect at project level (project·any).
    expect((await a.call("POST", "/v1/apps/resend/connect", { key: member.projectKey, body: { fields: { apiKey: "k" } } })).status).toBe(200);
    expectFlat(await a.call("POST", "/v1/org/apps/github/connect", { key: a.orgKey, body: { fields: {} } }), 400, 'Provider "github" is not available');
    expectFlat(await a.call("POST", "/v1/org/apps/resend/connect", { key: a.orgKey, body: {} }), 400, "Missing fields in request body");
  });
});

describe("app configuration (BYOC)", () => {
  test("GET default; POST {clientId, clientSecret, extra} → settings {clientId} only; the secret is never returned", async () => {
    const a = await createTestApi();
    const { call, seen } = recorder(a);
    const def = await call("GET", "/v1/apps/github/config");
    expect(def.status).toBe(200);
    expect(def.body).toEqual(DEFAULT_CONFIG);
    const save = await call("POST", "/v1/apps/github/config", { body: { clientId: " gh-client ", clientSecret: "gh-very-secret", extra: "dropped" } });
    expect(save.status).toBe(200);
    expect(save.body).toEqual({ success: true });
    expect((await call("GET", "/v1/apps/github/config")).body).toEqual({ settings: { clientId: "gh-client" }, hasCredentials: true, enabled: true });
    expect((await call("GET", "/v1/apps/github")).body.config).toEqual({ settings: { clientId: "gh-client" }, hasCredentials: true, enabled: true });
    await call("GET", "/v1/apps");
    for (const text of seen) expect(text).not.toContain("gh-very-secret");
    expect(await storedText(a)).not.toContain("gh-very-secret");
    expect(await a.core.services.appConfigs.oauthClient({ scope: "project", projectId: a.projectId, organizationId: a.organizationId }, "github")).toEqual({ clientId: "gh-client", clientSecret: "gh-very-secret" });
  });

  test("an empty clientSecret keeps the stored one; a new one replaces it", async () => {
    const a = await createTestApi();
    const owner = { scope: "project" as const, projectId: a.projectId, organizationId: a.organizationId };
    await a.call("POST", "/v1/apps/github/config", { body: { clientId: "id1", clientSecret: "secret1" } });
    expect((await a.call("POST", "/v1/apps/github/config", { body: { clientId: "id2", clientSecret: "" } })).status).toBe(200);
    expect(await a.core.services.appConfigs.oauthClient(owner, "github")).toEqual({ clientId: "id2", clientSecret: "secret1" });
    expect((await a.call("POST", "/v1/apps/github/config", { body: { clientId: "id3" } })).status).toBe(200);
    expect(await a.core.services.appConfigs.oauthClient(owner, "github")).toEqual({ clientId: "id3", clientSecret: "secret1" });
    await a.call("POST", "/v1/apps/github/config", { body: { clientId: "id3", clientSecret: "secret2" } });
    expect(await a.core.services.appConfigs.oauthClient(owner, "github")).toEqual({ clientId: "id3", clientSecret: "secret2" });
  });

  test("validation: Invalid request body; API-key app → does not support app configuration; unknown provider", async () => {
    const a = await createTestApi();
    for (const body of [{}, { clientSecret: "s" }, { clientId: "", clientSecret: "s" }, { clientId: "  ", clientSecret: "s" }, { clientId: 5, clientSecret: "s" }, { clientId: "id" }, { clientId: "id", clientSecret: "" }, [], '"x"', "null", "5"]) {
      expectFlat(await a.call("POST", "/v1/apps/github/config", { body }), 400, "Invalid request body");
    }
    expectFlat(await a.call("POST", "/v1/apps/github/config"), 400, "Invalid request body");
    expectFlat(await a.call("POST", "/v1/apps/resend/config", { body: { apiKey: "x" } }), 400, 'Provider "resend" does not support app configuration');
    expectFlat(await a.call("POST", "/v1/apps/x/config", { body: { clientId: "a", clientSecret: "b" } }), 404, "Unknown provider: x");
    expectFlat(await a.call("GET", "/v1/apps/x/config"), 404, "Unknown provider: x");
    expectFlat(await a.call("DELETE", "/v1/apps/x/config"), 404, "Unknown provider: x");
    expect((await a.call("GET", "/v1/apps/github/config")).body).toEqual(DEFAULT_CONFIG);
  });

  test("DELETE → {success:true}, then 404 App config not found; PATCH toggle: enabled is required / 404 / flips availability", async () => {
    const a = await createTestApi();
    expectEnvelope(await a.call("DELETE", "/v1/apps/github/config"), 404, "App config not found");
    expectFlat(await a.call("PATCH", "/v1/apps/github/config/toggle", { body: {} }), 400, "enabled is required");
    expectFlat(await a.call("PATCH", "/v1/apps/github/config/toggle"), 400, "Request body must be a JSON object");
    expectFlat(await a.call("PATCH", "/v1/apps/github/config/toggle", { body: { enabled: null } }), 400, "enabled is required");
    expectFlat(await a.call("PATCH", "/v1/apps/github/config/toggle", { body: { enabled: "true" } }), 400, "enabled must be a boolean");
    expectEnvelope(await a.call("PATCH", "/v1/apps/github/config/toggle", { body: { enabled: true } }), 404, "App config not found");
    expectFlat(await a.call("PATCH", "/v1/apps/x/config/toggle", { body: { enabled: true } }), 404, "Unknown provider: x");

    await a.call("POST", "/v1/apps/github/config", { body: { clientId: "id", clientSecret: "s" } });
    const available = async () => (await a.call("GET", "/v1/apps/github")).body.available;
    expect(await available()).toBe(true);
    const off = await a.call("PATCH", "/v1/apps/github/config/toggle", { body: { enabled: false } });
    expect(off.status).toBe(200);
    expect(off.body).toEqual({ success: true });
    expect((await a.call("GET", "/v1/apps/github/config")).body).toEqual({ settings: { clientId: "id" }, hasCredentials: true, enabled: false });
    expect(await available()).toBe(false);
    expectFlat(await a.call("GET", "/v1/apps/github/authorize"), 400, "GitHub is not configured. Missing required credentials.");
    await a.call("PATCH", "/v1/apps/github/config/toggle", { body: { enabled: true } });
    expect(await available()).toBe(true);
    // Saving enables a disabled config.
    await a.call("PATCH", "/v1/apps/github/config/toggle", { body: { enabled: false } });
    await a.call("POST", "/v1/apps/github/config", { body: { clientId: "id", clientSecret: "" } });
    expect((await a.call("GET", "/v1/apps/github/config")).body.enabled).toBe(true);

    const del = await a.call("DELETE", "/v1/apps/github/config");
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expect((await a.call("GET", "/v1/apps/github/config")).body).toEqual(DEFAULT_CONFIG);
    expect(await available()).toBe(false);
    expectEnvelope(await a.call("DELETE", "/v1/apps/github/config"), 404, "App config not found");
  });

  test("config changes never delete connections", async () => {
    const a = await createTestApi();
    const owner = { scope: "project" as const, projectId: a.projectId, organizationId: a.organizationId };
    await a.call("POST", "/v1/apps/github/config", { body: { clientId: "id", clientSecret: "s" } });
    const conn = await a.core.services.connections.save(owner, { provider: "github", label: "octo", credential: { kind: "oauth", accessToken: "t", refreshToken: null, expiresAt: null, tokenType: "bearer" }, scopes: ["repo"] });
    await a.call("PATCH", "/v1/apps/github/config/toggle", { body: { enabled: false } });
    await a.call("DELETE", "/v1/apps/github/config");
    expect((await a.call("GET", `/v1/connections/${conn.id}`)).body).toMatchObject({ id: conn.id, status: "connected", scopes: ["repo"] });
  });

  test("organization config: O·admin; shows as source organization in the project view and makes the app available; a project config wins", async () => {
    const a = await createTestApi();
    const member = await addMember(a, "member");
    expectEnvelope(await a.call("POST", "/v1/org/apps/github/config", { key: member.projectKey, body: { clientId: "o", clientSecret: "s" } }), 403, "Insufficient permissions");
    expectEnvelope(await a.call("GET", "/v1/org/apps/github/config", { key: member.projectKey }), 403, "Insufficient permissions");
    expect((await a.call("GET", "/v1/org/apps/github/config", { key: a.orgKey })).body).toEqual(DEFAULT_CONFIG);

    const save = await a.call("POST", "/v1/org/apps/github/config", { key: a.orgKey, body: { clientId: "org-id", clientSecret: "org-secret" } });
    expect(save.status).toBe(200);
    expect(save.body).toEqual({ success: true });
    expect((await a.call("GET", "/v1/org/apps/github/config", { key: a.orgKey })).body).toEqual({ settings: { clientId: "org-id" }, hasCredentials: true, enabled: true });
    const projectView = await a.call("GET", "/v1/apps/github/config");
    expect(projectView.body).toEqual(ORG_CONFIG);
    expect(projectView.text).not.toContain("org-id");
    const item = (await a.call("GET", "/v1/apps/github")).body;
    expect(item.available).toBe(true);
    expect(item.config).toEqual(ORG_CONFIG);
    expect(redirectParams(await a.call("GET", "/v1/apps/github/authorize")).params.client_id).toBe("org-id");
    expect(redirectParams(await a.call("GET", "/v1/org/apps/github/authorize", { key: a.orgKey })).params.client_id).toBe("org-id");
    // The project cannot delete or toggle the organization's config through its own routes.
    expectEnvelope(await a.call("DELETE", "/v1/apps/github/config"), 404, "App config not found");
    expectEnvelope(await a.call("PATCH", "/v1/apps/github/config/toggle", { body: { enabled: false } }), 404, "App config not found");

    // A disabled organization config no longer applies.
    expect((await a.call("PATCH", "/v1/org/apps/github/config/toggle", { key: a.orgKey, body: { enabled: false } })).status).toBe(200);
    expect((await a.call("GET", "/v1/apps/github/config")).body).toEqual(DEFAULT_CONFIG);
    expect((await a.call("GET", "/v1/apps/github")).body.available).toBe(false);
    await a.call("PATCH", "/v1/org/apps/github/config/toggle", { key: a.orgKey, body: { enabled: true } });

    // The project's own config wins.
    await a.call("POST", "/v1/apps/github/config", { body: { clientId: "proj-id", clientSecret: "proj-secret" } });
    expect((await a.call("GET", "/v1/apps/github/config")).body).toEqual({ settings: { clientId: "proj-id" }, hasCredentials: true, enabled: true });
    expect(redirectParams(await a.call("GET", "/v1/apps/github/authorize")).params.client_id).toBe("proj-id");
    // Disabled, it falls back to the organization's client.
    await a.call("PATCH", "/v1/apps/github/config/toggle", { body: { enabled: false } });
    expect(redirectParams(await a.call("GET", "/v1/apps/github/authorize")).params.client_id).toBe("org-id");

    expect((await a.call("DELETE", "/v1/org/apps/github/config", { key: a.orgKey })).body).toEqual({ success: true });
    expectEnvelope(await a.call("DELETE", "/v1/org/apps/github/config", { key: a.orgKey }), 404, "App config not found");
    expectFlat(await a.call("POST", "/v1/org/apps/resend/config", { key: a.orgKey, body: {} }), 400, 'Provider "resend" does not support app configuration');
    expectFlat(await a.call("POST", "/v1/org/apps/github/config", { key: a.orgKey, body: { clientId: "x" } }), 400, "Invalid request body");
    // Another organization never sees it.
    const other = await addOrganization(a, "Config other");
    expect((await a.call("GET", "/v1/org/apps/github/config", { key: other.orgKey })).body).toEqual(DEFAULT_CONFIG);
  });
});
