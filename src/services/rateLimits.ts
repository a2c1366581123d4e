// Rate-limit counters (docs/policy.md#rate-limits): fixed windows aligned to the epoch, keyed by (scope, rule logicalId,
// agent). One atomic upsert per counted request, in the store, so every process and instance on the database
// counts against the same row (a 3/hour rule admits exactly 3 across all of them). A store failure lets the
// request through (fail open, docs/policy.md#rate-limits). Counters survive republishes and token regeneration: neither changes
// the key.
import { lt, sql } from "drizzle-orm";
import { rateWindow, WINDOW_SECONDS } from "../core/policy.ts";
import type { PolicyScope, RateWindow } from "../core/model.ts";
import { log } from "../observability/log.ts";
import type { ServiceDeps } from "./deps.ts";

const PURGE_MS = 3600 * 1000;

export interface RateLimitHit {
  limited: boolean;
  /** Seconds until the window ends (at least 1). */
  retryAfter: number;
}

export class RateLimitService {
  #purgedAt = 0;

  constructor(private readonly deps: ServiceDeps) {}

  /** Counts one request; `limited` when the count passes `limit` in the current window. */
  async hit(key: { scope: PolicyScope; logicalId: string; agentId: string }, limit: number, window: RateWindow, now = Date.now()): Promise<RateLimitHit> {
    const w = rateWindow(window, now);
    const { rateLimitCounters: c } = this.deps.store.t;
    try {
      const [row] = await this.deps.store.db
        .insert(c)
        .values({ ...key, window, windowStart: w.index * WINDOW_SECONDS[window], count: 1 })
        .onConflictDoUpdate({ target: [c.scope, c.logicalId, c.agentId, c.window, c.windowStart], set: { count: sql`${c.count} + 1` } })
        .returning({ count: c.count });
      this.#purgeNow(now);
      return { limited: (row?.count ?? 0) > limit, retryAfter: w.retryAfter };
    } catch (err) {
      log.warn("rate-limit counter unavailable: request allowed", { error: (err as Error).message });
      return { limited: false, retryAfter: w.retryAfter };
    }
  }

  /** Windows older than a day are never read again. */
  #purgeNow(now: number): void {
    if (now - this.#purgedAt < PURGE_MS) return;
    this.#purgedAt = now;
    const { rateLimitCounters: c } = this.deps.store.t;
    const before = Math.floor(now / 1000) - 2 * WINDOW_SECONDS.day;
    this.deps.store.db
      .delete(c)
      .where(lt(c.windowStart, before))
      .catch((err: Error) => log.warn("rate-limit counters not purged", { error: err.message }));
  }
}
