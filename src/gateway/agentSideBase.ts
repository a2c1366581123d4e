// What the agent's side of a request (AgentSide, agentSide.ts) shares whichever carrier brought it (an HTTP/1.1 connection or an HTTP/2
// stream, docs/gateway.md#pipeline): its Headers object and AbortSignal made only if something asks for them,
// and the news that the agent went away told once to whoever watches (a plain callback, no signal per request).
import type { GoneWatcher } from "./agentSide.ts";
import type { HeaderLines } from "./http1/head.ts";

export abstract class AgentSideBase {
  abstract readonly headerLines: HeaderLines;
  #headers: Headers | null = null;
  #controller: AbortController | null = null;
  #watchers: GoneWatcher[] | null = null;
  #gone = false;

  get headers(): Headers {
    // Both parsers refuse every value Headers would (NUL, CR, LF): this cannot throw.
    return (this.#headers ??= new Headers(this.headerLines));
  }

  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#gone) this.#controller.abort();
    }
    return this.#controller.signal;
  }

  get gone(): boolean {
    return this.#gone;
  }

  watchGone(watcher: GoneWatcher): void {
    (this.#watchers ??= []).push(watcher);
  }

  unwatchGone(watcher: GoneWatcher): void {
    const i = this.#watchers?.indexOf(watcher) ?? -1;
    if (i >= 0) this.#watchers!.splice(i, 1);
  }

  /** The agent went away: every watcher hears it once, and the signal (if one was made) aborts. */
  abandon(): void {
    if (this.#gone) return;
    this.#gone = true;
    const watchers = this.#watchers;
    this.#watchers = null;
    if (watchers) for (const w of watchers) w.agentGone();
    this.#controller?.abort();
  }
}
