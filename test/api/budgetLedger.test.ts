// The budget ledger on the engine under test (docs/budgets.md#admission, docs/budgets.md#budgets-for-every-scope):
// every budget of a request must admit it, all or nothing; the refusal names the first refusing budget in the
// order agent, project, organization; windows reset by ending (day, week from Monday, month, never for total);
// a window opened mid-way starts from the spend already recorded; the holds of a process that died stop
// counting; a burst never overshoots; `budget.threshold` alerts go out once per threshold per window.
// Leases (docs/budgets.md#leases): under a budget with room to spare a process admits from its credit without
// a transaction; two processes sharing a budget through leases never overshoot it and, once idle, give the
// credit back so the last of the room is admitted exactly; a changed budget is decided in the store at once.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { windowOf } from "../../src/core/budgetWindows.ts";
import { NANOS_PER_CENT } from "../../src/core/pricing.ts";
import { setClockOffset } from "../../src/runtime/clock.ts";
import { BudgetLedger, type Admission } from "../../src/services/budgets/ledger.ts";
import type { ScopeBudget } from "../../src/services/budgets/scopeBudgets.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { untilTrue } from "../support/gateway.ts";
import { clearOfMidnight } from "../support/windowEdge.ts";

// Budget windows start at 00:00 UTC: no test runs across one.
beforeEach(clearOfMidnight);

const cents = (n: number) => n * NANOS_PER_CENT;
const DAY = 86_400_000;

afterEach(() => setClockOffset(0));

interface Fixture {
  api: TestApi;
  agentId: string;
  otherAgentId: string;
}

async function fixture(): Promise<Fixture> {
  const api = await createTestApi();
  const agentId = (await api.core.services.agents.list(api.projectId)).find((a) => a.isDefault)!.id;
  const other = await api.call("POST", "/v1/agents", { body: { name: "Other", identifier: "other", mode: "all" } });
  return { api, agentId, otherAgentId: other.body.id };
}

async function create(f: Fixture, body: Record<string, unknown>): Promise<string> {
  const org = body.scope === "organization";
  const res = await f.api.call("POST", org ? "/v1/org/budgets" : "/v1/budgets", { key: org ? f.api.orgKey : f.api.projectKey, body });
  if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
  return res.body.id;
}

/** The budgets of an agent as the gateway snapshot holds them. */
function budgetsOf(f: Fixture, agentId = f.agentId): Promise<ScopeBudget[]> {
  return f.api.core.services.scopeBudgets.forAgent({ id: agentId, projectId: f.api.projectId, organizationId: f.api.organizationId });
}

async function spentCents(f: Fixture, id: string): Promise<number> {
  const list = [...(await f.api.call("GET", "/v1/budgets")).body, ...(await f.api.call("GET", "/v1/org/budgets", { key: f.api.orgKey })).body];
  return list.find((b: { id: string }) => b.id === id).spentCents;
}

function refusedBy(a: Admission): string | null {
  if (a.admitted) return null;
  return a.refusal.kind === "scope" ? a.refusal.budget.id : "partner";
}

describe("admission against every scope at once", () => {
  test("each budget must admit; the first refusing one (agent, project, organization) is named; a refusal holds nothing", async () => {
    const f = await fixture();
    const { budgetLedger: ledger } = f.api.core.services;
    const agent = await create(f, { scope: "agent", agentId: f.agentId, limitCents: 10, period: "day" });
    const project = await create(f, { scope: "project", limitCents: 20, period: "day" });
    const org = await create(f, { scope: "organization", limitCents: 15, period: "day" });
    const mine = await budgetsOf(f);
    expect(mine.map((b) => b.id)).toEqual([agent, project, org]);
    const others = await budgetsOf(f, f.otherAgentId);
    expect(others.map((b) => b.id)).toEqual([project, org]);
    const now = Date.now();

    const first = await ledger.admit(mine, null, cents(8), now);
    expect(first.admitted).toBe(true);
    // 8 held on each: 3 more is over the agent's 10 (and fits the others), so the agent's refuses.
    expect(refusedBy(await ledger.admit(mine, null, cents(3), now))).toBe(agent);
    // That refusal held nothing anywhere: 2 fits all three exactly as before.
    expect((await ledger.admit(mine, null, cents(2), now)).admitted).toBe(true);
    // The other agent has no budget of its own: 6 fits the project's 20 (10 held) but not the organization's 15.
    expect(refusedBy(await ledger.admit(others, null, cents(6), now))).toBe(org);
    expect((await ledger.admit(others, null, cents(5), now)).admitted).toBe(true);
    expect(refusedBy(await ledger.admit(others, null, 1, now))).toBe(org);

    // The first request cost 5 of its 8: spent 5 everywhere, 7 + 5 still held (project and org).
    if (!first.admitted) throw new Error("unreachable");
    ledger.settle(first.hold, cents(5));
    await ledger.drained();
    expect([await spentCents(f, agent), await spentCents(f, project), await spentCents(f, org)]).toEqual([5, 5, 5]);
    // Org: 5 spent + 2 + 5 held = 12 of 15: 3 fits, 4 does not.
    expect(refusedBy(await ledger.admit(others, null, cents(4), now))).toBe(org);
    expect((await ledger.admit(others, null, cents(3), now)).admitted).toBe(true);
  });

  test("spent < limit: a budget spent to the limit refuses even a zero estimate; within one scope the longest window is named", async () => {
    const f = await fixture();
    const { budgetLedger: ledger } = f.api.core.services;
    const day = await create(f, { scope: "agent", agentId: f.agentId, limitCents: 5, period: "day" });
    const month = await create(f, { scope: "agent", agentId: f.agentId, limitCents: 5, period: "month", secretType: "llm_a" });
    const budgets = await budgetsOf(f);
    expect(budgets.map((b) => b.id)).toEqual([month, day]);
    const a = await ledger.admit(budgets, null, cents(5), Date.now());
    if (!a.admitted) throw new Error("not admitted");
    ledger.settle(a.hold, cents(5));
    await ledger.drained();
    expect(refusedBy(await ledger.admit(budgets, null, 0, Date.now()))).toBe(month);
    expect(refusedBy(await ledger.admit(budgets.filter((b) => b.id === day), null, 0, Date.now()))).toBe(day);
  });

  test("a burst of 40 concurrent admissions never overshoots: exactly what fits is admitted, the spend stays within the limit", async () => {
    const f = await fixture();
    const { budgetLedger: ledger } = f.api.core.services;
    const id = await create(f, { scope: "project", limitCents: 10, period: "total" });
    const budgets = await budgetsOf(f);
    const estimate = cents(1) + 7;
    const results = await Promise.all(Array.from({ length: 40 }, () => ledger.admit(budgets, null, estimate, Date.now())));
    const admitted = results.filter((r) => r.admitted);
    expect(admitted.length).toBe(Math.floor(cents(10) / estimate));
    // Each costs a little less than its estimate; once they are settled, the rest fits again, one by one.
    for (const a of admitted) if (a.admitted) ledger.settle(a.hold, estimate - 1000);
    await ledger.drained();
    const spent = admitted.length * (estimate - 1000);
    expect(await spentCents(f, id)).toBe(Math.floor(spent / NANOS_PER_CENT));
    const more = await Promise.all(Array.from({ length: 5 }, () => ledger.admit(budgets, null, estimate, Date.now())));
    expect(more.filter((r) => r.admitted).length).toBe(Math.floor((cents(10) - spent) / estimate));
  });

  test("a budget deleted after the snapshot was built no longer applies", async () => {
    const f = await fixture();
    const { budgetLedger: ledger } = f.api.core.services;
    const id = await create(f, { scope: "project", limitCents: 1, period: "day" });
    const stale = await budgetsOf(f);
    expect((await f.api.call("DELETE", `/v1/budgets/${id}`)).status).toBe(204);
    expect((await ledger.admit(stale, null, cents(50), Date.now())).admitted).toBe(true);
  });
});

describe("windows", () => {
  test("day, week (from Monday), month and total: spend of the last window does not count in the next", async () => {
    const f = await fixture();
    const { budgetLedger: ledger } = f.api.core.services;
    for (const period of ["day", "week", "month", "total"] as const) await create(f, { scope: "agent", agentId: f.agentId, limitCents: 10, period, secretType: "llm_b" });
    const all = await budgetsOf(f);
    const of = (p: string) => all.filter((b) => b.period === p);
    // Sunday 2026-05-31 23:59:50 UTC: the last seconds of a day, a week (Mon 25th – Sun 31st) and a month.
    const sunday = Date.UTC(2026, 4, 31, 23, 59, 50);
    expect(new Date(windowOf("week", sunday).start).toISOString()).toBe("2026-05-25T00:00:00.000Z");
    for (const p of ["day", "week", "month", "total"]) {
      const a = await ledger.admit(of(p), null, cents(10), sunday);
      if (!a.admitted) throw new Error(`${p} not admitted`);
      ledger.settle(a.hold, cents(10));
    }
    await ledger.drained();
    const monday = sunday + 20_000;
    for (const p of ["day", "week", "month", "total"]) expect((await ledger.admit(of(p), null, 0, sunday)).admitted).toBe(false);
    for (const p of ["day", "week", "month"]) expect((await ledger.admit(of(p), null, cents(10), monday)).admitted).toBe(true);
    expect((await ledger.admit(of("total"), null, 0, monday + 400 * DAY)).admitted).toBe(false);
    // A week is Monday to Sunday: Saturday 6th June is still the week of Monday 1st.
    expect((await ledger.admit(of("week"), null, 1, monday + 5 * DAY)).admitted).toBe(false);
    expect((await ledger.admit(of("week"), null, cents(10), monday + 7 * DAY)).admitted).toBe(true);
  });

  test("the Budget record follows the clock: spentCents is the current window's, resetsAt its end", async () => {
    const f = await fixture();
    const { budgetLedger: ledger } = f.api.core.services;
    const id = await create(f, { scope: "project", limitCents: 100, period: "day" });
    const a = await ledger.admit(await budgetsOf(f), null, cents(40), Date.now());
    if (!a.admitted) throw new Error("not admitted");
    ledger.settle(a.hold, cents(30) + NANOS_PER_CENT - 1);
    await ledger.drained();
    const today = (await f.api.call("GET", "/v1/budgets")).body[0];
    expect({ spentCents: today.spentCents, resetsAt: today.resetsAt }).toEqual({ spentCents: 30, resetsAt: new Date(windowOf("day", Date.now()).end!).toISOString() });
    setClockOffset(DAY / 1000);
    const tomorrow = (await f.api.call("GET", "/v1/budgets")).body.find((b: { id: string }) => b.id === id);
    expect({ spentCents: tomorrow.spentCents, resetsAt: tomorrow.resetsAt }).toEqual({ spentCents: 0, resetsAt: new Date(windowOf("day", Date.now()).end! + DAY).toISOString() });
  });

  test("a window that opens after spend was recorded starts from it: of the budget's scope and key type only", async () => {
    const f = await fixture();
    const { spend, budgetLedger: ledger } = f.api.core.services;
    const at = new Date().toISOString();
    const rec = { organizationId: f.api.organizationId, projectId: f.api.projectId, agentId: f.agentId, model: "gpt-4o", inputTokens: 10, outputTokens: 5, createdAt: at };
    spend.record({ ...rec, secretType: "llm_b", costNanos: cents(7) });
    spend.record({ ...rec, secretType: "llm_a", costNanos: cents(2) });
    spend.record({ ...rec, agentId: f.otherAgentId, secretType: "llm_b", costNanos: cents(1) });
    await spend.flush();
    const agentB = await create(f, { scope: "agent", agentId: f.agentId, limitCents: 10, period: "month", secretType: "llm_b" });
    const agentAny = await create(f, { scope: "agent", agentId: f.agentId, limitCents: 10, period: "month" });
    const project = await create(f, { scope: "project", limitCents: 10, period: "month" });
    expect([await spentCents(f, agentB), await spentCents(f, agentAny), await spentCents(f, project)]).toEqual([7, 9, 10]);
    const budgets = await budgetsOf(f);
    // The project's 10 are spent already: not even a zero estimate; the agent's own admit up to their limits.
    expect(refusedBy(await ledger.admit(budgets, null, 0, Date.now()))).toBe(project);
    expect(refusedBy(await ledger.admit(budgets.filter((b) => b.id !== project), null, cents(2), Date.now()))).toBe(agentAny);
    expect(refusedBy(await ledger.admit(budgets.filter((b) => b.id === agentB), null, cents(3), Date.now()))).toBeNull();
  });

  test("windows long over are purged with the old spend records; the current one and a total budget's stay", async () => {
    const f = await fixture();
    const { budgetLedger: ledger, spend, deps } = f.api.core.services;
    await create(f, { scope: "project", limitCents: 10, period: "day" });
    await create(f, { scope: "project", limitCents: 10, period: "total" });
    const budgets = await budgetsOf(f);
    for (const at of [Date.now() - 70 * DAY, Date.now()]) {
      const a = await ledger.admit(budgets, null, cents(1), at);
      if (!a.admitted) throw new Error("not admitted");
      ledger.settle(a.hold, cents(1));
      await ledger.drained();
    }
    const starts = async () => (await deps.store.query<{ s: number | string }>(sql`SELECT DISTINCT window_start AS s FROM budget_windows ORDER BY 1`)).map((r) => Number(r.s));
    const today = Math.floor(windowOf("day", Date.now()).start / 1000);
    expect(await starts()).toEqual([0, Math.floor(windowOf("day", Date.now() - 70 * DAY).start / 1000), today]);
    await spend.purge();
    expect(await starts()).toEqual([0, today]);
  });
});

describe("holds", () => {
  test("another process's live holds count; a dead one's (expired) do not; a restart drops this process's own", async () => {
    const f = await fixture();
    const { budgetLedger: ledger, deps } = f.api.core.services;
    const id = await create(f, { scope: "project", limitCents: 10, period: "total" });
    const budgets = await budgetsOf(f);
    expect((await ledger.admit(budgets, null, cents(4), Date.now())).admitted).toBe(true);
    const soon = new Date(Date.now() + 60_000).toISOString();
    const past = new Date(Date.now() - 1000).toISOString();
    await deps.store.query(sql`INSERT INTO budget_windows (budget_id, window_start, holder, spent_nanos, held_nanos, expires_at) VALUES (${id}, 0, 'live', 0, ${cents(5)}, ${soon}), (${id}, 0, 'dead', 0, ${cents(5)}, ${past})`);
    // 4 (ours) + 5 (live) held: 1 fits, 2 do not; the dead process's 5 are not counted.
    expect((await ledger.admit(budgets, null, cents(2), Date.now())).admitted).toBe(false);
    expect((await ledger.admit(budgets, null, cents(1), Date.now())).admitted).toBe(true);
    // A restart of this process: what it held (5) is gone.
    await ledger.start();
    await ledger.stop();
    expect((await ledger.admit(budgets, null, cents(5), Date.now())).admitted).toBe(true);
  });
});

describe("leases", () => {
  /** A second gateway process on the same store: a ledger of its own. */
  function anotherProcess(f: Fixture, name: string): BudgetLedger {
    const s = f.api.core.services;
    return new BudgetLedger({ ...s.deps, instanceId: name }, s.spend, s.notifications);
  }

  /** What each process's row of the budget's window reserves, by holder. */
  async function reservations(f: Fixture, id: string): Promise<Record<string, number>> {
    const rows = await f.api.core.services.deps.store.query<{ holder: string; held_nanos: number | string }>(sql`SELECT holder, held_nanos FROM budget_windows WHERE budget_id = ${id}`);
    return Object.fromEntries(rows.filter((r) => r.holder !== "").map((r) => [r.holder, Number(r.held_nanos)]));
  }

  test("under a budget with room to spare, admissions after the first are decided in memory, from credit the store reserves", async () => {
    const f = await fixture();
    const { budgetLedger: ledger, deps } = f.api.core.services;
    const id = await create(f, { scope: "project", limitCents: 100_000, period: "total" });
    const budgets = await budgetsOf(f);
    const first = await ledger.admit(budgets, null, cents(1), Date.now());
    expect(first.admitted).toBe(true);
    // The first went through the store, which reserved credit beside it: the next ones are settled already when returned.
    const reserved = (await reservations(f, id))[deps.instanceId]!;
    expect(reserved).toBeGreaterThan(cents(1));
    const next = Array.from({ length: 5 }, () => ledger.admit(budgets, null, cents(1), Date.now()));
    for (const p of next) expect((Bun.peek(p) as Admission).admitted).toBe(true);
    // Nothing was written for them: the row reserves what it did.
    expect((await reservations(f, id))[deps.instanceId]).toBe(reserved);
    for (const a of [first, ...(await Promise.all(next))]) if (a.admitted) ledger.settle(a.hold, cents(1) - 10);
    await ledger.drained();
    expect(await spentCents(f, id)).toBe(5);
    // Idle, the credit is given back: the row reserves nothing once nothing is in flight.
    await untilTrue(async () => (await reservations(f, id))[deps.instanceId] === 0);
  });

  test("two processes admitting through leases never overshoot; once idle the last of the room is admitted exactly", async () => {
    const f = await fixture();
    const limit = 3000;
    const id = await create(f, { scope: "agent", agentId: f.agentId, limitCents: limit, period: "day" });
    const budgets = await budgetsOf(f);
    const processes = [anotherProcess(f, "gateway-a"), anotherProcess(f, "gateway-b")];
    let admitted = 0;
    let fromMemory = 0;
    // Each process admits, then ends the request at its full estimate, until both are refused 20 times in a row.
    const run = async (ledger: BudgetLedger) => {
      for (let refusals = 0; refusals < 20; ) {
        const p = ledger.admit(budgets, null, cents(1), Date.now());
        if (Bun.peek(p) !== p) fromMemory++;
        const a = await p;
        if (!a.admitted) {
          refusals++;
          await Bun.sleep(1);
          continue;
        }
        refusals = 0;
        admitted++;
        expect(admitted).toBeLessThanOrEqual(limit);
        ledger.settle(a.hold, cents(1));
        // Now and then a pause, so the two interleave and their ticks run.
        if (admitted % 50 === 0) await Bun.sleep(0);
      }
    };
    await Promise.all(processes.map(run));
    expect(admitted).toBeLessThanOrEqual(limit);
    expect(fromMemory).toBeGreaterThan(limit / 2);
    // Idle, each gives its credit back; then the rest fits exactly.
    await Promise.all(processes.map((p) => p.drained()));
    await untilTrue(async () => Object.values(await reservations(f, id)).every((r) => r === 0));
    for (let i = 0; admitted < limit && i < limit; i++) {
      const a = await processes[i % 2]!.admit(budgets, null, cents(1), Date.now());
      expect(a.admitted).toBe(true);
      if (a.admitted) processes[i % 2]!.settle(a.hold, cents(1));
      admitted++;
    }
    expect((await processes[0]!.admit(budgets, null, 0, Date.now())).admitted).toBe(false);
    await Promise.all(processes.map((p) => p.drained()));
    expect(await spentCents(f, id)).toBe(limit);
  }, 60_000);

  test("a changed budget is not admitted from credit granted under the old one; a stopping process gives its credit back", async () => {
    const f = await fixture();
    const { budgetLedger: ledger, deps } = f.api.core.services;
    const id = await create(f, { scope: "project", limitCents: 100_000, period: "month" });
    const before = await budgetsOf(f);
    const held = await ledger.admit(before, null, cents(10), Date.now());
    expect(held.admitted).toBe(true);
    expect((Bun.peek(ledger.admit(before, null, cents(1), Date.now())) as Admission).admitted).toBe(true);
    // Lowered below what is in flight (11 cents): the new budget's window is decided in the store, which refuses.
    expect((await f.api.call("PATCH", `/v1/budgets/${id}`, { body: { limitCents: 11 } })).status).toBe(200);
    const after = await budgetsOf(f);
    const p = ledger.admit(after, null, cents(1), Date.now());
    expect(Bun.peek(p)).toBe(p);
    expect(refusedBy(await p)).toBe(id);
    // Raised again: admitted at once, through the store.
    expect((await f.api.call("PATCH", `/v1/budgets/${id}`, { body: { limitCents: 100_000 } })).status).toBe(200);
    expect((await ledger.admit(await budgetsOf(f), null, cents(1), Date.now())).admitted).toBe(true);
    // Stopping: what stays reserved is what is in flight (12 cents), no credit.
    await ledger.stop();
    expect((await reservations(f, id))[deps.instanceId]).toBe(cents(12));
  });
});

describe("alerts", () => {
  test("budget.threshold once per threshold per window: spend crossing 50 and 80, the first refusal as 100", async () => {
    const f = await fixture();
    const { budgetLedger: ledger, deps } = f.api.core.services;
    expect((await f.api.call("POST", "/v1/notifications/channels", { body: { kind: "webhook", url: "http://127.0.0.1:9/hook", events: ["budget.threshold"] } })).status).toBe(201);
    const id = await create(f, { scope: "agent", agentId: f.agentId, limitCents: 10, period: "week", alertPercents: [80, 50] });
    const budgets = await budgetsOf(f);
    const spendOnce = async (costCents: number) => {
      const a = await ledger.admit(budgets, null, cents(costCents), Date.now());
      if (!a.admitted) throw new Error("not admitted");
      ledger.settle(a.hold, cents(costCents));
      await ledger.drained();
    };
    await spendOnce(4);
    await spendOnce(2); // 60 %: 50
    await spendOnce(1); // 70 %
    await spendOnce(2); // 90 %: 80
    for (let i = 0; i < 3; i++) expect((await ledger.admit(budgets, null, cents(2), Date.now())).admitted).toBe(false); // 100 once
    const sent = async () => {
      const rows = await deps.store.db.select().from(deps.store.t.notificationDeliveries);
      return rows.filter((r) => r.event === "budget.threshold").map((r) => JSON.parse(deps.sealer.open(r.payloadSealed)).data);
    };
    const resetsAt = new Date(windowOf("week", Date.now()).end!).toISOString();
    const want = (percent: number, spentCents: number) => ({ budgetId: id, scope: "agent", percent, spentCents, limitCents: 10, period: "weekly", resetsAt });
    const expected = [want(50, 6), want(80, 9), want(100, 9)];
    const got = await (async () => {
      for (let i = 0; i < 50; i++) {
        const s = await sent();
        if (s.length >= 3) return s;
        await Bun.sleep(20);
      }
      return sent();
    })();
    expect(got.sort((a: { percent: number }, b: { percent: number }) => a.percent - b.percent)).toEqual(expected);
    // Another process (a ledger of its own, which has sent nothing yet) refuses too: the markers say it went out already.
    const s = f.api.core.services;
    const other = new BudgetLedger({ ...deps, instanceId: "another-process" }, s.spend, s.notifications);
    expect((await other.admit(budgets, null, cents(2), Date.now())).admitted).toBe(false);
    // A fixed wait: it shows the other process sends nothing.
    await Bun.sleep(200);
    expect((await sent()).length).toBe(3);
  });
});
