// One mint for every instance on a database (docs/operations.md#gateway-workers-and-caches): a minted token is
// kept, sealed, in its `minted_tokens` row with its expiry; a process that finds it stale mints under the row's
// lease (rowLease.ts) and writes the token back; the others look at the row until it is fresh. The GitHub App
// tokens (githubApps.ts) and the cloud identities (cloudTokens.ts) use it.
import { eq } from "drizzle-orm";
import { nowIso } from "../core/ids.ts";
import { clockNow } from "../runtime/clock.ts";
import type { ServiceDeps } from "./deps.ts";
import { underLease } from "./rowLease.ts";

/** A token is used until this long before its expiry. */
export const EXPIRY_MARGIN_MS = 5 * 60 * 1000;
/** A failed mint is not retried for this long (every request meanwhile gets 502 at once rather than another mint). */
export const FAILURE_TTL_MS = 5_000;

export type Minted = { ok: true; token: string; expiresAt: number } | { ok: false; reason: string };
export type TokenOutcome = { ok: true; token: string } | { ok: false; reason: string };
type Kept = { value: TokenOutcome; ttlMs: number };

/**
 * The token under `rowKey`: the stored one while it has more than the margin left, else minted by `mint` under
 * the row's lease (once for every process and instance). `ttlMs` is how long this process may keep it: 0 for a
 * token with under the margin left (used for the request, not kept) or one never minted.
 */
export async function leasedToken(deps: ServiceDeps, rowKey: string, mint: () => Promise<Minted>): Promise<Kept> {
  const t = deps.store.t.mintedTokens;
  const db = deps.store.db;
  const outcome = await underLease<Kept>(deps, rowKey, {
    row: "shared",
    async stored() {
      const [row] = await db.select().from(t).where(eq(t.key, rowKey)).limit(1);
      const fresh = row?.tokenSealed && row.expiresAt !== null ? row.expiresAt - EXPIRY_MARGIN_MS - clockNow() : 0;
      return row?.tokenSealed && fresh > 0 ? { value: { ok: true, token: deps.sealer.open(row.tokenSealed) }, ttlMs: fresh } : undefined;
    },
    async run() {
      const minted = await mint();
      // A failure is not stored: the next process to look mints again.
      if (!minted.ok) return { value: { ok: false, reason: minted.reason }, ttlMs: FAILURE_TTL_MS };
      await db.update(t).set({ tokenSealed: deps.sealer.seal(minted.token), expiresAt: minted.expiresAt, updatedAt: nowIso() }).where(eq(t.key, rowKey));
      return { value: { ok: true, token: minted.token }, ttlMs: Math.max(0, minted.expiresAt - EXPIRY_MARGIN_MS - clockNow()) };
    },
  });
  return outcome?.value ?? { value: { ok: false, reason: "timed out waiting for another instance to mint the token" }, ttlMs: 0 };
}
