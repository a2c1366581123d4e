// The decision of one ledger tick (docs/budgets.md#admission), inside its transaction: lock and read the
// windows, add the costs of ended requests, decide each admission in arrival order, size each lease's credit,
// and write this process's window rows. A request is admitted when every budget it is under admits its
// estimate — its windows in refusal order: the scope budgets' (agent, project, organization), then a partner
// budget's — by one rule (core/budgetWindows.ts `admits`); the first that does not is the one its refusal
// names. Budgets of both kinds are windows of the same rows, locked, read and written alike. What changes in
// memory is recorded so the ledger can undo it if the transaction does not commit.
import type { Lease, LeaseBook } from "../../core/budgetLeases.ts";
import { admits, type BudgetWindow } from "../../core/budgetWindows.ts";
import { NANOS_PER_CENT } from "../../core/pricing.ts";
import type { Store } from "../../store/store.ts";
import type { BudgetAlerts } from "./alerts.ts";
import type { PartnerBudget } from "./partnerBudget.ts";
import type { ScopeBudget } from "./scopeBudget.ts";
import { lockOrder, type WindowRef, type WindowRows, type WindowState } from "./windowRows.ts";

/** What an admitted request holds until it is settled: its estimate, in each of its budgets' windows. */
export interface Hold {
  estimateNanos: number;
  windows: WindowRef[];
}

/** The budget that refused a request: a scope budget's window, or a partner budget. */
export type Refusal = { kind: "scope"; budget: ScopeBudget; window: BudgetWindow } | { kind: "partner"; budget: PartnerBudget };

export type Admission = { admitted: true; hold: Hold } | { admitted: false; refusal: Refusal };

/** A request waiting for the next tick to decide it. */
export interface PendingAdmission {
  /** In refusal order (the partner budget's last). */
  windows: WindowRef[];
  estimateNanos: number;
  resolve: (admission: Admission) => void;
}

/** What a tick changed in memory before its transaction committed: undone when it did not. */
export interface TickChanges {
  costs: [Lease<WindowRef>, number][];
  admitted: Hold[];
  grants: Lease<WindowRef>[];
  /** Leases whose row reserves nothing once the transaction commits: forgotten then, unless used meanwhile. */
  emptied: Lease<WindowRef>[];
}

/** What a tick decides with. */
export interface TickContext {
  store: Store;
  rows: WindowRows;
  leases: LeaseBook<WindowRef>;
  alerts: BudgetAlerts;
  /** A stopping process gives its credit back. */
  closing: boolean;
}

/** How a refusal names the window `w`'s budget. */
export function refusalOf(w: WindowRef): Refusal {
  return w.kind === "scope" ? { kind: "scope", budget: w.budget, window: w.window } : { kind: "partner", budget: w.budget };
}

/** The refusal when the budgets cannot be asked: the first budget that applies. */
export function refusedUndecided(a: PendingAdmission): Admission {
  return { admitted: false, refusal: refusalOf(a.windows[0]!) };
}

/**
 * Inside the tick's transaction: everything the tick has to decide and write. Returns each admission's
 * result (in order) and the windows' state (for alerts, once committed).
 */
export async function decideTick(
  ctx: TickContext,
  admissions: PendingAdmission[],
  windows: Map<string, WindowRef>,
  changes: TickChanges,
): Promise<[Admission[], Map<string, WindowState>]> {
  const { store, leases } = ctx;
  const state = await ctx.rows.read([...windows.values()].sort(lockOrder));

  chargeEndedRequests(leases, state, changes);

  const now = performance.now();
  // What this process reserves for its own requests; its credit is free for its own admissions.
  const mine = (key: string) => {
    const lease = leases.get(key);
    return lease ? lease.inFlight + lease.cost : 0;
  };
  const results: Admission[] = [];
  for (const a of admissions) {
    const estimate = a.estimateNanos;
    const refusing = a.windows.find((w) => {
      const st = state.get(w.key);
      // Not open: the budget was deleted. It no longer applies.
      if (!st) return false;
      return !admits(st.spent, st.others + mine(w.key), estimate, w.budget.limitCents * NANOS_PER_CENT);
    });
    if (refusing) {
      results.push({ admitted: false, refusal: refusalOf(refusing) });
      // The first refusal in a scope budget's window is reported as 100 % (docs/budgets.md#alerts).
      const spent = state.get(refusing.key)!.spent;
      if (refusing.kind === "scope") store.afterCommit(() => ctx.alerts.send(refusing, 100, spent));
      continue;
    }
    const hold: Hold = { estimateNanos: estimate, windows: a.windows.filter((w) => state.has(w.key)) };
    for (const w of hold.windows) leases.admitted(leases.of(w, now), estimate, now);
    changes.admitted.push(hold);
    results.push({ admitted: true, hold });
  }

  // From here to the write nothing waits, so the credit given back and the reservations written agree with memory.
  await ctx.rows.write(sizeCredit(ctx, windows, state, now, changes));
  return [results, state];
}

/** The costs of ended requests, kept in their leases, join their windows' spend (a deleted budget's lease goes). */
function chargeEndedRequests(leases: LeaseBook<WindowRef>, state: Map<string, WindowState>, changes: TickChanges): void {
  for (const lease of leases.leases()) {
    const st = state.get(lease.ref.key);
    if (!st) {
      leases.forget(lease.ref.key);
      continue;
    }
    if (lease.cost === 0) continue;
    st.spent += lease.cost;
    st.charged += lease.cost;
    changes.costs.push([lease, lease.cost]);
    lease.cost = 0;
  }
}

/**
 * Each lease's credit sized anew (docs/budgets.md#leases): what is beyond the target is given back now, more is
 * usable once the transaction commits. Returns the rows this process must write: window, state, reservation.
 */
function sizeCredit(ctx: TickContext, windows: Map<string, WindowRef>, state: Map<string, WindowState>, now: number, changes: TickChanges): [WindowRef, WindowState, number][] {
  const rows: [WindowRef, WindowState, number][] = [];
  for (const w of [...windows.values()].sort(lockOrder)) {
    const st = state.get(w.key);
    const lease = ctx.leases.get(w.key);
    if (!st || !lease) continue;
    // Credit is granted for this window object: one of a changed budget is decided in the store first.
    lease.ref = w;
    const room = w.budget.limitCents * NANOS_PER_CENT - st.spent - st.others - lease.inFlight - lease.cost;
    const target = ctx.leases.target(lease, room, now, ctx.closing);
    lease.target = target;
    lease.credit = Math.max(0, Math.min(lease.credit, target));
    lease.granting = target - lease.credit;
    if (lease.granting > 0) changes.grants.push(lease);
    const reserved = lease.inFlight + lease.cost + target;
    if (reserved === 0) changes.emptied.push(lease);
    if (st.charged !== 0 || reserved !== st.mine) rows.push([w, st, reserved]);
  }
  return rows;
}
