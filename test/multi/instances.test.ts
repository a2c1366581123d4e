// Several credgate instances on one PostgreSQL database (docs/gateway.md#tunnels, docs/policy.md#rate-limits, docs/policy.md#approvals, docs/operations.md#several-instances-on-postgresql; issue "scale-out"):
// two real processes with the same CREDGATE_DATABASE_URL and master key, each with its own data dir and
// ports, against a PostgreSQL server this suite owns (so it can stop and restart it). What one instance
// writes, the other's gateway applies; rate limits and approvals are exact across both; request logs of
// both land in one table; a stopped database gives 503s on the API while the gateways keep injecting, and
// everything resumes when it returns; a killed instance does not stop the other and rejoins.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { OneCLI } from "@onecli-sh/sdk";
import { sql } from "drizzle-orm";
import { curlThroughGateway } from "../support/curl.ts";
import { gatewayCa, resolveEntries, until } from "../support/gateway.ts";
import { startServer, TEST_MASTER_KEY, type PostgresServer } from "../support/postgres.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";
import { SQL } from "bun";
import { costOf, DEFAULT_PRICES, NANOS_PER_CENT } from "../../src/core/pricing.ts";
import { sdk } from "../support/llm/sdk.ts";
import { startFakeVendors, type FakeVendors } from "../support/llm/fakeVendors.ts";
import { addPartnerLlmKey, spendOf } from "../support/partnerFixture.ts";
import { clearOfWindowEdge, HOUR_MS } from "../support/windowEdge.ts";

const BURST_HOST = "burst.multi.test";
const HOSTS = [BURST_HOST, "write.multi.test", "policy.multi.test", "rate.multi.test", "approve.multi.test", "regen.multi.test", "logs.multi.test", "outage.multi.test", "kill.multi.test"];

let pg: PostgresServer;
let url: string;
let up: TestUpstream;
let fake: FakeVendors;
let a: RunningCredgate;
let b: RunningCredgate;
let caFile: string;
let env: Record<string, string>;
const dirA = tempDir();
const dirB = tempDir();

const start = (dataDir: string) => startCredgate({ dataDir, env });

beforeAll(async () => {
  pg = await startServer();
  const admin = new SQL(pg.adminUrl);
  await admin.unsafe(`CREATE DATABASE multi`);
  await admin.close();
  url = pg.urlOf("multi");
  const pki = makePki(HOSTS);
  up = startUpstream(pki);
  fake = startFakeVendors(pki);
  env = {
    CREDGATE_DATABASE_URL: url,
    CREDGATE_MASTER_KEY: TEST_MASTER_KEY,
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_RESOLVE: resolveEntries(HOSTS, up.port),
    CREDGATE_CONNECT_TO: `${BURST_HOST}:443:127.0.0.1:${fake.port}`,
    CREDGATE_APPROVAL_POLL_SECONDS: "2",
  };
  // Both instances start at once on the empty database.
  [a, b] = await Promise.all([start(dirA), start(dirB)]);
  caFile = (await gatewayCa(a)).file;
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await up?.stop();
  await fake?.stop();
  pg?.stop();
});

async function secret(c: RunningCredgate, host: string, value: string): Promise<string> {
  const r = await c.api("POST", "/v1/secrets", { body: { name: `S ${host}`, type: "generic", value, hostPattern: host, injectionConfig: { headerName: "x-secret" } } });
  if (r.status !== 201) throw new Error(`secret: ${r.status} ${r.text}`);
  return r.body.id;
}

async function publishRule(c: RunningCredgate, rule: Record<string, unknown>): Promise<void> {
  expect((await c.api("POST", "/v1/policy/rules", { body: rule })).status).toBe(201);
  expect((await c.api("POST", "/v1/policy/publish")).status).toBe(200);
}

/**
 * Publishes `rule` on `c` beside a marker rule (blocking policy.multi.test/marker-<name>), and returns once both
 * instances' gateways block the marker: the version holding `rule` is in force on both.
 */
async function publishRuleEverywhere(c: RunningCredgate, rule: Record<string, unknown>, marker: string): Promise<void> {
  const path = `/marker-${marker}`;
  expect((await c.api("POST", "/v1/policy/rules", { body: { name: `Marker ${marker}`, action: "block", targets: [{ kind: "network", hostPattern: "policy.multi.test", pathPattern: path }] } })).status).toBe(201);
  await publishRule(c, rule);
  for (const x of [a, b]) {
    await until(async () => {
      if ((await via(x, "policy.multi.test", path)).status !== 403) throw new Error("the policy has not reached this instance yet");
    }, 10_000);
  }
}

/**
 * A request through an instance's gateway, with `upstream`: the headers the upstream received for it. (The
 * upstream's echo in the body cannot say: the echo guard redacts injected values there, docs/guards.md#echo-guard.)
 */
const via = async (c: RunningCredgate, host: string, path = "/", opts: { method?: string; data?: string; token?: string; maxTime?: number } = {}) => {
  const before = up.seen.length;
  const res = await curlThroughGateway(c, `https://${host}:${up.port}${path}`, { caFile, ...(opts.method ? { method: opts.method } : {}), ...(opts.data !== undefined ? { data: opts.data } : {}), ...(opts.token ? { agentToken: opts.token } : {}), ...(opts.maxTime ? { maxTime: opts.maxTime } : {}) });
  const upstream: Record<string, string | undefined> = up.seen.slice(before).at(-1)?.headers ?? {};
  return { ...res, upstream };
};

describe("one database, two instances", () => {
  test("concurrent bootstrap on an empty database: exactly one organization, project, default agent and key pair", async () => {
    const count = async (table: string) => Number((await queryStore<{ n: string }>(a, sql`SELECT count(*) AS n FROM ${sql.identifier(table)}`))[0]!.n);
    expect(await count("organizations")).toBe(1);
    expect(await count("projects")).toBe(1);
    expect(await count("agents")).toBe(1);
    expect(await count("api_keys")).toBe(2);
    expect(b.keys).toEqual(a.keys);
    // Exactly one of them printed the first-start keys.
    const printed = [a, b].filter((c) => c.output().includes(a.keys.projectApiKey));
    expect(printed).toHaveLength(1);
    // Both present leaves of the one shared CA.
    expect((await gatewayCa(b)).pem).toBe((await gatewayCa(a)).pem);
  });

  test("a secret written on A is injected by B's gateway", async () => {
    // Warm B's snapshot first: the change must reach a view B already holds.
    expect((await via(b, "write.multi.test")).upstream["x-secret"]).toBeUndefined();
    await secret(a, "write.multi.test", "value-from-a");
    const r = await until(async () => {
      const res = await via(b, "write.multi.test");
      if (res.upstream["x-secret"] !== "value-from-a") throw new Error("not yet");
      return res;
    }, 3000);
    expect(r.status).toBe(200);
  }, 30_000);

  test("a rule published on B is enforced on A", async () => {
    expect((await via(a, "policy.multi.test", "/admin")).status).toBe(200);
    await publishRule(b, { name: "No admin", action: "block", targets: [{ kind: "network", hostPattern: "policy.multi.test", pathPattern: "/admin" }] });
    const r = await until(async () => {
      const res = await via(a, "policy.multi.test", "/admin");
      if (res.status !== 403) throw new Error("not yet");
      return res;
    }, 3000);
    expect(r.json).toMatchObject({ error: "blocked_by_policy", rule_name: "No admin" });
  }, 30_000);

  test("a 3/hour rate limit admits exactly 3 requests across both instances", async () => {
    await clearOfWindowEdge(HOUR_MS);
    await publishRuleEverywhere(a, { name: "Three per hour", action: "allow", rateLimit: 3, rateLimitWindow: "hour", targets: [{ kind: "network", hostPattern: "rate.multi.test" }] }, "rate");
    const before = up.seen.filter((s) => s.host.startsWith("rate.multi.test")).length;
    const results = await Promise.all([a, b, a, b, a, b, a, b].map((c, i) => via(c, "rate.multi.test", `/r${i}`)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    expect(results.filter((r) => r.status === 429)).toHaveLength(5);
    expect(up.seen.filter((s) => s.host.startsWith("rate.multi.test")).length - before).toBe(3);
  }, 60_000);

  test("a request held at A's gateway is listed on B, decided on B, and completes; the OneCLI SDK loop works against B", async () => {
    await publishRuleEverywhere(b, { name: "Ask first", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: "approve.multi.test", method: "POST" }] }, "approve");
    const held = via(a, "approve.multi.test", "/send", { method: "POST", data: "held-on-a", maxTime: 30 });
    const pending = await until(async () => {
      const r = await b.api("GET", "/v1/approvals/pending");
      const found = r.body.requests.find((x: { host: string }) => x.host === "approve.multi.test");
      if (!found) throw new Error("not listed on B yet");
      return found;
    }, 5000);
    expect((await b.api("POST", `/v1/approvals/${pending.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
    const res = await held;
    expect(res.status).toBe(200);
    expect(res.json.bodyBytes).toBe("held-on-a".length);

    // The SDK's own approval loop against instance B answers a request held by A.
    const decided: string[] = [];
    const handle = new OneCLI({ url: b.apiUrl, apiKey: b.keys.projectApiKey }).configureManualApproval(async (request: { id: string }) => {
      decided.push(request.id);
      return "deny";
    });
    try {
      const denied = await via(a, "approve.multi.test", "/send", { method: "POST", data: "x", maxTime: 30 });
      expect(denied.status).toBe(403);
      expect(denied.json.error).toBe("manual_approval_denied");
      expect(decided).toHaveLength(1);
    } finally {
      handle.stop();
    }
  }, 60_000);

  test("a token regenerated on A gets 407 on B within a second; the new one works there", async () => {
    const agent = await a.api("POST", "/v1/agents", { body: { name: "Regen", identifier: "regen", mode: "all" } });
    const list = await a.api("GET", "/v1/agents");
    const old = list.body.find((x: { id: string }) => x.id === agent.body.id).accessToken;
    expect((await via(b, "regen.multi.test", "/", { token: old })).status).toBe(200);
    const fresh = (await a.api("POST", `/v1/agents/${agent.body.id}/regenerate-token`)).body.accessToken;
    const t0 = performance.now();
    await until(async () => {
      const r = await via(b, "regen.multi.test", "/", { token: old }).catch(() => null);
      if (r !== null) throw new Error(`old token still answered ${r.status}`);
    }, 3000, 50);
    expect(performance.now() - t0).toBeLessThan(1500);
    expect((await via(b, "regen.multi.test", "/", { token: fresh })).status).toBe(200);
  }, 30_000);

  test("request logs of both instances land in one table", async () => {
    await via(a, "logs.multi.test", "/from-a");
    await via(b, "logs.multi.test", "/from-b");
    const paths = await until(async () => {
      const r = await a.api("GET", `/v1/logs?host=logs.multi.test:${up.port}`);
      const got = r.body.data.map((l: { path: string }) => l.path).sort();
      if (got.length < 2) throw new Error("not yet");
      return got;
    }, 15_000);
    expect(paths).toEqual(["/from-a", "/from-b"]);
  }, 30_000);
});

describe("budgets across instances", () => {
  test("40 concurrent metered requests spread over both instances never overshoot a partner key's budget", async () => {
    const limitCents = 2;
    const key = await addPartnerLlmKey(a, { type: "llm_b", value: "sk-proj-multi-partner", hostPattern: BURST_HOST, budget: { limitCents, period: "monthly" } });
    const created = await a.api("POST", "/v1/agents", { body: { name: "Burst", identifier: "burst", mode: "all" } });
    const token = (await a.api("GET", "/v1/agents")).body.find((x: { id: string }) => x.id === created.body.id).accessToken;
    fake.setUsage(BURST_HOST, { input: 10, output: 90, delayMs: 50 });
    // The new agent reaches B's index: B's gateway takes its token.
    await until(async () => {
      if ((await via(b, "write.multi.test", "/agent-known", { token })).status !== 200) throw new Error("B does not know the agent yet");
    }, 10_000);
    // 40 calls at once from one Node process, alternating between the two instances.
    const results = await sdk([a, b], caFile, token, { sdk: "openai", call: "chat-stream", baseURL: `https://${BURST_HOST}/v1`, model: "burst-model", maxTokens: 100 }, 40);
    const admitted = results.filter((r) => !r.error).length;
    const refused = results.filter((r) => r.error?.status === 403 && r.error.body === "budget_exceeded").length;
    expect(admitted + refused).toBe(40);
    expect(refused).toBeGreaterThan(0);
    const cost = costOf(DEFAULT_PRICES, "llm_b", { model: "burst-model", inputTokens: 10, outputTokens: 90, cacheWriteTokens: 0, cacheReadTokens: 0 });
    const spend = await until(async () => {
      const s = await spendOf(a, key.secretId);
      if (s.month !== admitted * cost) throw new Error(`spend ${s.month}, expected ${admitted * cost}`);
      return s.month;
    }, 5000);
    expect(spend).toBeLessThanOrEqual(limitCents * NANOS_PER_CENT);
  }, 120_000);
});

describe("faults", () => {
  test("PostgreSQL stopped: the API answers 503 Database unavailable quickly, the gateways keep injecting; when it returns everything resumes", async () => {
    await secret(a, "outage.multi.test", "outage-value");
    await until(async () => {
      for (const c of [a, b]) if ((await via(c, "outage.multi.test")).upstream["x-secret"] !== "outage-value") throw new Error("not yet");
    }, 3000);
    pg.stop();
    for (const c of [a, b]) {
      const t0 = performance.now();
      const r = await c.api("GET", "/v1/agents");
      expect(performance.now() - t0).toBeLessThan(10_000);
      expect({ status: r.status, body: r.body }).toEqual({ status: 503, body: { error: { message: "Database unavailable", type: "api_error" } } });
      // The gateway serves from its snapshot: the secret is still injected.
      const g = await via(c, "outage.multi.test", "/during");
      expect(g.status).toBe(200);
      expect(g.upstream["x-secret"]).toBe("outage-value");
    }
    pg.start();
    await until(async () => {
      for (const c of [a, b]) if ((await c.api("GET", "/v1/agents")).status !== 200) throw new Error("API not back");
    }, 15_000);
    // Writes and their change events flow again between the instances.
    await secret(b, "outage.multi.test", "after-outage");
    await until(async () => {
      const res = await via(a, "outage.multi.test", "/after");
      if (res.upstream["x-secret"] !== "after-outage") throw new Error("not yet");
    }, 5000);
    // The request logs written during the outage were kept and written afterwards.
    const during = await until(async () => {
      const r = await a.api("GET", `/v1/logs?host=outage.multi.test:${up.port}`);
      const n = r.body.data.filter((l: { path: string }) => l.path === "/during").length;
      if (n < 2) throw new Error("not yet");
      return n;
    }, 15_000);
    expect(during).toBe(2);
  }, 90_000);

  test("an instance killed with kill -9: the other keeps serving; it rejoins on restart", async () => {
    await secret(a, "kill.multi.test", "kill-value");
    expect(await b.stop("SIGKILL")).not.toBe(0);
    const r = await via(a, "kill.multi.test");
    expect(r.upstream["x-secret"]).toBe("kill-value");
    expect((await a.api("GET", "/v1/agents")).status).toBe(200);
    b = await start(dirB);
    expect((await via(b, "kill.multi.test")).upstream["x-secret"]).toBe("kill-value");
    await secret(b, "kill.multi.test", "after-rejoin");
    await until(async () => {
      if ((await via(a, "kill.multi.test")).upstream["x-secret"] !== "after-rejoin") throw new Error("not yet");
    }, 3000);
  }, 60_000);
});
