// Partner budgets: the records and the spend of partner keys (docs/budgets.md#partner-budgets). A partner caps
// what one organization spends with one of its LLM keys, per UTC month or in total. The spend of every partner
// LLM key, budget or not, is recorded in nano-USD per (secret, organization) in two buckets, the UTC month
// (`YYYY-MM`) and `total`, in batches. A budget is one more kind of budget of the ledger (ledger.ts), which
// admits against it and keeps its spend in its windows like every budget's; a window opens from the bucket of
// its period (partnerBudget.ts), so the spend from before the budget (or before its kind had windows) counts.
import { and, eq, inArray, sql } from "drizzle-orm";
import type { BudgetPeriod } from "../../core/model.ts";
import { NANOS_PER_CENT } from "../../core/pricing.ts";
import { newId, nowIso } from "../../core/ids.ts";
import { log } from "../../observability/log.ts";
import { clockNow } from "../../runtime/clock.ts";
import type { ServiceDeps } from "../deps.ts";
import type { SpendBudget } from "../../core/records/budgets.ts";
import type { BudgetLedger } from "./ledger.ts";
import { monthBucket, type PartnerBudget } from "./partnerBudget.ts";
import { partnerWindowRefOf } from "./windowRows.ts";

export { monthBucket, type PartnerBudget } from "./partnerBudget.ts";

/** The Spend budget record of the contract. */
export type PartnerBudgetView = SpendBudget;

/** Spend of keys without a budget is added up in memory and written this often (visible within seconds). */
const SPEND_FLUSH_MS = 1000;

export class PartnerBudgetService {
  /** Unbudgeted spend not yet written: `secretId organizationId` → nano-USD. */
  #pending = new Map<string, { secretId: string; organizationId: string; nanos: number }>();
  #timer: Timer | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly ledger: Pick<BudgetLedger, "spentNanos">,
    /** Milliseconds since the epoch (the budget clock, docs/configuration.md); tests pass their own to cross a month boundary. */
    private readonly now: () => number = clockNow,
  ) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  bucketOf(period: BudgetPeriod): string {
    return period === "total" ? "total" : monthBucket(this.now());
  }

  /** Recorded spend of one (secret, organization) in a period's current bucket, in nano-USD. */
  async recordedNanos(secretId: string, organizationId: string, period: BudgetPeriod): Promise<number> {
    const { budgetSpend: s } = this.t;
    const [row] = await this.db
      .select({ nanos: s.nanos })
      .from(s)
      .where(and(eq(s.secretId, secretId), eq(s.organizationId, organizationId), eq(s.bucket, this.bucketOf(period))))
      .limit(1);
    return Number(row?.nanos ?? 0);
  }

  /** A budget's spend in its current window, in nano-USD: what the ledger counts against it. */
  spentNanos(b: PartnerBudget): Promise<number> {
    return this.ledger.spentNanos(partnerWindowRefOf(b, this.now()));
  }

  async #view(b: PartnerBudget): Promise<PartnerBudgetView> {
    const spent = await this.spentNanos(b);
    return { secretId: b.secretId, organizationId: b.organizationId, limitCents: b.limitCents, period: b.period, spentCents: Math.floor(spent / NANOS_PER_CENT) };
  }

  /** The budgets of an organization, each with its spend this period. */
  async list(organizationId: string): Promise<PartnerBudgetView[]> {
    const { budgets: b } = this.t;
    const rows = await this.db.select().from(b).where(eq(b.organizationId, organizationId)).orderBy(b.createdAt, b.secretId);
    const out: PartnerBudgetView[] = [];
    for (const r of rows) out.push(await this.#view(r));
    return out;
  }

  async get(secretId: string, organizationId: string): Promise<PartnerBudgetView | null> {
    const row = await this.find(secretId, organizationId);
    return row ? this.#view(row) : null;
  }

  async find(secretId: string, organizationId: string): Promise<PartnerBudget | null> {
    const { budgets: b } = this.t;
    const [row] = await this.db.select().from(b).where(and(eq(b.secretId, secretId), eq(b.organizationId, organizationId))).limit(1);
    return row ?? null;
  }

  /** Every budget on the given secrets, for the gateway snapshot. */
  async forSecrets(secretIds: string[], organizationId: string): Promise<PartnerBudget[]> {
    if (secretIds.length === 0) return [];
    const { budgets: b } = this.t;
    return this.db.select().from(b).where(and(inArray(b.secretId, secretIds), eq(b.organizationId, organizationId)));
  }

  /**
   * Creates the budget or replaces the existing one (seed). Raising or resetting a budget re-admits at once. A
   * new period drops the budget's windows: the new period's window opens from the recorded spend, which counts
   * every period, as if the budget were new.
   */
  async set(secretId: string, organizationId: string, limitCents: number, period: BudgetPeriod): Promise<PartnerBudgetView> {
    const { budgets: b, budgetWindows: w } = this.t;
    const now = nowIso();
    const budget = await this.deps.store.transaction(async () => {
      const before = await this.find(secretId, organizationId);
      const [row] = await this.db
        .insert(b)
        .values({ id: newId(), secretId, organizationId, limitCents, period, createdAt: now, updatedAt: now })
        .onConflictDoUpdate({ target: [b.secretId, b.organizationId], set: { limitCents, period, updatedAt: now } })
        .returning();
      if (before && before.period !== period) await this.db.delete(w).where(eq(w.partnerBudgetId, before.id));
      await this.#audit(secretId, organizationId, before && { limitCents: before.limitCents, period: before.period }, { limitCents, period });
      return row!;
    });
    this.#changed(organizationId);
    return this.#view(budget);
  }

  /** Removes a budget; false when there was none. */
  async delete(secretId: string, organizationId: string): Promise<boolean> {
    const { budgets: b } = this.t;
    const gone = await this.deps.store.transaction(async () => {
      const gone = await this.db
        .delete(b)
        .where(and(eq(b.secretId, secretId), eq(b.organizationId, organizationId)))
        .returning({ limitCents: b.limitCents, period: b.period });
      if (gone[0]) await this.#audit(secretId, organizationId, gone[0], null);
      return gone;
    });
    if (gone.length > 0) this.#changed(organizationId);
    return gone.length > 0;
  }

  /** A budget's change in the current write's audit event (docs/operations.md#audit-log); the target is the secret it limits. */
  #audit(secretId: string, organizationId: string, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "budget", targetId: secretId, organizationId, projectId: null, before, after });
  }

  #changed(organizationId: string): void {
    this.deps.events.emit({ kind: "budget", organizationId });
  }

  /**
   * Records the spend of a metered LLM key for an organization (a partner budget on it is charged by the
   * ledger): added up in memory and written about every second in one statement, so metering costs no database
   * round trip of its own.
   */
  record(secretId: string, organizationId: string, costNanos: number): void {
    const nanos = Math.max(0, Math.round(costNanos));
    if (nanos === 0) return;
    const key = `${secretId} ${organizationId}`;
    const entry = this.#pending.get(key);
    if (entry) entry.nanos += nanos;
    else this.#pending.set(key, { secretId, organizationId, nanos });
    this.#timer ??= setTimeout(() => void this.flush().catch((err: Error) => log.warn("LLM spend not written yet, will retry", { error: err.message })), SPEND_FLUSH_MS);
  }

  /** Writes the recorded spend; kept for the next try when the store refuses it. */
  async flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#pending.size === 0) return;
    const batch = [...this.#pending.values()];
    this.#pending = new Map();
    const { budgetSpend: s } = this.t;
    const month = monthBucket(this.now());
    try {
      await this.db
        .insert(s)
        .values(batch.flatMap((e) => [{ ...e, bucket: "total" }, { ...e, bucket: month }]))
        .onConflictDoUpdate({ target: [s.secretId, s.organizationId, s.bucket], set: { nanos: sql`${s.nanos} + excluded.nanos` } });
    } catch (err) {
      for (const e of batch) this.record(e.secretId, e.organizationId, e.nanos);
      throw err;
    }
  }
}
