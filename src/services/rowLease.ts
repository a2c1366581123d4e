// Work done once for every process and instance on a database (docs/operations.md#gateway-workers-and-caches): a
// process that finds the work still to do takes the lease of its `minted_tokens` row (a conditional write only one
// process can win), looks once more (the holder before it stored its result before letting go), does the work,
// stores the result and lets the lease go; the others look at the stored result until it is there or the lease is
// free again. A holder that dies keeps the lease until it lapses, then another process takes it. Minted tokens
// (mintLease.ts) and OAuth refreshes (oauth.ts, mcpAuth.ts) use it.
import { and, eq, isNull, lt, or } from "drizzle-orm";
import { nowIso, randomHex } from "../core/ids.ts";
import type { ServiceDeps } from "./deps.ts";

/**
 * How long a process may hold a lease; a crashed holder's lease lapses after it. Longer than any work done under it
 * (an outbound request gives up after 15 s).
 */
export const LEASE_MS = 30_000;
/** How often a process waiting on another's work looks again. */
const POLL_MS = 200;
/**
 * How long a caller looks for a stored result or a free lease: long enough for a crashed holder's lease to lapse.
 * Its own attempt may follow (a worker waits 60 s for its primary, docs/operations.md#gateway-workers-and-caches).
 */
const WAIT_MS = 35_000;

export interface LeasedWork<T> {
  /** The stored result, or undefined while the work is still to do. */
  stored(): Promise<T | undefined>;
  /** Does the work and stores its result; runs while the lease is held. */
  run(): Promise<T>;
  /**
   * `lease-only`: the row holds nothing but the lease and is deleted when it is let go. `shared`: the row holds
   * the result too (a minted token) and only its lease is cleared.
   */
  row: "lease-only" | "shared";
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The stored result, or the one this process's `run` produced under the lease of `key`; null when the wait ran out. */
export async function underLease<T>(deps: ServiceDeps, key: string, work: LeasedWork<T>): Promise<{ value: T } | null> {
  const t = deps.store.t.mintedTokens;
  const db = deps.store.db;
  // Unique per call: a lease is let go only by the call that took it.
  const owner = `${deps.instanceId}:${process.pid}:${randomHex(4)}`;
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const before = await work.stored();
    if (before !== undefined) return { value: before };
    const now = Date.now();
    const lease = { leaseOwner: owner, leaseUntil: now + LEASE_MS, updatedAt: nowIso() };
    const taken =
      (await db.insert(t).values({ key, tokenSealed: null, expiresAt: null, ...lease }).onConflictDoNothing().returning({ key: t.key })).length > 0 ||
      (await db.update(t).set(lease).where(and(eq(t.key, key), or(isNull(t.leaseUntil), lt(t.leaseUntil, now)))).returning({ key: t.key })).length > 0;
    if (!taken) {
      await sleep(POLL_MS);
      continue;
    }
    try {
      // The result may have been stored between the look above and the lease: its holder let go only after.
      const meanwhile = await work.stored();
      return { value: meanwhile !== undefined ? meanwhile : await work.run() };
    } finally {
      const mine = and(eq(t.key, key), eq(t.leaseOwner, owner));
      const release =
        work.row === "lease-only" ? db.delete(t).where(mine) : db.update(t).set({ leaseOwner: null, leaseUntil: null, updatedAt: nowIso() }).where(mine);
      // A lease not let go lapses on its own.
      await Promise.resolve(release).catch(() => {});
    }
  }
  return null;
}
