// The budget stage (docs/budgets.md) with the real ledger and budget services on a real store: a request to a
// metered endpoint that an LLM key was injected into is metered (an estimate from its body, an uncompressed
// answer asked for, the body still forwarded whole); the agent's, project's and organization's budgets of the
// key's type (from the agent's view) and a partner key's budget must admit the estimate, or the request is
// answered 403 budget_exceeded naming the budget; on the way back the vendor's reported usage is charged once
// the body has ended (the budgets' windows, the key's spend, a spend record), and what a request that never
// went upstream held is dropped.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { windowOf } from "../../../src/core/budgetWindows.ts";
import { costOf, estimateOf, NANOS_PER_CENT } from "../../../src/core/pricing.ts";
import { Pipeline } from "../../../src/gateway/pipeline.ts";
import { Reply, StreamBody } from "../../../src/gateway/reply.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { GatewaySnapshot, type AgentEntry, type CompiledSecret } from "../../../src/gateway/snapshot.ts";
import { answer } from "../../../src/gateway/stage.ts";
import { budgetStage } from "../../../src/gateway/stages/budget.ts";
import { injectStage } from "../../../src/gateway/stages/inject.ts";
import { agentCredentials, agentEntry, compiledSecret, given, replyText, signIn, testRequest } from "../../../src/gateway/testing.ts";
import type { PartnerBudget as Budget } from "../../../src/services/budgets/partnerBudget.ts";
import type { WindowRef } from "../../../src/services/budgets/windowRows.ts";
import { VaultResolver } from "../../../src/vault/resolver.ts";
import { createTestApi, type TestApi } from "../../support/app.ts";
import { until, untilTrue } from "../../support/gateway.ts";
import { outcome } from "./helpers.ts";
import { clearOfMidnight } from "../../support/windowEdge.ts";

// Budget windows start at 00:00 UTC: no test runs across one.
beforeEach(clearOfMidnight);

const HOST = "llm.budget.test";
const MODEL = "gpt-4o-mini";
const BODY = JSON.stringify({ model: MODEL, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
let api: TestApi;
let stage: ReturnType<typeof budgetStage>;
const inject = injectStage({ vault: new VaultResolver({ host: null, token: null, fetch: fetch }) });

beforeAll(async () => {
  api = await createTestApi();
  const s = api.core.services;
  stage = budgetStage({ prices: s.prices, ledger: s.budgetLedger, keySpend: s.partnerBudgets, spend: s.spend, publicUrl: "https://credgate.test" });
});
afterAll(() => api.core.close());

const agent = () => agentEntry({ organizationId: api.organizationId, projectId: "project-9" });

function llmKey(id: string, scope: CompiledSecret["scope"]): CompiledSecret {
  return compiledSecret({ id, scope, tier: scope === "partner" ? 1 : 3, hostPattern: HOST, type: "llm_b", injection: null, value: `sk-${id}` });
}

/** A request whose key the inject stage applied. */
async function request(key: CompiledSecret, budgets: Budget[] = [], init: { method?: string; target?: string; body?: string; headers?: Record<string, string> } = {}): Promise<ProxyRequest> {
  const body = init.body ?? BODY;
  const rq = testRequest({ tunnel: HOST, method: init.method ?? "POST", target: init.target ?? "/v1/chat/completions", headers: { "content-type": "application/json", "accept-encoding": "gzip", "content-length": String(body.length), ...init.headers }, body });
  signIn(rq, agentCredentials({ agent: agent(), injectable: [key], partnerBudgets: new Map(budgets.map((b) => [b.secretId, b])) }));
  expect(await outcome(inject.request!(rq))).toBe("pass");
  return rq;
}

function upstreamReply(status: number, json: unknown): Reply {
  const text = JSON.stringify(json);
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode(text));
      c.close();
    },
  });
  const reply = new Reply(status, "", [["content-type", "application/json"]], new StreamBody(stream, text.length));
  reply.fromUpstream = true;
  return reply;
}

const estimate = () => estimateOf(api.core.services.prices, "llm_b", MODEL, BODY.length, 100);

let partners = 0;

/**
 * A partner llm_b key with a budget for the test organization, in the store as the partner API leaves them (a
 * budget's windows belong to it), with `recordedNanos` spent on the key before; the budget as the snapshot holds it.
 */
async function partnerBudget(limitCents: number, period: Budget["period"], recordedNanos = 0): Promise<{ key: CompiledSecret; budget: Budget }> {
  const { store, services: s } = api.core;
  const partnerId = crypto.randomUUID();
  await store.db.insert(store.t.partners).values({ id: partnerId, name: `Partner ${++partners}`, createdAt: new Date().toISOString() });
  const secret = await s.secrets.create({ scope: "partner", partnerId }, { name: `Partner OpenAI ${partners}`, type: "llm_b", value: `sk-partner-${partners}`, hostPattern: HOST });
  await s.partnerBudgets.set(secret.id, api.organizationId, limitCents, period);
  if (recordedNanos > 0) {
    s.partnerBudgets.record(secret.id, api.organizationId, recordedNanos);
    await s.partnerBudgets.flush();
  }
  return { key: llmKey(secret.id, "partner"), budget: (await s.partnerBudgets.find(secret.id, api.organizationId))! };
}

/** What a metered request that cost `nanos` leaves in a budget's window. */
async function charge(budget: Budget, nanos: number): Promise<void> {
  const ledger = api.core.services.budgetLedger;
  const a = await ledger.admit([], budget, 0, Date.now());
  if (!a.admitted) throw new Error("not admitted");
  ledger.settle(a.hold, nanos);
  await ledger.drained();
}

const kinds = (windows: readonly WindowRef[] | undefined) => windows?.map((w) => (w.kind === "scope" ? w.budget.scope : w.kind));

describe("request", () => {
  test("not a metered endpoint, or no LLM key: passes synchronously, unmetered", async () => {
    for (const rq of [await request(llmKey("k-get", "project"), [], { method: "GET", target: "/v1/models" }), await request(compiledSecret({ hostPattern: HOST }))]) {
      const verdict = stage.request!(rq);
      expect(verdict).not.toBeInstanceOf(Promise);
      expect(await outcome(verdict)).toBe("pass");
      expect(rq.meter).toBeNull();
    }
  });

  test("every reading of the path is judged: a spelling of a metered endpoint is metered as that endpoint", async () => {
    for (const target of ["/v1/chat/completions/", "/V1/chat/completions", "/v1/./chat/completions", "/v1/chat/completions;x", "/v1/chat%2Fcompletions", "/v1/chat/%63ompletions"]) {
      const rq = await request(llmKey("k-spelled", "project"), [], { target });
      expect(await outcome(stage.request!(rq))).toBe("pass");
      expect({ target, api: rq.meter?.api }).toEqual({ target, api: "chat_completions" });
    }
  });

  test("not metered but carrying a budgeted key (another endpoint, a WebSocket): admitted while the budget has room for the smallest metered request, refused once it has none", async () => {
    const { key, budget } = await partnerBudget(1, "monthly");
    const models = await request(key, [budget], { method: "GET", target: "/v1/models" });
    expect(await outcome(stage.request!(models))).toBe("pass");
    expect(models.meter).toBeNull();
    // Spent but for less than the smallest metered request (1 output token of gpt-4o at $10/M = 10,000 nano-USD).
    await charge(budget, NANOS_PER_CENT - 5_000);
    for (const init of [{ method: "GET", target: "/v1/models" }, { method: "POST", target: "/v1/embeddings" }, { method: "GET", target: "/v1/realtime", headers: { upgrade: "websocket", connection: "Upgrade" } }]) {
      const rq = await request(key, [budget], init);
      const o = await outcome(stage.request!(rq));
      expect({ target: init.target, o: o === "pass" ? o : o.decision }).toEqual({ target: init.target, o: "budget_exceeded" });
    }
    // No budget on the key: nothing to ask, synchronous.
    const free = await request(llmKey("k-free", "project"), [], { method: "GET", target: "/v1/models" });
    expect(stage.request!(free)).not.toBeInstanceOf(Promise);
  });

  test("metered without a budget: the estimate is taken from the body, identity asked for, the body kept", async () => {
    const rq = await request(llmKey("k-own", "project"));
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(rq.meter).toEqual({ secretId: "k-own", type: "llm_b", api: "chat_completions", model: MODEL, estimateNanos: estimate(), at: expect.any(Number), hold: null, costNanos: null });
    expect(rq.headers.get("accept-encoding")).toBeNull();
    expect(await new Response(rq.body).text()).toBe(BODY);
  });

  test("a partner key whose budget cannot take the estimate → 403 budget_exceeded with the link to add an own key", async () => {
    // The whole cent was spent on the key before: the budget's window opens from it.
    const { key, budget } = await partnerBudget(1, "monthly", NANOS_PER_CENT);
    const rq = await request(key, [budget]);
    expect(await outcome(stage.request!(rq))).toEqual({
      decision: "budget_exceeded",
      status: 403,
      headers: expect.objectContaining({ "x-should-retry": "false" }),
      body: {
        error: "budget_exceeded",
        message:
          "This organization's spend budget for the llm_b key ($0.01 this month) has been reached, so the key is paused. The user can add their own key in the credgate dashboard to keep going: https://credgate.test/p/project-9/secrets?create=llm_b",
        limit_usd: 0.01,
        period: "monthly",
        add_key_url: "https://credgate.test/p/project-9/secrets?create=llm_b",
      },
    });
    expect(rq.meter).toBeNull();
  });
});

describe("response", () => {
  test("a 2xx is charged what the vendor reported, once the body has ended; the reply passes unchanged", async () => {
    const { key, budget } = await partnerBudget(100, "total");
    const rq = await request(key, [budget]);
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(kinds(rq.meter?.hold?.windows)).toEqual(["partner"]);
    const usage = { model: MODEL, usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 } };
    const reply = await stage.response!(rq, upstreamReply(200, usage));
    expect(rq.meter?.costNanos).toBeNull();
    expect(JSON.parse(await replyText(reply))).toEqual(usage);
    const cost = costOf(api.core.services.prices, "llm_b", { model: MODEL, inputTokens: 10, outputTokens: 20, cacheWriteTokens: 0, cacheReadTokens: 0 });
    expect(rq.meter?.costNanos).toBe(cost);
    // In the budget's window (the ledger's settlement), and in the key's spend (batched).
    await until(async () => expect(await api.core.services.partnerBudgets.spentNanos(budget)).toBe(cost));
    await until(async () => expect(await api.core.services.partnerBudgets.recordedNanos(key.id, api.organizationId, "total")).toBe(cost), 5000);
  });

  test("a non-2xx is charged nothing", async () => {
    const rq = await request(llmKey("k-failed", "project"));
    await outcome(stage.request!(rq));
    await replyText(await stage.response!(rq, upstreamReply(500, { error: "boom" })));
    expect(rq.meter?.costNanos).toBe(0);
  });

  test("admitted but never forwarded: its hold is dropped, so the next request fits again", async () => {
    // One cent, of which all but one and a half estimates is spent: room for one request at a time.
    const { key, budget } = await partnerBudget(1, "total", NANOS_PER_CENT - Math.floor(1.5 * estimate()));
    // The budget stage, then a stage after it that refuses the request (as the approval stage may).
    const refusing = new Pipeline([given("agent", "secrets"), stage, { name: "refuses", request: () => answer("approval_denied", new Response("no", { status: 403 })) }]);
    const first = await request(key, [budget]);
    expect((await refusing.request(first)).status).toBe(403);
    // Had its hold stayed, this one would not fit beside it.
    const second = await until(async () => {
      const rq = await request(key, [budget]);
      expect(await outcome(stage.request!(rq))).toBe("pass");
      return rq;
    });
    expect(kinds(second.meter?.hold?.windows)).toEqual(["partner"]);
    // With the second's estimate held, a third does not fit.
    const third = await request(key, [budget]);
    const refused = await refusing.request(third);
    expect(third.decision).toBe("budget_exceeded");
    expect(JSON.parse(await replyText(refused)).error).toBe("budget_exceeded");
    const reply = await stage.response!(second, upstreamReply(200, {}));
    await replyText(reply);
  });
});

describe("budgets for every scope (docs/budgets.md#budgets-for-every-scope)", () => {
  /** A second test API, so that these project and organization budgets meet no other test's requests. */
  let scoped: TestApi;
  let scopedStage: ReturnType<typeof budgetStage>;
  let snapshot: GatewaySnapshot;
  let me: AgentEntry;

  beforeAll(async () => {
    scoped = await createTestApi();
    const s = scoped.core.services;
    scopedStage = budgetStage({ prices: s.prices, ledger: s.budgetLedger, keySpend: s.partnerBudgets, spend: s.spend, publicUrl: "https://credgate.test" });
    snapshot = await GatewaySnapshot.create(s);
    const a = (await s.agents.list(scoped.projectId)).find((x) => x.isDefault)!;
    me = agentEntry({ id: a.id, projectId: scoped.projectId, organizationId: scoped.organizationId });
  });
  afterAll(() => scoped.core.close());

  async function budget(body: Record<string, unknown>): Promise<string> {
    const org = body.scope === "organization";
    const res = await scoped.call("POST", org ? "/v1/org/budgets" : "/v1/budgets", { key: org ? scoped.orgKey : scoped.projectKey, body });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  /** A request as `me`, with the budgets of my view as the snapshot builds it, for `type`'s endpoint. */
  async function scopedRequest(type: "llm_a" | "llm_b", maxTokens = 100): Promise<ProxyRequest> {
    const key = compiledSecret({ id: `own-${type}`, hostPattern: HOST, type, injection: null, value: `sk-${type}` });
    const body = JSON.stringify({ model: type === "llm_a" ? "claude-haiku-4-5" : MODEL, max_tokens: maxTokens, messages: [{ role: "user", content: "hi" }] });
    const target = type === "llm_a" ? "/v1/messages" : "/v1/chat/completions";
    const rq = testRequest({ tunnel: HOST, method: "POST", target, headers: { "content-type": "application/json", "content-length": String(body.length) }, body });
    const view = await snapshot.credentials(me);
    signIn(rq, agentCredentials({ agent: me, injectable: [key], scopeBudgets: view.scopeBudgets }));
    expect(await outcome(inject.request!(rq))).toBe("pass");
    return rq;
  }

  const spentCents = async (id: string) => {
    await scoped.core.services.budgetLedger.drained();
    const all = [...(await scoped.call("GET", "/v1/budgets")).body, ...(await scoped.call("GET", "/v1/org/budgets", { key: scoped.orgKey })).body];
    return all.find((b: { id: string }) => b.id === id).spentCents;
  };

  test("the agent's view holds its budgets per key type, in refusal order (agent, project, organization)", async () => {
    const mineB = await budget({ scope: "agent", agentId: me.id, secretType: "llm_b", limitCents: 50, period: "day" });
    const project = await budget({ scope: "project", limitCents: 1000, period: "month" });
    const org = await budget({ scope: "organization", limitCents: 1000, period: "total" });
    const view = await snapshot.credentials(me);
    expect(view.scopeBudgets.llm_a.map((b) => b.id)).toEqual([project, org]);
    expect(view.scopeBudgets.llm_b.map((b) => b.id)).toEqual([mineB, project, org]);
  });

  test("admitted under each budget of its type: the hold names each window; the cost settles in each, and in a spend record", async () => {
    const rq = await scopedRequest("llm_b");
    expect(await outcome(scopedStage.request!(rq))).toBe("pass");
    expect(kinds(rq.meter!.hold!.windows)).toEqual(["agent", "project", "organization"]);
    const usage = { model: "gpt-4o-mini-2024-07-18", usage: { prompt_tokens: 1_000_000, completion_tokens: 0, total_tokens: 1_000_000 } };
    await replyText(await scopedStage.response!(rq, upstreamReply(200, usage)));
    // 1M input tokens of gpt-4o-mini: $0.15.
    expect(rq.meter!.costNanos).toBe(150_000_000);
    const view = await snapshot.credentials(me);
    for (const b of view.scopeBudgets.llm_b) expect(await spentCents(b.id)).toBe(15);
    await scoped.core.services.spend.flush();
    expect((await scoped.call("GET", "/v1/spend?groupBy=model")).body).toEqual({
      data: [{ key: "gpt-4o-mini-2024-07-18", requests: 1, inputTokens: 1_000_000, outputTokens: 0, costUsd: 0.15 }],
      totalUsd: 0.15,
    });
  });

  test("the tightest refuses, named with its window: 403 budget_exceeded in the scope form; nothing held", async () => {
    const view = await snapshot.credentials(me);
    const mine = view.scopeBudgets.llm_b[0]!;
    // 15 of the agent's 50 cents are spent: a cap of a million output tokens at $0.60/M (60 cents) does not fit.
    const rq = await scopedRequest("llm_b", 1_000_000);
    const resetsAt = new Date(windowOf("day", Date.now()).end!).toISOString();
    expect(await outcome(scopedStage.request!(rq))).toEqual({
      decision: "budget_exceeded",
      status: 403,
      headers: expect.objectContaining({ "x-should-retry": "false" }),
      body: {
        error: "budget_exceeded",
        message: `This agent's spend budget for the llm_b key ($0.50 today) has been reached. It resets at ${resetsAt}.`,
        scope: "agent",
        budget_id: mine.id,
        period: "daily",
        limit_usd: 0.5,
        resets_at: resetsAt,
      },
    });
    expect(rq.meter).toBeNull();
    // The refusal held nothing: a request that fits is admitted.
    const fits = await scopedRequest("llm_b", 4096);
    expect(await outcome(scopedStage.request!(fits))).toBe("pass");
    await replyText(await scopedStage.response!(fits, upstreamReply(200, { model: MODEL, usage: { prompt_tokens: 0, completion_tokens: 0 } })));
  });

  test("an llm_a call is held only against the budgets for both types; admitted but never forwarded, it drops its hold", async () => {
    const rq = await scopedRequest("llm_a");
    const refusing = new Pipeline([given("agent", "secrets"), scopedStage, { name: "refuses", request: () => answer("approval_denied", new Response("no", { status: 403 })) }]);
    expect((await refusing.request(rq)).status).toBe(403);
    expect(kinds(rq.meter!.hold!.windows)).toEqual(["project", "organization"]);
    // Its estimate went back to the process's lease as credit (docs/budgets.md#leases), which an idle process gives back.
    await untilTrue(async () => {
      const rows = await scoped.core.store.query<{ held_nanos: number | string }>(sql`SELECT held_nanos FROM budget_windows WHERE holder <> ''`);
      return rows.length > 0 && rows.every((r) => Number(r.held_nanos) === 0);
    });
  });
});
