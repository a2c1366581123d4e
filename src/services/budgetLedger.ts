// Admission and spend for every budget of a request at once (docs/budgets.md#admission,
// docs/budgets.md#budgets-for-every-scope). A metered request under budgets — its agent's, project's,
// organization's, and a partner's — is admitted only when each of them admits its estimate (spent < limit and
// spent + reserved + estimate ≤ limit); then the estimate is held against each, all or nothing. When the
// request ends its cost is added to each window's spend and its holds are dropped, in one transaction.
//
// How it stays exact across gateway processes and instances: every window has an opening row (holder '')
// that admission locks (SELECT … FOR UPDATE on PostgreSQL, in one order: budget id, then window; SQLite
// transactions are serial), and each process its own row, where it adds what it charged and what it holds.
// A window's spend is the sum of its rows; what is reserved, the sum of the holds of live processes (a live
// process keeps its rows' expiry ahead; the holds of one that died stop counting HOLD_TTL_MS later).
//
// How it stays cheap: everything queued — admissions and settlements — is decided in one transaction per
// tick (one read, one write), and under load the next tick waits until the last one's duration has been
// repaid GAP_FACTOR times over (within GAP_MIN_MS and GAP_MAX_MS): a transaction costs the same for one
// request or a hundred, so the store's share of the process's time stays small however busy it is. A request
// waits that gap at most for its admission; an LLM call is slower than that by orders of magnitude.
import { sql } from "drizzle-orm";
import { periodAdjective, reachedPercents, windowOf, type BudgetWindow } from "../core/budgetWindows.ts";
import { NANOS_PER_CENT } from "../core/pricing.ts";
import { log } from "../observability/log.ts";
import type { Budget as PartnerBudget, BudgetService } from "./budgets.ts";
import type { ServiceDeps } from "./deps.ts";
import type { NotificationService } from "./notifications/index.ts";
import type { ScopeBudget } from "./scopeBudgets.ts";
import type { SpendService } from "./spend.ts";

/** One window of one scope budget. */
export interface WindowRef {
  budget: ScopeBudget;
  /** Epoch seconds (0 for `total`): the window's key in the store. */
  start: number;
  window: BudgetWindow;
  /** `budgetId:start`, the window's key in memory. */
  key: string;
}

/** What an admitted request holds until it is settled. */
export interface Hold {
  estimateNanos: number;
  windows: WindowRef[];
  partner: { budget: PartnerBudget; reservationId: string } | null;
}

export type Refusal = { kind: "scope"; budget: ScopeBudget; window: BudgetWindow } | { kind: "partner"; budget: PartnerBudget };

export type Admission = { admitted: true; hold: Hold } | { admitted: false; refusal: Refusal };

interface PendingAdmission {
  windows: WindowRef[];
  partner: PartnerBudget | null;
  estimateNanos: number;
  resolve: (admission: Admission) => void;
}

interface PendingSettlement {
  hold: Hold;
  costNanos: number;
}

/** A window's state inside a tick. */
interface WindowState {
  spent: number;
  held: number;
  /** What this tick adds to this process's row. */
  charged: number;
  holding: number;
}

/** A live process's holds count this long after its last heartbeat. */
const HOLD_TTL_MS = 120_000;
const HEARTBEAT_MS = 30_000;
/** A tick the store refused: its settlements are tried again this much later (their holds still count meanwhile). */
const RETRY_MS = 1000;
/** Under load, ticks start at least GAP_FACTOR × the last one's duration apart, within these bounds; settlements alone wait as long. */
const GAP_FACTOR = 20;
const GAP_MIN_MS = 2;
const GAP_MAX_MS = 20;
/** Windows known to be open, and alerts known to be sent, are remembered up to this many (then forgotten). */
const MEMORY_MAX = 10_000;

/** Parameters of a statement for Store.execute: `$1`, `$2`, … in order of first use. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** The one lock order of windows: budget id (code units), then window start. */
function lockOrder(a: WindowRef, b: WindowRef): number {
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

export class BudgetLedger {
  #admissions: PendingAdmission[] = [];
  #settlements: PendingSettlement[] = [];
  #running = false;
  /** A tick waiting to run: soon (admissions wait on it) or later (settlements only). */
  #scheduled: { urgent: boolean; cancel: () => void } | null = null;
  /** When the last tick started (performance.now()). */
  #lastTick = -Infinity;
  /** The gap after the last tick (ms). */
  #gap = GAP_MIN_MS;
  /** After the store refused a tick, settlements wait until then (admissions never wait). */
  #backoffUntil = 0;
  #heartbeat: Timer | null = null;
  #opened = new Set<string>();
  #alerted = new Set<string>();
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
   * Admits `estimateNanos` against every budget given (scope budgets in refusal order, their windows those
   * holding `at`; then the partner's), all or nothing. Never rejects: when the store cannot be asked, the
   * budgets cannot be honoured and the request is refused by the first of them.
   */
  admit(scoped: readonly ScopeBudget[], partner: PartnerBudget | null, estimateNanos: number, at: number): Promise<Admission> {
    const windows = scoped.map((b) => windowRefOf(b, at));
    return new Promise((resolve) => {
      this.#admissions.push({ windows, partner, estimateNanos, resolve });
      this.#schedule(true);
    });
  }

  /** Charges an admitted request's cost to its windows and drops its holds (cost 0: it never went out). Queued; never rejects. */
  settle(hold: Hold, costNanos: number): void {
    this.#settlements.push({ hold, costNanos: Math.max(0, Math.round(costNanos)) });
    this.#schedule(false);
  }

  /** Resolves once everything queued has been tried. */
  drained(): Promise<void> {
    if (this.#scheduled && !this.#scheduled.urgent) this.#schedule(true, true);
    return this.#idle;
  }

  /** The next tick: soon for admissions, paced under load; later for settlements alone. */
  #schedule(urgent: boolean, now = false): void {
    if (this.#running) return;
    const s = this.#scheduled;
    if (s && (s.urgent || !urgent)) return;
    if (s) s.cancel();
    if (this.#markIdle === null) this.#idle = new Promise((resolve) => (this.#markIdle = resolve));
    const run = () => {
      this.#scheduled = null;
      void this.#loop();
    };
    const paced = now ? 0 : this.#lastTick + this.#gap - performance.now();
    const wait = Math.max(paced, urgent ? 0 : this.#gap, this.#admissions.length === 0 && !now ? this.#backoffUntil - Date.now() : 0);
    if (wait > 0) {
      // Never what keeps a process alive: a stopping one drains the ledger itself (stop()).
      const t = setTimeout(run, wait).unref();
      this.#scheduled = { urgent, cancel: () => clearTimeout(t) };
    } else {
      // Everything that arrives in this turn of the event loop joins the tick.
      const i = setImmediate(run);
      this.#scheduled = { urgent, cancel: () => clearImmediate(i) };
    }
  }

  async #loop(): Promise<void> {
    this.#running = true;
    this.#lastTick = performance.now();
    try {
      const settling = Date.now() >= this.#backoffUntil;
      const admissions = this.#admissions;
      this.#admissions = [];
      const settlements = settling ? this.#settlements : [];
      if (settling) this.#settlements = [];
      if (admissions.length > 0 || settlements.length > 0) await this.#tick(admissions, settlements);
    } finally {
      this.#gap = Math.min(GAP_MAX_MS, Math.max(GAP_MIN_MS, GAP_FACTOR * (performance.now() - this.#lastTick)));
      this.#running = false;
      if (this.#admissions.length > 0) this.#schedule(true);
      else if (this.#settlements.length > 0) this.#schedule(false);
      else {
        this.#markIdle?.();
        this.#markIdle = null;
      }
    }
  }

  /**
   * One transaction for everything queued: the settlements first (their holds drop, their cost goes into the
   * windows), then each admission in arrival order. When the store fails, the admissions are refused and the
   * settlements kept for later (their holds still count meanwhile, so nothing can overshoot).
   */
  async #tick(admissions: PendingAdmission[], settlements: PendingSettlement[]): Promise<void> {
    const windows = new Map<string, WindowRef>();
    for (const a of admissions) for (const w of a.windows) windows.set(w.key, w);
    for (const s of settlements) for (const w of s.hold.windows) windows.set(w.key, w);
    let results: Admission[];
    let state: Map<string, WindowState>;
    try {
      for (const w of windows.values()) if (!this.#opened.has(w.key)) await this.#open(w);
      [results, state] = await this.#retryingDeadlocks(() => this.deps.store.transaction(() => this.#decide(admissions, settlements, windows)));
    } catch (err) {
      if (admissions.length > 0) log.error("budget admission failed: refusing the requests it could not decide", { requests: admissions.length, error: (err as Error).message });
      if (settlements.length > 0) {
        log.warn("LLM spend not settled yet, will retry", { requests: settlements.length, error: (err as Error).message });
        this.#settlements = settlements.concat(this.#settlements);
        this.#backoffUntil = Date.now() + RETRY_MS;
      }
      for (const a of admissions) {
        const first = a.windows[0];
        a.resolve({ admitted: false, refusal: first ? { kind: "scope", budget: first.budget, window: first.window } : { kind: "partner", budget: a.partner! } });
      }
      return;
    }
    for (let i = 0; i < admissions.length; i++) admissions[i]!.resolve(results[i]!);
    for (const w of windows.values()) {
      const st = state.get(w.key);
      if (!st || st.charged === 0) continue;
      for (const p of reachedPercents(w.budget.alertPercents, st.spent, w.budget.limitCents * NANOS_PER_CENT)) this.#alert(w, p, st.spent);
    }
  }

  /**
   * Opens a window the first time it is used: its row of holder '' starts from the spend already recorded in
   * it (a budget created mid-month counts what was spent before). Outside the tick's transaction, so that
   * rows are only locked in lock order. A budget deleted meanwhile opens nothing; admission then ignores it.
   */
  async #open(w: WindowRef): Promise<void> {
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
    if (this.#opened.size >= MEMORY_MAX) this.#opened.clear();
    this.#opened.add(w.key);
  }

  /**
   * Inside the tick's transaction: lock the windows (in lock order), read their spend and live holds, apply
   * the settlements, decide each admission in order, and write this process's rows.
   */
  async #decide(admissions: PendingAdmission[], settlements: PendingSettlement[], windows: Map<string, WindowRef>): Promise<[Admission[], Map<string, WindowState>]> {
    const state = await this.#read([...windows.values()].sort(lockOrder));
    // Partner keys are locked in one order too, before any is checked (docs/budgets.md#admission).
    const partnerKeys = [...new Set(admissions.flatMap((p) => (p.partner ? [`budget:${p.partner.secretId}:${p.partner.organizationId}`] : [])))].sort();
    for (const key of partnerKeys) await this.deps.store.lockKey(key);

    for (const s of settlements) {
      for (const w of s.hold.windows) {
        // A deleted budget's window went with it: nothing to settle.
        const st = state.get(w.key);
        if (!st) continue;
        st.spent += s.costNanos;
        st.charged += s.costNanos;
        st.held -= s.hold.estimateNanos;
        st.holding -= s.hold.estimateNanos;
      }
      const p = s.hold.partner;
      if (p && s.costNanos > 0) await this.partner.charge(p.budget.secretId, p.budget.organizationId, s.costNanos, p.reservationId);
      else if (p) await this.partner.release(p.reservationId);
    }

    const results: Admission[] = [];
    for (const a of admissions) {
      const estimate = a.estimateNanos;
      const refusing = a.windows.find((w) => {
        const st = state.get(w.key);
        // Not open: the budget was deleted. It no longer applies.
        if (!st) return false;
        const limit = w.budget.limitCents * NANOS_PER_CENT;
        return !(st.spent < limit && st.spent + st.held + estimate <= limit);
      });
      if (refusing) {
        results.push({ admitted: false, refusal: { kind: "scope", budget: refusing.budget, window: refusing.window } });
        // The first refusal in a window is reported as 100 % (docs/budgets.md#alerts).
        const spent = state.get(refusing.key)!.spent;
        this.deps.store.afterCommit(() => this.#alert(refusing, 100, spent));
        continue;
      }
      let partner: Hold["partner"] = null;
      if (a.partner) {
        const p = await this.partner.admit(a.partner, estimate);
        if (!p.admitted) {
          results.push({ admitted: false, refusal: { kind: "partner", budget: a.partner } });
          continue;
        }
        partner = { budget: a.partner, reservationId: p.reservationId };
      }
      const held = a.windows.filter((w) => state.has(w.key));
      for (const w of held) {
        const st = state.get(w.key)!;
        st.held += estimate;
        st.holding += estimate;
      }
      results.push({ admitted: true, hold: { estimateNanos: estimate, windows: held, partner } });
    }
    await this.#write(state, windows);
    return [results, state];
  }

  /** Locks the open windows among `sorted` (in lock order) and reads each one's spend and live holds. */
  async #read(sorted: WindowRef[]): Promise<Map<string, WindowState>> {
    const state = new Map<string, WindowState>();
    if (sorted.length === 0) return state;
    const p = new Params();
    const match = sorted.map((w) => `(budget_id = ${p.add(w.budget.id)} AND window_start = ${p.add(w.start)})`).join(" OR ");
    const store = this.deps.store;
    if (store.engine === "postgres") {
      await store.execute(`SELECT 1 FROM budget_windows WHERE holder = '' AND (${match}) ORDER BY budget_id COLLATE "C", window_start FOR UPDATE`, p.values);
    }
    // The rows themselves, added up here: a GROUP BY would cost SQLite a temporary B-tree per tick.
    const rows = await store.execute<{ budget_id: string; window_start: number | string; holder: string; spent_nanos: number | string; held_nanos: number | string; expires_at: string }>(
      `SELECT budget_id, window_start, holder, spent_nanos, held_nanos, expires_at FROM budget_windows WHERE ${match}`,
      p.values,
    );
    const now = new Date().toISOString();
    // Only a window with its opening row is open; the others' budgets were deleted.
    for (const r of rows) if (r.holder === "") state.set(`${r.budget_id}:${Number(r.window_start)}`, { spent: 0, held: 0, charged: 0, holding: 0 });
    for (const r of rows) {
      const st = state.get(`${r.budget_id}:${Number(r.window_start)}`);
      if (!st) continue;
      st.spent += Number(r.spent_nanos);
      const held = Number(r.held_nanos);
      if (held > 0 && r.expires_at > now) st.held += held;
    }
    return state;
  }

  /** This process's row of each window the tick changed: spend added, hold moved (never below zero), expiry ahead. */
  async #write(state: Map<string, WindowState>, windows: Map<string, WindowRef>): Promise<void> {
    const expires = new Date(Date.now() + HOLD_TTL_MS).toISOString();
    const p = new Params();
    const rows: string[] = [];
    for (const w of [...windows.values()].sort(lockOrder)) {
      const st = state.get(w.key);
      if (!st || (st.charged === 0 && st.holding === 0)) continue;
      rows.push(`(${p.add(w.budget.id)}, CAST(${p.add(w.start)} AS BIGINT), ${p.add(this.holder)}, CAST(${p.add(st.charged)} AS BIGINT), CAST(${p.add(st.holding)} AS BIGINT), ${p.add(expires)})`);
    }
    if (rows.length === 0) return;
    await this.deps.store.execute(
      `INSERT INTO budget_windows (budget_id, window_start, holder, spent_nanos, held_nanos, expires_at) VALUES ${rows.join(", ")}
       ON CONFLICT (budget_id, window_start, holder) DO UPDATE SET
         spent_nanos = budget_windows.spent_nanos + excluded.spent_nanos,
         held_nanos = CASE WHEN budget_windows.held_nanos + excluded.held_nanos > 0 THEN budget_windows.held_nanos + excluded.held_nanos ELSE 0 END,
         expires_at = excluded.expires_at`,
      p.values,
    );
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
  #alert(w: WindowRef, percent: number, spentNanos: number): void {
    const key = `${w.key}:${percent}`;
    if (this.#alerted.has(key)) return;
    if (this.#alerted.size >= MEMORY_MAX) this.#alerted.clear();
    this.#alerted.add(key);
    void this.#sendAlert(w, percent, spentNanos).catch((err: Error) => {
      this.#alerted.delete(key);
      log.warn("budget alert not sent", { budgetId: w.budget.id, percent, error: err.message });
    });
  }

  async #sendAlert(w: WindowRef, percent: number, spentNanos: number): Promise<void> {
    const inserted = await this.deps.store.query(sql`
      INSERT INTO budget_alerts (budget_id, window_start, percent, created_at) VALUES (${w.budget.id}, CAST(${w.start} AS BIGINT), ${percent}, ${new Date().toISOString()})
      ON CONFLICT (budget_id, window_start, percent) DO NOTHING RETURNING percent`);
    if (inserted.length === 0) return;
    const b = w.budget;
    await this.notifications.notify({ organizationId: b.organizationId, projectId: b.projectId }, "budget.threshold", {
      budgetId: b.id,
      scope: b.scope,
      percent,
      spentCents: Math.floor(spentNanos / NANOS_PER_CENT),
      limitCents: b.limitCents,
      period: periodAdjective(b.period),
      resetsAt: w.window.end === null ? null : new Date(w.window.end).toISOString(),
    });
  }

  /** Spend of a budget in a window, in nano-USD: its rows, or (not opened yet) what was recorded in it. */
  async spentNanos(budget: ScopeBudget, window: BudgetWindow): Promise<number> {
    const start = Math.floor(window.start / 1000);
    const rows = await this.deps.store.query<{ spent_nanos: number | string }>(sql`SELECT spent_nanos FROM budget_windows WHERE budget_id = ${budget.id} AND window_start = ${start}`);
    if (rows.length > 0) return rows.reduce((sum, r) => sum + Number(r.spent_nanos), 0);
    const [opening] = await this.deps.store.query<{ spent: number | string }>(sql`SELECT (${this.spend.windowSpend(budget, window)}) AS spent`);
    return Number(opening?.spent ?? 0);
  }

  /**
   * A gateway process's duties: what it held in its previous life is dropped (nothing it held is in flight
   * now), and its live holds are kept from expiring.
   */
  async start(): Promise<void> {
    await this.deps.store.query(sql`UPDATE budget_windows SET held_nanos = 0 WHERE holder = ${this.holder} AND held_nanos <> 0`);
    this.#heartbeat = setInterval(() => void this.#beat().catch((err: Error) => log.warn("budget holds not refreshed", { error: err.message })), HEARTBEAT_MS).unref();
  }

  async #beat(): Promise<void> {
    await this.deps.store.query(sql`UPDATE budget_windows SET expires_at = ${new Date(Date.now() + HOLD_TTL_MS).toISOString()} WHERE holder = ${this.holder} AND held_nanos > 0`);
  }

  /** Settles what is queued (a stopping process), then stops refreshing its holds. */
  async stop(): Promise<void> {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = null;
    this.#backoffUntil = 0;
    await this.drained();
  }
}
