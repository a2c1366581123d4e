// The spend report through the in-process API (docs/budgets.md#spend-report): spend records as the gateway
// writes them (batched), added up per agent, model or day (and per project for the organization), within
// `since` (inclusive) and `until` (exclusive), the current UTC month by default; validation; the organization
// sees its projects, a project only its own. Through the real gateway in test/e2e/budgets.test.ts.
import { beforeAll, describe, expect, test } from "bun:test";
import type { SpendRecord } from "../../src/services/budgets/spend.ts";
import { currentMonth } from "../../src/services/budgets/spend.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addOrganization, addProject, expectFlat } from "./helpers.ts";

let api: TestApi;
let agentA: string;
let agentB: string;
let second: { project: { id: string }; projectKey: string };
const usd = (nanos: number) => nanos / 1e9;

/** Mid-month, so that the month's first and last days are out of reach of the test's offsets. */
const month = currentMonth();
const day = (d: number, h = 12) => {
  const m = new Date(month.since);
  return new Date(Date.UTC(m.getUTCFullYear(), m.getUTCMonth(), d, h)).toISOString();
};

beforeAll(async () => {
  api = await createTestApi();
  agentA = (await api.core.services.agents.list(api.projectId)).find((a) => a.isDefault)!.id;
  agentB = (await api.call("POST", "/v1/agents", { body: { name: "B", identifier: "b", mode: "all" } })).body.id;
  second = await addProject(api);
  const secondAgent = (await api.core.services.agents.list(second.project.id))[0]!.id;
  const base = { organizationId: api.organizationId, projectId: api.projectId, secretType: "llm_a" as const };
  const records: SpendRecord[] = [
    { ...base, agentId: agentA, model: "claude-sonnet-4-5", inputTokens: 1000, outputTokens: 100, costNanos: 4_500_000, createdAt: day(2) },
    { ...base, agentId: agentA, model: "claude-sonnet-4-5", inputTokens: 2000, outputTokens: 50, costNanos: 6_750_000, createdAt: day(3) },
    { ...base, agentId: agentB, secretType: "llm_b", model: "gpt-4.1-mini", inputTokens: 900, outputTokens: 12, costNanos: 379_200, createdAt: day(3, 23) },
    { ...base, agentId: agentB, model: "claude-haiku-4-5", inputTokens: 10, outputTokens: 0, costNanos: 0, createdAt: day(5) },
    // Last month and another project: not in the project's month.
    { ...base, agentId: agentA, model: "claude-sonnet-4-5", inputTokens: 1, outputTokens: 1, costNanos: 1_000_000_000, createdAt: new Date(Date.parse(month.since) - 1).toISOString() },
    { ...base, projectId: second.project.id, agentId: secondAgent, model: "gpt-4o", inputTokens: 7, outputTokens: 7, costNanos: 2_000_000, createdAt: day(2) },
  ];
  for (const r of records) api.core.services.spend.record(r);
  await api.core.services.spend.flush();
});

describe("GET /spend", () => {
  test("by agent (the default): requests, tokens and cost of the current month; the total", async () => {
    const r = await api.call("GET", "/v1/spend");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      data: [
        { key: agentA, requests: 2, inputTokens: 3000, outputTokens: 150, costUsd: usd(11_250_000) },
        { key: agentB, requests: 2, inputTokens: 910, outputTokens: 12, costUsd: usd(379_200) },
      ],
      totalUsd: usd(11_629_200),
    });
    expect((await api.call("GET", "/v1/spend?groupBy=agent")).body).toEqual(r.body);
  });

  test("by model, by day (UTC dates, in order)", async () => {
    expect((await api.call("GET", "/v1/spend?groupBy=model")).body.data.map((d: any) => [d.key, d.requests])).toEqual([
      ["claude-sonnet-4-5", 2],
      ["gpt-4.1-mini", 1],
      ["claude-haiku-4-5", 1],
    ]);
    const days = (await api.call("GET", "/v1/spend?groupBy=day")).body;
    expect(days.data.map((d: any) => [d.key, d.requests, d.costUsd])).toEqual([
      [day(2).slice(0, 10), 1, usd(4_500_000)],
      [day(3).slice(0, 10), 2, usd(7_129_200)],
      [day(5).slice(0, 10), 1, 0],
    ]);
  });

  test("since is inclusive, until exclusive; any range", async () => {
    const r = await api.call("GET", `/v1/spend?groupBy=day&since=${encodeURIComponent(day(3))}&until=${encodeURIComponent(day(5))}`);
    expect(r.body.data.map((d: any) => d.key)).toEqual([day(3).slice(0, 10)]);
    expect(r.body.totalUsd).toBe(usd(7_129_200));
    const all = await api.call("GET", `/v1/spend?since=2000-01-01T00:00:00Z&until=${encodeURIComponent(month.until)}`);
    expect(all.body.totalUsd).toBe(usd(1_011_629_200));
    expect((await api.call("GET", "/v1/spend?since=2000-01-01&until=2000-02-01")).body).toEqual({ data: [], totalUsd: 0 });
  });

  test("validation", async () => {
    expectFlat(await api.call("GET", "/v1/spend?groupBy=project"), 400, "groupBy must be one of: agent, model, day");
    expectFlat(await api.call("GET", "/v1/spend?groupBy=hour"), 400, "groupBy must be one of: agent, model, day");
    expectFlat(await api.call("GET", "/v1/spend?since=yesterday"), 400, "since must be a valid timestamp");
    expectFlat(await api.call("GET", "/v1/spend?until=2026-13-45"), 400, "until must be a valid timestamp");
  });
});

describe("GET /org/spend and tenants", () => {
  test("the organization's projects, by project (the default) or any other key", async () => {
    const r = await api.call("GET", "/v1/org/spend", { key: api.orgKey });
    expect(r.body.data.map((d: any) => [d.key, d.requests])).toEqual([
      [api.projectId, 4],
      [second.project.id, 1],
    ]);
    expect(r.body.totalUsd).toBe(usd(13_629_200));
    expect((await api.call("GET", "/v1/org/spend?groupBy=model", { key: api.orgKey })).body.data.map((d: any) => d.key)).toEqual(["claude-sonnet-4-5", "gpt-4o", "gpt-4.1-mini", "claude-haiku-4-5"]);
    expectFlat(await api.call("GET", "/v1/org/spend?groupBy=x", { key: api.orgKey }), 400, "groupBy must be one of: project, agent, model, day");
    // The other project sees only its own.
    expect((await api.call("GET", "/v1/spend", { key: second.projectKey })).body.totalUsd).toBe(usd(2_000_000));
  });

  test("another organization sees none of it; deleting a project deletes its spend", async () => {
    const stranger = await addOrganization(api);
    expect((await api.call("GET", "/v1/spend", { key: stranger.projectKey })).body).toEqual({ data: [], totalUsd: 0 });
    expect((await api.call("GET", "/v1/org/spend", { key: stranger.orgKey })).body).toEqual({ data: [], totalUsd: 0 });
    // (Projects are deleted in cloud mode: the service is the same.)
    await api.core.services.projects.delete(api.organizationId, second.project.id);
    expect((await api.call("GET", "/v1/org/spend", { key: api.orgKey })).body.data.map((d: any) => d.key)).toEqual([api.projectId]);
  });
});
