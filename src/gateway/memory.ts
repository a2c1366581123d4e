// Full garbage collections at the moments that keep the gateway's memory in step with its load (issue 13
// item 5). Under load JSC collects the young generation often and the old one rarely; what dies there
// (request-log rows waiting for their batch, the objects of finished requests) holds native memory —
// ArrayBuffers, socket buffers — that the allocator gets back only after a full collection. Measured at 16k
// req/s: RSS climbed ~5 MB/s until one ran, the JS heap itself staying under 20 MB after it. So: a full
// collection when RSS has grown past where the last one left it (at most once a second, ~25 ms each), and
// one when the gateway goes quiet after work, so that an idle gateway returns to its idle size. 8 MB of
// growth rather than 24: the peak under the bench's 32-connection load is ~15 MB lower (174-177 → 159-161 MB)
// for the same CPU per request (A/B, two runs each), the collections being capped at one a second either way.

const CHECK_MS = 250;
/** RSS growth over the level after the last full collection that calls for the next one. */
const GROWTH_BYTES = 8 * 1024 * 1024;
const MIN_GAP_MS = 1000;
/** Without a request for this long, the gateway counts as idle. */
const QUIET_MS = 1000;

export class MemoryKeeper {
  #requests = 0;
  #seen = 0;
  #lastRequestAt = 0;
  #busy = false;
  #floor = process.memoryUsage.rss();
  #lastCollection = 0;
  readonly #timer: ReturnType<typeof setInterval>;

  constructor() {
    this.#timer = setInterval(() => this.#check(), CHECK_MS);
    this.#timer.unref();
  }

  /** Called once per request: a counter, nothing more, on the hot path. */
  noteRequest(): void {
    this.#requests++;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #check(): void {
    const now = performance.now();
    if (this.#requests !== this.#seen) {
      this.#seen = this.#requests;
      this.#lastRequestAt = now;
      this.#busy = true;
    }
    if (this.#busy && now - this.#lastRequestAt >= QUIET_MS) {
      this.#busy = false;
      return this.#collect(now);
    }
    if (now - this.#lastCollection >= MIN_GAP_MS && process.memoryUsage.rss() > this.#floor + GROWTH_BYTES) this.#collect(now);
  }

  #collect(now: number): void {
    Bun.gc(true);
    this.#lastCollection = now;
    this.#floor = process.memoryUsage.rss();
  }
}
