// The reservations of partner budgets (docs/budgets.md#admission): the partner kind of budget in the ledger's
// admission. A partner budget's spend is its (secret, organization) bucket (partnerBudgets.ts); what is
// reserved, the estimates of admitted requests still running, one row each. With the (secret, organization)
// key locked, a request is admitted by the same rule as every budget and its estimate reserved; the ledger
// drops the reservation when the request is settled (partnerBudgets.ts `charge`, or `release` here). A
// reservation of a process that died stops counting when it expires.
import { eq, lte, sql } from "drizzle-orm";
import { newId } from "../../core/ids.ts";
import { NANOS_PER_CENT } from "../../core/pricing.ts";
import { clockNow } from "../../runtime/clock.ts";
import type { ServiceDeps } from "../deps.ts";
import { monthBucket, type PartnerBudget } from "./partnerBudgets.ts";

export type PartnerAdmission = { admitted: true; reservationId: string } | { admitted: false };

/** The lock that serialises admissions against one partner budget, across processes and instances. */
export function partnerLockKey(budget: Pick<PartnerBudget, "secretId" | "organizationId">): string {
  return `budget:${budget.secretId}:${budget.organizationId}`;
}

export class PartnerReservations {
  constructor(
    private readonly deps: ServiceDeps,
    /** Milliseconds since the epoch (the budget clock, docs/configuration.md); tests pass their own to cross a month boundary. */
    private readonly now: () => number = clockNow,
  ) {}

  /** How long an admitted request's reservation counts: its whole life, bounded (a dead holder's expires). */
  get reservationMs(): number {
    return (this.deps.config.upstreamHeaderTimeoutSeconds + 600) * 1000;
  }

  /**
   * Reserves `estimateNanos` when the budget admits it (spent < limit and spent + reserved + estimate ≤ limit,
   * core/budgetWindows.ts `admits`, here in the one conditional INSERT that decides and reserves in a single
   * round trip), with its key locked so that concurrent admissions on any instance are decided one after the
   * other (the ledger locks every partner key of a tick first, in one order; locking a key again is free).
   */
  async admit(budget: PartnerBudget, estimateNanos: number): Promise<PartnerAdmission> {
    const { secretId, organizationId } = budget;
    const limit = budget.limitCents * NANOS_PER_CENT;
    const now = this.now();
    const id = newId();
    const bucket = budget.period === "total" ? "total" : monthBucket(now);
    const nowText = new Date(now).toISOString();
    const expires = new Date(now + this.reservationMs).toISOString();
    const spent = sql`(SELECT COALESCE(SUM(nanos), 0) FROM budget_spend WHERE secret_id = ${secretId} AND organization_id = ${organizationId} AND bucket = ${bucket})`;
    const reserved = sql`(SELECT COALESCE(SUM(estimate_nanos), 0) FROM budget_reservations WHERE secret_id = ${secretId} AND organization_id = ${organizationId} AND expires_at > ${nowText})`;
    const rows = await this.deps.store.transaction(async () => {
      await this.deps.store.lockKey(partnerLockKey(budget));
      return this.deps.store.query<{ id: string }>(sql`
        INSERT INTO budget_reservations (id, secret_id, organization_id, estimate_nanos, expires_at)
        SELECT ${id}, ${secretId}, ${organizationId}, CAST(${estimateNanos} AS BIGINT), ${expires}
        WHERE ${spent} < CAST(${limit} AS BIGINT) AND ${spent} + ${reserved} + CAST(${estimateNanos} AS BIGINT) <= CAST(${limit} AS BIGINT)
        RETURNING id`);
    });
    return rows.length > 0 ? { admitted: true, reservationId: id } : { admitted: false };
  }

  /** Drops a reservation without charging (the request never reached the upstream). */
  async release(reservationId: string): Promise<void> {
    const { budgetReservations: r } = this.deps.store.t;
    await this.deps.store.db.delete(r).where(eq(r.id, reservationId));
  }

  /** Expired reservations (their holders died) are deleted; they already stopped counting. */
  async purgeExpired(): Promise<void> {
    const { budgetReservations: r } = this.deps.store.t;
    await this.deps.store.db.delete(r).where(lte(r.expiresAt, new Date(this.now()).toISOString()));
  }
}
