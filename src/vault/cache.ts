// A small per-key result cache with single flight, for external vault lookups: successes and failures
// are kept for different times, and concurrent lookups of one key share one in-flight load. `peek` is
// synchronous so the gateway's hot path stays await-free on a hit.

/** The outcome of one lookup. `reason` is a short code for logs, never a value. */
export type Lookup = { ok: true; value: string } | { ok: false; reason: string };

export interface LookupCacheOptions {
  successTtlMs: number;
  failureTtlMs: number;
  /** Clock in milliseconds (injectable for tests). */
  now?: () => number;
  /** Upper bound on cached keys; expired entries, then the oldest, are dropped beyond it. */
  maxEntries?: number;
}

export class LookupCache {
  readonly #entries = new Map<string, { result: Lookup; expires: number }>();
  readonly #inflight = new Map<string, Promise<Lookup>>();
  readonly #now: () => number;
  readonly #max: number;

  constructor(private readonly opts: LookupCacheOptions) {
    this.#now = opts.now ?? Date.now;
    this.#max = opts.maxEntries ?? 10_000;
  }

  /** The cached result for `key` while it is fresh, else undefined. */
  peek(key: string): Lookup | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (this.#now() < entry.expires) return entry.result;
    this.#entries.delete(key);
    return undefined;
  }

  /** The cached result, the in-flight load, or a new load (which must not reject; a rejection counts as a failure). */
  get(key: string, load: () => Promise<Lookup>): Promise<Lookup> {
    const hit = this.peek(key);
    if (hit !== undefined) return Promise.resolve(hit);
    const running = this.#inflight.get(key);
    if (running !== undefined) return running;
    const p = load()
      .catch((): Lookup => ({ ok: false, reason: "internal_error" }))
      .then((result) => {
        this.#store(key, result);
        this.#inflight.delete(key);
        return result;
      });
    this.#inflight.set(key, p);
    return p;
  }

  #store(key: string, result: Lookup): void {
    this.#entries.delete(key);
    this.#entries.set(key, { result, expires: this.#now() + (result.ok ? this.opts.successTtlMs : this.opts.failureTtlMs) });
    if (this.#entries.size <= this.#max) return;
    const now = this.#now();
    for (const [k, e] of this.#entries) if (e.expires <= now) this.#entries.delete(k);
    // Still full: drop the oldest insertions.
    for (const k of this.#entries.keys()) {
      if (this.#entries.size <= this.#max) break;
      this.#entries.delete(k);
    }
  }
}
