// Budgets with two credgate instances on one PostgreSQL database (docs/budgets.md#admission,
// docs/budgets.md#alerts): a burst of 40 concurrent SDK requests spread over both gateways, against an agent's
// and the organization's small budgets at once. Admission is decided in the database, so together the two
// instances admit at least what fits by estimate and never more than the limit allows; each alert threshold
// is delivered once, whichever instance crossed it or refused first.
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { DEFAULT_PRICES, estimateOf, NANOS_PER_CENT } from "../../src/core/pricing.ts";
import { gatewayCa, until } from "../support/gateway.ts";
import { startFakeVendors, type FakeVendors } from "../support/llm/fakeVendors.ts";
import { sdk } from "../support/llm/sdk.ts";
import { startReceiver, type Receiver } from "../support/notifyReceivers.ts";
import { freshDatabase, TEST_MASTER_KEY } from "../support/postgres.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki } from "../support/upstream.ts";
import { clearOfMidnight } from "../support/windowEdge.ts";

// Budget windows start at 00:00 UTC: no test runs across one.
beforeEach(clearOfMidnight);

const VENDOR = "api.openai.com";
const HOOK = "hooks.multi-budgets.test";

let fake: FakeVendors;
let hook: Receiver;
let a: RunningCredgate;
let b: RunningCredgate;
let caFile: string;

beforeAll(async () => {
  const pki = makePki([VENDOR, HOOK]);
  fake = startFakeVendors(pki);
  hook = startReceiver(pki, "webhook");
  const env = {
    CREDGATE_DATABASE_URL: await freshDatabase(),
    CREDGATE_MASTER_KEY: TEST_MASTER_KEY,
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_CONNECT_TO: `${VENDOR}:443:127.0.0.1:${fake.port}`,
    CREDGATE_RESOLVE: `${HOOK}:${hook.port}:127.0.0.1`,
  };
  [a, b] = await Promise.all([startCredgate({ env }), startCredgate({ env })]);
  caFile = (await gatewayCa(a)).file;
}, 90_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await fake?.stop();
  await hook?.stop();
});

test("40 concurrent requests over two instances never overshoot the agent's and the organization's budgets; each alert arrives once", async () => {
  expect((await a.api("POST", "/v1/secrets", { body: { name: "OpenAI", type: "llm_b", value: "sk-proj-multi-budgets" } })).status).toBe(201);
  const created = await b.api("POST", "/v1/agents", { body: { name: "Burst", identifier: "burst", mode: "all" } });
  expect(created.status).toBe(201);
  const token = (await a.api("GET", "/v1/agents")).body.find((x: { id: string }) => x.id === created.body.id).accessToken;
  const channel = await a.api("POST", "/v1/org/notifications/channels", { key: a.keys.orgApiKey, body: { kind: "webhook", url: hook.url(HOOK, "/org"), events: ["budget.threshold"] } });
  expect(channel.status).toBe(201);
  hook.secret("/org", channel.body.signingSecret);
  // The organization's budget is the tighter one; the agent's is a little larger.
  const org = await b.api("POST", "/v1/org/budgets", { key: b.keys.orgApiKey, body: { limitCents: 2, period: "month", alertPercents: [50] } });
  const mine = await a.api("POST", "/v1/budgets", { body: { scope: "agent", agentId: created.body.id, limitCents: 3, period: "day" } });
  expect([org.status, mine.status]).toEqual([201, 201]);

  // 10 in, 90 out on the default llm_b rates with a cap of 100: a little below each call's estimate.
  fake.setUsage(VENDOR, { input: 10, output: 90, delayMs: 50 });
  const results = await sdk([a, b], caFile, token, { sdk: "openai", call: "chat-stream", baseURL: `https://${VENDOR}/v1`, model: "burst-model", maxTokens: 100 }, 40);
  const admitted = results.filter((r) => !r.error).length;
  const refused = results.filter((r) => r.error?.status === 403 && r.error.body === "budget_exceeded").length;
  expect(admitted + refused).toBe(40);
  expect(refused).toBeGreaterThan(0);
  const estimate = estimateOf(DEFAULT_PRICES, "llm_b", "burst-model", fake.seen.at(-1)!.bodyBytes, 100);
  const cost = (10 * 2.5 + 90 * 10) * 1000;
  expect(cost).toBeLessThan(estimate);
  const limit = 2 * NANOS_PER_CENT;
  expect(admitted).toBeGreaterThanOrEqual(Math.floor(limit / estimate));
  expect(admitted * cost).toBeLessThanOrEqual(limit);
  expect(fake.seen.filter((s) => s.model === "burst-model").length).toBe(admitted);

  // Both instances see the same spend: exactly the admitted requests, in both windows.
  for (const [c, path, key, id] of [
    [a, "/v1/org/budgets", a.keys.orgApiKey, org.body.id],
    [b, "/v1/budgets", b.keys.projectApiKey, mine.body.id],
  ] as const) {
    await until(async () => {
      const got = (await c.api("GET", path, { key })).body.find((x: { id: string }) => x.id === id);
      if (got.spentCents !== Math.floor((admitted * cost) / NANOS_PER_CENT)) throw new Error(`spentCents ${got.spentCents}`);
    }, 15_000);
  }
  const report = await until(async () => {
    const r = (await b.api("GET", "/v1/org/spend?groupBy=agent", { key: b.keys.orgApiKey })).body;
    if (r.data[0]?.requests !== admitted) throw new Error(`report ${JSON.stringify(r)}`);
    return r;
  }, 15_000);
  expect(report.totalUsd).toBeCloseTo((admitted * cost) / 1e9, 12);

  // The organization's 50 % and its first refusal (100 %): once each, though both instances crossed or refused.
  await until(() => {
    if (hook.arrivals.filter((x) => x.path === "/org").length < 2) throw new Error("alerts not arrived yet");
  }, 30_000);
  // A fixed wait: it shows no alert comes twice (from the other instance) past a retry's backoff.
  await Bun.sleep(3000);
  // One event per delivery id (a delivery whose answer came late may arrive again: webhooks are at least once).
  const deliveries = new Map(hook.arrivals.filter((x) => x.path === "/org").map((x) => [x.headers["x-credgate-delivery"], x]));
  const alerts = [...deliveries.values()].map((x) => ({ ...JSON.parse(x.body).data, verified: x.verified }));
  expect(alerts.map((x) => `${x.budgetId === org.body.id ? "org" : "agent"}:${x.percent}`).sort()).toEqual(["org:100", "org:50"]);
  expect(alerts.every((x) => x.verified === true)).toBe(true);
}, 240_000);
