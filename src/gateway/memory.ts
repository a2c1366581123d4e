// Full garbage collections at the moments that keep the gateway's memory in step with its load. Under load JSC
// collects the young generation often and the old one rarely, and what dies in the old one (finished requests,
// log rows waiting for their batch) holds native memory that returns only after a full collection. So: a full
// collection when RSS has grown GROWTH_BYTES past where the last one left it (at most once a second), one when
// the gateway goes quiet after work, and then a shrink (compiled code and the allocator's free pages) so that an
// idle gateway returns to its idle size. Measurements behind the numbers: bench/README.md.

const CHECK_MS = 250;
/** RSS growth over the level after the last full collection that calls for the next one. */
const GROWTH_BYTES = 8 * 1024 * 1024;
const MIN_GAP_MS = 1000;
/** Without a request for this long, the gateway counts as idle. */
const QUIET_MS = 1000;

/** What the keeper reads and does: the process's own, or a test's. */
export interface MemoryControls {
  rss(): number;
  now(): number;
  /** A full, synchronous garbage collection. */
  collect(): void;
  /** Gives back compiled code and the allocator's free pages. */
  shrink(): void;
}

const processControls: MemoryControls = {
  rss: () => process.memoryUsage.rss(),
  now: () => performance.now(),
  collect: () => Bun.gc(true),
  shrink: () => Bun.shrink(),
};

export class MemoryKeeper {
  #requests = 0;
  #seen = 0;
  #lastRequestAt = 0;
  #busy = false;
  #floor: number;
  #lastCollection = 0;
  /** The lowest RSS a quiet collection has left: the gateway's idle size. */
  #idleLevel = Infinity;
  readonly #timer: ReturnType<typeof setInterval> | null;

  /** `checkEveryMs` 0: no timer, the caller calls check() (tests). */
  constructor(
    private readonly controls: MemoryControls = processControls,
    checkEveryMs = CHECK_MS,
  ) {
    this.#floor = controls.rss();
    this.#timer = checkEveryMs > 0 ? setInterval(() => this.check(), checkEveryMs) : null;
    this.#timer?.unref();
  }

  /** Called once per request: a counter, nothing more, on the hot path. */
  noteRequest(): void {
    this.#requests++;
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  check(): void {
    const now = this.controls.now();
    if (this.#requests !== this.#seen) {
      this.#seen = this.#requests;
      this.#lastRequestAt = now;
      this.#busy = true;
    }
    if (this.#busy && now - this.#lastRequestAt >= QUIET_MS) {
      this.#busy = false;
      this.#collect(now);
      // A load that left memory behind after the collection (the code compiled for it, pages the allocator
      // keeps) is handed back too. Not after light traffic: the discarded code is compiled again, which costs
      // the next request ~2 ms.
      if (this.#floor > this.#idleLevel + GROWTH_BYTES) {
        this.controls.shrink();
        this.#floor = this.controls.rss();
      }
      this.#idleLevel = Math.min(this.#idleLevel, this.#floor);
      return;
    }
    if (now - this.#lastCollection >= MIN_GAP_MS && this.controls.rss() > this.#floor + GROWTH_BYTES) this.#collect(now);
  }

  #collect(now: number): void {
    this.controls.collect();
    this.#lastCollection = now;
    this.#floor = this.controls.rss();
  }
}
