// LLM metering and spend budgets through the real gateway (docs/budgets.md#partner-budgets; docs/budgets.md#admission, docs/budgets.md#pricing): the vendors'
// official Node SDKs (@anthropic-ai/sdk, openai), unmodified, send their requests through credgate's MITM
// path to a fake vendor that answers in the vendors' real wire formats (JSON and SSE). Every usage form is
// priced into the request log's costNanos; partner keys with budgets are admitted (from the process's lease when
// there is room to spare), refused with the exact 403, and never overshot by a concurrent burst; aborts, errors, unknown models and a pricing file count as
// the contract says.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { costOf, DEFAULT_PRICES, estimateOf, mergePrices, NANOS_PER_CENT, type PriceTable } from "../../src/core/pricing.ts";
import { curlThroughGateway } from "../support/curl.ts";
import { gatewayCa, run, ROOT, until } from "../support/gateway.ts";
import { startFakeVendors, type FakeVendors } from "../support/llm/fakeVendors.ts";
import { addPartnerLlmKey, budgetSpentOf, spendOf } from "../support/partnerFixture.ts";
import { parseExposition, sampleValue } from "../support/prometheus.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki } from "../support/upstream.ts";
import { clearOfMidnight } from "../support/windowEdge.ts";

// Budget windows start at 00:00 UTC: no test runs across one.
beforeEach(clearOfMidnight);

const PUBLIC_URL = "https://credgate.example";
const HOSTS = ["api.anthropic.com", "api.openai.com", "budget.anthropic.test", "burst.openai.test", "leased.openai.test", "abort.anthropic.test", "err.openai.test"];
const OVERRIDE = { llm_a: { "pricey-model": { input: 100, output: 200 } } };

let cg: RunningCredgate;
let fake: FakeVendors;
let caFile: string;
let prices: PriceTable;

beforeAll(async () => {
  const pki = makePki(HOSTS);
  fake = startFakeVendors(pki);
  const pricingFile = join(tempDir(), "prices.json");
  writeFileSync(pricingFile, JSON.stringify(OVERRIDE));
  prices = mergePrices(DEFAULT_PRICES, OVERRIDE) as PriceTable;
  cg = await startCredgate({
    env: {
      CREDGATE_PUBLIC_URL: PUBLIC_URL,
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_CONNECT_TO: HOSTS.map((h) => `${h}:443:127.0.0.1:${fake.port}`).join(","),
      CREDGATE_PRICING_FILE: pricingFile,
    },
  });
  caFile = (await gatewayCa(cg)).file;
  for (const [type, value] of [
    ["llm_a", "sk-ant-api03-project-key"],
    ["llm_b", "sk-proj-openai-project-key"],
  ] as const) {
    expect((await cg.api("POST", "/v1/secrets", { body: { name: `Project ${type}`, type, value } })).status).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  await cg?.stop();
  await fake?.stop();
});

interface ClientResult {
  text?: string;
  usage?: Record<string, number> | null;
  events?: number;
  aborted?: boolean;
  error?: { status: number | null; body: any; message: string };
  results?: ClientResult[];
}

/** The official SDK in a Node process, through the gateway as `token`'s agent. */
async function sdk(opts: Record<string, unknown>, token = cg.keys.defaultAgentToken): Promise<ClientResult> {
  const r = await run(["node", join(ROOT, "test/support/llm/client.mjs"), JSON.stringify({ proxy: `http://x:${token}@127.0.0.1:${cg.gatewayPort}`, ...opts })], {
    env: { NODE_EXTRA_CA_CERTS: caFile },
    timeoutMs: 60_000,
  });
  if (r.code !== 0 || !r.stdout.trim()) throw new Error(`client failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!);
}

/** The request-log rows of a host since `after` (ISO), newest first, once `n` are there. */
async function logsOf(host: string, n = 1): Promise<{ path: string; status: number; costNanos: number | null; decision: string }[]> {
  return until(async () => {
    const r = await cg.api("GET", `/v1/logs?host=${host}&limit=500`);
    if (r.body.data.length < n) throw new Error(`${r.body.data.length} log rows for ${host}`);
    return r.body.data;
  }, 8000);
}

const usage = (model: string, inputTokens: number, outputTokens: number, cacheWriteTokens = 0, cacheReadTokens = 0) => ({ model, inputTokens, outputTokens, cacheWriteTokens, cacheReadTokens });

async function agentToken(identifier: string): Promise<string> {
  const created = await cg.api("POST", "/v1/agents", { body: { name: identifier, identifier, mode: "all" } });
  expect(created.status).toBe(201);
  return (await cg.api("GET", "/v1/agents")).body.find((a: { id: string }) => a.id === created.body.id).accessToken;
}

describe("metering every usage form (project keys, costNanos in the log)", () => {
  test("Anthropic JSON: the key is injected, Accept-Encoding removed, the cost of the reported usage logged", async () => {
    fake.setUsage("api.anthropic.com", { input: 1200, output: 340, cacheWrite: 100, cacheRead: 2000 });
    const before = (await cg.api("GET", "/v1/logs?host=api.anthropic.com")).body.data.length;
    const r = await sdk({ sdk: "anthropic", call: "json", baseURL: "https://api.anthropic.com", model: "claude-sonnet-4-5" });
    expect(r.usage).toMatchObject({ input_tokens: 1200, output_tokens: 340, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000 });
    const seen = fake.seen.findLast((s) => s.host === "api.anthropic.com")!;
    expect(seen.apiKey).toBe("sk-ant-api03-project-key");
    expect(seen.acceptEncoding).toBeNull();
    const [row] = await logsOf("api.anthropic.com", before + 1);
    expect(row!.costNanos).toBe(costOf(prices, "llm_a", usage("claude-sonnet-4-5", 1200, 340, 100, 2000)));
    expect(row!.costNanos).toBe((1200 * 3 + 100 * 3.75 + 2000 * 0.3 + 340 * 15) * 1000);
  });

  test("Anthropic SSE through the SDK's stream: input and cache from message_start, output from message_delta", async () => {
    fake.setUsage("api.anthropic.com", { input: 50, output: 777, cacheRead: 10 });
    const before = (await cg.api("GET", "/v1/logs?host=api.anthropic.com")).body.data.length;
    const r = await sdk({ sdk: "anthropic", call: "stream", baseURL: "https://api.anthropic.com", model: "claude-haiku-4-5" });
    expect(r.text).toBe("Hello world!");
    const [row] = await logsOf("api.anthropic.com", before + 1);
    expect(row!.costNanos).toBe(costOf(prices, "llm_a", usage("claude-haiku-4-5", 50, 777, 0, 10)));
  });

  test("OpenAI chat completions, JSON and SSE with include_usage; cached tokens at the cache-read rate", async () => {
    fake.setUsage("api.openai.com", { input: 900, output: 12, cacheRead: 512 });
    const before = (await cg.api("GET", "/v1/logs?host=api.openai.com")).body.data.length;
    const json = await sdk({ sdk: "openai", call: "chat-json", baseURL: "https://api.openai.com/v1", model: "gpt-4o-2024-08-06" });
    expect(json.usage).toMatchObject({ prompt_tokens: 900, completion_tokens: 12 });
    expect(fake.seen.findLast((s) => s.host === "api.openai.com")!.authorization).toBe("Bearer sk-proj-openai-project-key");
    const stream = await sdk({ sdk: "openai", call: "chat-stream", baseURL: "https://api.openai.com/v1", model: "gpt-4.1-mini" });
    expect(stream.usage).toMatchObject({ prompt_tokens: 900, completion_tokens: 12 });
    const rows = await logsOf("api.openai.com", before + 2);
    expect(rows[1]!.costNanos).toBe((388 * 2.5 + 512 * 1.25 + 12 * 10) * 1000);
    expect(rows[0]!.costNanos).toBe(costOf(prices, "llm_b", usage("gpt-4.1-mini", 900, 12, 0, 512)));
  });

  test("OpenAI responses, JSON and SSE (response.completed)", async () => {
    fake.setUsage("api.openai.com", { input: 5000, output: 70, cacheRead: 1000 });
    const before = (await cg.api("GET", "/v1/logs?host=api.openai.com")).body.data.length;
    expect((await sdk({ sdk: "openai", call: "responses-json", baseURL: "https://api.openai.com/v1", model: "o3" })).text).toBe("Hello!");
    expect((await sdk({ sdk: "openai", call: "responses-stream", baseURL: "https://api.openai.com/v1", model: "gpt-5-mini" })).usage).toMatchObject({ input_tokens: 5000 });
    const rows = await logsOf("api.openai.com", before + 2);
    expect(rows[1]!.costNanos).toBe(costOf(prices, "llm_b", usage("o3", 5000, 70, 0, 1000)));
    expect(rows[0]!.costNanos).toBe(costOf(prices, "llm_b", usage("gpt-5-mini", 5000, 70, 0, 1000)));
  });

  test("no usage on a 2xx (chat streaming without include_usage) → the estimate is charged", async () => {
    fake.setUsage("api.openai.com", { input: 1, output: 1 });
    const before = (await cg.api("GET", "/v1/logs?host=api.openai.com")).body.data.length;
    await sdk({ sdk: "openai", call: "chat-stream", baseURL: "https://api.openai.com/v1", model: "gpt-4o-mini", includeUsage: false });
    const seen = fake.seen.findLast((s) => s.host === "api.openai.com")!;
    const [row] = await logsOf("api.openai.com", before + 1);
    expect(row!.costNanos).toBe(estimateOf(prices, "llm_b", "gpt-4o-mini", seen.bodyBytes, null));
  });

  test("an unknown model is priced at the type's default; CREDGATE_PRICING_FILE overrides a model", async () => {
    fake.setUsage("api.anthropic.com", { input: 1000, output: 1000 });
    const before = (await cg.api("GET", "/v1/logs?host=api.anthropic.com")).body.data.length;
    await sdk({ sdk: "anthropic", call: "json", baseURL: "https://api.anthropic.com", model: "claude-future-9" });
    await sdk({ sdk: "anthropic", call: "json", baseURL: "https://api.anthropic.com", model: "claude-pricey-model-1" });
    const rows = await logsOf("api.anthropic.com", before + 2);
    expect(rows[1]!.costNanos).toBe((1000 * 5 + 1000 * 25) * 1000); // opus rates
    expect(rows[0]!.costNanos).toBe((1000 * 100 + 1000 * 200) * 1000); // the pricing file
  });

  test("a non-2xx answer is charged nothing", async () => {
    fake.setUsage("err.openai.test", { input: 1, output: 1, status: 500 });
    expect((await cg.api("POST", "/v1/secrets", { body: { name: "Err", type: "llm_b", value: "sk-err", hostPattern: "err.openai.test" } })).status).toBe(201);
    const r = await sdk({ sdk: "openai", call: "chat-json", baseURL: "https://err.openai.test/v1", model: "gpt-4o" });
    expect(r.error?.status).toBe(500);
    const [row] = await logsOf("err.openai.test");
    expect({ status: row!.status, costNanos: row!.costNanos }).toEqual({ status: 500, costNanos: 0 });
  });

  test("a client abort mid-stream is charged what was reported so far", async () => {
    fake.setUsage("abort.anthropic.test", { input: 4000, output: 999, delayMs: 300 });
    expect((await cg.api("POST", "/v1/secrets", { body: { name: "Abort", type: "llm_a", value: "sk-ant-abort", hostPattern: "abort.anthropic.test" } })).status).toBe(201);
    const r = await sdk({ sdk: "anthropic", call: "stream", baseURL: "https://abort.anthropic.test", model: "claude-sonnet-4-5", abortAfterEvents: 3 });
    expect(r.aborted).toBe(true);
    const [row] = await logsOf("abort.anthropic.test");
    // message_start reported 4000 input tokens and 1 output token; the final 999 never came.
    expect(row!.costNanos).toBe(costOf(prices, "llm_a", usage("claude-sonnet-4-5", 4000, 1)));
  });
});

describe("partner keys with spend budgets", () => {
  test("docs/budgets.md#pricing, docs/budgets.md#admission: a streamed 1M-token sonnet call raises spentCents by 300; then 403 budget_exceeded (exact); the org's own key takes over", async () => {
    const key = await addPartnerLlmKey(cg, { type: "llm_a", value: "sk-ant-api03-partner", hostPattern: "budget.anthropic.test", budget: { limitCents: 100, period: "monthly" } });
    const token = await agentToken("budget-agent");
    fake.setUsage("budget.anthropic.test", { input: 1_000_000, output: 0 });
    const first = await sdk({ sdk: "anthropic", call: "stream", baseURL: "https://budget.anthropic.test", model: "claude-sonnet-4-5", maxTokens: 16 }, token);
    expect(first.text).toBe("Hello world!");
    expect(fake.seen.findLast((s) => s.host === "budget.anthropic.test")!.apiKey).toBe("sk-ant-api03-partner");
    expect(await until(async () => {
      const s = await spendOf(cg, key.secretId);
      if (s.month !== 300 * NANOS_PER_CENT) throw new Error(`spend ${s.month}`);
      return s;
    }, 5000)).toEqual({ month: 300 * NANOS_PER_CENT, total: 300 * NANOS_PER_CENT });

    const seenBefore = fake.seen.length;
    const refused = await curlThroughGateway(cg, "https://budget.anthropic.test/v1/messages", {
      caFile,
      agentToken: token,
      method: "POST",
      headers: ["content-type: application/json", "x-api-key: credgate-managed"],
      data: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
    });
    const addKeyUrl = `${PUBLIC_URL}/p/${cg.keys.projectId}/secrets?create=llm_a`;
    expect(refused.status).toBe(403);
    expect(refused.headers["x-should-retry"]).toBe("false");
    expect(refused.json).toEqual({
      error: "budget_exceeded",
      message: `This organization's spend budget for the llm_a key ($1.00 this month) has been reached, so the key is paused. The user can add their own key in the credgate dashboard to keep going: ${addKeyUrl}`,
      limit_usd: 1,
      period: "monthly",
      add_key_url: addKeyUrl,
    });
    expect(fake.seen.length).toBe(seenBefore);
    const [logged] = await logsOf("budget.anthropic.test", 2);
    expect(logged!.decision).toBe("budget_exceeded");

    // The organization adds its own llm_a key for the host: it overrides the partner's, whose budget no longer applies.
    const own = await cg.api("POST", "/v1/org/secrets", { key: cg.keys.orgApiKey, body: { name: "Own Anthropic", type: "llm_a", value: "sk-ant-api03-own", hostPattern: "budget.anthropic.test" } });
    expect(own.status).toBe(201);
    const after = await sdk({ sdk: "anthropic", call: "json", baseURL: "https://budget.anthropic.test", model: "claude-sonnet-4-5" }, token);
    expect(after.error).toBeUndefined();
    expect(fake.seen.findLast((s) => s.host === "budget.anthropic.test")!.apiKey).toBe("sk-ant-api03-own");
  }, 60_000);

  test("docs/budgets.md#leases: under a partner budget with room to spare, requests are admitted from the process's lease, in memory, and charged exactly", async () => {
    const key = await addPartnerLlmKey(cg, { type: "llm_b", value: "sk-proj-partner-leased", hostPattern: "leased.openai.test", budget: { limitCents: 100_000, period: "monthly" } });
    const token = await agentToken("leased-agent");
    fake.setUsage("leased.openai.test", { input: 10, output: 90 });
    const admissions = async () => {
      const m = parseExposition(await (await fetch(`${cg.apiUrl}/metrics`)).text());
      return { lease: sampleValue(m, "credgate_budget_admissions_total", { decided: "lease" }), store: sampleValue(m, "credgate_budget_admissions_total", { decided: "store" }) };
    };
    const before = await admissions();
    const total = 200;
    const results = (await sdk({ sdk: "openai", call: "chat-json", baseURL: "https://leased.openai.test/v1", model: "leased-model", maxTokens: 100, concurrent: 16, total }, token)).results!;
    expect(results.filter((r) => r.error)).toEqual([]);
    // Every admission was decided once; after the first ones, from the lease (before, each waited on the store).
    const after = await admissions();
    expect(after.lease - before.lease + (after.store - before.store)).toBe(total);
    expect(after.lease - before.lease).toBeGreaterThan(total / 2);
    // Charged exactly: in the budget's window (the ledger) and in the key's recorded spend (batched).
    const cost = costOf(prices, "llm_b", usage("leased-model", 10, 90));
    await until(async () => {
      const [window, recorded] = [await budgetSpentOf(cg, key.budgetId!), (await spendOf(cg, key.secretId)).month];
      if (window !== total * cost || recorded !== total * cost) throw new Error(`window ${window}, recorded ${recorded}, expected ${total * cost}`);
    }, 5000);
  }, 120_000);

  test("a burst of 40 concurrent requests against a small budget never overshoots it", async () => {
    const limitCents = 2;
    const key = await addPartnerLlmKey(cg, { type: "llm_b", value: "sk-proj-partner-burst", hostPattern: "burst.openai.test", budget: { limitCents, period: "total" } });
    const token = await agentToken("burst-agent");
    // Each call reports 10 input and 90 output tokens (its cap is 100) on the default llm_b rates: a little
    // below its estimate, and 40 of them cost almost twice the budget, so some must be refused.
    fake.setUsage("burst.openai.test", { input: 10, output: 90, delayMs: 50 });
    // 40 calls at once from one Node process (40 processes would measure the machine, not the budget).
    const results = (await sdk({ sdk: "openai", call: "chat-stream", baseURL: "https://burst.openai.test/v1", model: "burst-model", maxTokens: 100, concurrent: 40 }, token)).results!;
    const admitted = results.filter((r) => !r.error).length;
    // The openai SDK surfaces the body's `error` field (OpenAI's own errors nest there).
    const refused = results.filter((r) => r.error?.status === 403 && r.error.body === "budget_exceeded").length;
    expect(admitted + refused).toBe(40);
    expect(refused).toBeGreaterThan(0);
    const estimate = estimateOf(prices, "llm_b", "burst-model", fake.seen.findLast((s) => s.host === "burst.openai.test")!.bodyBytes, 100);
    const cost = costOf(prices, "llm_b", usage("burst-model", 10, 90));
    expect(cost).toBeLessThan(estimate);
    // At least as many as fit by estimate were admitted, and the spend is exactly what they cost, within the limit.
    expect(admitted).toBeGreaterThanOrEqual(Math.floor((limitCents * NANOS_PER_CENT) / estimate));
    const spend = await until(async () => {
      const s = await spendOf(cg, key.secretId);
      if (s.total !== admitted * cost) throw new Error(`spend ${s.total}, expected ${admitted * cost}`);
      return s.total;
    }, 5000);
    expect(spend).toBeLessThanOrEqual(limitCents * NANOS_PER_CENT);
  }, 120_000);
});
