// Admission and spend for every budget of a request at once (docs/budgets.md#admission,
// docs/budgets.md#budgets-for-every-scope). A metered request under budgets — its agent's, project's,
// organization's, and a partner's — is admitted only when each of them admits its estimate (spent < limit and
// spent + reserved + estimate ≤ limit); then the estimate is held against each, all or nothing. When the
// request ends its cost is added to each window's spend and the holds are lowered, in one transaction.
//
// How it stays exact across gateway processes and instances: a scope budget's window is one row
// (budget_windows: spent) that admission locks (SELECT … FOR UPDATE on PostgreSQL; SQLite transactions are
// serial), and what is reserved is the sum of the live processes' holds (budget_holds, one row per process,
// budget and window). Rows are always locked in one order (budget id, window), so transactions never deadlock.
//
// How it stays cheap: admissions that arrive together are decided in one transaction (one read of the
// windows, one write of the holds), settlements likewise; a process refreshes its holds' expiry every
// HEARTBEAT_MS, so the holds of a process that died stop counting HOLD_TTL_MS later.
import { sql } from "drizzle-orm";
import { periodAdjective, reachedPercents, windowOf, type BudgetWindow } from "../core/budgetWindows.ts";
import { NANOS_PER_CENT } from "../core/pricing.ts";
import { log } from "../observability/log.ts";
import type { Budget as PartnerBudget, BudgetService } from "./budgets.ts";
import type { ServiceDeps } from "./deps.ts";
import type { NotificationService } from "./notifications/index.ts";
import type { ScopeBudget } from "./scopeBudgets.ts";
import type { SpendService } from "./spend.ts";

/** One window of one scope budget a request is held against. */
export interface HeldWindow {
  budget: ScopeBudget;
  /** Epoch seconds (0 for `total`): the window's key. */
  start: number;
}

/** What an admitted request holds until it is settled. */
export interface Hold {
  estimateNanos: number;
  windows: HeldWindow[];
  partner: { budget: PartnerBudget; reservationId: string } | null;
}

export type Refusal = { kind: "scope"; budget: ScopeBudget; window: BudgetWindow } | { kind: "partner"; budget: PartnerBudget };

export type Admission = { admitted: true; hold: Hold } | { admitted: false; refusal: Refusal };

interface PendingAdmission {
  scoped: readonly ScopeBudget[];
  partner: PartnerBudget | null;
  estimateNanos: number;
  /** The budget clock at admission: which windows the request counts in. */
  at: number;
  resolve: (admission: Admission) => void;
}

interface PendingSettlement {
  hold: Hold;
  costNanos: number;
}

/** A window as the batches see it. */
interface WindowRef extends HeldWindow {
  key: string;
  window: BudgetWindow;
}

/** A live process's holds count this long after its last heartbeat. */
const HOLD_TTL_MS = 120_000;
const HEARTBEAT_MS = 30_000;
/** A settlement the store refused is tried again this much later (its holds still count meanwhile). */
const RETRY_MS = 1000;
/** Windows known to exist, and alerts known to be sent, are remembered up to this many (then forgotten). */
const MEMORY_MAX = 10_000;

const windowKey = (budgetId: string, start: number) => `${budgetId}:${start}`;

/** The one lock order of window rows: budget id (code units), then window start. */
function lockOrder(a: HeldWindow, b: HeldWindow): number {
  return a.budget.id < b.budget.id ? -1 : a.budget.id > b.budget.id ? 1 : a.start - b.start;
}

function refOf(budget: ScopeBudget, at: number): WindowRef {
  const window = windowOf(budget.period, at);
  const start = Math.floor(window.start / 1000);
  return { budget, start, window, key: windowKey(budget.id, start) };
}

export class BudgetLedger {
  #admissions: PendingAdmission[] = [];
  #settlements: PendingSettlement[] = [];
  #running = false;
  #retry: Timer | null = null;
  #heartbeat: Timer | null = null;
  #known = new Set<string>();
  #alerted = new Set<string>();
  /** Resolves when the loop has nothing left (tests, shutdown). */
  #idle: Promise<void> = Promise.resolve();
  #markIdle: (() => void) | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly partner: BudgetService,
    private readonly spend: SpendService,
    private readonly notifications: NotificationService,
  ) {}

  private get holder(): string {
    return this.deps.instanceId;
  }

  /**
   * Admits `estimateNanos` against every budget given (scope budgets in refusal order, then the partner's),
   * all or nothing. Never rejects: when the store cannot be asked, the budgets cannot be honoured and the
   * request is refused by the first of them.
   */
  admit(scoped: readonly ScopeBudget[], partner: PartnerBudget | null, estimateNanos: number, at: number): Promise<Admission> {
    return new Promise((resolve) => {
      this.#admissions.push({ scoped, partner, estimateNanos, at, resolve });
      this.#schedule();
    });
  }

  /** Charges an admitted request's cost to its windows and drops its holds (cost 0: it never went out). Queued; never rejects. */
  settle(hold: Hold, costNanos: number): void {
    this.#settlements.push({ hold, costNanos: Math.max(0, Math.round(costNanos)) });
    this.#schedule();
  }

  /** Resolves once every queued admission and settlement has been tried. */
  drained(): Promise<void> {
    return this.#idle;
  }

  #schedule(): void {
    if (this.#running) return;
    this.#running = true;
    this.#idle = new Promise((resolve) => (this.#markIdle = resolve));
    // Everything that arrives in this turn of the event loop goes in the first batch.
    setImmediate(() => void this.#loop());
  }

  /** Admission batches first (requests wait on them), then settlements; one transaction at a time per process. */
  async #loop(): Promise<void> {
    try {
      for (;;) {
        if (this.#admissions.length > 0) {
          const batch = this.#admissions;
          this.#admissions = [];
          await this.#admitBatch(batch);
        } else if (this.#settlements.length > 0 && this.#retry === null) {
          const batch = this.#settlements;
          this.#settlements = [];
          await this.#settleBatch(batch);
        } else break;
      }
    } finally {
      this.#running = false;
      this.#markIdle?.();
    }
  }

  async #admitBatch(batch: PendingAdmission[]): Promise<void> {
    const refs = batch.map((p) => p.scoped.map((b) => refOf(b, p.at)));
    const windows = new Map<string, WindowRef>();
    for (const list of refs) for (const r of list) windows.set(r.key, r);
    let results: Admission[];
    try {
      for (const w of windows.values()) if (!this.#known.has(w.key)) await this.#open(w);
      results = await this.#retryingDeadlocks(() => this.deps.store.transaction(() => this.#decide(batch, refs, windows)));
    } catch (err) {
      log.error("budget admission failed: refusing the requests it could not decide", { requests: batch.length, error: (err as Error).message });
      results = batch.map((p, i) => ({ admitted: false, refusal: refs[i]![0] ? { kind: "scope", budget: refs[i]![0]!.budget, window: refs[i]![0]!.window } : { kind: "partner", budget: p.partner! } }));
    }
    for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i]!);
  }

  /**
   * Creates a window's row the first time it is used, its spend starting from what was already recorded in it
   * (spend before the budget existed counts). Outside the admission transaction: rows are then only locked in
   * lock order. A budget deleted meanwhile has no row; admission treats it as gone.
   */
  async #open(w: WindowRef): Promise<void> {
    try {
      await this.deps.store.query(sql`
        INSERT INTO budget_windows (budget_id, window_start, spent_nanos)
        SELECT CAST(${w.budget.id} AS TEXT), CAST(${w.start} AS BIGINT), (${this.spend.windowSpend(w.budget, w.window)}) WHERE EXISTS (SELECT 1 FROM scope_budgets WHERE id = ${w.budget.id})
        ON CONFLICT (budget_id, window_start) DO NOTHING`);
    } catch (err) {
      if (this.deps.store.isUnavailable(err)) throw err;
      // A budget deleted between the check and the insert: nothing to open.
      log.warn("budget window not opened", { budgetId: w.budget.id, error: (err as Error).message });
      return;
    }
    if (this.#known.size >= MEMORY_MAX) this.#known.clear();
    this.#known.add(w.key);
  }

  /** Inside the admission transaction: lock the windows, read what is spent and held, decide each request in order, hold. */
  async #decide(batch: PendingAdmission[], refs: WindowRef[][], windows: Map<string, WindowRef>): Promise<Admission[]> {
    const state = await this.#lockWindows([...windows.values()].sort(lockOrder));
    // Partner keys are locked in one order too, before any is checked (docs/budgets.md#admission).
    const partnerKeys = [...new Set(batch.flatMap((p) => (p.partner ? [`budget:${p.partner.secretId}:${p.partner.organizationId}`] : [])))].sort();
    for (const key of partnerKeys) await this.deps.store.lockKey(key);

    const added = new Map<string, number>();
    const results: Admission[] = [];
    for (let i = 0; i < batch.length; i++) {
      const p = batch[i]!;
      const refusing = refs[i]!.find((w) => {
        const s = state.get(w.key);
        // No row: the budget was deleted. It no longer applies.
        if (!s) return false;
        const limit = w.budget.limitCents * NANOS_PER_CENT;
        return !(s.spent < limit && s.spent + s.held + (added.get(w.key) ?? 0) + p.estimateNanos <= limit);
      });
      if (refusing) {
        results.push({ admitted: false, refusal: { kind: "scope", budget: refusing.budget, window: refusing.window } });
        // The first refusal in a window is reported as 100 % (docs/budgets.md#alerts).
        const spent = state.get(refusing.key)!.spent;
        this.deps.store.afterCommit(() => this.#alert(refusing, 100, spent));
        continue;
      }
      let partner: Hold["partner"] = null;
      if (p.partner) {
        const a = await this.partner.admit(p.partner, p.estimateNanos);
        if (!a.admitted) {
          results.push({ admitted: false, refusal: { kind: "partner", budget: p.partner } });
          continue;
        }
        partner = { budget: p.partner, reservationId: a.reservationId };
      }
      const held: HeldWindow[] = [];
      for (const w of refs[i]!) {
        if (!state.has(w.key)) continue;
        added.set(w.key, (added.get(w.key) ?? 0) + p.estimateNanos);
        held.push({ budget: w.budget, start: w.start });
      }
      results.push({ admitted: true, hold: { estimateNanos: p.estimateNanos, windows: held, partner } });
    }
    if (added.size > 0) await this.#raiseHolds(added, windows);
    return results;
  }

  /** Locks the windows' rows (in lock order) and reads each one's spend and what every live process holds on it. */
  async #lockWindows(sorted: WindowRef[]): Promise<Map<string, { spent: number; held: number }>> {
    const state = new Map<string, { spent: number; held: number }>();
    if (sorted.length === 0) return state;
    const pg = this.deps.store.engine === "postgres";
    const match = sql.join(
      sorted.map((w) => sql`(budget_id = ${w.budget.id} AND window_start = ${w.start})`),
      sql` OR `,
    );
    const rows = await this.deps.store.query<{ budget_id: string; window_start: number | string; spent_nanos: number | string }>(
      sql`SELECT budget_id, window_start, spent_nanos FROM budget_windows WHERE ${match} ORDER BY ${pg ? sql`budget_id COLLATE "C"` : sql`budget_id`}, window_start${pg ? sql` FOR UPDATE` : sql``}`,
    );
    for (const r of rows) state.set(windowKey(r.budget_id, Number(r.window_start)), { spent: Number(r.spent_nanos), held: 0 });
    if (state.size === 0) return state;
    const now = new Date().toISOString();
    const held = await this.deps.store.query<{ budget_id: string; window_start: number | string; nanos: number | string | null }>(
      sql`SELECT budget_id, window_start, SUM(nanos) AS nanos FROM budget_holds WHERE (${match}) AND expires_at > ${now} GROUP BY budget_id, window_start`,
    );
    for (const h of held) {
      const s = state.get(windowKey(h.budget_id, Number(h.window_start)));
      if (s) s.held = Number(h.nanos ?? 0);
    }
    return state;
  }

  /** This process's holds go up by what it admitted (one statement), and their expiry moves ahead. */
  async #raiseHolds(added: Map<string, number>, windows: Map<string, WindowRef>): Promise<void> {
    const expires = new Date(Date.now() + HOLD_TTL_MS).toISOString();
    const values = sql.join(
      [...added].map(([key, nanos]) => {
        const w = windows.get(key)!;
        return sql`(${this.holder}, ${w.budget.id}, CAST(${w.start} AS BIGINT), CAST(${nanos} AS BIGINT), ${expires})`;
      }),
      sql`, `,
    );
    await this.deps.store.query(sql`
      INSERT INTO budget_holds (holder, budget_id, window_start, nanos, expires_at) VALUES ${values}
      ON CONFLICT (holder, budget_id, window_start) DO UPDATE SET nanos = budget_holds.nanos + excluded.nanos, expires_at = excluded.expires_at`);
  }

  async #settleBatch(batch: PendingSettlement[]): Promise<void> {
    const sums = new Map<string, { w: HeldWindow; cost: number; held: number }>();
    for (const s of batch) {
      for (const w of s.hold.windows) {
        const key = windowKey(w.budget.id, w.start);
        const sum = sums.get(key);
        if (sum) {
          sum.cost += s.costNanos;
          sum.held += s.hold.estimateNanos;
        } else sums.set(key, { w, cost: s.costNanos, held: s.hold.estimateNanos });
      }
    }
    const ordered = [...sums.values()].sort((a, b) => lockOrder(a.w, b.w));
    let spentAfter: Map<string, number>;
    try {
      spentAfter = await this.#retryingDeadlocks(() =>
        this.deps.store.transaction(async () => {
          const after = new Map<string, number>();
          for (const { w, cost, held } of ordered) {
            if (cost > 0) {
              const [row] = await this.deps.store.query<{ spent_nanos: number | string }>(sql`
                UPDATE budget_windows SET spent_nanos = spent_nanos + CAST(${cost} AS BIGINT)
                WHERE budget_id = ${w.budget.id} AND window_start = ${w.start} RETURNING spent_nanos`);
              if (row) after.set(windowKey(w.budget.id, w.start), Number(row.spent_nanos));
            }
            await this.deps.store.query(sql`
              UPDATE budget_holds SET nanos = CASE WHEN nanos > ${held} THEN nanos - CAST(${held} AS BIGINT) ELSE 0 END
              WHERE holder = ${this.holder} AND budget_id = ${w.budget.id} AND window_start = ${w.start}`);
          }
          for (const s of batch) {
            const p = s.hold.partner;
            if (p) await this.partner.charge(p.budget.secretId, p.budget.organizationId, s.costNanos, p.reservationId);
          }
          return after;
        }),
      );
    } catch (err) {
      // Kept, in order, for the next try: its holds still count until then, so nothing can overshoot.
      log.warn("LLM spend not settled yet, will retry", { requests: batch.length, error: (err as Error).message });
      this.#settlements = batch.concat(this.#settlements);
      this.#retry = setTimeout(() => {
        this.#retry = null;
        this.#schedule();
      }, RETRY_MS);
      return;
    }
    for (const { w } of ordered) {
      const key = windowKey(w.budget.id, w.start);
      const spent = spentAfter.get(key);
      if (spent === undefined) continue;
      for (const p of reachedPercents(w.budget.alertPercents, spent, w.budget.limitCents * NANOS_PER_CENT)) this.#alert(w, p, spent);
    }
  }

  /** PostgreSQL may pick a transaction as a deadlock victim or fail to serialise it: tried again, at most twice. */
  async #retryingDeadlocks<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (err) {
        const code = (err as { errno?: unknown; code?: unknown }).errno ?? (err as { code?: unknown }).code;
        if (attempt >= 2 || (code !== "40P01" && code !== "40001")) throw err;
      }
    }
  }

  /**
   * A `budget.threshold` alert (docs/budgets.md#alerts), once per (budget, window, percent) across processes
   * and instances: the marker row's key decides who sends it. Not awaited by anyone.
   */
  #alert(w: HeldWindow, percent: number, spentNanos: number): void {
    const key = `${windowKey(w.budget.id, w.start)}:${percent}`;
    if (this.#alerted.has(key)) return;
    if (this.#alerted.size >= MEMORY_MAX) this.#alerted.clear();
    this.#alerted.add(key);
    void this.#sendAlert(w, percent, spentNanos).catch((err: Error) => {
      this.#alerted.delete(key);
      log.warn("budget alert not sent", { budgetId: w.budget.id, percent, error: err.message });
    });
  }

  async #sendAlert(w: HeldWindow, percent: number, spentNanos: number): Promise<void> {
    const inserted = await this.deps.store.query(sql`
      INSERT INTO budget_alerts (budget_id, window_start, percent, created_at) VALUES (${w.budget.id}, CAST(${w.start} AS BIGINT), ${percent}, ${new Date().toISOString()})
      ON CONFLICT (budget_id, window_start, percent) DO NOTHING RETURNING percent`);
    if (inserted.length === 0) return;
    const b = w.budget;
    const end = windowOf(b.period, w.start * 1000).end;
    await this.notifications.notify({ organizationId: b.organizationId, projectId: b.projectId }, "budget.threshold", {
      budgetId: b.id,
      scope: b.scope,
      percent,
      spentCents: Math.floor(spentNanos / NANOS_PER_CENT),
      limitCents: b.limitCents,
      period: periodAdjective(b.period),
      resetsAt: end === null ? null : new Date(end).toISOString(),
    });
  }

  /** Spend of a budget in a window, in nano-USD: its row, or (not opened yet) what was recorded in it. */
  async spentNanos(budget: ScopeBudget, window: BudgetWindow): Promise<number> {
    const start = Math.floor(window.start / 1000);
    const [row] = await this.deps.store.query<{ spent: number | string }>(
      sql`SELECT spent_nanos AS spent FROM budget_windows WHERE budget_id = ${budget.id} AND window_start = ${start}`,
    );
    if (row) return Number(row.spent);
    const [opening] = await this.deps.store.query<{ spent: number | string }>(sql`SELECT (${this.spend.windowSpend(budget, window)}) AS spent`);
    return Number(opening?.spent ?? 0);
  }

  /**
   * The gateway process's duties: its previous life's holds are dropped (nothing it held is in flight now),
   * and its live holds are kept from expiring; holds of processes that died are deleted.
   */
  async start(): Promise<void> {
    await this.deps.store.query(sql`DELETE FROM budget_holds WHERE holder = ${this.holder}`);
    this.#heartbeat = setInterval(() => void this.#beat().catch((err: Error) => log.warn("budget holds not refreshed", { error: err.message })), HEARTBEAT_MS);
  }

  async #beat(): Promise<void> {
    const now = Date.now();
    await this.deps.store.query(sql`UPDATE budget_holds SET expires_at = ${new Date(now + HOLD_TTL_MS).toISOString()} WHERE holder = ${this.holder} AND nanos > 0`);
    await this.deps.store.query(sql`DELETE FROM budget_holds WHERE expires_at < ${new Date(now).toISOString()} OR (holder = ${this.holder} AND nanos = 0)`);
  }

  /** Settles what is queued (a stopping process), then stops refreshing its holds. */
  async stop(): Promise<void> {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = null;
    if (this.#retry) {
      clearTimeout(this.#retry);
      this.#retry = null;
      this.#schedule();
    }
    await this.drained();
  }
}
