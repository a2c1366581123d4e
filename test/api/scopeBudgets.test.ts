// Budgets for every scope through the in-process API (docs/budgets.md#budgets-for-every-scope): the Budget
// record, windows and their ends, exact validation messages, the unique (scope, key type, period), PATCH and
// DELETE, who may do what (project·any reads, project·admin writes, organization·admin for the organization's), and tenants kept
// apart. Admission and spend are in budgetLedger.test.ts; through the gateway in test/e2e/budgets.test.ts.
import { beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { windowOf } from "../../src/core/budgetWindows.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addMember, addOrganization, addProject, expectEnvelope, expectFlat, ISO_MS, UUID_V4 } from "./helpers.ts";
import { clearOfMidnight } from "../support/windowEdge.ts";

// Budget windows start at 00:00 UTC: no test runs across one.
beforeEach(clearOfMidnight);

const UNKNOWN = "00000000-0000-4000-8000-000000000000";

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

async function budget(a: TestApi, body: Record<string, unknown>, path = "/v1/budgets", key?: string) {
  const res = await a.call("POST", path, { body, key });
  if (res.status !== 201) throw new Error(`budget: ${res.status} ${res.text}`);
  return res.body;
}

async function defaultAgent(a: TestApi, projectId = a.projectId): Promise<string> {
  return (await a.core.services.agents.list(projectId)).find((x) => x.isDefault)!.id;
}

const endOf = (period: "day" | "week" | "month") => new Date(windowOf(period, Date.now()).end!).toISOString();

describe("the Budget record", () => {
  test("a project budget: both key types by default, alerts at 80 and 100, nothing spent, resets at the end of the window", async () => {
    const b = await budget(api, { scope: "project", limitCents: 500, period: "day" });
    expect(b).toEqual({
      id: expect.stringMatching(UUID_V4),
      scope: "project",
      organizationId: api.organizationId,
      projectId: api.projectId,
      agentId: null,
      secretType: null,
      limitCents: 500,
      period: "day",
      alertPercents: [80, 100],
      spentCents: 0,
      resetsAt: endOf("day"),
      createdAt: expect.stringMatching(ISO_MS),
    });
    // A day ends at the next UTC midnight, a week on Monday, a month on the 1st; a total budget never resets.
    expect(new Date(b.resetsAt).getUTCHours()).toBe(0);
    const week = await budget(api, { scope: "project", limitCents: 500, period: "week", secretType: "llm_a" });
    expect(new Date(week.resetsAt).getUTCDay()).toBe(1);
    expect(week.resetsAt).toBe(endOf("week"));
    const month = await budget(api, { scope: "project", limitCents: 500, period: "month", secretType: "llm_b", alertPercents: [100, 50, 50] });
    expect(new Date(month.resetsAt).getUTCDate()).toBe(1);
    expect(month.alertPercents).toEqual([50, 100]);
    const total = await budget(api, { scope: "project", limitCents: 500, period: "total", alertPercents: [] });
    expect({ resetsAt: total.resetsAt, alertPercents: total.alertPercents }).toEqual({ resetsAt: null, alertPercents: [] });
  });

  test("an agent budget names the agent and its project; an organization budget neither", async () => {
    const a = await createTestApi();
    const agentId = await defaultAgent(a);
    const mine = await budget(a, { scope: "agent", agentId, secretType: "llm_a", limitCents: 100, period: "week" });
    expect(mine).toMatchObject({ scope: "agent", agentId, projectId: a.projectId, organizationId: a.organizationId, secretType: "llm_a" });
    const org = await budget(a, { limitCents: 10_000, period: "month" }, "/v1/org/budgets", a.orgKey);
    expect(org).toMatchObject({ scope: "organization", organizationId: a.organizationId, projectId: null, agentId: null });
    expect((await budget(a, { scope: "organization", limitCents: 1, period: "total" }, "/v1/org/budgets", a.orgKey)).scope).toBe("organization");

    // The project's list holds its own and its agents' budgets; the organization's list only its own.
    const project = await budget(a, { scope: "project", limitCents: 1000, period: "month" });
    expect((await a.call("GET", "/v1/budgets")).body.map((b: any) => b.id)).toEqual([mine.id, project.id]);
    expect((await a.call("GET", "/v1/org/budgets", { key: a.orgKey })).body.map((b: any) => b.scope)).toEqual(["organization", "organization"]);
  });
});

describe("validation (exact messages)", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["no limit", { scope: "project", period: "day" }, "limitCents must be a positive integer"],
    ["zero", { scope: "project", limitCents: 0, period: "day" }, "limitCents must be a positive integer"],
    ["negative", { scope: "project", limitCents: -5, period: "day" }, "limitCents must be a positive integer"],
    ["fraction", { scope: "project", limitCents: 1.5, period: "day" }, "limitCents must be a positive integer"],
    ["string", { scope: "project", limitCents: "500", period: "day" }, "limitCents must be a positive integer"],
    ["too large", { scope: "project", limitCents: 100_000_001, period: "day" }, "limitCents must be at most 100000000"],
    ["period", { scope: "project", limitCents: 5, period: "monthly" }, "period must be one of: day, week, month, total"],
    ["no period", { scope: "project", limitCents: 5 }, "period is required"],
    ["scope", { scope: "organization", limitCents: 5, period: "day" }, "scope must be one of: project, agent"],
    ["no scope", { limitCents: 5, period: "day" }, "scope is required"],
    ["percent 0", { scope: "project", limitCents: 5, period: "day", alertPercents: [0] }, "alertPercents must be integers from 1 to 100"],
    ["percent 101", { scope: "project", limitCents: 5, period: "day", alertPercents: [50, 101] }, "alertPercents must be integers from 1 to 100"],
    ["percent fraction", { scope: "project", limitCents: 5, period: "day", alertPercents: [80.5] }, "alertPercents must be integers from 1 to 100"],
    ["percents not a list", { scope: "project", limitCents: 5, period: "day", alertPercents: 80 }, "alertPercents must be integers from 1 to 100"],
    ["percent null", { scope: "project", limitCents: 5, period: "day", alertPercents: [null] }, "alertPercents must be integers from 1 to 100"],
    ["key type", { scope: "project", limitCents: 5, period: "day", secretType: "generic" }, "secretType must be one of: llm_a, llm_b"],
    ["agent without agentId", { scope: "agent", limitCents: 5, period: "day" }, "agentId is required"],
    ["agentId on a project budget", { scope: "project", agentId: UNKNOWN, limitCents: 5, period: "day" }, "agentId is only for agent budgets"],
  ];
  for (const [name, body, message] of cases) {
    test(`POST /budgets: ${name} → 400 ${message}`, async () => {
      expectFlat(await api.call("POST", "/v1/budgets", { body }), 400, message);
    });
  }

  test("the organization's: scope is organization or absent; no agent", async () => {
    expectFlat(await api.call("POST", "/v1/org/budgets", { key: api.orgKey, body: { scope: "project", limitCents: 5, period: "day" } }), 400, "scope must be one of: organization");
    expectFlat(await api.call("POST", "/v1/org/budgets", { key: api.orgKey, body: { agentId: UNKNOWN, limitCents: 5, period: "day" } }), 400, "agentId is only for agent budgets");
    expectFlat(await api.call("POST", "/v1/org/budgets", { key: api.orgKey, body: { limitCents: 0, period: "day" } }), 400, "limitCents must be a positive integer");
  });

  test("an unknown agent, or another project's, is 404 Agent not found", async () => {
    const a = await createTestApi();
    expectEnvelope(await a.call("POST", "/v1/budgets", { body: { scope: "agent", agentId: UNKNOWN, limitCents: 5, period: "day" } }), 404, "Agent not found");
    const other = await addProject(a);
    const elsewhere = await defaultAgent(a, other.project.id);
    expectEnvelope(await a.call("POST", "/v1/budgets", { body: { scope: "agent", agentId: elsewhere, limitCents: 5, period: "day" } }), 404, "Agent not found");
    expect((await a.call("GET", "/v1/budgets")).body).toEqual([]);
  });
});

describe("one budget per scope, key type and period", () => {
  test("409 on the same (scope, agent, secretType, period); another type, period or agent is a budget of its own", async () => {
    const a = await createTestApi();
    const agentId = await defaultAgent(a);
    const conflict = "A budget for this scope, key type and period already exists";
    await budget(a, { scope: "project", limitCents: 5, period: "day" });
    expectEnvelope(await a.call("POST", "/v1/budgets", { body: { scope: "project", limitCents: 9, period: "day", secretType: null } }), 409, conflict);
    await budget(a, { scope: "project", limitCents: 5, period: "day", secretType: "llm_a" });
    expectEnvelope(await a.call("POST", "/v1/budgets", { body: { scope: "project", limitCents: 5, period: "day", secretType: "llm_a" } }), 409, conflict);
    await budget(a, { scope: "project", limitCents: 5, period: "week" });
    await budget(a, { scope: "agent", agentId, limitCents: 5, period: "day" });
    expectEnvelope(await a.call("POST", "/v1/budgets", { body: { scope: "agent", agentId, limitCents: 7, period: "day" } }), 409, conflict);
    const second = (await a.call("POST", "/v1/agents", { body: { name: "Second", identifier: "second", mode: "all" } })).body.id;
    await budget(a, { scope: "agent", agentId: second, limitCents: 5, period: "day" });
    await budget(a, { limitCents: 5, period: "day" }, "/v1/org/budgets", a.orgKey);
    expectEnvelope(await a.call("POST", "/v1/org/budgets", { key: a.orgKey, body: { limitCents: 6, period: "day" } }), 409, conflict);
    // Another project has its own.
    const other = await addProject(a);
    expect((await a.call("POST", "/v1/budgets", { key: other.projectKey, body: { scope: "project", limitCents: 5, period: "day" } })).status).toBe(201);
    expect((await a.call("GET", "/v1/budgets")).body.length).toBe(5);
  });

  test("created at the same moment, only one of two identical budgets exists", async () => {
    const a = await createTestApi();
    const results = await Promise.all(Array.from({ length: 6 }, () => a.call("POST", "/v1/budgets", { body: { scope: "project", limitCents: 5, period: "month" } })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
  });
});

describe("PATCH and DELETE", () => {
  test("the limit and the alert percents change; nothing else can", async () => {
    const a = await createTestApi();
    const b = await budget(a, { scope: "project", limitCents: 500, period: "month", secretType: "llm_b" });
    const patched = await a.call("PATCH", `/v1/budgets/${b.id}`, { body: { limitCents: 750, alertPercents: [90, 50] } });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...b, limitCents: 750, alertPercents: [50, 90] });
    expectFlat(await a.call("PATCH", `/v1/budgets/${b.id}`, { body: {} }), 400, "No fields to update");
    expectFlat(await a.call("PATCH", `/v1/budgets/${b.id}`, { body: { period: "day" } }), 400, "period cannot be changed");
    expectFlat(await a.call("PATCH", `/v1/budgets/${b.id}`, { body: { secretType: "llm_a" } }), 400, "secretType cannot be changed");
    expectFlat(await a.call("PATCH", `/v1/budgets/${b.id}`, { body: { limitCents: 0 } }), 400, "limitCents must be a positive integer");
    expectFlat(await a.call("PATCH", `/v1/budgets/${b.id}`, { body: { alertPercents: [0] } }), 400, "alertPercents must be integers from 1 to 100");
    expectEnvelope(await a.call("PATCH", `/v1/budgets/${UNKNOWN}`, { body: { limitCents: 5 } }), 404, "Budget not found");
    expect((await a.call("DELETE", `/v1/budgets/${b.id}`)).status).toBe(204);
    expectEnvelope(await a.call("DELETE", `/v1/budgets/${b.id}`), 404, "Budget not found");
    expectEnvelope(await a.call("PATCH", `/v1/budgets/${b.id}`, { body: { limitCents: 5 } }), 404, "Budget not found");
    expect((await a.call("GET", "/v1/budgets")).body).toEqual([]);
  });

  test("an organization budget is not reachable through /budgets, nor a project's through /org/budgets", async () => {
    const a = await createTestApi();
    const org = await budget(a, { limitCents: 5, period: "day" }, "/v1/org/budgets", a.orgKey);
    const project = await budget(a, { scope: "project", limitCents: 5, period: "day" });
    expectEnvelope(await a.call("PATCH", `/v1/budgets/${org.id}`, { body: { limitCents: 6 } }), 404, "Budget not found");
    expectEnvelope(await a.call("DELETE", `/v1/budgets/${org.id}`), 404, "Budget not found");
    expectEnvelope(await a.call("PATCH", `/v1/org/budgets/${project.id}`, { key: a.orgKey, body: { limitCents: 6 } }), 404, "Budget not found");
    expectEnvelope(await a.call("DELETE", `/v1/org/budgets/${project.id}`, { key: a.orgKey }), 404, "Budget not found");
    expect((await a.call("PATCH", `/v1/org/budgets/${org.id}`, { key: a.orgKey, body: { limitCents: 6 } })).body.limitCents).toBe(6);
    expect((await a.call("DELETE", `/v1/org/budgets/${org.id}`, { key: a.orgKey })).status).toBe(204);
  });

  test("a deleted agent takes its budgets with it", async () => {
    const a = await createTestApi();
    const created = await a.call("POST", "/v1/agents", { body: { name: "Temp", identifier: "temp", mode: "all" } });
    await budget(a, { scope: "agent", agentId: created.body.id, limitCents: 5, period: "day" });
    expect((await a.call("DELETE", `/v1/agents/${created.body.id}`)).status).toBe(204);
    expect((await a.call("GET", "/v1/budgets")).body).toEqual([]);
  });
});

describe("access", () => {
  test("/budgets: any member reads, admins write; /org/budgets: organization admins only", async () => {
    const a = await createTestApi();
    const own = await budget(a, { scope: "project", limitCents: 5, period: "day" });
    const org = await budget(a, { limitCents: 5, period: "day" }, "/v1/org/budgets", a.orgKey);
    const member = await addMember(a, "member");
    expect((await a.call("GET", "/v1/budgets", { key: member.projectKey })).body.map((b: any) => b.id)).toEqual([own.id]);
    expect((await a.call("GET", "/v1/spend", { key: member.projectKey })).status).toBe(200);
    for (const [method, path, body] of [
      ["POST", "/v1/budgets", { scope: "project", limitCents: 5, period: "week" }],
      ["PATCH", `/v1/budgets/${own.id}`, { limitCents: 6 }],
      ["DELETE", `/v1/budgets/${own.id}`, undefined],
      ["GET", "/v1/org/budgets", undefined],
      ["POST", "/v1/org/budgets", { limitCents: 5, period: "week" }],
      ["PATCH", `/v1/org/budgets/${org.id}`, { limitCents: 6 }],
      ["DELETE", `/v1/org/budgets/${org.id}`, undefined],
      ["GET", "/v1/org/spend", undefined],
    ] as const) {
      expectEnvelope(await a.call(method, path, { key: member.projectKey, body }), 403, "Insufficient permissions");
    }
    const admin = await addMember(a, "admin");
    expect((await a.call("POST", "/v1/budgets", { key: admin.projectKey, body: { scope: "project", limitCents: 5, period: "week" } })).status).toBe(201);
    expect((await a.call("PATCH", `/v1/org/budgets/${org.id}`, { key: admin.orgKey, body: { limitCents: 7 } })).status).toBe(200);
    expect((await a.call("GET", "/v1/budgets", { key: null })).status).toBe(401);
  });

  test("another organization's budgets are not found", async () => {
    const a = await createTestApi();
    const own = await budget(a, { scope: "project", limitCents: 5, period: "day" });
    const org = await budget(a, { limitCents: 5, period: "day" }, "/v1/org/budgets", a.orgKey);
    const stranger = await addOrganization(a);
    expect((await a.call("GET", "/v1/budgets", { key: stranger.projectKey })).body).toEqual([]);
    expect((await a.call("GET", "/v1/org/budgets", { key: stranger.orgKey })).body).toEqual([]);
    expectEnvelope(await a.call("PATCH", `/v1/budgets/${own.id}`, { key: stranger.projectKey, body: { limitCents: 1 } }), 404, "Budget not found");
    expectEnvelope(await a.call("DELETE", `/v1/org/budgets/${org.id}`, { key: stranger.orgKey }), 404, "Budget not found");
    const agentId = await defaultAgent(a);
    expectEnvelope(await a.call("POST", "/v1/budgets", { key: stranger.projectKey, body: { scope: "agent", agentId, limitCents: 5, period: "day" } }), 404, "Agent not found");
  });
});
