// Admission and spend for every budget of a request at once (docs/budgets.md#admission,
// docs/budgets.md#budgets-for-every-scope). A metered request under budgets — its agent's, project's,
// organization's, and a partner's — is admitted only when each of them admits its estimate (spent < limit and
// spent + reserved + estimate ≤ limit); then the estimate is held against each, all or nothing. When the
// request ends its cost is added to each window's spend and its holds are dropped.
//
// How it stays exact across gateway processes and instances: every window has an opening row (holder '')
// that a transaction locks (SELECT … FOR UPDATE on PostgreSQL, in one order: budget id, then window; SQLite
// transactions are serial), and each process its own row, where it adds what it charged and keeps what it
// reserves. A window's spend is the sum of its rows; what is reserved, the sum of the reservations of live
// processes (a live process keeps its rows' expiry ahead; the reservations of one that died stop counting
// HOLD_TTL_MS later).
//
// How it stays cheap: a process reserves a little more than its requests hold — a lease (core/budgetLeases.ts,
// docs/budgets.md#leases) — and admits from it in memory, so under a budget with room to spare a request
// waits for no transaction. Everything else — admissions the lease cannot cover, costs of ended requests,
// topping leases up and giving them back — is decided in one transaction per tick (one read, one write), and
// under load the next tick waits until the last one's duration has been repaid GAP_FACTOR times over (within
// GAP_MIN_MS and GAP_MAX_MS): a transaction costs the same for one request or a hundred, so the store's share
// of the process's time stays small however busy it is.
import { sql } from "drizzle-orm";
import { LeaseBook, type Lease } from "../core/budgetLeases.ts";
import { periodAdjective, reachedPercents, windowOf, type BudgetWindow } from "../core/budgetWindows.ts";
import { NANOS_PER_CENT } from "../core/pricing.ts";
import { log } from "../observability/log.ts";
import { watchBudgetAdmissions } from "../observability/metrics.ts";
import type { Budget as PartnerBudget, BudgetService } from "./budgets.ts";
import type { ServiceDeps } from "./deps.ts";
import type { NotificationService } from "./notifications/index.ts";
import type { ScopeBudget } from "./scopeBudget.ts";
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

/** An ended request whose partner reservation is charged or released in the next tick. */
interface PendingSettlement {
  hold: Hold;
  costNanos: number;
}

/** A window's state inside a tick. */
interface WindowState {
  spent: number;
  /** What the other live processes reserve. */
  others: number;
  /** What this process's row reserves in the store now (0 when it expired). */
  mine: number;
  /** What this tick adds to this process's spend. */
  charged: number;
}

/** What a tick changed in memory before its transaction committed: undone when it did not. */
interface TickChanges {
  costs: [Lease<WindowRef>, number][];
  admitted: Hold[];
  grants: Lease<WindowRef>[];
  /** Leases whose row reserves nothing once the transaction commits: forgotten then, unless used meanwhile. */
  emptied: Lease<WindowRef>[];
}

type Tick = "now" | "admission" | "settlement" | "review";
const TICK_RANK: Record<Tick, number> = { now: 0, admission: 1, settlement: 2, review: 3 };

/** A live process's holds count this long after its last heartbeat. */
const HOLD_TTL_MS = 120_000;
const HEARTBEAT_MS = 30_000;
/** A tick the store refused: what it was to write is tried again this much later (its holds still count meanwhile). */
const RETRY_MS = 1000;
/** A process holding credit looks at its leases this often, to give back what is not used. */
const REVIEW_MS = 100;
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
  #partnerSettlements: PendingSettlement[] = [];
  readonly #leases = new LeaseBook<WindowRef>();
  #running = false;
  #scheduled: { kind: Tick; cancel: () => void } | null = null;
  /** When the last tick started (performance.now()). */
  #lastTick = -Infinity;
  /** The gap after the last tick (ms). */
  #gap = GAP_MIN_MS;
  /** After the store refused a tick, ticks nothing waits on wait until then. */
  #backoffUntil = 0;
  #heartbeat: Timer | null = null;
  /** When this process's reservations were last known to be kept alive in the store (Date.now()). */
  #aliveAt = Date.now();
  /** A stopping process gives its credit back. */
  #closing = false;
  /** Admissions decided from credit and in the store (credgate_budget_admissions_total). */
  readonly #admittedBy = { lease: 0, store: 0 };
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
   * holding `at`; then the partner's), all or nothing: from this process's leases when they cover it,
   * otherwise in the next tick. Never rejects: when the store cannot be asked, the budgets cannot be honoured
   * and the request is refused by the first of them.
   */
  admit(scoped: readonly ScopeBudget[], partner: PartnerBudget | null, estimateNanos: number, at: number): Promise<Admission> {
    const windows = scoped.map((b) => windowRefOf(b, at));
    // Credit counts in the store only while this process keeps its reservations alive.
    if (partner === null && Date.now() < this.#aliveAt + HOLD_TTL_MS - HEARTBEAT_MS) {
      const leased = this.#leases.admit(windows, estimateNanos, performance.now());
      if (leased !== "refused") {
        this.#admittedBy.lease++;
        if (leased === "admitted, review due") this.#schedule("settlement");
        return Promise.resolve({ admitted: true, hold: { estimateNanos, windows, partner: null } });
      }
    }
    return new Promise((resolve) => {
      this.#admissions.push({ windows, partner, estimateNanos, resolve });
      this.#schedule("admission");
    });
  }

  /** Charges an admitted request's cost to its windows and drops its holds (cost 0: it never went out). Never rejects. */
  settle(hold: Hold, costNanos: number): void {
    const cost = Math.max(0, Math.round(costNanos));
    this.#leases.settle(hold.windows, hold.estimateNanos, cost);
    if (hold.partner) this.#partnerSettlements.push({ hold, costNanos: cost });
    this.#schedule("settlement");
  }

  /** Resolves once everything queued has been tried. */
  drained(): Promise<void> {
    if (this.#scheduled && this.#scheduled.kind !== "admission") this.#schedule("now");
    return this.#idle;
  }

  /** Something to write: a partner's settlement or the cost of an ended request. */
  #owing(): boolean {
    if (this.#partnerSettlements.length > 0) return true;
    for (const lease of this.#leases.leases()) if (lease.cost !== 0) return true;
    return false;
  }

  /** Credit to look after (to top up or give back). */
  #leasing(): boolean {
    for (const lease of this.#leases.leases()) if (lease.credit > 0) return true;
    return false;
  }

  /**
   * The next tick: soon for admissions (paced under load), after the gap for what ended, after REVIEW_MS for
   * a look at the leases; a more urgent kind replaces a scheduled one.
   */
  #schedule(kind: Tick): void {
    if (this.#running) return;
    const s = this.#scheduled;
    if (s && TICK_RANK[s.kind] <= TICK_RANK[kind]) return;
    if (s) s.cancel();
    if (this.#markIdle === null) this.#idle = new Promise((resolve) => (this.#markIdle = resolve));
    const run = () => {
      this.#scheduled = null;
      void this.#loop();
    };
    let wait = 0;
    if (kind !== "now") {
      wait = this.#lastTick + this.#gap - performance.now();
      if (kind !== "admission") wait = Math.max(wait, kind === "review" ? REVIEW_MS : this.#gap, this.#backoffUntil - Date.now());
    }
    if (wait > 0) {
      // Never what keeps a process alive: a stopping one drains the ledger itself (stop()).
      const t = setTimeout(run, wait).unref();
      this.#scheduled = { kind, cancel: () => clearTimeout(t) };
    } else {
      // Everything that arrives in this turn of the event loop joins the tick.
      const i = setImmediate(run);
      this.#scheduled = { kind, cancel: () => clearImmediate(i) };
    }
  }

  async #loop(): Promise<void> {
    this.#running = true;
    this.#lastTick = performance.now();
    try {
      const admissions = this.#admissions;
      this.#admissions = [];
      const settlements = this.#partnerSettlements;
      this.#partnerSettlements = [];
      if (admissions.length > 0 || settlements.length > 0 || this.#leases.size > 0) await this.#tick(admissions, settlements);
    } finally {
      this.#gap = Math.min(GAP_MAX_MS, Math.max(GAP_MIN_MS, GAP_FACTOR * (performance.now() - this.#lastTick)));
      this.#running = false;
      if (this.#admissions.length > 0) this.#schedule("admission");
      else if (this.#owing()) this.#schedule("settlement");
      else {
        this.#markIdle?.();
        this.#markIdle = null;
        if (this.#leasing()) this.#schedule(this.#closing ? "now" : "review");
      }
    }
  }

  /**
   * One transaction for everything queued: partner settlements, the costs of ended requests, each admission
   * in arrival order, then every lease's credit sized anew. When the store fails, the admissions are refused
   * and the rest kept for later (the holds still count meanwhile, so nothing can overshoot).
   */
  async #tick(admissions: PendingAdmission[], settlements: PendingSettlement[]): Promise<void> {
    const windows = new Map<string, WindowRef>();
    for (const lease of this.#leases.leases()) windows.set(lease.ref.key, lease.ref);
    // An admission's window object is the newest (its budget may have changed since the lease was granted).
    for (const a of admissions) for (const w of a.windows) windows.set(w.key, w);
    let results: Admission[];
    let state: Map<string, WindowState>;
    try {
      for (const w of windows.values()) if (!this.#opened.has(w.key)) await this.#open(w);
      [results, state] = await this.#retryingDeadlocks(async () => {
        const changes: TickChanges = { costs: [], admitted: [], grants: [], emptied: [] };
        try {
          const decided = await this.deps.store.transaction(() => this.#decide(admissions, settlements, windows, changes));
          this.#committed(changes);
          return decided;
        } catch (err) {
          this.#undo(changes);
          throw err;
        }
      });
    } catch (err) {
      if (admissions.length > 0) log.error("budget admission failed: refusing the requests it could not decide", { requests: admissions.length, error: (err as Error).message });
      if (settlements.length > 0 || this.#owing()) log.warn("LLM spend not settled yet, will retry", { error: (err as Error).message });
      this.#partnerSettlements = settlements.concat(this.#partnerSettlements);
      this.#backoffUntil = Date.now() + RETRY_MS;
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

  /** The tick committed: granted credit becomes usable, and a lease whose row reserves nothing is forgotten. */
  #committed(changes: TickChanges): void {
    for (const hold of changes.admitted) if (hold.windows.length > 0) this.#admittedBy.store++;
    for (const lease of changes.grants) {
      lease.credit += lease.granting;
      lease.granting = 0;
    }
    for (const lease of changes.emptied) if (lease.inFlight === 0 && lease.credit === 0 && lease.cost === 0) this.#leases.forget(lease.ref.key);
  }

  /** The tick did not commit: costs wait for the next, admissions it decided are not held, grants never happened (credit given back stays given back). */
  #undo(changes: TickChanges): void {
    for (const [lease, cost] of changes.costs) lease.cost += cost;
    for (const hold of changes.admitted) for (const w of hold.windows) {
      const lease = this.#leases.get(w.key);
      if (lease) lease.inFlight -= hold.estimateNanos;
    }
    for (const lease of changes.grants) lease.granting = 0;
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
   * Inside the tick's transaction: lock the windows (in lock order), read their spend and live reservations,
   * settle partner reservations, add the costs of ended requests, decide each admission in order, size each
   * lease's credit, and write this process's rows. Memory changes are recorded in `changes` (undone if the
   * transaction does not commit).
   */
  async #decide(admissions: PendingAdmission[], settlements: PendingSettlement[], windows: Map<string, WindowRef>, changes: TickChanges): Promise<[Admission[], Map<string, WindowState>]> {
    const state = await this.#read([...windows.values()].sort(lockOrder));
    // Partner keys are locked in one order too, before any is checked (docs/budgets.md#admission).
    const partnerKeys = [...new Set(admissions.flatMap((p) => (p.partner ? [`budget:${p.partner.secretId}:${p.partner.organizationId}`] : [])))].sort();
    for (const key of partnerKeys) await this.deps.store.lockKey(key);
    for (const s of settlements) {
      const p = s.hold.partner!;
      if (s.costNanos > 0) await this.partner.charge(p.budget.secretId, p.budget.organizationId, s.costNanos, p.reservationId);
      else await this.partner.release(p.reservationId);
    }

    for (const lease of this.#leases.leases()) {
      // A deleted budget's window went with it: its lease too.
      const st = state.get(lease.ref.key);
      if (!st) {
        this.#leases.forget(lease.ref.key);
        continue;
      }
      if (lease.cost === 0) continue;
      st.spent += lease.cost;
      st.charged += lease.cost;
      changes.costs.push([lease, lease.cost]);
      lease.cost = 0;
    }

    const now = performance.now();
    // What this process reserves for its own requests; its credit is free for its own admissions.
    const mine = (key: string) => {
      const lease = this.#leases.get(key);
      return lease ? lease.inFlight + lease.cost : 0;
    };
    const results: Admission[] = [];
    for (const a of admissions) {
      const estimate = a.estimateNanos;
      const refusing = a.windows.find((w) => {
        const st = state.get(w.key);
        // Not open: the budget was deleted. It no longer applies.
        if (!st) return false;
        const limit = w.budget.limitCents * NANOS_PER_CENT;
        return !(st.spent < limit && st.spent + st.others + mine(w.key) + estimate <= limit);
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
      const hold: Hold = { estimateNanos: estimate, windows: a.windows.filter((w) => state.has(w.key)), partner };
      for (const w of hold.windows) this.#leases.admitted(this.#leases.of(w, now), estimate, now);
      changes.admitted.push(hold);
      results.push({ admitted: true, hold });
    }

    // From here to the write nothing waits, so the credit given back and the reservations written agree with memory.
    const rows: [WindowRef, WindowState, number][] = [];
    for (const w of [...windows.values()].sort(lockOrder)) {
      const st = state.get(w.key);
      const lease = this.#leases.get(w.key);
      if (!st || !lease) continue;
      // Credit is granted for this window object: one of a changed budget is decided in the store first.
      lease.ref = w;
      const room = w.budget.limitCents * NANOS_PER_CENT - st.spent - st.others - lease.inFlight - lease.cost;
      const target = this.#leases.target(lease, room, now, this.#closing);
      lease.target = target;
      // Credit beyond the target is given back now; more is usable once the transaction commits.
      lease.credit = Math.max(0, Math.min(lease.credit, target));
      lease.granting = target - lease.credit;
      if (lease.granting > 0) changes.grants.push(lease);
      const reserved = lease.inFlight + lease.cost + target;
      if (reserved === 0) changes.emptied.push(lease);
      if (st.charged !== 0 || reserved !== st.mine) rows.push([w, st, reserved]);
    }
    await this.#write(rows);
    return [results, state];
  }

  /** Locks the open windows among `sorted` (in lock order) and reads each one's spend and live reservations. */
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

  /** This process's row of each window the tick changed: spend added, reservation set, expiry ahead. */
  async #write(rows: [WindowRef, WindowState, number][]): Promise<void> {
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
    this.#leases.clear();
    this.#closing = false;
    this.#aliveAt = Date.now();
    watchBudgetAdmissions(() => this.#admittedBy);
    this.#heartbeat = setInterval(() => void this.#beat().catch((err: Error) => log.warn("budget holds not refreshed", { error: err.message })), HEARTBEAT_MS).unref();
  }

  async #beat(): Promise<void> {
    const at = Date.now();
    await this.deps.store.query(sql`UPDATE budget_windows SET expires_at = ${new Date(at + HOLD_TTL_MS).toISOString()} WHERE holder = ${this.holder} AND held_nanos > 0`);
    this.#aliveAt = at;
  }

  /** Settles what is queued and gives the credit back (a stopping process), then stops refreshing its holds. */
  async stop(): Promise<void> {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = null;
    this.#backoffUntil = 0;
    this.#closing = true;
    await this.drained();
    // The tick that gives the credit back (a tick running when closing began may have granted more).
    for (let i = 0; i < 3 && this.#leasing(); i++) {
      this.#schedule("now");
      await this.drained();
    }
  }
}
