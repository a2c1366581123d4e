// Idle tunnels (docs/gateway.md#tunnels): an intercepted tunnel with no request in flight and no bytes for
// CREDGATE_TUNNEL_IDLE_SECONDS (120 s) is closed, a passthrough tunnel after CREDGATE_PASSTHROUGH_IDLE_SECONDS
// (600 s) without bytes. One timer sweeps them all: whoever moves bytes only sets a flag (no timer is made,
// reset or cleared per request or per chunk), and the sweep counts the sweeps in a row that found it unset.
// A tunnel is closed between its idle time and two sweep intervals (a sixteenth of the shortest each) later.

/** What the sweep watches: a tunnel's connection, or a raw pipe. */
export interface Idle {
  /** Set by whoever moves bytes; cleared by the sweep. */
  active: boolean;
  /** Something is in flight: the tunnel is not idle, whatever the bytes say. */
  readonly busy: boolean;
  closeIdle(): void;
}

/** One watched tunnel: its idle limit in sweeps, and the sweeps in a row that found it idle. */
export interface IdleEntry {
  readonly item: Idle;
  readonly limit: number;
  sweeps: number;
}

export class IdleSweeper {
  readonly #entries = new Set<IdleEntry>();
  readonly #everyMs: number;
  #timer: ReturnType<typeof setInterval> | null = null;

  /** `shortestMs`: the shortest idle time it will be asked to watch for. */
  constructor(shortestMs: number) {
    this.#everyMs = Math.max(25, Math.floor(shortestMs / 16));
  }

  /** Closes `item` once it has been idle for `idleMs`; `forget` the entry when it closes on its own. */
  watch(item: Idle, idleMs: number): IdleEntry {
    // The first sweep that finds it idle may come right after its last byte: one more than the time needs.
    const entry: IdleEntry = { item, limit: Math.ceil(idleMs / this.#everyMs) + 1, sweeps: 0 };
    this.#entries.add(entry);
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#sweep(), this.#everyMs);
      this.#timer.unref();
    }
    return entry;
  }

  forget(entry: IdleEntry): void {
    this.#entries.delete(entry);
    if (this.#entries.size === 0) this.stop();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  get watching(): number {
    return this.#entries.size;
  }

  #sweep(): void {
    for (const entry of this.#entries) {
      const item = entry.item;
      if (item.active || item.busy) {
        item.active = false;
        entry.sweeps = 0;
      } else if (++entry.sweeps >= entry.limit) {
        this.#entries.delete(entry);
        item.closeIdle();
      }
    }
    if (this.#entries.size === 0) this.stop();
  }
}
