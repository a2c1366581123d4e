// A gateway process's leases on budget windows (docs/budgets.md#leases). Asking the store for every admission
// would make each metered request wait for a transaction; instead a process that admits many requests in a
// window reserves a little more than it holds — credit — in the same row of the store where it keeps its
// holds, and admits from that credit in memory until the next transaction tops it up. Other processes count
// the credit as reserved, so the store's rule (spend + everything reserved ≤ limit) still holds everywhere:
// the credit only moves who may use a share of the headroom, never how much there is.
//
// The credit is sized by what the process admitted lately (LEASE_HORIZON_MS of it) and never more than a
// sixteenth of the room left; near the limit (room for fewer than LEASE_FLOOR of the window's largest
// estimates) there is none, so small budgets and the last stretch of large ones are decided exactly, in the
// store. A lease not used for LEASE_IDLE_MS is given back.
//
// What this process's row of a window holds in the store, per lease: inFlight + credit + cost, where inFlight
// is the estimates of its requests still running, credit what it may still admit, and cost what its ended
// requests cost and is not written yet. Admitting moves estimate from credit to inFlight; an ended request
// moves its estimate from inFlight to credit, minus its cost, which waits in cost for the next write: none of
// these changes the sum, so they need no store. Only a transaction (review) changes it. Pure: times are passed in.

/** A window as the leases need it: a stable object per window (a new one when its budget changes or it ends). */
export interface LeaseRef {
  key: string;
}

export interface Lease<R extends LeaseRef> {
  ref: R;
  inFlight: number;
  credit: number;
  /** Cost of ended requests, not written to the store yet. */
  cost: number;
  /** Credit a running transaction writes: usable once it commits. */
  granting: number;
  /** The credit the last review aimed for: when the credit falls below half of it, a review is due. */
  target: number;
  /** Estimates admitted since the last review. */
  demand: number;
  /** Estimates admitted per millisecond, decaying. */
  rate: number;
  reviewedAt: number;
  activeAt: number;
  /** The largest estimate admitted in the window: the unit of the floor. */
  maxEstimate: number;
}

/** Credit covers this much of the recent admission rate. */
export const LEASE_HORIZON_MS = 200;
/** No credit when the room left is less than this many of the window's largest estimates. */
export const LEASE_FLOOR = 1000;
/** Credit is at most this share of the room left (so several processes can never hold most of it). */
export const LEASE_SHARE = 1 / 16;
/** At least this many estimates of credit when a lease is worth having. */
export const LEASE_MIN = 8;
/** A lease no request used for this long is given back. */
export const LEASE_IDLE_MS = 250;
/** The rate's memory: it halves in about this time when admissions stop. */
const RATE_HALF_LIFE_MS = 500;

/** Every lease of one process, by window key. */
export class LeaseBook<R extends LeaseRef> {
  readonly #leases = new Map<string, Lease<R>>();

  get size(): number {
    return this.#leases.size;
  }

  leases(): IterableIterator<Lease<R>> {
    return this.#leases.values();
  }

  get(key: string): Lease<R> | undefined {
    return this.#leases.get(key);
  }

  /** The lease of `ref`'s window, made empty the first time; it follows the newest object of the window. */
  of(ref: R, now: number): Lease<R> {
    let lease = this.#leases.get(ref.key);
    if (!lease) {
      lease = { ref, inFlight: 0, credit: 0, cost: 0, granting: 0, target: 0, demand: 0, rate: 0, reviewedAt: now, activeAt: now, maxEstimate: 0 };
      this.#leases.set(ref.key, lease);
    }
    lease.ref = ref;
    return lease;
  }

  forget(key: string): void {
    this.#leases.delete(key);
  }

  clear(): void {
    this.#leases.clear();
  }

  /**
   * Admits `estimate` from the credit of every window of `refs`, all or nothing, without the store; false
   * (nothing changed) when one has no lease on that very window object or too little credit. A zero estimate
   * needs some credit too: credit proves the spend is below the limit. Returns whether a review is due.
   */
  admit(refs: readonly R[], estimate: number, now: number): "refused" | "admitted" | "admitted, review due" {
    if (refs.length === 0) return "refused";
    for (const ref of refs) {
      const lease = this.#leases.get(ref.key);
      if (!lease || lease.ref !== ref || lease.credit < estimate || lease.credit <= 0) return "refused";
    }
    let due = false;
    for (const ref of refs) {
      const lease = this.#leases.get(ref.key)!;
      this.#took(lease, estimate, now);
      lease.credit -= estimate;
      if (lease.credit < lease.target / 2) due = true;
    }
    return due ? "admitted, review due" : "admitted";
  }

  /** A request the store admitted in `lease`'s window (the review's transaction holds it). */
  admitted(lease: Lease<R>, estimate: number, now: number): void {
    this.#took(lease, estimate, now);
  }

  #took(lease: Lease<R>, estimate: number, now: number): void {
    lease.inFlight += estimate;
    lease.demand += estimate;
    lease.activeAt = now;
    if (estimate > lease.maxEstimate) lease.maxEstimate = estimate;
  }

  /** An admitted request ended, costing `cost`: its estimate returns as credit, less the cost (written later). */
  settle(refs: readonly LeaseRef[], estimate: number, cost: number): void {
    for (const ref of refs) {
      const lease = this.#leases.get(ref.key);
      // Its budget was deleted meanwhile: nothing to settle.
      if (!lease) continue;
      lease.inFlight -= estimate;
      lease.credit += estimate - cost;
      lease.cost += cost;
    }
  }

  /**
   * The credit a review grants `lease` when `room` is left in its window after everything held and spent
   * (its own credit not counted): by the recent admission rate, within the share of the room; none near the
   * limit, for an idle lease, or when `closing`.
   */
  target(lease: Lease<R>, room: number, now: number, closing: boolean): number {
    const elapsed = Math.max(1, now - lease.reviewedAt);
    lease.rate = Math.max(lease.demand / elapsed, lease.rate * 0.5 ** (elapsed / RATE_HALF_LIFE_MS));
    lease.demand = 0;
    lease.reviewedAt = now;
    const unit = lease.maxEstimate;
    if (closing || unit <= 0 || room < LEASE_FLOOR * unit || now - lease.activeAt > LEASE_IDLE_MS) return 0;
    return Math.floor(Math.min(room * LEASE_SHARE, Math.max(LEASE_MIN * unit, lease.rate * LEASE_HORIZON_MS)));
  }
}
