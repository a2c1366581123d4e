// A gateway worker's side of the shared caches (docs/operations.md#gateway-workers-and-caches): a key the worker
// does not hold is asked of the primary over IPC, and the entry comes back with the primary's expiry. Questions
// are numbered; one that gets no answer (a primary gone or stuck) fails after a while, and the cache treats that
// as a failed load, kept by nobody.
import type { CacheRemote, Fresh } from "../core/sharedCache.ts";
import type { ToPrimary } from "./messages.ts";

/**
 * Longer than any load the primary makes: a vault lookup may take 15 s; a token refresh or mint waits up to 35 s
 * for another instance's lease to lapse, then makes its own attempt (docs/operations.md#gateway-workers-and-caches).
 */
const ANSWER_MS = 60_000;

export class PrimaryCaches implements CacheRemote {
  readonly #waiting = new Map<number, { resolve: (entry: Fresh<unknown>) => void; reject: (err: Error) => void; timer: Timer }>();
  #nextId = 0;

  constructor(private readonly tell: (message: ToPrimary) => void) {}

  ask(cache: string, key: string): Promise<Fresh<unknown>> {
    const id = ++this.#nextId;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.#settle(id, null, `the primary process did not answer within ${ANSWER_MS / 1000} s`), ANSWER_MS);
      this.#waiting.set(id, { resolve, reject, timer });
      this.tell({ type: "cache-get", id, cache, key });
    });
  }

  /** The primary's answer to question `id`. */
  answered(id: number, entry: Fresh<unknown> | null): void {
    this.#settle(id, entry, "the primary process has no such cache");
  }

  #settle(id: number, entry: Fresh<unknown> | null, why: string): void {
    const waiting = this.#waiting.get(id);
    if (!waiting) return;
    this.#waiting.delete(id);
    clearTimeout(waiting.timer);
    if (entry) waiting.resolve(entry);
    else waiting.reject(new Error(why));
  }
}
