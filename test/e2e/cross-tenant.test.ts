// Isolation (issue 14 item 5): no key, session or partner of one tenant reads or changes anything of another.
// Two cloud organizations (each with a project, agent, secret, policy rule, app connection, held approval and a
// provisioned member) and two partners. Every route of /v1/openapi.json that takes an id is called with the other
// tenant's ids, by every credential kind of the first tenant: the answer must be a refusal (401/403/404; each write
// gets a body that passes validation, so the refusal is the ownership check's), it must not contain the other tenant's names or secret values, and afterwards the other
// tenant's records are all still there, unchanged. Lists read with each credential hold none of them either, and a
// project key given the other tenant's X-Project-Id still acts on its own project only (the header is ignored).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { curlThroughGateway } from "../support/curl.ts";
import { eventually, gatewayCa, resolveEntries } from "../support/gateway.ts";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.tenant.test";

let cg: RunningCredgate;
let up: TestUpstream;

interface Tenant {
  label: string;
  cookie: string;
  userId: string;
  organizationId: string;
  projectId: string;
  projectKey: string;
  orgKey: string;
  agentId: string;
  agentToken: string;
  secretId: string;
  secretValue: string;
  orgSecretId: string;
  ruleId: string;
  connectionId: string;
  approvalId: string;
  channelId: string;
  signingSecret: string;
  rememberedId: string;
  budgetId: string;
  orgBudgetId: string;
  memberUserId: string;
  partnerKey: string;
  partnerOrgId: string;
  mcpServerId: string;
  /** Every name this tenant gave a record: none may appear in another tenant's answers. */
  names: string[];
}

const cookieOf = (res: { headers: Headers }) => /^(credgate_session=[^;]+)/.exec(res.headers.get("set-cookie") ?? "")![1]!;

async function makeTenant(label: string): Promise<Tenant> {
  const tag = `${label}-${crypto.randomUUID().slice(0, 6)}`;
  const signup = await cg.api("POST", "/v1/auth/signup", { key: null, body: { email: `${tag}@example.test`, password: "tenant password", name: `Person ${tag}` } });
  expect(signup.status).toBe(201);
  const cookie = cookieOf(signup);
  const session = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => cg.api(method, path, { key: null, headers: { cookie, ...headers }, body });
  const projectKey = (await session("GET", "/v1/user/api-key")).body.apiKey as string;
  const orgKey = (await session("GET", "/v1/org/api-key")).body.apiKey as string;
  const p = (method: string, path: string, body?: unknown) => cg.api(method, path, { key: projectKey, body });
  const o = (method: string, path: string, body?: unknown) => cg.api(method, path, { key: orgKey, body });

  const agent = await p("POST", "/v1/agents", { name: `Agent ${tag}`, identifier: `agent-${tag}`, mode: "all" });
  const agentToken = (await p("GET", "/v1/agents")).body.find((a: any) => a.id === agent.body.id).accessToken;
  const secretValue = `secret-value-${tag}-0123456789`;
  const secret = await p("POST", "/v1/secrets", { name: `Secret ${tag}`, type: "generic", value: secretValue, hostPattern: HOST, injectionConfig: { headerName: "x-tenant" } });
  const orgSecret = await o("POST", "/v1/org/secrets", { name: `OrgSecret ${tag}`, type: "generic", value: `org-${secretValue}`, hostPattern: `org.${HOST}`, injectionConfig: { headerName: "x-org" } });
  const rule = await p("POST", "/v1/policy/rules", { name: `Rule ${tag}`, action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HOST, pathPattern: "/held/*" }] });
  expect((await p("POST", "/v1/policy/publish")).status).toBe(200);
  const connection = await p("POST", "/v1/apps/resend/connect", { fields: { apiKey: `re_${tag}` } });
  const provision = await o("POST", "/v1/team/provisions", { role: "member" });
  for (const r of [agent, secret, orgSecret, rule, provision]) expect(r.status).toBe(201);
  expect(connection.status).toBe(200);
  // A held request, so that there is an approval to aim at.
  void curlThroughGateway(cg, `https://${HOST}:${up.port}/held/${tag}`, { caFile, agentToken, maxTime: 60 }).catch(() => {});
  const approval = await eventually(async () => ((await p("GET", "/v1/approvals/pending")).body?.requests ?? []).find((r: any) => r.path === `/held/${tag}`) ?? null, 15_000, 50);
  // A notification channel (its URL and signing secret are the tenant's) and a remembered approval.
  const channel = await p("POST", "/v1/notifications/channels", { kind: "webhook", url: `https://hooks-${tag}.example.test/credgate` });
  expect(channel.status).toBe(201);
  expect((await o("POST", "/v1/org/notifications/channels", { kind: "ntfy", url: `https://ntfy-${tag}.example.test/topic` })).status).toBe(201);
  const remembering = curlThroughGateway(cg, `https://${HOST}:${up.port}/held/${tag}-remembered`, { caFile, agentToken, maxTime: 60 });
  const toRemember = await eventually(async () => ((await p("GET", "/v1/approvals/pending")).body?.requests ?? []).find((r: any) => r.path === `/held/${tag}-remembered`) ?? null, 15_000, 50);
  expect((await p("POST", `/v1/approvals/${toRemember.id}/decision`, { decision: "approve", remember: { minutes: 60 } })).status).toBe(200);
  expect((await remembering).status).toBe(200);
  const remembered = (await p("GET", "/v1/approvals/remembered")).body[0];
  const budget = await p("POST", "/v1/budgets", { scope: "agent", agentId: agent.body.id, limitCents: 500, period: "day" });
  const orgBudget = await o("POST", "/v1/org/budgets", { limitCents: 5000, period: "month" });
  for (const r of [budget, orgBudget]) expect(r.status).toBe(201);
  // An MCP server waiting for its login (nothing is fetched until then).
  const mcp = await p("POST", "/v1/mcp-servers", { name: `Mcp ${tag}`, url: `https://mcp-${tag}.example.test/mcp` });
  expect(mcp.status).toBe(201);

  const partner = await runCli(["partner", "create", "--name", `Partner ${tag}`, "--owner-email", `partner-${tag}@example.test`, "--data-dir", cg.dataDir, "--json"], { ...cg.env, CREDGATE_MODE: "cloud", CREDGATE_PUBLIC_URL: `http://localhost:${cg.apiPort}` });
  const partnerKey = JSON.parse(partner.stdout).partnerKey as string;
  const partnerOrg = await cg.api("POST", "/v1/partner/orgs", { key: partnerKey, body: { name: `PartnerOrg ${tag}` } });
  const connections = (await p("GET", "/v1/connections")).body;
  return {
    label,
    cookie,
    userId: signup.body.user.id,
    organizationId: signup.body.organizationId,
    projectId: signup.body.projectId,
    projectKey,
    orgKey,
    agentId: agent.body.id,
    agentToken,
    secretId: secret.body.id,
    secretValue,
    orgSecretId: orgSecret.body.id,
    ruleId: rule.body.id,
    connectionId: connections[0].id,
    approvalId: approval.id,
    channelId: channel.body.id,
    signingSecret: channel.body.signingSecret,
    rememberedId: remembered.id,
    budgetId: budget.body.id,
    orgBudgetId: orgBudget.body.id,
    memberUserId: provision.body.userId,
    partnerKey,
    partnerOrgId: partnerOrg.body.organizationId,
    mcpServerId: mcp.body.id,
    names: [`Mcp ${tag}`, `mcp-${tag}`, `Person ${tag}`, `Agent ${tag}`, `agent-${tag}`, `Secret ${tag}`, `OrgSecret ${tag}`, `Rule ${tag}`, `PartnerOrg ${tag}`, secretValue, `re_${tag}`, `${tag}@example.test`, `hooks-${tag}`, `ntfy-${tag}`],
  };
}

let caFile = "";
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  const pki = makePki([HOST, `org.${HOST}`]);
  up = startUpstream(pki);
  cg = await startCredgate({ env: { CREDGATE_MODE: "cloud", CREDGATE_EGRESS_ALLOW: "127.0.0.1/32", CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([HOST, `org.${HOST}`], up.port) } });
  caFile = (await gatewayCa(cg)).file;
  a = await makeTenant("a");
  b = await makeTenant("b");
}, 120_000);

afterAll(async () => {
  await cg?.stop("SIGKILL");
  await up?.stop();
});

/** The other tenant's id for a path parameter, by its name (and the route's template where a name is shared). */
function idFor(param: string, t: Tenant, template: string): string | null {
  switch (param) {
    case "budgetId":
      return template.startsWith("/org/") ? t.orgBudgetId : t.budgetId;
    case "agentId":
      return t.agentId;
    case "secretId":
      return t.secretId;
    case "projectId":
      return t.projectId;
    case "userId":
      return t.memberUserId;
    case "approvalId":
      return t.approvalId;
    case "connectionId":
    case "key":
      return t.connectionId;
    case "ruleId":
    case "id":
      return t.ruleId;
    case "orgId":
      return t.partnerOrgId;
    case "channelId":
      return t.channelId;
    case "rememberedId":
      return t.rememberedId;
    case "mcpServerId":
      return t.mcpServerId;
    default:
      return null;
  }
}

/** A body that passes each write route's validation, so the refusal comes from the ownership check. */
const VALID_BODIES: Record<string, unknown> = {
  "PATCH /agents/{agentId}": { name: "Renamed by A" },
  "PATCH /budgets/{budgetId}": { limitCents: 100 },
  "PATCH /org/budgets/{budgetId}": { limitCents: 100 },
  "PATCH /connections/{connectionId}": { label: "relabelled by A" },
  "PATCH /org/connections/{key}": { label: "relabelled by A" },
  "PATCH /policy/rules/{ruleId}": { name: "Renamed by A" },
  "PATCH /org/policy/rules/{ruleId}": { name: "Renamed by A" },
  "PATCH /secrets/{secretId}": { name: "Renamed by A" },
  "PATCH /org/secrets/{secretId}": { name: "Renamed by A" },
  "PATCH /partner/secrets/{secretId}": { name: "Renamed by A" },
  "PATCH /projects/{projectId}": { name: "Renamed by A" },
  "PATCH /team/members/{userId}": { role: "admin" },
  "PATCH /partner/members/{userId}/role": { role: "admin" },
  "POST /approvals/{approvalId}/decision": { decision: "approve" },
  "POST /approvals/{approvalId}/link-decision": { token: "0".repeat(64), decision: "approve" },
  "PATCH /notifications/channels/{channelId}": { enabled: false },
  "PATCH /org/notifications/channels/{channelId}": { enabled: false },
  "POST /partner/orgs/{orgId}/projects": { name: "Made by A" },
  "POST /partner/orgs/{orgId}/secrets/{secretId}/budget": { limitCents: 100 },
  "PUT /agents/{agentId}/connections": { connections: [] },
  "PUT /agents/{agentId}/grants/connections/{connectionId}": { access: "full" },
  "PATCH /mcp-servers/{mcpServerId}": { name: "Renamed by A" },
  "PUT /agents/{agentId}/grants/mcp-servers/{mcpServerId}": { access: "full" },
  "PUT /agents/{agentId}/secrets": { secretIds: [] },
};

/** A's credentials, each as a request maker. */
function credentialsOf(t: Tenant): [string, (method: string, path: string, body?: unknown) => Promise<{ status: number; text: string }>][] {
  return [
    ["project key", (m, path, body) => cg.api(m, path, { key: t.projectKey, body })],
    ["org key", (m, path, body) => cg.api(m, path, { key: t.orgKey, body })],
    ["session", (m, path, body) => cg.api(m, path, { key: null, headers: { cookie: t.cookie }, body })],
    ["partner key", (m, path, body) => cg.api(m, path, { key: t.partnerKey, body })],
  ];
}

describe("cross-tenant isolation", () => {
  test("every id route, with every credential kind of tenant A, aimed at tenant B: refused, nothing of B in the answer", async () => {
    const doc = (await (await fetch(`${cg.apiUrl}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const tried: string[] = [];
    for (const [template, methods] of Object.entries(doc.paths)) {
      const params = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      // {provider} and {agent} name catalog entries (github, codex), not records of a tenant.
      if (params.length === 0 || params.includes("provider") || params.includes("agent")) continue;
      const ids = params.map((p) => idFor(p, b, template));
      if (ids.some((id) => id === null)) throw new Error(`no id of the other tenant for ${template}`);
      // The document's paths are below the version prefix.
      let path = `/v1${template}`;
      params.forEach((p, i) => (path = path.replace(`{${p}}`, ids[i]!)));
      for (const method of Object.keys(methods).map((m) => m.toUpperCase())) {
        // GET /org/connections/{key} reads {key} as a provider (the caller's own connections of it).
        if (method === "GET" && template === "/org/connections/{key}") continue;
        for (const [kind, call] of credentialsOf(a)) {
          const body = method === "GET" || method === "DELETE" ? undefined : (VALID_BODIES[`${method} ${template}`] ?? {});
          const r = await call(method, path, body);
          tried.push(`${kind} ${method} ${template} → ${r.status}`);
          // The route exists (the refusal is the route's own, not an unknown URL), and it refused.
          expect({ call: `${kind} ${method} ${template}`, unknownRoute: r.text.includes("Unrecognized request URL") }).toEqual({ call: `${kind} ${method} ${template}`, unknownRoute: false });
          expect({ call: `${kind} ${method} ${template}`, refused: [401, 403, 404].includes(r.status) }).toEqual({ call: `${kind} ${method} ${template}`, refused: true });
          for (const name of b.names) expect({ call: `${kind} ${method} ${template}`, leaked: r.text.includes(name) ? name : null }).toEqual({ call: `${kind} ${method} ${template}`, leaked: null });
        }
      }
    }
    expect(tried.length).toBeGreaterThan(100);
  });

  test("B's records are all still there and unchanged; B's keys and agent still work", async () => {
    const p = (path: string) => cg.api("GET", path, { key: b.projectKey });
    expect((await p(`/v1/agents/${b.agentId}`)).body.name).toStartWith("Agent b-");
    expect((await p(`/v1/secrets/${b.secretId}`)).body.name).toStartWith("Secret b-");
    expect((await cg.api("GET", `/v1/org/secrets/${b.orgSecretId}`, { key: b.orgKey })).status).toBe(200);
    expect((await p("/v1/policy/rules")).body.map((r: any) => r.id)).toContain(b.ruleId);
    expect((await p("/v1/connections")).body.map((c: any) => c.id)).toEqual([b.connectionId]);
    expect((await p("/v1/approvals/pending")).body.requests.map((r: any) => r.id)).toContain(b.approvalId);
    expect((await p("/v1/notifications/channels")).body).toEqual([expect.objectContaining({ id: b.channelId, enabled: true })]);
    expect((await p("/v1/approvals/remembered")).body.map((r: any) => r.id)).toEqual([b.rememberedId]);
    expect((await p(`/v1/mcp-servers/${b.mcpServerId}`)).body.name).toStartWith("Mcp b-");
    expect((await cg.api("GET", "/v1/team/members", { key: b.orgKey })).body.map((m: any) => m.userId)).toContain(b.memberUserId);
    expect((await cg.api("GET", `/v1/partner/orgs/${b.partnerOrgId}`, { key: b.partnerKey })).body.status).toBe("unclaimed");
    const r = await curlThroughGateway(cg, `https://${HOST}:${up.port}/still-works`, { caFile, agentToken: b.agentToken });
    expect(r.status).toBe(200);
    expect(up.seen.at(-1)!.headers["x-tenant"]).toBe(b.secretValue);
  });

  test("lists and the X-Project-Id / X-Organization-Id headers never reach the other tenant", async () => {
    for (const [kind, call] of credentialsOf(a)) {
      for (const path of ["/v1/agents", "/v1/secrets", "/v1/org/secrets", "/v1/policy/rules", "/v1/connections", "/v1/approvals/pending", "/v1/approvals/remembered", "/v1/notifications/channels", "/v1/org/notifications/channels", "/v1/mcp-servers", "/v1/notifications/deliveries", "/v1/logs", "/v1/projects", "/v1/team/members", "/v1/partner/orgs", "/v1/partner/secrets", "/v1/auth/session"]) {
        const res = await call("GET", path);
        for (const name of b.names) expect({ kind, path, leaked: res.text.includes(name) ? name : null }).toEqual({ kind, path, leaked: null });
      }
    }
    // The other tenant's project or organization named in a header: refused, not served.
    const viaOrgKey = await cg.api("GET", "/v1/agents", { key: a.orgKey, headers: { "x-project-id": b.projectId } });
    expect(viaOrgKey.status).toBe(401);
    const viaSession = await cg.api("GET", "/v1/agents", { key: null, headers: { cookie: a.cookie, "x-project-id": b.projectId } });
    expect(viaSession.status).toBe(401);
    const orgHeader = await cg.api("GET", "/v1/team/members", { key: null, headers: { cookie: a.cookie, "x-organization-id": b.organizationId } });
    expect(orgHeader.status).toBe(403);
    expect(orgHeader.body.error.message).toBe("Not a member of this organization");
    // A's agent token does not get B's secret at the gateway.
    const r = await curlThroughGateway(cg, `https://${HOST}:${up.port}/a-agent`, { caFile, agentToken: a.agentToken });
    expect(r.status).toBe(200);
    expect(up.seen.at(-1)!.headers["x-tenant"]).toBe(a.secretValue);
  });

  test("A's project key with B's X-Project-Id: the header is ignored, reads and a create are A's own project's, B's records by id stay 404", async () => {
    const h = { "x-project-id": b.projectId };
    const agents = await cg.api("GET", "/v1/agents", { key: a.projectKey, headers: h });
    expect(agents.status).toBe(200);
    expect(agents.body.map((x: any) => x.id)).toContain(a.agentId);
    expect(agents.body.map((x: any) => x.id)).not.toContain(b.agentId);
    const secrets = await cg.api("GET", "/v1/secrets", { key: a.projectKey, headers: h });
    const ownSecrets = await cg.api("GET", "/v1/secrets", { key: a.projectKey });
    expect(secrets.body.map((x: any) => x.id).sort()).toEqual(ownSecrets.body.map((x: any) => x.id).sort());
    expect(secrets.body.map((x: any) => x.id)).toContain(a.secretId);
    expect(secrets.body.map((x: any) => x.id)).not.toContain(b.secretId);
    for (const res of [agents, secrets]) for (const name of b.names) expect({ leaked: res.text.includes(name) ? name : null }).toEqual({ leaked: null });
    const made = await cg.api("POST", "/v1/agents", { key: a.projectKey, headers: h, body: { name: "Header ignored", identifier: "header-ignored", mode: "all" } });
    expect(made.status).toBe(201);
    expect((await cg.api("GET", "/v1/agents", { key: a.projectKey })).body.map((x: any) => x.id)).toContain(made.body.id);
    expect((await cg.api("GET", "/v1/agents", { key: b.projectKey })).body.map((x: any) => x.id)).not.toContain(made.body.id);
    const [row] = await queryStore<{ project_id: string }>(cg, sql`SELECT project_id FROM agents WHERE id = ${made.body.id}`);
    expect(row!.project_id).toBe(a.projectId);
    expect((await cg.api("GET", `/v1/agents/${b.agentId}`, { key: a.projectKey, headers: h })).status).toBe(404);
    expect((await cg.api("PATCH", `/v1/secrets/${b.secretId}`, { key: a.projectKey, headers: h, body: { name: "taken" } })).status).toBe(404);
    const decision = await cg.api("POST", `/v1/approvals/${b.approvalId}/decision`, { key: a.projectKey, headers: h, body: { decision: "approve" } });
    expect(decision.status).toBe(404);
    expect(decision.text).toBe('{"error":"approval_not_found"}');
    // B's secret kept its name.
    expect(b.names).toContain((await cg.api("GET", "/v1/secrets", { key: b.projectKey })).body.find((x: any) => x.id === b.secretId).name);
  });

  test("no key, token, password or secret value in the database files or the process output", async () => {
    const secrets = [a, b].flatMap((t) => [t.projectKey, t.orgKey, t.agentToken, t.partnerKey, t.secretValue, `org-${t.secretValue}`, t.signingSecret, t.signingSecret.slice(6)]);
    secrets.push("tenant password", "re_a-", "re_b-");
    const places: [string, Buffer][] = [["process output", Buffer.from(cg.output())]];
    if (!cg.env.CREDGATE_DATABASE_URL) {
      for (const file of readdirSync(cg.dataDir).filter((f) => f.startsWith("credgate.db"))) places.push([file, readFileSync(join(cg.dataDir, file))]);
      expect(places.length).toBeGreaterThan(1);
    } else {
      // PostgreSQL: every text value of every table, as the database holds it.
      const tables = await queryStore<{ table_name: string }>(cg, sql`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`);
      for (const { table_name } of tables) {
        const rows = await queryStore(cg, sql`SELECT * FROM ${sql.identifier(table_name)}`);
        places.push([table_name, Buffer.from(JSON.stringify(rows))]);
      }
    }
    // The scan reads the data: a name (not a secret) is there in the clear.
    expect(places.slice(1).some(([, bytes]) => bytes.includes(Buffer.from(a.names[1]!)))).toBe(true);
    for (const [where, bytes] of places) {
      for (const value of secrets) expect({ where, found: bytes.includes(Buffer.from(value)) ? value.slice(0, 12) : null }).toEqual({ where, found: null });
    }
  });
});
