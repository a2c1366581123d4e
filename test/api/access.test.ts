// One answer to "which credentials may this agent inject" (src/services/access.ts): effective credentials,
// the gateway's snapshot (the real GatewaySnapshot over the same services) and container-config agree, for
// agents in mode all and grants, over project, organization and partner secrets and app connections. And
// the managed rules of `?include=managed` are read with a fixed number of queries whatever the number of
// agents, and equal what each agent's own rules hold.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { GatewaySnapshot } from "../../src/gateway/snapshot.ts";
import { agentRules } from "../../src/services/agentRules.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";
import { createTestApi, type TestApi } from "../support/app.ts";

let api: TestApi;
let org: { organizationId: string; projectId: string; orgApiKey: string; projectApiKey: string; agentId: string; claimUrl: string };
const ids: Record<string, string> = {};

beforeAll(async () => {
  api = await createTestApi({ CREDGATE_MODE: "cloud" });
  const { partnerKey } = await api.core.services.partners.create("Acme Partner", "owner@acme.test");
  const created = await api.call("POST", "/v1/partner/orgs", { key: partnerKey, body: { name: "Customer" } });
  expect(created.status).toBe(201);
  org = created.body;
  const secret = async (name: string, body: Record<string, unknown>, key: string, path = "/v1/secrets") => {
    const r = await api.call("POST", path, { key, body: { name, ...body } });
    expect(r.status).toBe(201);
    ids[name] = r.body.id;
  };
  const generic = (host: string) => ({ type: "generic", value: `value-${host}`, hostPattern: host, injectionConfig: { headerName: "x-key" } });
  await secret("partner-anthropic", { type: "llm_a", value: "sk-ant-api03-partner" }, partnerKey, "/v1/partner/secrets");
  await secret("partner-generic", generic("partner.test"), partnerKey, "/v1/partner/secrets");
  await secret("project-a", generic("a.test"), org.projectApiKey);
  await secret("project-b", generic("b.test"), org.projectApiKey);
  await secret("project-openai", { type: "llm_b", value: "sk-proj-own-openai-key" }, org.projectApiKey);
  await secret("org-shared", generic("org.test"), org.orgApiKey, "/v1/org/secrets");
  for (const [name, key, path] of [
    ["mail", org.projectApiKey, "/v1/apps/resend/connect"],
    ["org-mail", org.orgApiKey, "/v1/org/apps/resend/connect"],
  ] as const) {
    const r = await api.call("POST", path, { key, body: { fields: { apiKey: `re_${name}` }, label: name } });
    expect(r.status).toBe(200);
    ids[name] = r.body.connection.id;
  }
  const agent = async (identifier: string) => {
    const r = await api.call("POST", "/v1/agents", { key: org.projectApiKey, body: { name: identifier, identifier, mode: "grants" } });
    expect(r.status).toBe(201);
    return (ids[identifier] = r.body.id);
  };
  const grant = async (agentId: string, kind: "secrets" | "connections", id: string, body?: unknown) => {
    const r = await api.call("PUT", `/v1/agents/${agentId}/grants/${kind}/${id}`, { key: org.projectApiKey, body });
    expect(r.status).toBe(200);
  };
  const some = await agent("some-grants");
  await grant(some, "secrets", ids["project-b"]!);
  await grant(some, "secrets", ids["org-shared"]!);
  await grant(some, "connections", ids["org-mail"]!, { access: "custom", allow: ["send_email"] });
  await agent("no-grants");
  const llm = await agent("openai-only");
  await grant(llm, "secrets", ids["project-openai"]!);
  await grant(llm, "connections", ids["mail"]!, { access: "full" });
});

afterAll(async () => {
  await api?.core.close();
});

/** What each consumer says the agent may inject, by fixture name. */
async function consumers(identifier: string) {
  const names = new Map(Object.entries(ids).map(([name, id]) => [id, name]));
  const list = (await api.call("GET", "/v1/agents", { key: org.projectApiKey })).body as { id: string; identifier: string; accessToken: string }[];
  const agent = list.find((a) => a.identifier === identifier)!;

  const eff = (await api.call("GET", `/v1/agents/${agent.id}/effective-credentials`, { key: org.projectApiKey })).body;
  const effective = {
    secrets: eff.secrets.filter((s: any) => s.status !== "not_granted").map((s: any) => names.get(s.id)).sort(),
    connections: eff.connections.filter((c: any) => c.status !== "not_granted").map((c: any) => names.get(c.id)).sort(),
  };

  const snapshot = await GatewaySnapshot.create(api.core.services);
  const entry = await snapshot.agentForToken(agent.accessToken);
  const creds = await snapshot.credentials(entry!);
  const gateway = { secrets: creds.injectable.map((s) => names.get(s.id)).sort(), connections: creds.connections.map((c) => names.get(c.id)).sort() };

  const config = (await api.call("GET", `/v1/container-config?agent=${identifier}`, { key: org.projectApiKey })).body;
  return { effective, gateway, env: config.env as Record<string, string>, warnings: config.warnings as string[] | undefined };
}

describe("effective credentials, the gateway and container-config agree", () => {
  const everything = {
    secrets: ["org-shared", "partner-anthropic", "partner-generic", "project-a", "project-b", "project-openai"],
    connections: ["mail", "org-mail"],
  };
  const cases: [string, { secrets: string[]; connections: string[] }, { anthropic: boolean; openai: boolean }][] = [
    ["default", everything, { anthropic: true, openai: true }],
    ["some-grants", { secrets: ["org-shared", "partner-anthropic", "partner-generic", "project-b"], connections: ["org-mail"] }, { anthropic: true, openai: false }],
    ["no-grants", { secrets: ["partner-anthropic", "partner-generic"], connections: [] }, { anthropic: true, openai: false }],
    ["openai-only", { secrets: ["partner-anthropic", "partner-generic", "project-openai"], connections: ["mail"] }, { anthropic: true, openai: true }],
  ];
  test.each(cases)("%s", async (identifier, expected, llm) => {
    const c = await consumers(identifier);
    expect(c.effective).toEqual(expected);
    expect(c.gateway).toEqual(expected);
    expect({ anthropic: c.env.ANTHROPIC_API_KEY === "credgate-managed", openai: c.env.OPENAI_API_KEY === "credgate-managed" }).toEqual(llm);
  });

  test("a grant revoked and the mode switched move all three together", async () => {
    const some = ids["some-grants"]!;
    expect((await api.call("DELETE", `/v1/agents/${some}/grants/secrets/${ids["org-shared"]}`, { key: org.projectApiKey })).status).toBe(204);
    let c = await consumers("some-grants");
    expect(c.effective.secrets).toEqual(["partner-anthropic", "partner-generic", "project-b"]);
    expect(c.gateway).toEqual(c.effective);
    expect((await api.call("PATCH", `/v1/agents/${some}`, { key: org.projectApiKey, body: { mode: "all" } })).status).toBe(200);
    c = await consumers("some-grants");
    expect(c.effective).toEqual(everything);
    expect(c.gateway).toEqual(everything);
    expect(c.env.OPENAI_API_KEY).toBe("credgate-managed");
  });

  test("a detached organization's agents lose the partner's secrets everywhere", async () => {
    const signup = await api.call("POST", "/v1/auth/signup", { key: null, body: { email: "customer@example.test", password: "customer password" } });
    const cookie = /credgate_session=[^;]+/.exec(signup.headers.get("set-cookie") ?? "")![0];
    const token = new URL(org.claimUrl).searchParams.get("token");
    expect((await api.call("POST", "/v1/claim", { key: null, headers: { cookie }, body: { token } })).status).toBe(200);
    expect((await api.call("POST", "/v1/org/partner/detach", { key: org.orgApiKey })).status).toBe(200);
    const c = await consumers("no-grants");
    expect(c.effective).toEqual({ secrets: [], connections: [] });
    expect(c.gateway).toEqual({ secrets: [], connections: [] });
    expect(c.env.ANTHROPIC_API_KEY).toBeUndefined();
    expect(c.warnings).toEqual(["No Anthropic credentials configured — the agent will use its own API key if available."]);
  });
});

describe("managed rules (?include=managed)", () => {
  test("read with the same number of queries for 2 agents as for 8, and equal to each agent's own grant rules", async () => {
    const a = await createTestApi();
    const owner = { scope: "project" as const, projectId: a.projectId, organizationId: a.organizationId };
    const secret = (await a.call("POST", "/v1/secrets", { body: { name: "S", type: "generic", value: "v", hostPattern: "s.test", injectionConfig: { headerName: "x-k" } } })).body.id;
    const mail = (await a.call("POST", "/v1/apps/resend/connect", { body: { fields: { apiKey: "re_x" }, label: "Mail" } })).body.connection.id;
    const addAgent = async (i: number) => {
      const id = (await a.call("POST", "/v1/agents", { body: { name: `Agent ${i}`, identifier: `agent-${i}`, mode: "grants" } })).body.id;
      await a.call("PUT", `/v1/agents/${id}/grants/secrets/${secret}`);
      await a.call("PUT", `/v1/agents/${id}/grants/connections/${mail}`, { body: i % 2 ? { access: "full" } : { access: "custom", allow: ["send_email"], ask: ["get_email"] } });
    };
    // Statements the store runs while `work` runs (SQLite: every statement goes through client.query).
    const { store } = a.core;
    const statements = async (work: () => Promise<unknown>) => {
      if (!(store instanceof SqliteStore)) return null;
      const query = store.client.query.bind(store.client);
      let n = 0;
      store.client.query = ((sql: string) => (n++, query(sql))) as typeof store.client.query;
      try {
        await work();
      } finally {
        store.client.query = query;
      }
      return n;
    };
    for (let i = 0; i < 2; i++) await addAgent(i);
    const few = await statements(() => a.core.services.policy.managedRules(owner));
    for (let i = 2; i < 8; i++) await addAgent(i);
    const many = await statements(() => a.core.services.policy.managedRules(owner));
    expect(many).toBe(few);

    // The same rules, in the same order, as each agent's own rules hold (agents in list order).
    const managed = (await a.call("GET", "/v1/policy/rules?include=managed")).body.filter((r: any) => r.source === "grant");
    const expected: string[] = [];
    for (const agent of await a.core.services.agents.list(a.projectId)) {
      const rules = await agentRules(a.core.services, a.organizationId, a.projectId, { ...agent, projectId: a.projectId, organizationId: a.organizationId });
      expected.push(...rules.project.ordered.filter((r) => r.source === "grant").map((r) => `${r.id} ${r.name} ${r.action} ${r.requireApproval}`));
    }
    expect(managed.map((r: any) => `${r.id} ${r.name} ${r.action} ${r.requireApproval}`)).toEqual(expected);
    expect(managed).toHaveLength(8 + 4 * 1 + 4 * 3); // every agent: its secret, and 1 (full) or 3 (custom) connection rules
  });
});
