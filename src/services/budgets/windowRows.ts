// The rows of scope budgets' windows (docs/budgets.md#admission): how the ledger keeps a window's spend and
// reservations in the store. Every window has an opening row (holder ''), started from the spend already
// recorded in the window, and one row per gateway process, where that process adds what it charged and keeps
// what it reserves. A window's spend is the sum of its rows; what is reserved, the sum of the reservations of
// live processes (a live process keeps its rows' expiry ahead; the reservations of one that died stop
// counting HOLD_TTL_MS later). The ledger's transaction locks the opening rows (Store.lockBudgetWindows),
// reads, decides and writes this process's rows.
import { sql } from "drizzle-orm";
import { windowOf, type BudgetWindow } from "../../core/budgetWindows.ts";
import { log } from "../../observability/log.ts";
import type { ServiceDeps } from "../deps.ts";
import type { ScopeBudget } from "./scopeBudget.ts";
import type { SpendService } from "./spend.ts";

/** A live process's reservations count this long after its last heartbeat. */
export const HOLD_TTL_MS = 120_000;
/** Windows known to be open are remembered up to this many (then forgotten, and opened again: a no-op). */
const OPENED_MAX = 10_000;

/** One window of one scope budget. */
export interface WindowRef {
  budget: ScopeBudget;
  /** Epoch seconds (0 for `total`): the window's key in the store. */
  start: number;
  window: BudgetWindow;
  /** `budgetId:start`, the window's key in memory. */
  key: string;
}

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
const currentWindow = new WeakMap<ScopeBudget, WindowRef>();

/** The window of `budget` that holds the instant `at`. */
export function windowRefOf(budget: ScopeBudget, at: number): WindowRef {
  const cached = currentWindow.get(budget);
  if (cached && at >= cached.window.start && (cached.window.end === null || at < cached.window.end)) return cached;
  const window = windowOf(budget.period, at);
  const start = Math.floor(window.start / 1000);
  const ref = { budget, start, window, key: `${budget.id}:${start}` };
  currentWindow.set(budget, ref);
  return ref;
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
   * it (a budget created mid-month counts what was spent before). Outside the tick's transaction, so that
   * rows are only locked in lock order. A budget deleted meanwhile opens nothing; admission then ignores it.
   */
  async open(w: WindowRef): Promise<void> {
    try {
      await this.deps.store.query(sql`
        INSERT INTO budget_windows (budget_id, window_start, holder, spent_nanos, held_nanos, expires_at)
        SELECT CAST(${w.budget.id} AS TEXT), CAST(${w.start} AS BIGINT), '', (${this.spend.windowSpend(w.budget, w.window)}), 0, '' WHERE EXISTS (SELECT 1 FROM scope_budgets WHERE id = ${w.budget.id})
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
    const values = rows.map(
      ([w, st, reserved]) =>
        `(${p.add(w.budget.id)}, CAST(${p.add(w.start)} AS BIGINT), ${p.add(this.holder)}, CAST(${p.add(st.charged)} AS BIGINT), CAST(${p.add(Math.max(0, reserved))} AS BIGINT), ${p.add(expires)})`,
    );
    await this.deps.store.execute(
      `INSERT INTO budget_windows (budget_id, window_start, holder, spent_nanos, held_nanos, expires_at) VALUES ${values.join(", ")}
       ON CONFLICT (budget_id, window_start, holder) DO UPDATE SET
         spent_nanos = budget_windows.spent_nanos + excluded.spent_nanos,
         held_nanos = excluded.held_nanos,
         expires_at = excluded.expires_at`,
      p.values,
    );
  }

  /** Spend of a budget in a window, in nano-USD: its rows, or (not opened yet) what was recorded in it. */
  async spentNanos(budget: ScopeBudget, window: BudgetWindow): Promise<number> {
    const start = Math.floor(window.start / 1000);
    const rows = await this.deps.store.query<{ spent_nanos: number | string }>(sql`SELECT spent_nanos FROM budget_windows WHERE budget_id = ${budget.id} AND window_start = ${start}`);
    if (rows.length > 0) return rows.reduce((sum, r) => sum + Number(r.spent_nanos), 0);
    const [opening] = await this.deps.store.query<{ spent: number | string }>(sql`SELECT (${this.spend.windowSpend(budget, window)}) AS spent`);
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
