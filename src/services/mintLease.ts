// One mint for every instance on a database (docs/operations.md#gateway-workers-and-caches): a minted token is
// kept, sealed, in its `minted_tokens` row with its expiry; a process that finds it stale takes the row's lease
// (a conditional write only one process can win), mints, and writes the token back; the others poll the row
// until it is fresh. The GitHub App tokens (githubApps.ts) and the cloud identities (cloudTokens.ts) use it.
import { and, eq, isNull, lt, or } from "drizzle-orm";
import { nowIso } from "../core/ids.ts";
import { clockNow } from "../runtime/clock.ts";
import type { ServiceDeps } from "./deps.ts";

/** A token is used until this long before its expiry. */
export const EXPIRY_MARGIN_MS = 5 * 60 * 1000;
/** How long a process may hold the mint lease; a crashed minter's lease lapses after it. */
const LEASE_MS = 30_000;
/** How often a process waiting on another's mint looks at the row again. */
const POLL_MS = 200;
/** A failed mint is not retried for this long (every request meanwhile gets 502 at once rather than another mint). */
export const FAILURE_TTL_MS = 5_000;
/** How long a caller waits in all (another instance minting, then its own attempt). */
const WAIT_MS = 45_000;

export type Minted = { ok: true; token: string; expiresAt: number } | { ok: false; reason: string };
export type TokenOutcome = { ok: true; token: string } | { ok: false; reason: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The token under `rowKey`: the stored one while it has more than the margin left, else minted by `mint` under
 * the row's lease (once for every process and instance). `ttlMs` is how long this process may keep it: 0 for a
 * token with under the margin left (used for the request, not kept) or one never minted.
 */
export async function leasedToken(deps: ServiceDeps, rowKey: string, mint: () => Promise<Minted>): Promise<{ value: TokenOutcome; ttlMs: number }> {
  const t = deps.store.t.mintedTokens;
  const db = deps.store.db;
  const owner = `${deps.instanceId}:${process.pid}`;
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const [row] = await db.select().from(t).where(eq(t.key, rowKey)).limit(1);
    const fresh = row?.tokenSealed && row.expiresAt !== null ? row.expiresAt - EXPIRY_MARGIN_MS - clockNow() : 0;
    if (row?.tokenSealed && fresh > 0) return { value: { ok: true, token: deps.sealer.open(row.tokenSealed) }, ttlMs: fresh };
    const now = Date.now();
    const lease = { leaseOwner: owner, leaseUntil: now + LEASE_MS, updatedAt: nowIso() };
    // Taken only while nobody holds it and the token is still stale: a process that read the row just before another
    // wrote a fresh token (and let the lease go) must not mint a second one.
    const stale = or(isNull(t.expiresAt), lt(t.expiresAt, clockNow() + EXPIRY_MARGIN_MS));
    const taken = row
      ? (await db.update(t).set(lease).where(and(eq(t.key, rowKey), or(isNull(t.leaseUntil), lt(t.leaseUntil, now)), stale)).returning({ key: t.key })).length > 0
      : (await db.insert(t).values({ key: rowKey, tokenSealed: null, expiresAt: null, ...lease }).onConflictDoNothing().returning({ key: t.key })).length > 0;
    if (!taken) {
      await sleep(POLL_MS);
      continue;
    }
    const minted = await mint();
    if (!minted.ok) {
      await db.update(t).set({ leaseOwner: null, leaseUntil: null, updatedAt: nowIso() }).where(and(eq(t.key, rowKey), eq(t.leaseOwner, owner)));
      return { value: { ok: false, reason: minted.reason }, ttlMs: FAILURE_TTL_MS };
    }
    await db
      .update(t)
      .set({ tokenSealed: deps.sealer.seal(minted.token), expiresAt: minted.expiresAt, leaseOwner: null, leaseUntil: null, updatedAt: nowIso() })
      .where(eq(t.key, rowKey));
    return { value: { ok: true, token: minted.token }, ttlMs: Math.max(0, minted.expiresAt - EXPIRY_MARGIN_MS - clockNow()) };
  }
  return { value: { ok: false, reason: "timed out waiting for another instance to mint the token" }, ttlMs: 0 };
}
