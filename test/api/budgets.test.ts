// Partner budgets and metered spend in the store (docs/budgets.md#partner-budgets), on the engine under test: the Spend budget record,
// the month and total buckets (a clock crosses a month boundary), admission with reservations (spent < limit
// and spent + reserved + estimate ≤ limit), and the guarantee that matters: with many concurrent requests,
// whose actual cost never exceeds their estimate, the charged total never exceeds the limit.
import { beforeEach, describe, expect, test } from "bun:test";
import { NANOS_PER_CENT } from "../../src/core/pricing.ts";
import { monthBucket, PartnerBudgetService } from "../../src/services/budgets/partnerBudgets.ts";
import { PartnerReservations } from "../../src/services/budgets/partnerReservations.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { until } from "../support/gateway.ts";
import { clearOfMidnight } from "../support/windowEdge.ts";

// Budget windows start at 00:00 UTC: no test runs across one.
beforeEach(clearOfMidnight);

/** A partner with an llm_a key, and the bootstrap organization attributed to it. */
async function partnerKey(api: TestApi): Promise<string> {
  const { store, services } = api.core;
  const partnerId = crypto.randomUUID();
  await store.db.insert(store.t.partners).values({ id: partnerId, name: "Partner", createdAt: new Date().toISOString() });
  const created = await services.secrets.create({ scope: "partner", partnerId }, { name: "Partner Anthropic", type: "llm_a", value: "sk-ant-api03-partner-key-value" });
  return created.id;
}

const cents = (n: number) => n * NANOS_PER_CENT;

describe("budgets", () => {
  test("set creates or replaces; get/list show spentCents (floored) of the period's bucket; delete", async () => {
    const api = await createTestApi();
    const budgets = api.core.services.partnerBudgets;
    const key = await partnerKey(api);
    const org = api.organizationId;
    expect(await budgets.get(key, org)).toBeNull();
    expect(await budgets.set(key, org, 500, "monthly")).toEqual({ secretId: key, organizationId: org, limitCents: 500, period: "monthly", spentCents: 0 });
    await budgets.charge(key, org, cents(123) + NANOS_PER_CENT - 1);
    expect((await budgets.get(key, org))!.spentCents).toBe(123);
    expect(await budgets.set(key, org, 900, "total")).toEqual({ secretId: key, organizationId: org, limitCents: 900, period: "total", spentCents: 123 });
    expect(await budgets.list(org)).toEqual([{ secretId: key, organizationId: org, limitCents: 900, period: "total", spentCents: 123 }]);
    expect(await budgets.delete(key, org)).toBe(true);
    expect(await budgets.delete(key, org)).toBe(false);
    expect(await budgets.list(org)).toEqual([]);
  });

  test("monthly resets on the 1st (UTC); total never does", async () => {
    const api = await createTestApi();
    let at = Date.UTC(2026, 10, 30, 23, 59, 0);
    const budgets = new PartnerBudgetService(api.core.services.deps, () => at);
    const reservations = new PartnerReservations(api.core.services.deps, () => at);
    const key = await partnerKey(api);
    const org = api.organizationId;
    await budgets.set(key, org, 100, "monthly");
    await budgets.charge(key, org, cents(100));
    expect((await budgets.get(key, org))!.spentCents).toBe(100);
    expect((await reservations.admit({ secretId: key, organizationId: org, limitCents: 100, period: "monthly" }, 1)).admitted).toBe(false);
    at = Date.UTC(2026, 11, 1, 0, 0, 1);
    expect(monthBucket(at)).toBe("2026-12");
    expect((await budgets.get(key, org))!.spentCents).toBe(0);
    expect((await reservations.admit({ secretId: key, organizationId: org, limitCents: 100, period: "monthly" }, 1)).admitted).toBe(true);
    await budgets.set(key, org, 100, "total");
    expect((await budgets.get(key, org))!.spentCents).toBe(100);
    expect((await reservations.admit({ secretId: key, organizationId: org, limitCents: 100, period: "total" }, 1)).admitted).toBe(false);
  });

  test("admission: spent < limit, and spent + reserved + estimate ≤ limit; a charge frees its reservation", async () => {
    const api = await createTestApi();
    const budgets = api.core.services.partnerBudgets;
    const reservations = new PartnerReservations(api.core.services.deps);
    const key = await partnerKey(api);
    const b = { secretId: key, organizationId: api.organizationId, limitCents: 10, period: "monthly" as const };
    const first = await reservations.admit(b, cents(6));
    expect(first.admitted).toBe(true);
    // 6 reserved: another 6 would exceed 10; 4 fits exactly.
    expect((await reservations.admit(b, cents(6))).admitted).toBe(false);
    const second = await reservations.admit(b, cents(4));
    expect(second.admitted).toBe(true);
    expect((await reservations.admit(b, 1)).admitted).toBe(false);
    // The first cost 2 of its 6: 2 spent + 4 reserved.
    await budgets.charge(key, b.organizationId, cents(2), first.admitted ? first.reservationId : null);
    expect((await reservations.admit(b, cents(5))).admitted).toBe(false);
    expect((await reservations.admit(b, cents(4))).admitted).toBe(true);
    // Spent at the limit: nothing more, not even a zero estimate.
    await budgets.charge(key, b.organizationId, cents(8));
    expect((await reservations.admit(b, 0)).admitted).toBe(false);
  });

  test("a reservation that expired (its holder died) no longer counts; release drops one", async () => {
    const api = await createTestApi();
    let at = Date.UTC(2026, 5, 1);
    const reservations = new PartnerReservations(api.core.services.deps, () => at);
    const key = await partnerKey(api);
    const b = { secretId: key, organizationId: api.organizationId, limitCents: 10, period: "total" as const };
    const held = await reservations.admit(b, cents(10));
    expect(held.admitted).toBe(true);
    expect((await reservations.admit(b, cents(1))).admitted).toBe(false);
    at += reservations.reservationMs + 1;
    const after = await reservations.admit(b, cents(10));
    expect(after.admitted).toBe(true);
    await reservations.release(after.admitted ? after.reservationId : "");
    expect((await reservations.admit(b, cents(10))).admitted).toBe(true);
  });

  test("spend of keys without a budget is added up in memory and written in one batch", async () => {
    const api = await createTestApi();
    const budgets = api.core.services.partnerBudgets;
    const key = await partnerKey(api);
    const org = api.organizationId;
    for (let i = 0; i < 5; i++) budgets.record(key, org, cents(3));
    budgets.record(key, org, 0);
    expect(await budgets.spentNanos(key, org, "total")).toBe(0);
    await budgets.flush();
    expect(await budgets.spentNanos(key, org, "total")).toBe(cents(15));
    expect(await budgets.spentNanos(key, org, "monthly")).toBe(cents(15));
    // Written by itself about a second later when nobody flushes.
    budgets.record(key, org, cents(1));
    await until(async () => expect(await budgets.spentNanos(key, org, "total")).toBe(cents(16)), 5000);
  });

  test("40 concurrent requests against a small budget: the charged total never exceeds the limit", async () => {
    const api = await createTestApi();
    const budgets = api.core.services.partnerBudgets;
    const reservations = new PartnerReservations(api.core.services.deps);
    const key = await partnerKey(api);
    const org = api.organizationId;
    const b = { secretId: key, organizationId: org, limitCents: 100, period: "monthly" as const };
    await budgets.set(key, org, 100, "monthly");
    const estimate = cents(7);
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const a = await reservations.admit(b, estimate);
        if (!a.admitted) return false;
        await Bun.sleep(5 + (i % 7));
        // The actual cost is at most the estimate.
        await budgets.charge(key, org, estimate - (i % 3) * NANOS_PER_CENT, a.reservationId);
        return true;
      }),
    );
    const admitted = outcomes.filter(Boolean).length;
    // All 40 arrive together: 100 / 7 → 14 fit before any charge lands; later ones may fit in freed room.
    expect(admitted).toBeGreaterThanOrEqual(14);
    expect((await budgets.get(key, org))!.spentCents).toBeLessThanOrEqual(100);
    expect(await budgets.spentNanos(key, org, "monthly")).toBeLessThanOrEqual(cents(100));
  });
});
