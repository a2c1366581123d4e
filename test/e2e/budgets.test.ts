// Budgets for every scope through the real process (docs/budgets.md#budgets-for-every-scope, #admission,
// #alerts, #spend-report), with two gateway workers: the vendors' official SDKs (@anthropic-ai/sdk, openai)
// call a fake vendor speaking the real wire formats (JSON and SSE) through credgate with project keys.
// Every metered endpoint counts; the tightest budget refuses and is named (agent before project before
// organization); a raised limit admits at once; an llm_b budget does not stop llm_a; a burst of 40 at once
// never overshoots, nor does a larger one admitted from leases under load; alerts arrive once per threshold at
// a webhook of our own; the spend report and /metrics add up to what the fake vendor reported. Windows
// resetting: a second process whose clock is moved across a day, week and month boundary by restarting it
// (CREDGATE_TEST_NOW_OFFSET_SECONDS).
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { windowOf } from "../../src/core/budgetWindows.ts";
import { DEFAULT_PRICES, estimateOf, NANOS_PER_CENT } from "../../src/core/pricing.ts";
import { curlThroughGateway } from "../support/curl.ts";
import { gatewayCa, until } from "../support/gateway.ts";
import { startFakeVendors, type FakeUsage, type FakeVendors } from "../support/llm/fakeVendors.ts";
import { sdk, SpendTally, type SdkCall } from "../support/llm/sdk.ts";
import { startReceiver, type Receiver } from "../support/notifyReceivers.ts";
import { parseExposition, sampleValue } from "../support/prometheus.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, type TestPki } from "../support/upstream.ts";
import { clearOfMidnight } from "../support/windowEdge.ts";

// Budget windows start at 00:00 UTC: no test runs across one.
beforeEach(clearOfMidnight);

const PUBLIC_URL = "https://credgate.example";
const VENDORS = ["api.anthropic.com", "api.openai.com"];
const HOOK = "hooks.budgets.test";
const ANTHROPIC = "https://api.anthropic.com";
const OPENAI = "https://api.openai.com/v1";

let pki: TestPki;
let fake: FakeVendors;
let hook: Receiver;
let cg: RunningCredgate;
let caFile: string;
const tally = new SpendTally();

function env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    CREDGATE_PUBLIC_URL: PUBLIC_URL,
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_CONNECT_TO: VENDORS.map((h) => `${h}:443:127.0.0.1:${fake.port}`).join(","),
    CREDGATE_RESOLVE: `${HOOK}:${hook.port}:127.0.0.1`,
    ...extra,
  };
}

async function projectKeys(c: RunningCredgate): Promise<void> {
  for (const [type, value] of [
    ["llm_a", "sk-ant-api03-budgets-project-key"],
    ["llm_b", "sk-proj-budgets-project-key"],
  ] as const) {
    expect((await c.api("POST", "/v1/secrets", { body: { name: `Project ${type}`, type, value } })).status).toBe(201);
  }
}

beforeAll(async () => {
  pki = makePki([...VENDORS, HOOK]);
  fake = startFakeVendors(pki);
  hook = startReceiver(pki, "webhook");
  cg = await startCredgate({ env: env({ CREDGATE_GATEWAY_WORKERS: "2" }) });
  caFile = (await gatewayCa(cg)).file;
  await projectKeys(cg);
}, 90_000);

afterAll(async () => {
  await cg?.stop();
  await fake?.stop();
  await hook?.stop();
});

async function agent(c: RunningCredgate, identifier: string): Promise<{ id: string; token: string }> {
  const created = await c.api("POST", "/v1/agents", { body: { name: identifier, identifier, mode: "all" } });
  expect(created.status).toBe(201);
  return { id: created.body.id, token: (await c.api("GET", "/v1/agents")).body.find((a: { id: string }) => a.id === created.body.id).accessToken };
}

async function budget(c: RunningCredgate, body: Record<string, unknown>): Promise<any> {
  const org = body.scope === "organization";
  const res = await c.api("POST", org ? "/v1/org/budgets" : "/v1/budgets", { key: org ? c.keys.orgApiKey : c.keys.projectApiKey, body });
  expect(res.status).toBe(201);
  return res.body;
}

async function budgetNow(c: RunningCredgate, id: string): Promise<any> {
  const all = [...(await c.api("GET", "/v1/budgets")).body, ...(await c.api("GET", "/v1/org/budgets", { key: c.keys.orgApiKey })).body];
  return all.find((b: { id: string }) => b.id === id);
}

/** Waits until the budget's window shows `nanos` spent (settlement is batched, not awaited by the gateway). */
async function spentIs(c: RunningCredgate, id: string, nanos: number): Promise<void> {
  await until(async () => {
    const b = await budgetNow(c, id);
    if (b.spentCents !== Math.floor(nanos / NANOS_PER_CENT)) throw new Error(`spentCents ${b.spentCents}, want ${Math.floor(nanos / NANOS_PER_CENT)}`);
  }, 15_000);
}

/** One call as `who`, the fake vendor reporting `usage` on its host; an admitted one is tallied. */
async function call(who: { id: string; token: string }, c: SdkCall, usage: FakeUsage, concurrent?: number, total?: number) {
  const host = new URL(c.baseURL).hostname;
  fake.setUsage(host, usage);
  const results = await sdk([cg], caFile, who.token, c, concurrent, total);
  const admitted = results.filter((r) => !r.error).length;
  if (admitted > 0) tally.add(who.id, c.sdk === "anthropic" ? "llm_a" : "llm_b", c.model, usage, admitted);
  return results;
}

/** The exact refusal, read with curl (the SDKs reshape error bodies). */
async function refusalOf(who: { token: string }, url: string, body: Record<string, unknown>) {
  const before = fake.seen.length;
  const r = await curlThroughGateway(cg, url, {
    caFile,
    agentToken: who.token,
    method: "POST",
    headers: ["content-type: application/json", url.includes("anthropic") ? "x-api-key: credgate-managed" : "authorization: Bearer credgate-managed"],
    data: JSON.stringify(body),
    maxTime: 60,
  });
  expect(r.status).toBe(403);
  expect(r.headers["x-should-retry"]).toBe("false");
  expect(fake.seen.length).toBe(before);
  return r.json;
}

// Opus, a 4000-token cap: the estimate is a little over 10 cents; reporting 100 in and 3000 out costs 7.55.
const OPUS: SdkCall = { sdk: "anthropic", call: "json", baseURL: ANTHROPIC, model: "claude-opus-4-1", maxTokens: 4000 };
const OPUS_USAGE: FakeUsage = { input: 100, output: 3000 };
const OPUS_COST = (100 * 5 + 3000 * 25) * 1000;
const opusBody = { model: "claude-opus-4-1", max_tokens: 4000, messages: [{ role: "user", content: "Say hello." }] };
const endOf = (period: "day" | "week" | "month") => new Date(windowOf(period, Date.now()).end!).toISOString();

describe("every scope at once", () => {
  test("the tightest budget refuses and is named; a raised limit admits at once; when several refuse, the agent's is named before the project's", async () => {
    const who = await agent(cg, "tightest");
    const mine = await budget(cg, { scope: "agent", agentId: who.id, limitCents: 40, period: "month" });
    const project = await budget(cg, { scope: "project", limitCents: 30, period: "week" });
    const org = await budget(cg, { scope: "organization", limitCents: 12, period: "day" });
    expect((await call(who, OPUS, OPUS_USAGE))[0]!.error).toBeUndefined();
    for (const b of [mine, project, org]) await spentIs(cg, b.id, OPUS_COST);

    // 7.55 spent + a 10-cent estimate is over the organization's 12 (and within the others).
    expect(await refusalOf(who, `${ANTHROPIC}/v1/messages`, opusBody)).toEqual({
      error: "budget_exceeded",
      message: `This organization's spend budget for LLM keys ($0.12 today) has been reached. It resets at ${endOf("day")}.`,
      scope: "organization",
      budget_id: org.id,
      period: "daily",
      limit_usd: 0.12,
      resets_at: endOf("day"),
    });
    // Logged as refused (rows are written in batches).
    await until(async () => {
      const rows = (await cg.api("GET", "/v1/logs?host=api.anthropic.com&decision=budget_exceeded")).body.data;
      if (rows.length !== 1) throw new Error(`${rows.length} refused rows`);
    }, 15_000);

    expect((await cg.api("PATCH", `/v1/org/budgets/${org.id}`, { key: cg.keys.orgApiKey, body: { limitCents: 1000 } })).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await call(who, { ...OPUS, call: "stream" }, OPUS_USAGE))[0]!.error).toBeUndefined();
    await spentIs(cg, project.id, 3 * OPUS_COST);
    // 22.65 + 10 is over the project's 30.
    const byProject = await refusalOf(who, `${ANTHROPIC}/v1/messages`, opusBody);
    expect(byProject).toMatchObject({ scope: "project", budget_id: project.id, period: "weekly", limit_usd: 0.3, resets_at: endOf("week") });
    expect(byProject.message).toBe(`This project's spend budget for LLM keys ($0.30 this week) has been reached. It resets at ${endOf("week")}.`);
    // The agent's budget now refuses too (22.65 spent of 20): the agent's is named first.
    expect((await cg.api("PATCH", `/v1/budgets/${mine.id}`, { body: { limitCents: 20 } })).status).toBe(200);
    const byAgent = await refusalOf(who, `${ANTHROPIC}/v1/messages`, opusBody);
    expect(byAgent).toMatchObject({ scope: "agent", budget_id: mine.id, period: "monthly", limit_usd: 0.2, resets_at: endOf("month") });
    expect(byAgent.message).toBe(`This agent's spend budget for LLM keys ($0.20 this month) has been reached. It resets at ${endOf("month")}.`);
    // The SDK sees the same 403.
    const viaSdk = await sdk([cg], caFile, who.token, OPUS);
    expect(viaSdk[0]!.error?.status).toBe(403);

    for (const b of [mine, project]) expect((await cg.api("DELETE", `/v1/budgets/${b.id}`)).status).toBe(204);
    expect((await cg.api("DELETE", `/v1/org/budgets/${org.id}`, { key: cg.keys.orgApiKey })).status).toBe(204);
    // No budget left: the agent is admitted again.
    expect((await call(who, OPUS, OPUS_USAGE))[0]!.error).toBeUndefined();
  }, 180_000);

  test("chat completions and responses, JSON and SSE, all count against an llm_b budget; it never stops llm_a", async () => {
    const who = await agent(cg, "openai-user");
    const b = await budget(cg, { scope: "project", secretType: "llm_b", limitCents: 6, period: "month" });
    expect(b.spentCents).toBe(0);
    // gpt-4o reporting 1000 in and 1000 out costs 1.25 cents; a 2000-token cap estimates ~2 cents (4096: ~4.1).
    const usage: FakeUsage = { input: 1000, output: 1000 };
    const each = (1000 * 2.5 + 1000 * 10) * 1000;
    const calls: SdkCall["call"][] = ["responses-stream", "chat-json", "chat-stream", "responses-json"];
    for (const [i, kind] of calls.entries()) {
      const [r] = await call(who, { sdk: "openai", call: kind, baseURL: OPENAI, model: "gpt-4o", maxTokens: 2000 }, usage);
      expect(r!.error).toBeUndefined();
      expect(fake.seen.at(-1)!.path).toBe(kind.startsWith("chat") ? "/v1/chat/completions" : "/v1/responses");
      await spentIs(cg, b.id, (i + 1) * each);
    }
    // 5 of 6 spent: a 2-cent estimate does not fit.
    expect(await refusalOf(who, `${OPENAI}/chat/completions`, { model: "gpt-4o", max_completion_tokens: 2000, messages: [{ role: "user", content: "Say hello." }] })).toEqual({
      error: "budget_exceeded",
      message: `This project's spend budget for the llm_b key ($0.06 this month) has been reached. It resets at ${endOf("month")}.`,
      scope: "project",
      budget_id: b.id,
      period: "monthly",
      limit_usd: 0.06,
      resets_at: endOf("month"),
    });
    const [sdkRefused] = await sdk([cg], caFile, who.token, { sdk: "openai", call: "chat-json", baseURL: OPENAI, model: "gpt-4o", maxTokens: 2000 });
    expect({ status: sdkRefused!.error?.status, body: sdkRefused!.error?.body }).toEqual({ status: 403, body: "budget_exceeded" });
    // The same agent's llm_a calls are not under it.
    expect((await call(who, { ...OPUS, call: "stream" }, OPUS_USAGE))[0]!.error).toBeUndefined();
    expect((await cg.api("DELETE", `/v1/budgets/${b.id}`)).status).toBe(204);
  }, 180_000);
});

describe("no overshoot", () => {
  test("a burst of 40 concurrent requests (two gateway workers) against a small agent budget: what fits is admitted, the spend stays within the limit", async () => {
    const who = await agent(cg, "burst");
    const limitCents = 2;
    const b = await budget(cg, { scope: "agent", agentId: who.id, limitCents, period: "total" });
    // 10 in, 90 out on the default llm_b rates with a cap of 100: a little below each call's estimate.
    const usage: FakeUsage = { input: 10, output: 90, delayMs: 50 };
    const c: SdkCall = { sdk: "openai", call: "chat-stream", baseURL: OPENAI, model: "burst-model", maxTokens: 100 };
    const results = await call(who, c, usage, 40);
    const admitted = results.filter((r) => !r.error).length;
    const refused = results.filter((r) => r.error?.status === 403 && r.error.body === "budget_exceeded").length;
    expect(admitted + refused).toBe(40);
    expect(refused).toBeGreaterThan(0);
    const estimate = estimateOf(DEFAULT_PRICES, "llm_b", "burst-model", fake.seen.at(-1)!.bodyBytes, 100);
    const cost = (10 * 2.5 + 90 * 10) * 1000;
    expect(cost).toBeLessThan(estimate);
    expect(admitted).toBeGreaterThanOrEqual(Math.floor((limitCents * NANOS_PER_CENT) / estimate));
    expect(admitted * cost).toBeLessThanOrEqual(limitCents * NANOS_PER_CENT);
    await spentIs(cg, b.id, admitted * cost);
    // The spend report agrees: exactly the admitted requests, at what they cost.
    const report = await until(async () => {
      const r = (await cg.api("GET", "/v1/spend?groupBy=agent")).body.data.find((d: { key: string }) => d.key === who.id);
      if (r?.requests !== admitted) throw new Error(`report: ${JSON.stringify(r)}`);
      return r;
    }, 15_000);
    expect(report.costUsd).toBeCloseTo((admitted * cost) / 1e9, 12);
  }, 240_000);
});

describe("leases", () => {
  const admissions = async () => {
    const m = parseExposition(await (await fetch(`${cg.apiUrl}/metrics`)).text());
    return { lease: sampleValue(m, "credgate_budget_admissions_total", { decided: "lease" }), store: sampleValue(m, "credgate_budget_admissions_total", { decided: "store" }) };
  };

  test("a budget with room to spare under load from two gateway workers: admitted from leases, never over the limit, refused where it ends", async () => {
    const who = await agent(cg, "leased");
    // About 2,500 estimates of room: the first part is admitted from leases, the last 1,000 estimates exactly, in the store.
    const limitCents = 300;
    const b = await budget(cg, { scope: "agent", agentId: who.id, limitCents, period: "day" });
    const usage: FakeUsage = { input: 10, output: 100 };
    const c: SdkCall = { sdk: "openai", call: "chat-json", baseURL: OPENAI, model: "leased-model", maxTokens: 100 };
    const cost = (10 * 2.5 + 100 * 10) * 1000;
    const total = Math.ceil((limitCents * NANOS_PER_CENT) / cost) + 150;
    const before = await admissions();
    const results = await call(who, c, usage, 32, total);
    const admitted = results.filter((r) => !r.error).length;
    const refused = results.filter((r) => r.error?.status === 403 && r.error.body === "budget_exceeded").length;
    expect(admitted + refused).toBe(total);
    expect(refused).toBeGreaterThan(0);
    const estimate = estimateOf(DEFAULT_PRICES, "llm_b", "leased-model", fake.seen.at(-1)!.bodyBytes, 100);
    expect(cost).toBeLessThan(estimate);
    expect(admitted).toBeGreaterThanOrEqual(Math.floor((limitCents * NANOS_PER_CENT) / estimate));
    expect(admitted * cost).toBeLessThanOrEqual(limitCents * NANOS_PER_CENT);
    await spentIs(cg, b.id, admitted * cost);
    // Both workers' counts, summed: every admission was decided once, most of the first ones from leases.
    const after = await admissions();
    expect(after.lease - before.lease + (after.store - before.store)).toBe(admitted);
    expect(after.lease - before.lease).toBeGreaterThan(admitted / 4);
  }, 240_000);
});

describe("alerts", () => {
  test("budget.threshold at 50 and 80 as spend crosses them and 100 at the first refusal, each once, at a webhook of our own", async () => {
    const channel = await cg.api("POST", "/v1/notifications/channels", { body: { kind: "webhook", url: hook.url(HOOK, "/budgets"), events: ["budget.threshold"] } });
    expect(channel.status).toBe(201);
    hook.secret("/budgets", channel.body.signingSecret);
    const who = await agent(cg, "alerted");
    const b = await budget(cg, { scope: "agent", agentId: who.id, limitCents: 6, period: "day", alertPercents: [80, 50] });
    // Haiku with a 4000-token cap estimates a little over 2 cents; reporting 100 in and 3500 out costs 1.76.
    const haiku: SdkCall = { sdk: "anthropic", call: "stream", baseURL: ANTHROPIC, model: "claude-haiku-4-5", maxTokens: 4000 };
    const usage: FakeUsage = { input: 100, output: 3500 };
    const each = (100 * 1 + 3500 * 5) * 1000;
    for (let i = 1; i <= 3; i++) {
      expect((await call(who, haiku, usage))[0]!.error).toBeUndefined();
      await spentIs(cg, b.id, i * each);
    }
    // 29 %, 59 % (50 crossed), 88 % (80 crossed); then 5.28 + 2 > 6: refused, again and again (across both workers).
    for (let i = 0; i < 4; i++) expect((await sdk([cg], caFile, who.token, haiku))[0]!.error?.status).toBe(403);
    // One event per delivery id (a delivery whose answer came late may arrive again: webhooks are at least once).
    const arrived = () => {
      const byDelivery = new Map(hook.arrivals.filter((a) => a.path === "/budgets").map((a) => [a.headers["x-credgate-delivery"], a]));
      return [...byDelivery.values()].map((a) => ({ json: JSON.parse(a.body), verified: a.verified, event: a.headers["x-credgate-event"] }));
    };
    await until(() => {
      if (arrived().length < 3) throw new Error(`${arrived().length} alerts so far`);
    }, 30_000);
    // A fixed wait: it shows no other alert comes (from the other worker, or a fourth threshold).
    await Bun.sleep(2000);
    const got = arrived();
    expect(got.map((a) => a.json.data.percent).sort((x, y) => x - y)).toEqual([50, 80, 100]);
    expect(got.every((a) => a.verified === true && a.event === "budget.threshold" && a.json.event === "budget.threshold")).toBe(true);
    const base = { budgetId: b.id, scope: "agent", limitCents: 6, period: "daily", resetsAt: endOf("day") };
    expect(got.find((a) => a.json.data.percent === 50)!.json.data).toEqual({ ...base, percent: 50, spentCents: 3 });
    expect(got.find((a) => a.json.data.percent === 80)!.json.data).toEqual({ ...base, percent: 80, spentCents: 5 });
    expect(got.find((a) => a.json.data.percent === 100)!.json.data).toEqual({ ...base, percent: 100, spentCents: 5 });
  }, 180_000);
});

describe("the spend report and metrics", () => {
  test("GET /spend adds up, per model and per agent, exactly what the fake vendor reported for the admitted calls; /metrics too", async () => {
    const expectTally = (data: any[], map: Map<string, { requests: number; inputTokens: number; outputTokens: number; costNanos: number }>) => {
      expect(data.map((d) => d.key).sort()).toEqual([...map.keys()].sort());
      for (const d of data) {
        const t = map.get(d.key)!;
        expect({ key: d.key, requests: d.requests, inputTokens: d.inputTokens, outputTokens: d.outputTokens }).toEqual({ key: d.key, requests: t.requests, inputTokens: t.inputTokens, outputTokens: t.outputTokens });
        expect(d.costUsd).toBeCloseTo(t.costNanos / 1e9, 12);
      }
    };
    const byModel = await until(async () => {
      const r = (await cg.api("GET", "/v1/spend?groupBy=model")).body;
      const requests = r.data.reduce((n: number, d: { requests: number }) => n + d.requests, 0);
      const want = [...tally.byModel.values()].reduce((n, t) => n + t.requests, 0);
      if (requests !== want) throw new Error(`${requests} requests reported, ${want} made`);
      return r;
    }, 15_000);
    expectTally(byModel.data, tally.byModel);
    expect(byModel.totalUsd).toBeCloseTo(tally.totalNanos / 1e9, 12);
    // Ordered by cost.
    expect(byModel.data.map((d: { costUsd: number }) => d.costUsd)).toEqual([...byModel.data.map((d: { costUsd: number }) => d.costUsd)].sort((a, b) => b - a));
    expectTally((await cg.api("GET", "/v1/spend?groupBy=agent")).body.data, tally.byAgent);
    const days = (await cg.api("GET", "/v1/spend?groupBy=day")).body;
    expect(days.data.map((d: { key: string }) => d.key)).toEqual([new Date().toISOString().slice(0, 10)]);
    const org = (await cg.api("GET", "/v1/org/spend", { key: cg.keys.orgApiKey })).body;
    expect(org.data.map((d: { key: string }) => d.key)).toEqual([cg.keys.projectId]);
    expect(org.totalUsd).toBeCloseTo(tally.totalNanos / 1e9, 12);

    // /metrics adds up both gateway workers: spend and requests per project and model.
    const metrics = parseExposition(await (await fetch(`${cg.apiUrl}/metrics`)).text());
    for (const [model, t] of tally.byModel) {
      const labels = { project: cg.keys.projectId, model };
      expect(sampleValue(metrics, "credgate_llm_requests_total", labels)).toBe(t.requests);
      expect(sampleValue(metrics, "credgate_llm_spend_usd_total", labels)).toBeCloseTo(t.costNanos / 1e9, 9);
    }
  }, 60_000);
});

describe("windows reset", () => {
  test("day, week and month budgets admit again in the next window (a restart with the clock moved past Monday the 1st, 00:00 UTC); a total budget never", async () => {
    // The next month whose last day is a Sunday: its end is the end of a day, a week and a month at once.
    let end = 0;
    for (let m = 1; end === 0; m++) {
      const now = new Date();
      const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + m, 0));
      if (last.getUTCDay() === 0) end = Date.UTC(last.getUTCFullYear(), last.getUTCMonth(), last.getUTCDate() + 1);
    }
    const offset = Math.round((end - 10 * 60_000 - Date.now()) / 1000);
    const dataDir = tempDir();
    let c = await startCredgate({ dataDir, env: env({ CREDGATE_TEST_NOW_OFFSET_SECONDS: String(offset) }) });
    try {
      const ca = (await gatewayCa(c)).file;
      await projectKeys(c);
      // Opus capped at 4000 tokens (estimate ~10 cents), reporting 3900 out: ~9.8 cents each; 15 cents fit one.
      const usage: FakeUsage = { input: 10, output: 3900 };
      const budgets: Record<string, { who: { id: string; token: string }; b: any }> = {};
      for (const period of ["day", "week", "month", "total"] as const) {
        const who = await agent(c, `window-${period}`);
        budgets[period] = { who, b: await budget(c, { scope: "agent", agentId: who.id, secretType: "llm_a", limitCents: 15, period }) };
      }
      const resets = new Date(end).toISOString();
      expect(Object.values(budgets).map(({ b }) => b.resetsAt)).toEqual([resets, resets, resets, null]);
      fake.setUsage("api.anthropic.com", usage);
      const each = (10 * 5 + 3900 * 25) * 1000;
      const go = (who: { token: string }, gw: RunningCredgate, caPath: string) => sdk([gw], caPath, who.token, OPUS).then((r) => r[0]!);
      expect((await Promise.all(Object.values(budgets).map(({ who }) => go(who, c, ca)))).map((r) => r.error?.status ?? 200)).toEqual([200, 200, 200, 200]);
      for (const { b } of Object.values(budgets)) await spentIs(c, b.id, each);
      expect((await Promise.all(Object.values(budgets).map(({ who }) => go(who, c, ca)))).map((r) => r.error?.status ?? 200)).toEqual([403, 403, 403, 403]);

      // Twenty minutes later: Monday the 1st, 00:10 UTC.
      await c.stop();
      c = await startCredgate({ dataDir, env: env({ CREDGATE_TEST_NOW_OFFSET_SECONDS: String(offset + 20 * 60) }) });
      const after = (await c.api("GET", "/v1/budgets")).body as any[];
      const view = (period: string) => after.find((b) => b.id === budgets[period]!.b.id);
      const DAY = 86_400_000;
      expect([view("day"), view("week"), view("month"), view("total")].map((b) => [b.period, b.spentCents, b.resetsAt])).toEqual([
        ["day", 0, new Date(end + DAY).toISOString()],
        ["week", 0, new Date(end + 7 * DAY).toISOString()],
        ["month", 0, new Date(windowOf("month", end).end!).toISOString()],
        ["total", Math.floor(each / NANOS_PER_CENT), null],
      ]);
      const ca2 = (await gatewayCa(c)).file;
      expect((await Promise.all(Object.values(budgets).map(({ who }) => go(who, c, ca2)))).map((r) => r.error?.status ?? 200)).toEqual([200, 200, 200, 403]);
    } finally {
      await c.stop();
    }
  }, 240_000);
});
