// Fixed-window rate-limit counters (CONTRACT §6.10), keyed by (scope, rule logicalId, agent). In memory:
// the embedded store serves one process, and counters survive republishes and token regeneration because
// neither changes the key. Old windows are dropped lazily.
import { rateWindow } from "../core/policy.ts";
import type { RateWindow } from "../store/schema.ts";

export class RateLimiter {
  readonly #counters = new Map<string, { index: number; count: number }>();

  /** Counts one request; `limited` when the count passes `limit` in the current window. */
  hit(key: string, limit: number, window: RateWindow, now = Date.now()): { limited: boolean; retryAfter: number } {
    const w = rateWindow(window, now);
    let c = this.#counters.get(key);
    if (!c || c.index !== w.index) {
      c = { index: w.index, count: 0 };
      this.#counters.set(key, c);
      if (this.#counters.size > 100_000) this.#sweep(now);
    }
    c.count += 1;
    return { limited: c.count > limit, retryAfter: w.retryAfter };
  }

  #sweep(now: number): void {
    const dayIndex = Math.floor(now / 86_400_000);
    for (const [key, c] of this.#counters) if (c.index < dayIndex) this.#counters.delete(key);
  }
}
