// A process's leases on budget windows (docs/budgets.md#leases): admission from credit is all or nothing and
// only on the very window object the credit was granted for; an ended request returns its estimate less its
// cost; none of these change what the process's row reserves (inFlight + credit + cost); the credit a review
// grants follows the admission rate, stays within a sixteenth of the room, and is nothing near the limit,
// for an idle lease or a stopping process.
import { describe, expect, test } from "bun:test";
import { LEASE_FLOOR, LEASE_HORIZON_MS, LEASE_IDLE_MS, LEASE_MIN, LEASE_SHARE, LeaseBook, type Lease } from "../../src/core/budgetLeases.ts";

interface Ref {
  key: string;
}

const reserved = (l: Lease<Ref>) => l.inFlight + l.credit + l.cost;

function book(credits: Record<string, number>): { book: LeaseBook<Ref>; refs: Record<string, Ref> } {
  const b = new LeaseBook<Ref>();
  const refs: Record<string, Ref> = {};
  for (const [key, credit] of Object.entries(credits)) {
    refs[key] = { key };
    b.of(refs[key]!, 0).credit = credit;
  }
  return { book: b, refs };
}

describe("admission from credit", () => {
  test("all or nothing: one window short of credit admits nothing anywhere", () => {
    const { book: b, refs } = book({ agent: 100, org: 30 });
    expect(b.admit([refs.agent!, refs.org!], 40, 1)).toBe("refused");
    expect([b.get("agent")!.credit, b.get("org")!.credit]).toEqual([100, 30]);
    expect(b.admit([refs.agent!, refs.org!], 30, 1)).toBe("admitted");
    expect([b.get("agent")!.credit, b.get("org")!.inFlight, b.get("org")!.credit]).toEqual([70, 30, 0]);
  });

  test("no lease, another object for the window (its budget changed or the window ended), no windows: refused", () => {
    const { book: b, refs } = book({ agent: 100 });
    expect(b.admit([{ key: "agent" }], 1, 1)).toBe("refused");
    expect(b.admit([refs.agent!, { key: "other" }], 1, 1)).toBe("refused");
    expect(b.admit([], 1, 1)).toBe("refused");
    expect(b.get("agent")!.credit).toBe(100);
  });

  test("a zero estimate needs some credit: credit is what proves the spend is below the limit", () => {
    const { book: b, refs } = book({ a: 0 });
    expect(b.admit([refs.a!], 0, 1)).toBe("refused");
    b.get("a")!.credit = 1;
    expect(b.admit([refs.a!], 0, 1)).toBe("admitted");
  });

  test("a review is due once the credit falls below half of what the last review aimed for", () => {
    const { book: b, refs } = book({ a: 100 });
    b.get("a")!.target = 100;
    expect(b.admit([refs.a!], 40, 1)).toBe("admitted");
    expect(b.admit([refs.a!], 20, 1)).toBe("admitted, review due");
  });

  test("admitting and settling move amounts within the reservation: it never changes without the store", () => {
    const { book: b, refs } = book({ a: 1000 });
    const lease = b.get("a")!;
    const before = reserved(lease);
    expect(b.admit([refs.a!], 300, 1)).toBe("admitted");
    expect(reserved(lease)).toBe(before);
    b.settle([refs.a!], 300, 120);
    expect([lease.inFlight, lease.credit, lease.cost]).toEqual([0, 880, 120]);
    expect(reserved(lease)).toBe(before);
    // A cost beyond its estimate comes out of the credit.
    expect(b.admit([refs.a!], 100, 1)).toBe("admitted");
    b.settle([refs.a!], 100, 500);
    expect([lease.inFlight, lease.credit, lease.cost]).toEqual([0, 380, 620]);
    expect(reserved(lease)).toBe(before);
    // The window of a deleted budget has no lease: nothing to settle.
    b.settle([{ key: "gone" }], 5, 5);
    expect(b.size).toBe(1);
  });
});

describe("how much credit a review grants", () => {
  const unit = 1_000_000;

  /** A lease that admitted `rate` estimates per millisecond over its first `ms` milliseconds. */
  function active(rate: number, ms = 10): { b: LeaseBook<Ref>; lease: Lease<Ref> } {
    const b = new LeaseBook<Ref>();
    const lease = b.of({ key: "w" }, 0);
    for (let i = 0; i < rate * ms; i++) b.admitted(lease, unit, ms);
    return { b, lease };
  }

  test("the recent admission rate over the horizon, at least LEASE_MIN estimates", () => {
    const { b, lease } = active(2);
    expect(b.target(lease, 1e15, 10, false)).toBe(2 * unit * LEASE_HORIZON_MS);
    const slow = active(0.01, 100);
    expect(slow.b.target(slow.lease, 1e15, 100, false)).toBe(LEASE_MIN * unit);
  });

  test("never more than a sixteenth of the room; none when the room is below LEASE_FLOOR estimates", () => {
    const { b, lease } = active(5);
    const room = LEASE_FLOOR * unit * 2;
    expect(b.target(lease, room, 10, false)).toBe(Math.floor(room * LEASE_SHARE));
    expect(b.target(lease, LEASE_FLOOR * unit - 1, 11, false)).toBe(0);
  });

  test("an idle lease and a stopping process get none; the rate decays once admissions stop", () => {
    const { b, lease } = active(2);
    expect(b.target(lease, 1e15, 10, true)).toBe(0);
    expect(b.target(lease, 1e15, 10 + LEASE_IDLE_MS + 1, false)).toBe(0);
    expect(lease.rate).toBeLessThan(2 * unit);
    expect(lease.rate).toBeGreaterThan(0);
  });
});
