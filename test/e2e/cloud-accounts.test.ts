// Cloud mode accounts, projects and team (docs/api.md#projects-and-team, docs/api.md#accounts-and-sessions, docs/api.md#credentials, docs/api.md#how-a-request-is-authenticated, docs/api.md#context, docs/api.md#roles), through the real process:
// sign-up with its session cookie, projects with their Default Agent and the creator's key, provisions whose key
// works at once and whose claim link hands membership and keys to the claimer, role changes, removal revoking
// keys and sessions, login throttling, the cross-site check — and in self-hosted mode none of it exists.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { basic, gatewayCa, openConnect, openTlsTunnel, rawRequest, resolveEntries } from "../support/gateway.ts";
import { sql } from "drizzle-orm";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const LOG_HOST = "api.projects-logs.test";

let cloud: RunningCredgate;
let selfHosted: RunningCredgate;
let up: TestUpstream;
let gatewayCaPem = "";

beforeAll(async () => {
  const pki = makePki([LOG_HOST]);
  up = startUpstream(pki);
  // The cloud instance may dial the request-log test's loopback upstream (cloud mode refuses loopback by default).
  const cloudEnv = { CREDGATE_MODE: "cloud", CREDGATE_EGRESS_ALLOW: "127.0.0.1/32", CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([LOG_HOST], up.port) };
  [cloud, selfHosted] = await Promise.all([startCredgate({ env: cloudEnv }), startCredgate()]);
  gatewayCaPem = (await gatewayCa(cloud)).pem;
});

afterAll(async () => {
  await Promise.all([cloud?.stop(), selfHosted?.stop(), up?.stop()]);
});

interface Account {
  cookie: string;
  userId: string;
  organizationId: string;
  projectId: string;
}

const email = (who: string) => `${who}-${crypto.randomUUID().slice(0, 8)}@example.test`;

/** A call as a signed-in person (the session cookie), or with a key. */
function as(who: { cookie: string } | { key: string }, headers: Record<string, string> = {}) {
  const auth: Record<string, string> = "cookie" in who ? { cookie: who.cookie } : { authorization: `Bearer ${who.key}` };
  return (method: string, path: string, body?: unknown) => cloud.api(method, path, { key: null, headers: { ...auth, ...headers }, body });
}

async function signUp(who: string, password = "correct horse battery"): Promise<Account & { email: string; password: string }> {
  const address = email(who);
  const res = await cloud.api("POST", "/v1/auth/signup", { key: null, body: { email: address, password, name: who } });
  expect(res.status).toBe(201);
  const cookie = /^(credgate_session=[^;]+)/.exec(res.headers.get("set-cookie") ?? "")![1]!;
  return { cookie, userId: res.body.user.id, organizationId: res.body.organizationId, projectId: res.body.projectId, email: address, password };
}

describe("self-hosted: the cloud-only routes do not exist", () => {
  test("each answers the unknown-route 404 before authentication", async () => {
    for (const [method, path] of [
      ["POST", "/v1/auth/signup"],
      ["POST", "/v1/claim"],
      ["GET", "/v1/projects"],
      ["POST", "/v1/projects"],
      ["DELETE", "/v1/projects/abc"],
      ["POST", "/v1/team/provisions"],
      ["GET", "/v1/team/members"],
      ["PATCH", "/v1/team/members/abc"],
    ] as const) {
      const res = await selfHosted.api(method, path, { key: null, body: method === "GET" || method === "DELETE" ? undefined : {} });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { message: `Unrecognized request URL (${method}: ${path}).`, type: "not_found_error" } });
    }
  });
});

describe("sign-up and sessions (docs/api.md#accounts-and-sessions)", () => {
  test("sign-up: 201, the session cookie with the docs/api.md#credentials attributes, an organization owned by the person with a Default project and agent", async () => {
    const address = email("ada");
    const res = await cloud.api("POST", "/v1/auth/signup", { key: null, body: { email: address, password: "correct horse battery", name: "Ada" } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ user: { email: address, name: "Ada" } });
    const setCookie = res.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/^credgate_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=2592000$/);
    const me = as({ cookie: /^(credgate_session=[^;]+)/.exec(setCookie)![1]! });
    const session = await me("GET", "/v1/auth/session");
    expect(session.body.organizations).toEqual([{ id: res.body.organizationId, name: "Ada's organization", role: "owner" }]);
    const projects = await me("GET", "/v1/projects");
    expect(projects.body.map((p: any) => [p.id, p.name])).toEqual([[res.body.projectId, "Default"]]);
    const agents = await me("GET", "/v1/agents");
    expect(agents.body.map((a: any) => [a.name, a.isDefault])).toEqual([["Default Agent", true]]);
    // The password is stored as argon2id, never in the clear.
    expect(res.text).not.toContain("correct horse battery");
  });

  test("a taken email → 409; bad input → flat 400", async () => {
    const a = await signUp("bob");
    const again = await cloud.api("POST", "/v1/auth/signup", { key: null, body: { email: a.email.toUpperCase(), password: "another password" } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: { message: "An account with this email already exists", type: "invalid_request_error" } });
    const short = await cloud.api("POST", "/v1/auth/signup", { key: null, body: { email: email("c"), password: "short" } });
    expect(short.status).toBe(400);
    expect(short.body).toEqual({ error: "password must be 8-256 characters" });
    const notEmail = await cloud.api("POST", "/v1/auth/signup", { key: null, body: { email: "nobody", password: "long enough" } });
    expect(notEmail.status).toBe(400);
    expect(notEmail.body).toEqual({ error: "email must be a valid email address" });
  });

  test("login with the password; 10 failures in a row for one email → 429 even with the right password", async () => {
    const a = await signUp("carol");
    const login = (password: string) => cloud.api("POST", "/v1/auth/login", { key: null, body: { email: a.email, password } });
    expect((await login(a.password)).status).toBe(200);
    for (let i = 0; i < 10; i++) {
      const wrong = await login("wrong password");
      expect(wrong.status).toBe(401);
      expect(wrong.body).toEqual({ error: { message: "Invalid email or password", type: "authentication_error" } });
    }
    const blocked = await login(a.password);
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.message).toBe("Too many attempts, try again later");
  });

  test("a cookie write from another origin → 403 Cross-site request rejected; from the public URL it passes", async () => {
    const a = await signUp("dan");
    const evil = await as(a, { origin: "https://evil.example" })("POST", "/v1/agents", { name: "X", identifier: "x" });
    expect(evil.status).toBe(403);
    expect(evil.body.error.message).toBe("Cross-site request rejected");
    const same = await as(a, { origin: `http://localhost:${cloud.apiPort}` })("POST", "/v1/agents", { name: "Y", identifier: "y" });
    expect(same.status).toBe(201);
  });
});

describe("projects (docs/api.md#projects-and-team)", () => {
  test("create: 201 with the creator's key (it works, for that project only), a Default Agent; name rules; slug conflicts", async () => {
    const a = await signUp("erin");
    const me = as(a);
    const made = await me("POST", "/v1/projects", { name: "  Billing Bots  " });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ name: "Billing Bots", slug: "billing-bots", organizationId: a.organizationId });
    expect(made.body.apiKey).toMatch(/^svc_[0-9a-f]{64}$/);
    const key = as({ key: made.body.apiKey });
    expect((await key("GET", "/v1/agents")).body.map((x: any) => x.name)).toEqual(["Default Agent"]);
    // A project key lists only its own project.
    expect((await key("GET", "/v1/projects")).body.map((p: any) => p.id)).toEqual([made.body.id]);
    expect((await me("GET", "/v1/projects")).body.map((p: any) => p.name)).toEqual(["Default", "Billing Bots"]);

    for (const name of ["x", "--", "a".repeat(51)]) {
      const bad = await me("POST", "/v1/projects", { name });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ error: "Name must be 2-50 characters with at least one letter or number" });
    }
    const taken = await me("POST", "/v1/projects", { name: "billing bots!" });
    expect(taken.status).toBe(409);
    expect(taken.body.error.message).toBe('A project with slug "billing-bots" already exists');

    const renamed = await me("PATCH", `/v1/projects/${made.body.id}`, { name: "Invoices" });
    expect(renamed.body).toMatchObject({ id: made.body.id, name: "Invoices", slug: "invoices" });
    expect((await me("GET", `/v1/projects/${made.body.id}`)).body.slug).toBe("invoices");
  });

  test("delete cascades: the project's keys and agent tokens die at once; the only project cannot go", async () => {
    const a = await signUp("finn");
    const me = as(a);
    const made = await me("POST", "/v1/projects", { name: "Doomed" });
    const key = as({ key: made.body.apiKey });
    const secret = await key("POST", "/v1/secrets", { name: "s", type: "generic", value: "doomed-secret-value", hostPattern: "api.doomed.test", injectionConfig: { headerName: "authorization" } });
    expect(secret.status).toBe(201);
    const token = (await key("GET", "/v1/agents")).body[0].accessToken as string;
    const before = await openConnect(cloud.gatewayPort, "api.doomed.test:443", basic(token));
    expect(before.connect.status).toBe(200);
    before.socket.destroy();

    expect((await key("POST", "/v1/apps/resend/connect", { fields: { apiKey: "re_doomed" } })).status).toBe(200);
    expect((await key("POST", "/v1/policy/rules", { name: "doomed rule", action: "block", targets: [{ kind: "network", hostPattern: "api.doomed.test" }] })).status).toBe(201);
    const rowsOf = async () => {
      const out: Record<string, number> = {};
      for (const table of ["agents", "secrets", "policy_rules", "app_connections", "api_keys"]) {
        const [r] = await queryStore<{ n: number | string }>(cloud, sql`SELECT count(*) AS n FROM ${sql.identifier(table)} WHERE project_id = ${made.body.id}`);
        out[table] = Number(r!.n);
      }
      return out;
    };
    for (const [table, n] of Object.entries(await rowsOf())) expect({ table, some: n > 0 }).toEqual({ table, some: true });

    expect((await me("DELETE", `/v1/projects/${made.body.id}`)).status).toBe(204);
    expect(await rowsOf()).toEqual({ agents: 0, secrets: 0, policy_rules: 0, app_connections: 0, api_keys: 0 });
    expect((await key("GET", "/v1/agents")).status).toBe(401);
    expect((await me("GET", `/v1/projects/${made.body.id}`)).status).toBe(404);
    const after = await openConnect(cloud.gatewayPort, "api.doomed.test:443", basic(token));
    expect(after.connect.status).toBe(407);
    after.socket.destroy();

    const only = await me("DELETE", `/v1/projects/${a.projectId}`);
    expect(only.status).toBe(400);
    expect(only.body.error.message).toBe("Cannot delete the only project in the organization");
    // Another organization's project does not exist for this one.
    const other = await signUp("gus");
    expect((await me("GET", `/v1/projects/${other.projectId}`)).status).toBe(404);
    expect((await me("DELETE", `/v1/projects/${other.projectId}`)).status).toBe(404);
  });
});

describe("request logs of an organization with two projects (docs/gateway.md#request-logs)", () => {
  test("/v1/org/logs pages both projects' rows newest first with a cursor; an agentId reads its own project", async () => {
    const owner = await signUp("logs-owner");
    const me = as(owner);
    const orgKey = (await me("GET", "/v1/org/api-key")).body.apiKey as string;
    const firstKey = (await me("GET", "/v1/user/api-key")).body.apiKey as string;
    const created = await me("POST", "/v1/projects", { name: "Second logs project" });
    expect(created.status).toBe(201);
    const secondKey = created.body.apiKey as string;
    const tokenOf = async (key: string) => (await as({ key })("GET", "/v1/agents")).body[0] as { id: string; accessToken: string };
    const [first, second] = [await tokenOf(firstKey), await tokenOf(secondKey)];
    const send = async (token: string, path: string) => {
      const t = await openTlsTunnel(cloud.gatewayPort, `${LOG_HOST}:${up.port}`, token, gatewayCaPem, LOG_HOST);
      t.tls.write(rawRequest("GET", path, `${LOG_HOST}:${up.port}`));
      expect((await t.reader.response()).status).toBe(200);
      t.tls.destroy();
    };
    // Taking turns, so that the two projects' rows interleave in time.
    for (const i of [1, 2, 3]) {
      await send(first.accessToken, `/first-${i}`);
      await send(second.accessToken, `/second-${i}`);
    }
    const org = as({ key: orgKey });
    const all = (await org("GET", "/v1/org/logs?limit=500")).body.data as any[];
    expect(all.map((r) => r.path)).toEqual(["/second-3", "/first-3", "/second-2", "/first-2", "/second-1", "/first-1"]);
    expect(all.map((r) => r.projectId)).toEqual([created.body.id, owner.projectId, created.body.id, owner.projectId, created.body.id, owner.projectId]);

    // Pages of two, cursor to cursor: the same rows in the same order, none twice.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: any[]; nextCursor: string | null } } = await org("GET", `/v1/org/logs?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(page.body.data.length).toBe(2);
      paged.push(...page.body.data.map((r) => r.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(paged).toEqual(all.map((r) => r.id));

    const byAgent = await org("GET", `/v1/org/logs?agentId=${second.id}`);
    expect(byAgent.body.data.map((r: any) => r.path)).toEqual(["/second-3", "/second-2", "/second-1"]);
    const byProject = await org("GET", `/v1/org/logs?projectId=${owner.projectId}`);
    expect(byProject.body.data.map((r: any) => r.path)).toEqual(["/first-3", "/first-2", "/first-1"]);
    // A project key still reads only its own project.
    expect((await as({ key: secondKey })("GET", "/v1/logs")).body.data.map((r: any) => r.path)).toEqual(["/second-3", "/second-2", "/second-1"]);
  });
});

describe("team (docs/api.md#projects-and-team) and claims", () => {
  test("a provision's key works at once; the claimer takes its membership and keys; roles; removal revokes keys and sessions", async () => {
    const owner = await signUp("hana");
    const org = as(owner);
    const provision = await org("POST", "/v1/team/provisions", { role: "admin" });
    expect(provision.status).toBe(201);
    expect(provision.body.claimUrl).toMatch(new RegExp(`^http://localhost:${cloud.apiPort}/claim\\?token=[0-9a-f]{64}$`));
    expect(Date.parse(provision.body.expiresAt) - Date.now()).toBeGreaterThan(7 * 24 * 3600 * 1000 - 60_000);
    const provisionKey = as({ key: provision.body.apiKey });
    expect((await provisionKey("GET", "/v1/agents")).status).toBe(200);
    const pending = (await org("GET", "/v1/team/members")).body;
    expect(pending.map((m: any) => [m.role, m.status])).toEqual([
      ["owner", "active"],
      ["admin", "pending"],
    ]);

    const ivy = await signUp("ivy");
    const token = new URL(provision.body.claimUrl).searchParams.get("token")!;
    const claimed = await as(ivy)("POST", "/v1/claim", { token });
    expect(claimed.status).toBe(200);
    expect(claimed.body).toEqual({ kind: "provision", organizationId: owner.organizationId, projectId: provision.body.projectId });
    const members = (await org("GET", "/v1/team/members")).body;
    expect(members.map((m: any) => [m.email, m.role, m.status])).toEqual([
      [owner.email, "owner", "active"],
      [ivy.email, "admin", "active"],
    ]);
    // The key came along: still working, now Ivy's.
    expect((await provisionKey("GET", "/v1/user")).body.email).toBe(ivy.email);
    expect((await as(ivy)("POST", "/v1/claim", { token })).status).toBe(404);

    const demoted = await org("PATCH", `/v1/team/members/${ivy.userId}`, { role: "member" });
    expect(demoted.body).toMatchObject({ userId: ivy.userId, role: "member", status: "active" });
    const ownerChange = await org("PATCH", `/v1/team/members/${owner.userId}`, { role: "member" });
    expect(ownerChange.status).toBe(400);
    expect(ownerChange.body.error.message).toBe("The organization owner cannot be changed or removed");
    const badRole = await org("PATCH", `/v1/team/members/${ivy.userId}`, { role: "owner" });
    expect(badRole.status).toBe(400);
    expect(badRole.body).toEqual({ error: "role must be one of: admin, member" });
    // A member cannot manage the team.
    expect((await provisionKey("POST", "/v1/team/provisions", {})).status).toBe(403);

    // Ivy's session works in the organization until she is removed; then her key and sessions are gone.
    expect((await as(ivy, { "x-organization-id": owner.organizationId })("GET", "/v1/team/members")).status).toBe(200);
    expect((await org("DELETE", `/v1/team/members/${ivy.userId}`)).status).toBe(204);
    expect((await provisionKey("GET", "/v1/agents")).status).toBe(401);
    expect((await as(ivy)("GET", "/v1/auth/session")).status).toBe(401);
    expect((await org("DELETE", `/v1/team/members/${ivy.userId}`)).status).toBe(404);
  });

  test("an org key dies when its holder is demoted below admin", async () => {
    const owner = await signUp("jo");
    const provision = await as(owner)("POST", "/v1/team/provisions", { role: "admin" });
    const kim = await signUp("kim");
    const token = new URL(provision.body.claimUrl).searchParams.get("token")!;
    expect((await as(kim)("POST", "/v1/claim", { token })).status).toBe(200);
    const kimInOrg = as(kim, { "x-organization-id": owner.organizationId });
    const orgKey = await cloud.api("GET", "/v1/org/api-key", { key: null, headers: { cookie: kim.cookie, "x-organization-id": owner.organizationId } });
    expect(orgKey.status).toBe(200);
    const withOrgKey = as({ key: orgKey.body.apiKey });
    expect((await withOrgKey("GET", "/v1/team/members")).status).toBe(200);
    expect((await as(owner)("PATCH", `/v1/team/members/${kim.userId}`, { role: "member" })).status).toBe(200);
    expect((await withOrgKey("GET", "/v1/team/members")).status).toBe(401);
    expect((await kimInOrg("GET", "/v1/team/members")).status).toBe(200);
  });
});

describe("provisions expire (docs/api.md#projects-and-team: 7 days)", () => {
  test("an expired provision's key stops working, its placeholder leaves the member list, its link is gone", async () => {
    const owner = await signUp("lena");
    const org = as(owner);
    const provision = (await org("POST", "/v1/team/provisions", {})).body;
    expect((await as({ key: provision.apiKey })("GET", "/v1/agents")).status).toBe(200);
    // Seven days later (moved in the store: the clock cannot be).
    await queryStore(cloud, sql`UPDATE claim_links SET expires_at = ${new Date(Date.now() - 1000).toISOString()} WHERE user_id = ${provision.userId}`, true);
    expect((await as({ key: provision.apiKey })("GET", "/v1/agents")).status).toBe(401);
    expect((await org("GET", "/v1/team/members")).body.map((m: any) => m.userId)).toEqual([owner.userId]);
    const late = await signUp("max");
    const claim = await as(late)("POST", "/v1/claim", { token: new URL(provision.claimUrl).searchParams.get("token") });
    expect(claim.status).toBe(404);
    expect(claim.body.error.message).toBe("Claim link not found or expired");
  });
});
