// The rows of budgets' windows (docs/budgets.md#admission): how the ledger keeps a window's spend and
// reservations in the store, for every kind of budget — scope budgets (an agent's, a project's, an
// organization's) and partner budgets alike. Every window has an opening row (holder ''), started from the
// spend already recorded in the window (spend records for a scope budget, the key's spend buckets for a partner
// budget), and one row per gateway process, where that process adds what it charged and keeps what it
// reserves. A window's spend is the sum of its rows; what is reserved, the sum of the reservations of live
// processes (a live process keeps its rows' expiry ahead; the reservations of one that died stop counting
// HOLD_TTL_MS later). The ledger's transaction locks the opening rows (Store.lockBudgetWindows), reads, decides
// and writes this process's rows. Each row names its budget in the foreign key of its kind (scope_budget_id or
// partner_budget_id), so that deleting a budget deletes its windows (src/store/schema/budgets.ts).
import { sql, type SQL } from "drizzle-orm";
import { windowOf, type BudgetWindow } from "../../core/budgetWindows.ts";
import type { ScopeBudgetPeriod } from "../../core/model.ts";
import { log } from "../../observability/log.ts";
import type { ServiceDeps } from "../deps.ts";
import { partnerWindowPeriod, partnerWindowSpend, type PartnerBudget } from "./partnerBudget.ts";
import type { ScopeBudget } from "./scopeBudget.ts";
import type { SpendService } from "./spend.ts";

/** A live process's reservations count this long after its last heartbeat. */
export const HOLD_TTL_MS = 120_000;
/** Windows known to be open are remembered up to this many (then forgotten, and opened again: a no-op). */
const OPENED_MAX = 10_000;

interface WindowOf {
  /** Epoch seconds (0 for `total`): the window's key in the store. */
  start: number;
  window: BudgetWindow;
  /** `budgetId:start`, the window's key in memory. */
  key: string;
}

/** One window of one budget: a scope budget's, or a partner budget's. */
export type WindowRef = ScopeWindowRef | (WindowOf & { kind: "partner"; budget: PartnerBudget });
export type ScopeWindowRef = WindowOf & { kind: "scope"; budget: ScopeBudget };

/** A window's state inside a tick. */
export interface WindowState {
  spent: number;
  /** What the other live processes reserve. */
  others: number;
  /** What this process's row reserves in the store now (0 when it expired). */
  mine: number;
  /** What this tick adds to this process's spend. */
  charged: number;
}

/** The one lock order of windows: budget id (code units), then window start. */
export function lockOrder(a: WindowRef, b: WindowRef): number {
  return a.budget.id < b.budget.id ? -1 : a.budget.id > b.budget.id ? 1 : a.start - b.start;
}

/** The current window of each budget, computed once per window (budgets are the snapshot's objects). */
const currentWindow = new WeakMap<ScopeBudget | PartnerBudget, WindowRef>();

function current(budget: ScopeBudget | PartnerBudget, at: number): WindowRef | null {
  const cached = currentWindow.get(budget);
  return cached && at >= cached.window.start && (cached.window.end === null || at < cached.window.end) ? cached : null;
}

function windowAt(id: string, period: ScopeBudgetPeriod, at: number): WindowOf {
  const window = windowOf(period, at);
  const start = Math.floor(window.start / 1000);
  return { start, window, key: `${id}:${start}` };
}

/** The window of a scope budget that holds the instant `at`. */
export function windowRefOf(budget: ScopeBudget, at: number): ScopeWindowRef {
  const cached = current(budget, at);
  if (cached) return cached as ScopeWindowRef;
  const ref: ScopeWindowRef = { kind: "scope", budget, ...windowAt(budget.id, budget.period, at) };
  currentWindow.set(budget, ref);
  return ref;
}

/** The window of a partner budget that holds the instant `at`: its UTC month, or `total`. */
export function partnerWindowRefOf(budget: PartnerBudget, at: number): WindowRef {
  const cached = current(budget, at);
  if (cached) return cached;
  const ref: WindowRef = { kind: "partner", budget, ...windowAt(budget.id, partnerWindowPeriod(budget.period), at) };
  currentWindow.set(budget, ref);
  return ref;
}

/**
 * What a window's opening row needs, by the budget's kind: the sum of the spend recorded in it, whether the
 * budget still exists, and the foreign key that ties the window's rows to it (docs/budgets.md#admission).
 */
function ownerOf(w: WindowRef, spend: SpendService): { opening: SQL; exists: SQL; scopeBudgetId: string | null; partnerBudgetId: string | null } {
  if (w.kind === "scope") {
    return { opening: spend.windowSpend(w.budget, w.window), exists: sql`SELECT 1 FROM scope_budgets WHERE id = ${w.budget.id}`, scopeBudgetId: w.budget.id, partnerBudgetId: null };
  }
  return { opening: partnerWindowSpend(w.budget, w.window), exists: sql`SELECT 1 FROM budgets WHERE id = ${w.budget.id}`, scopeBudgetId: null, partnerBudgetId: w.budget.id };
}

/** Parameters of a statement for Store.execute: `$1`, `$2`, … in order of first use. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

export class WindowRows {
  #opened = new Set<string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly spend: SpendService,
  ) {}

  /** This process's rows are named by its instance id. */
  private get holder(): string {
    return this.deps.instanceId;
  }

  /** Whether `w` is known to be open (then `open` is not needed before the tick). */
  isOpen(w: WindowRef): boolean {
    return this.#opened.has(w.key);
  }

  /**
   * Opens a window the first time it is used: its row of holder '' starts from the spend already recorded in
   * it (a budget created mid-month counts what was spent before; so does a partner budget made before its
   * kind had windows). Outside the tick's transaction, so that rows are only locked in lock order. A budget
   * deleted meanwhile opens nothing; admission then ignores it.
   */
  async open(w: WindowRef): Promise<void> {
    const owner = ownerOf(w, this.spend);
    try {
      await this.deps.store.query(sql`
        INSERT INTO budget_windows (budget_id, scope_budget_id, partner_budget_id, window_start, holder, spent_nanos, held_nanos, expires_at)
        SELECT CAST(${w.budget.id} AS TEXT), CAST(${owner.scopeBudgetId} AS TEXT), CAST(${owner.partnerBudgetId} AS TEXT), CAST(${w.start} AS BIGINT), '', (${owner.opening}), 0, '' WHERE EXISTS (${owner.exists})
        ON CONFLICT (budget_id, window_start, holder) DO NOTHING`);
    } catch (err) {
      if (this.deps.store.isUnavailable(err)) throw err;
      log.warn("budget window not opened", { budgetId: w.budget.id, error: (err as Error).message });
      return;
    }
    if (this.#opened.size >= OPENED_MAX) this.#opened.clear();
    this.#opened.add(w.key);
  }

  /** Inside the tick's transaction: locks the open windows among `sorted` (in lock order) and reads each one's spend and live reservations. */
  async read(sorted: WindowRef[]): Promise<Map<string, WindowState>> {
    const state = new Map<string, WindowState>();
    if (sorted.length === 0) return state;
    const store = this.deps.store;
    await store.lockBudgetWindows(sorted.map((w) => ({ budgetId: w.budget.id, start: w.start })));
    const p = new Params();
    const match = sorted.map((w) => `(budget_id = ${p.add(w.budget.id)} AND window_start = ${p.add(w.start)})`).join(" OR ");
    // The rows themselves, added up here: a GROUP BY would cost SQLite a temporary B-tree per tick.
    const rows = await store.execute<{ budget_id: string; window_start: number | string; holder: string; spent_nanos: number | string; held_nanos: number | string; expires_at: string }>(
      `SELECT budget_id, window_start, holder, spent_nanos, held_nanos, expires_at FROM budget_windows WHERE ${match}`,
      p.values,
    );
    const now = new Date().toISOString();
    // Only a window with its opening row is open; the others' budgets were deleted.
    for (const r of rows) if (r.holder === "") state.set(`${r.budget_id}:${Number(r.window_start)}`, { spent: 0, others: 0, mine: 0, charged: 0 });
    for (const r of rows) {
      const st = state.get(`${r.budget_id}:${Number(r.window_start)}`);
      if (!st) continue;
      st.spent += Number(r.spent_nanos);
      const held = Number(r.held_nanos);
      if (held <= 0 || r.expires_at <= now) continue;
      if (r.holder === this.holder) st.mine = held;
      else st.others += held;
    }
    return state;
  }

  /** Inside the tick's transaction: this process's row of each window the tick changed (spend added, reservation set, expiry ahead). */
  async write(rows: [WindowRef, WindowState, number][]): Promise<void> {
    if (rows.length === 0) return;
    const expires = new Date(Date.now() + HOLD_TTL_MS).toISOString();
    const p = new Params();
    const values = rows.map(([w, st, reserved]) => {
      // The row names its budget in the foreign key of its kind, so that deleting the budget deletes it too.
      const scopeId = w.kind === "scope" ? p.add(w.budget.id) : "NULL";
      const partnerId = w.kind === "partner" ? p.add(w.budget.id) : "NULL";
      return `(${p.add(w.budget.id)}, ${scopeId}, ${partnerId}, CAST(${p.add(w.start)} AS BIGINT), ${p.add(this.holder)}, CAST(${p.add(st.charged)} AS BIGINT), CAST(${p.add(Math.max(0, reserved))} AS BIGINT), ${p.add(expires)})`;
    });
    await this.deps.store.execute(
      `INSERT INTO budget_windows (budget_id, scope_budget_id, partner_budget_id, window_start, holder, spent_nanos, held_nanos, expires_at) VALUES ${values.join(", ")}
       ON CONFLICT (budget_id, window_start, holder) DO UPDATE SET
         spent_nanos = budget_windows.spent_nanos + excluded.spent_nanos,
         held_nanos = excluded.held_nanos,
         expires_at = excluded.expires_at`,
      p.values,
    );
  }

  /** Spend of a budget in a window, in nano-USD: its rows, or (not opened yet) what was recorded in it. */
  async spentNanos(w: WindowRef): Promise<number> {
    const rows = await this.deps.store.query<{ spent_nanos: number | string }>(sql`SELECT spent_nanos FROM budget_windows WHERE budget_id = ${w.budget.id} AND window_start = ${w.start}`);
    if (rows.length > 0) return rows.reduce((sum, r) => sum + Number(r.spent_nanos), 0);
    const [opening] = await this.deps.store.query<{ spent: number | string }>(sql`SELECT (${ownerOf(w, this.spend).opening}) AS spent`);
    return Number(opening?.spent ?? 0);
  }

  /** At a process's start: what it reserved in its previous life is dropped (nothing it held is in flight now). */
  async dropReservations(): Promise<void> {
    await this.deps.store.query(sql`UPDATE budget_windows SET held_nanos = 0 WHERE holder = ${this.holder} AND held_nanos <> 0`);
  }

  /** The heartbeat: this process's live reservations count HOLD_TTL_MS from `at`. */
  async keepAlive(at: number): Promise<void> {
    await this.deps.store.query(sql`UPDATE budget_windows SET expires_at = ${new Date(at + HOLD_TTL_MS).toISOString()} WHERE holder = ${this.holder} AND held_nanos > 0`);
  }
}
