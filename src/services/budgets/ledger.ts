// The budget ledger: the one entry to budget admission (docs/budgets.md#admission,
// docs/budgets.md#budgets-for-every-scope). A metered request under budgets — its agent's, project's,
// organization's, and a partner's — is admitted only when each of them admits its estimate; then the estimate
// is held against each, all or nothing. When the request ends its cost is added to each budget's spend and its
// holds are dropped. Every kind of budget is a window of the same rows and goes the same way: a partner budget
// is one more window of the request, the last in refusal order. The module's parts: the decision of a tick
// (admission.ts), the windows' rows in the store (windowRows.ts), leases (core/budgetLeases.ts), alerts
// (alerts.ts); this file schedules the ticks and runs each in one transaction.
//
// How it stays exact across gateway processes and instances: a tick locks the windows it decides (in one
// order) and reads what every live process reserved (windowRows.ts).
//
// How it stays cheap: a process reserves a little more than its requests hold — a lease (core/budgetLeases.ts,
// docs/budgets.md#leases) — and admits from it in memory, so under a budget with room to spare a request
// waits for no transaction. Everything else — admissions the lease cannot cover, costs of ended requests,
// topping leases up and giving them back — is decided in one transaction per tick (one read, one write), and
// under load the next tick waits until the last one's duration has been repaid GAP_FACTOR times over (within
// GAP_MIN_MS and GAP_MAX_MS): a transaction costs the same for one request or a hundred, so the store's share
// of the process's time stays small however busy it is.
import { LeaseBook } from "../../core/budgetLeases.ts";
import { reachedPercents } from "../../core/budgetWindows.ts";
import { NANOS_PER_CENT } from "../../core/pricing.ts";
import { log } from "../../observability/log.ts";
import { watchBudgetAdmissions } from "../../observability/metrics.ts";
import type { ServiceDeps } from "../deps.ts";
import type { NotificationService } from "../notifications/index.ts";
import { decideTick, refusedUndecided, type Admission, type Hold, type PendingAdmission, type TickChanges, type TickContext } from "./admission.ts";
import { BudgetAlerts } from "./alerts.ts";
import type { PartnerBudget } from "./partnerBudget.ts";
import type { ScopeBudget } from "./scopeBudget.ts";
import type { SpendService } from "./spend.ts";
import { HOLD_TTL_MS, partnerWindowRefOf, WindowRows, windowRefOf, type WindowRef, type WindowState } from "./windowRows.ts";

export type { Admission, Hold, Refusal } from "./admission.ts";

type Tick = "now" | "admission" | "settlement" | "review";
const TICK_RANK: Record<Tick, number> = { now: 0, admission: 1, settlement: 2, review: 3 };

/** How often a live process pushes its reservations' expiry ahead (they count HOLD_TTL_MS from then). */
const HEARTBEAT_MS = 30_000;
/** A tick the store refused: what it was to write is tried again this much later (its holds still count meanwhile). */
const RETRY_MS = 1000;
/** A process holding credit looks at its leases this often, to give back what is not used. */
const REVIEW_MS = 100;
/** Under load, ticks start at least GAP_FACTOR × the last one's duration apart, within these bounds; settlements alone wait as long. */
const GAP_FACTOR = 20;
const GAP_MIN_MS = 2;
const GAP_MAX_MS = 20;

export class BudgetLedger {
  #admissions: PendingAdmission[] = [];
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
  readonly #rows: WindowRows;
  readonly #alerts: BudgetAlerts;
  #idle: Promise<void> = Promise.resolve();
  #markIdle: (() => void) | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    spend: SpendService,
    notifications: NotificationService,
  ) {
    this.#rows = new WindowRows(deps, spend);
    this.#alerts = new BudgetAlerts(deps, notifications);
  }

  /**
   * Admits `estimateNanos` against every budget given — scope budgets in refusal order, then the partner's;
   * their windows those holding `at` — all or nothing: from this process's leases when they cover it,
   * otherwise in the next tick. Never rejects: when the store cannot be asked, the budgets cannot be honoured
   * and the request is refused by the first of them.
   */
  admit(scoped: readonly ScopeBudget[], partner: PartnerBudget | null, estimateNanos: number, at: number): Promise<Admission> {
    const windows: WindowRef[] = scoped.map((b) => windowRefOf(b, at));
    if (partner !== null) windows.push(partnerWindowRefOf(partner, at));
    // Credit counts in the store only while this process keeps its reservations alive.
    if (Date.now() < this.#aliveAt + HOLD_TTL_MS - HEARTBEAT_MS) {
      const leased = this.#leases.admit(windows, estimateNanos, performance.now());
      if (leased !== "refused") {
        this.#admittedBy.lease++;
        if (leased === "admitted, review due") this.#schedule("settlement");
        return Promise.resolve({ admitted: true, hold: { estimateNanos, windows } });
      }
    }
    return new Promise((resolve) => {
      this.#admissions.push({ windows, estimateNanos, resolve });
      this.#schedule("admission");
    });
  }

  /** Charges an admitted request's cost to its windows and drops its holds (cost 0: it never went out). Never rejects. */
  settle(hold: Hold, costNanos: number): void {
    const cost = Math.max(0, Math.round(costNanos));
    this.#leases.settle(hold.windows, hold.estimateNanos, cost);
    this.#schedule("settlement");
  }

  /** Resolves once everything queued has been tried. */
  drained(): Promise<void> {
    if (this.#scheduled && this.#scheduled.kind !== "admission") this.#schedule("now");
    return this.#idle;
  }

  /** Something to write: the cost of an ended request. */
  #owing(): boolean {
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
      if (admissions.length > 0 || this.#leases.size > 0) await this.#tick(admissions);
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
   * One transaction for everything queued: the costs of ended requests, each admission in arrival order, then
   * every lease's credit sized anew. When the store fails, the admissions are refused and the rest kept for
   * later (the holds still count meanwhile, so nothing can overshoot).
   */
  async #tick(admissions: PendingAdmission[]): Promise<void> {
    const windows = new Map<string, WindowRef>();
    for (const lease of this.#leases.leases()) windows.set(lease.ref.key, lease.ref);
    // An admission's window object is the newest (its budget may have changed since the lease was granted).
    for (const a of admissions) for (const w of a.windows) windows.set(w.key, w);
    let results: Admission[];
    let state: Map<string, WindowState>;
    try {
      for (const w of windows.values()) if (!this.#rows.isOpen(w)) await this.#rows.open(w);
      [results, state] = await this.#retrying(async () => {
        const changes: TickChanges = { costs: [], admitted: [], grants: [], emptied: [] };
        try {
          const decided = await this.deps.store.transaction(() => decideTick(this.#context(), admissions, windows, changes));
          this.#committed(changes);
          return decided;
        } catch (err) {
          this.#undo(changes);
          throw err;
        }
      });
    } catch (err) {
      if (admissions.length > 0) log.error("budget admission failed: refusing the requests it could not decide", { requests: admissions.length, error: (err as Error).message });
      if (this.#owing()) log.warn("LLM spend not settled yet, will retry", { error: (err as Error).message });
      this.#backoffUntil = Date.now() + RETRY_MS;
      for (const a of admissions) a.resolve(refusedUndecided(a));
      return;
    }
    for (let i = 0; i < admissions.length; i++) admissions[i]!.resolve(results[i]!);
    for (const w of windows.values()) {
      const st = state.get(w.key);
      if (w.kind !== "scope" || !st || st.charged === 0) continue;
      for (const p of reachedPercents(w.budget.alertPercents, st.spent, w.budget.limitCents * NANOS_PER_CENT)) this.#alerts.send(w, p, st.spent);
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

  /** What the tick's decision works with. */
  #context(): TickContext {
    return { store: this.deps.store, rows: this.#rows, leases: this.#leases, alerts: this.#alerts, closing: this.#closing };
  }

  /** The engine may give up on a transaction that can simply run again (a deadlock victim, say): tried again, at most twice. */
  async #retrying<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (err) {
        if (attempt >= 2 || !this.deps.store.isRetryable(err)) throw err;
      }
    }
  }

  /** Spend of a budget in its window `w` (windowRefOf, partnerWindowRefOf), in nano-USD (the API's `spentCents`). */
  spentNanos(w: WindowRef): Promise<number> {
    return this.#rows.spentNanos(w);
  }

  /**
   * A gateway process's duties: what it held in its previous life is dropped (nothing it held is in flight
   * now), and its live holds are kept from expiring.
   */
  async start(): Promise<void> {
    await this.#rows.dropReservations();
    this.#leases.clear();
    this.#closing = false;
    this.#aliveAt = Date.now();
    watchBudgetAdmissions(() => this.#admittedBy);
    this.#heartbeat = setInterval(() => void this.#beat().catch((err: Error) => log.warn("budget holds not refreshed", { error: err.message })), HEARTBEAT_MS).unref();
  }

  async #beat(): Promise<void> {
    const at = Date.now();
    await this.#rows.keepAlive(at);
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
