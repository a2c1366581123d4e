// Partner budgets and metered spend in the store (docs/budgets.md#partner-budgets, docs/budgets.md#admission), on
// the engine under test. A partner budget is one more kind of budget of the ledger: its windows are rows of
// budget_windows (the UTC month, or total), opened from the spend recorded for its (secret, organization), held
// and charged like a scope budget's, and admitted from a process's lease when there is room to spare. Here: the
// Spend budget record, the month window and the total (the clock crosses a month boundary), admission (spent <
// limit and spent + reserved + estimate ≤ limit), the holds of a process that died, the batched key spend, the
// guarantee that matters (many concurrent requests whose cost never exceeds their estimate never overshoot), and
// the upgrade from the schema of partner reservations: nothing resets.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { SQL as BunSQL } from "bun";
import { sql } from "drizzle-orm";
import { postgresMigrations } from "../../migrations/postgres/index.ts";
import { sqliteMigrations } from "../../migrations/sqlite/index.ts";
import { NANOS_PER_CENT } from "../../src/core/pricing.ts";
import { setClockOffset } from "../../src/runtime/clock.ts";
import type { ServiceDeps } from "../../src/services/deps.ts";
import { BudgetLedger, type Admission } from "../../src/services/budgets/ledger.ts";
import { monthBucket, type PartnerBudget } from "../../src/services/budgets/partnerBudget.ts";
import type { ScopeBudget } from "../../src/services/budgets/scopeBudget.ts";
import { SpendService } from "../../src/services/budgets/spend.ts";
import { partnerWindowRefOf, windowRefOf } from "../../src/services/budgets/windowRows.ts";
import { PostgresStore } from "../../src/store/postgres.ts";
import { DB_FILE, SqliteStore } from "../../src/store/sqlite.ts";
import type { Store } from "../../src/store/store.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { until, untilTrue } from "../support/gateway.ts";
import { postgresServer, testEngine } from "../support/postgres.ts";
import { tempDir } from "../support/tmp.ts";
import { clearOfMidnight } from "../support/windowEdge.ts";

// Budget windows start at 00:00 UTC: no test runs across one.
beforeEach(clearOfMidnight);
afterEach(() => setClockOffset(0));

/** A partner with an llm_a key, and the bootstrap organization attributed to it. */
async function partnerKey(api: TestApi): Promise<string> {
  const { store, services } = api.core;
  const partnerId = crypto.randomUUID();
  await store.db.insert(store.t.partners).values({ id: partnerId, name: "Partner", createdAt: new Date().toISOString() });
  const created = await services.secrets.create({ scope: "partner", partnerId }, { name: "Partner Anthropic", type: "llm_a", value: "sk-ant-api03-partner-key-value" });
  return created.id;
}

const cents = (n: number) => n * NANOS_PER_CENT;

/** A partner budget on a new key, as the gateway snapshot holds it. */
async function budgetOf(api: TestApi, limitCents: number, period: "monthly" | "total"): Promise<PartnerBudget> {
  const key = await partnerKey(api);
  await api.core.services.partnerBudgets.set(key, api.organizationId, limitCents, period);
  return (await api.core.services.partnerBudgets.find(key, api.organizationId))!;
}

/** What the gateway does for a metered request on the key: admitted under the budget, then charged `cost`. */
async function spend(api: TestApi, budget: PartnerBudget, costNanos: number, at = Date.now()): Promise<void> {
  const { budgetLedger: ledger, partnerBudgets } = api.core.services;
  const a = await ledger.admit([], budget, costNanos, at);
  if (!a.admitted) throw new Error("not admitted");
  ledger.settle(a.hold, costNanos);
  partnerBudgets.record(budget.secretId, budget.organizationId, costNanos);
  await Promise.all([ledger.drained(), partnerBudgets.flush()]);
}

const admitted = async (p: Promise<Admission>) => (await p).admitted;

describe("partner budgets", () => {
  test("set creates or replaces; get/list show spentCents (floored) of the current window; a new period counts the recorded spend; delete takes the windows", async () => {
    const api = await createTestApi();
    const budgets = api.core.services.partnerBudgets;
    const key = await partnerKey(api);
    const org = api.organizationId;
    expect(await budgets.get(key, org)).toBeNull();
    expect(await budgets.set(key, org, 500, "monthly")).toEqual({ secretId: key, organizationId: org, limitCents: 500, period: "monthly", spentCents: 0 });
    const budget = (await budgets.find(key, org))!;
    await spend(api, budget, cents(123) + NANOS_PER_CENT - 1);
    expect((await budgets.get(key, org))!.spentCents).toBe(123);
    // A new limit keeps the window; a new period opens the total's window from the key's recorded spend.
    expect(await budgets.set(key, org, 600, "monthly")).toEqual({ secretId: key, organizationId: org, limitCents: 600, period: "monthly", spentCents: 123 });
    expect(await budgets.set(key, org, 900, "total")).toEqual({ secretId: key, organizationId: org, limitCents: 900, period: "total", spentCents: 123 });
    expect(await budgets.list(org)).toEqual([{ secretId: key, organizationId: org, limitCents: 900, period: "total", spentCents: 123 }]);
    expect((await budgets.find(key, org))!.id).toBe(budget.id);
    const windows = async () => (await api.core.store.query<{ n: number | string }>(sql`SELECT COUNT(*) AS n FROM budget_windows WHERE budget_id = ${budget.id}`)).map((r) => Number(r.n))[0];
    await spend(api, (await budgets.find(key, org))!, cents(1));
    expect((await budgets.get(key, org))!.spentCents).toBe(124);
    expect(await windows()).toBeGreaterThan(0);
    expect(await budgets.delete(key, org)).toBe(true);
    expect(await budgets.delete(key, org)).toBe(false);
    expect(await budgets.list(org)).toEqual([]);
    expect(await windows()).toBe(0);
  });

  test("monthly resets on the 1st (UTC); total never does", async () => {
    const api = await createTestApi();
    const { budgetLedger: ledger, partnerBudgets: budgets } = api.core.services;
    const nov30 = Date.UTC(2026, 10, 30, 23, 59, 0);
    const dec1 = Date.UTC(2026, 11, 1, 0, 0, 1);
    setClockOffset(Math.round((nov30 - Date.now()) / 1000));
    const monthly = await budgetOf(api, 100, "monthly");
    await spend(api, monthly, cents(100), nov30);
    expect((await budgets.get(monthly.secretId, api.organizationId))!.spentCents).toBe(100);
    expect(await admitted(ledger.admit([], monthly, 1, nov30))).toBe(false);
    setClockOffset(Math.round((dec1 - Date.now()) / 1000));
    expect(monthBucket(dec1)).toBe("2026-12");
    expect((await budgets.get(monthly.secretId, api.organizationId))!.spentCents).toBe(0);
    expect(await admitted(ledger.admit([], monthly, 1, dec1))).toBe(true);
    await budgets.set(monthly.secretId, api.organizationId, 100, "total");
    const total = (await budgets.find(monthly.secretId, api.organizationId))!;
    expect((await budgets.get(total.secretId, api.organizationId))!.spentCents).toBe(100);
    expect(await admitted(ledger.admit([], total, 1, dec1))).toBe(false);
  });

  test("admission: spent < limit, and spent + reserved + estimate ≤ limit; a settled request frees its hold", async () => {
    const api = await createTestApi();
    const ledger = api.core.services.budgetLedger;
    const b = await budgetOf(api, 10, "monthly");
    const first = await ledger.admit([], b, cents(6), Date.now());
    expect(first.admitted).toBe(true);
    // 6 held: another 6 would exceed 10; 4 fits exactly.
    expect(await admitted(ledger.admit([], b, cents(6), Date.now()))).toBe(false);
    const second = await ledger.admit([], b, cents(4), Date.now());
    expect(second.admitted).toBe(true);
    const refused = await ledger.admit([], b, 1, Date.now());
    // The refusal names the partner budget (docs/budgets.md#leases: its own form of 403).
    expect(refused).toEqual({ admitted: false, refusal: { kind: "partner", budget: b } });
    // The first cost 2 of its 6: 2 spent + 4 held.
    if (!first.admitted || !second.admitted) throw new Error("unreachable");
    ledger.settle(first.hold, cents(2));
    await ledger.drained();
    expect(await admitted(ledger.admit([], b, cents(5), Date.now()))).toBe(false);
    const third = await ledger.admit([], b, cents(4), Date.now());
    expect(third.admitted).toBe(true);
    // Spent at the limit: nothing more, not even a zero estimate.
    ledger.settle(second.hold, cents(4));
    if (third.admitted) ledger.settle(third.hold, cents(4));
    await ledger.drained();
    expect((await api.core.services.partnerBudgets.get(b.secretId, api.organizationId))!.spentCents).toBe(10);
    expect(await admitted(ledger.admit([], b, 0, Date.now()))).toBe(false);
  });

  test("the holds of another live process count; a dead one's (expired) do not; a request that never went out drops its hold", async () => {
    const api = await createTestApi();
    const { budgetLedger: ledger, deps } = api.core.services;
    const b = await budgetOf(api, 10, "total");
    const held = await ledger.admit([], b, cents(4), Date.now());
    expect(held.admitted).toBe(true);
    const soon = new Date(Date.now() + 60_000).toISOString();
    const past = new Date(Date.now() - 1000).toISOString();
    await deps.store.query(sql`INSERT INTO budget_windows (budget_id, partner_budget_id, window_start, holder, spent_nanos, held_nanos, expires_at)
      VALUES (${b.id}, ${b.id}, 0, 'live', 0, ${cents(5)}, ${soon}), (${b.id}, ${b.id}, 0, 'dead', 0, ${cents(5)}, ${past})`);
    // 4 (ours) + 5 (live) held: 1 fits, 2 do not; the dead process's 5 are not counted.
    expect(await admitted(ledger.admit([], b, cents(2), Date.now()))).toBe(false);
    const one = await ledger.admit([], b, cents(1), Date.now());
    expect(one.admitted).toBe(true);
    // Both of ours never reached the upstream: settled at 0, their 5 are free again.
    if (!held.admitted || !one.admitted) throw new Error("unreachable");
    ledger.settle(held.hold, 0);
    ledger.settle(one.hold, 0);
    await ledger.drained();
    expect(await admitted(ledger.admit([], b, cents(5), Date.now()))).toBe(true);
  });

  test("under a partner budget with room to spare, admissions after the first are decided in memory, from a lease", async () => {
    const api = await createTestApi();
    const { budgetLedger: ledger, deps } = api.core.services;
    const b = await budgetOf(api, 100_000_000, "monthly");
    const first = await ledger.admit([], b, cents(1), Date.now());
    expect(first.admitted).toBe(true);
    const reserved = async () => Number((await deps.store.query<{ h: number | string }>(sql`SELECT held_nanos AS h FROM budget_windows WHERE budget_id = ${b.id} AND holder = ${deps.instanceId}`))[0]?.h ?? 0);
    // The first went through the store, which reserved credit beside it: the next ones are admitted when returned.
    expect(await reserved()).toBeGreaterThan(cents(1));
    const next = Array.from({ length: 5 }, () => ledger.admit([], b, cents(1), Date.now()));
    for (const p of next) expect((Bun.peek(p) as Admission).admitted).toBe(true);
    for (const a of [first, ...(await Promise.all(next))]) if (a.admitted) ledger.settle(a.hold, cents(1));
    await ledger.drained();
    expect((await api.core.services.partnerBudgets.get(b.secretId, api.organizationId))!.spentCents).toBe(6);
    // Idle, the credit is given back.
    await untilTrue(async () => (await reserved()) === 0);
  });

  test("a partner budget is last in refusal order: the scope budgets' refusal is named before it", async () => {
    const api = await createTestApi();
    const { budgetLedger: ledger, scopeBudgets } = api.core.services;
    const b = await budgetOf(api, 5, "total");
    const res = await api.call("POST", "/v1/budgets", { body: { scope: "project", limitCents: 5, period: "day" } });
    expect(res.status).toBe(201);
    const agentId = (await api.core.services.agents.list(api.projectId)).find((a) => a.isDefault)!.id;
    const scoped = await scopeBudgets.forAgent({ id: agentId, projectId: api.projectId, organizationId: api.organizationId });
    const refusal = await ledger.admit(scoped, b, cents(6), Date.now());
    expect(!refusal.admitted && refusal.refusal.kind === "scope" && refusal.refusal.budget.id).toBe(res.body.id);
    // All or nothing: 5 fits both, and is held against both.
    const a = await ledger.admit(scoped, b, cents(5), Date.now());
    expect(a.admitted && a.hold.windows.map((w) => w.kind)).toEqual(["scope", "partner"]);
    expect(await ledger.admit([], b, 1, Date.now())).toEqual({ admitted: false, refusal: { kind: "partner", budget: b } });
  });

  test("the spend of keys is added up in memory and written in one batch", async () => {
    const api = await createTestApi();
    const budgets = api.core.services.partnerBudgets;
    const key = await partnerKey(api);
    const org = api.organizationId;
    for (let i = 0; i < 5; i++) budgets.record(key, org, cents(3));
    budgets.record(key, org, 0);
    expect(await budgets.recordedNanos(key, org, "total")).toBe(0);
    await budgets.flush();
    expect(await budgets.recordedNanos(key, org, "total")).toBe(cents(15));
    expect(await budgets.recordedNanos(key, org, "monthly")).toBe(cents(15));
    // Written by itself about a second later when nobody flushes.
    budgets.record(key, org, cents(1));
    await until(async () => expect(await budgets.recordedNanos(key, org, "total")).toBe(cents(16)), 5000);
    // A budget set now opens its window from it.
    expect((await budgets.set(key, org, 100, "total")).spentCents).toBe(16);
  });

  test("40 concurrent requests against a small budget: the charged total never exceeds the limit", async () => {
    const api = await createTestApi();
    const { budgetLedger: ledger, partnerBudgets: budgets } = api.core.services;
    const b = await budgetOf(api, 100, "monthly");
    const estimate = cents(7);
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const a = await ledger.admit([], b, estimate, Date.now());
        if (!a.admitted) return false;
        await Bun.sleep(5 + (i % 7));
        // The actual cost is at most the estimate.
        ledger.settle(a.hold, estimate - (i % 3) * NANOS_PER_CENT);
        return true;
      }),
    );
    await ledger.drained();
    const count = outcomes.filter(Boolean).length;
    // All 40 arrive together: 100 / 7 → 14 fit before any charge lands; later ones may fit in freed room.
    expect(count).toBeGreaterThanOrEqual(14);
    expect((await budgets.get(b.secretId, api.organizationId))!.spentCents).toBeLessThanOrEqual(100);
    expect(await budgets.spentNanos(b)).toBeLessThanOrEqual(cents(100));
  });
});

describe("upgrade from partner reservations", () => {
  const engine = testEngine();
  const OLD: Record<typeof engine, string> = { sqlite: "0014_partner_budget_windows", postgres: "0010_partner_budget_windows" };

  /** A store on a database of its own, migrated up to (not including) `until`, or all the way. */
  async function storeAt(where: string, until: string | null): Promise<Store> {
    const all = engine === "sqlite" ? sqliteMigrations : postgresMigrations;
    const i = all.findIndex((m) => m.tag === until);
    const migrations = until === null ? all : all.slice(0, i);
    expect(migrations.length).toBeGreaterThan(0);
    return engine === "sqlite" ? SqliteStore.open(where, migrations) : PostgresStore.open(where, migrations);
  }

  async function emptyDatabase(): Promise<string> {
    if (engine === "sqlite") return join(tempDir(), DB_FILE);
    const pg = await postgresServer();
    const name = `upgrade_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    const admin = new BunSQL(pg.adminUrl);
    try {
      await admin.unsafe(`CREATE DATABASE "${name}"`);
    } finally {
      await admin.close();
    }
    return pg.urlOf(name);
  }

  test("a partner budget's spend and a scope budget's window survive the upgrade: the budget opens its window from its recorded spend", async () => {
    const where = await emptyDatabase();
    const now = new Date().toISOString();
    const month = monthBucket(Date.now());
    const old = await storeAt(where, OLD[engine]);
    const [yes, no] = engine === "sqlite" ? [sql`1`, sql`0`] : [sql`true`, sql`false`];
    for (const statement of [
      sql`INSERT INTO organizations (id, name, slug, claimed, partner_detached, created_at) VALUES ('org-1', 'Org', 'org', ${yes}, ${no}, ${now})`,
      sql`INSERT INTO partners (id, name, created_at) VALUES ('partner-1', 'Partner', ${now})`,
      sql`INSERT INTO secrets (id, scope, organization_id, project_id, partner_id, name, type, value_source, value_sealed, op_ref, host_pattern, path_pattern, injection_config, metadata, created_at, updated_at)
          VALUES ('secret-1', 'partner', NULL, NULL, 'partner-1', 'Partner key', 'llm_a', 'inline', 'sealed', NULL, 'api.anthropic.com', NULL, NULL, '{}', ${now}, ${now})`,
      sql`INSERT INTO budgets (secret_id, organization_id, limit_cents, period, created_at, updated_at) VALUES ('secret-1', 'org-1', 100, 'monthly', ${now}, ${now})`,
      // The month's spend reached 90 cents of 100; one request holding 5 was in flight when the old version stopped.
      sql`INSERT INTO budget_spend (secret_id, organization_id, bucket, nanos) VALUES ('secret-1', 'org-1', ${month}, ${cents(90)}), ('secret-1', 'org-1', 'total', ${cents(250)})`,
      sql`INSERT INTO budget_reservations (id, secret_id, organization_id, estimate_nanos, expires_at) VALUES ('r-1', 'secret-1', 'org-1', ${cents(5)}, ${now})`,
      sql`INSERT INTO scope_budgets (id, scope, organization_id, project_id, agent_id, owner_id, secret_type, limit_cents, period, alert_percents, created_at, updated_at)
          VALUES ('scope-1', 'organization', 'org-1', NULL, NULL, 'org-1', NULL, 1000, 'total', '[80,100]', ${now}, ${now})`,
      sql`INSERT INTO budget_windows (budget_id, window_start, holder, spent_nanos, held_nanos, expires_at) VALUES ('scope-1', 0, '', ${cents(40)}, 0, ''), ('scope-1', 0, 'gw', ${cents(2)}, 0, ${now})`,
    ])
      await old.query(statement);
    await old.close();

    const store = await storeAt(where, null);
    try {
      const tables = engine === "sqlite" ? await store.query<{ name: string }>(sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'budget_reservations'`) : await store.query<{ name: string }>(sql`SELECT table_name AS name FROM information_schema.tables WHERE table_name = 'budget_reservations'`);
      expect(tables).toEqual([]);
      const [row] = await store.query<{ id: string }>(sql`SELECT id FROM budgets`);
      expect(row!.id).toBe("secret-1:org-1");
      const windows = await store.query<{ budget_id: string; scope_budget_id: string | null; partner_budget_id: string | null }>(sql`SELECT budget_id, scope_budget_id, partner_budget_id FROM budget_windows ORDER BY holder`);
      expect(windows).toEqual([
        { budget_id: "scope-1", scope_budget_id: "scope-1", partner_budget_id: null },
        { budget_id: "scope-1", scope_budget_id: "scope-1", partner_budget_id: null },
      ]);

      // The ledger on the upgraded store, as a gateway process runs it.
      const deps = { store, instanceId: "after-upgrade" } as unknown as ServiceDeps;
      const ledger = new BudgetLedger(deps, new SpendService(deps), null as never);
      const budget: PartnerBudget = { id: row!.id, secretId: "secret-1", organizationId: "org-1", limitCents: 100, period: "monthly" };
      // 90 spent: 10 fit, 11 do not (the reservation of the old version is gone with its process).
      expect(await admitted(ledger.admit([], budget, cents(11), Date.now()))).toBe(false);
      const a = await ledger.admit([], budget, cents(10), Date.now());
      expect(a.admitted).toBe(true);
      if (a.admitted) ledger.settle(a.hold, cents(10));
      await ledger.drained();
      expect(await ledger.spentNanos(partnerWindowRefOf(budget, Date.now()))).toBe(cents(100));
      // The scope budget's window kept its spend, and goes with its budget.
      const scope: ScopeBudget = { id: "scope-1", scope: "organization", organizationId: "org-1", projectId: null, agentId: null, secretType: null, limitCents: 1000, period: "total", alertPercents: [80, 100] };
      expect(await ledger.spentNanos(windowRefOf(scope, Date.now()))).toBe(cents(42));
      await store.query(sql`DELETE FROM scope_budgets`);
      await store.query(sql`DELETE FROM budgets`);
      expect(await store.query(sql`SELECT budget_id FROM budget_windows`)).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
