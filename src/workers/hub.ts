// The primary's side of the gateway workers (docs/configuration.md#server-settings `--gateway-workers`): N−1 more processes of this
// executable, each a gateway on the same port (SO_REUSEPORT: the kernel spreads connections), each with its
// own snapshot. Every change event this process sees — its own, another instance's, a worker's — goes to every
// worker (but the one it came from), numbered, and a worker says when it applied it: an API write is answered
// once all have (`settled`), so the next request sees it whichever process takes it. Whatever must be exact
// across processes (rate-limit counters, approvals, budget spend) lives in the store. What is fetched from
// elsewhere and cached (DNS answers, vault values, OAuth refreshes) the primary fetches, and workers ask it
// for (docs/operations.md#gateway-workers-and-caches). A worker that dies is started again; a worker whose
// primary dies stops.
import type { Subprocess } from "bun";
import type { SharedCaches } from "../core/sharedCache.ts";
import type { KnownValues } from "../core/knownValues.ts";
import type { EventBus, EventRelay, ChangeEvent } from "../events/bus.ts";
import { log } from "../observability/log.ts";
import type { MetricsJson } from "../observability/metrics.ts";
import type { ToPrimary, ToWorker } from "./messages.ts";

/** How long an API write waits for a worker to apply its events, and `/metrics` for a worker's numbers. */
const ANSWER_MS = 1000;
const START_MS = 20_000;
const RESTART_MS = 1000;

interface Worker {
  index: number;
  proc: Subprocess;
  /** Events sent to it, and the last one it applied. */
  sent: number;
  applied: number;
  waiting: Set<() => void>;
  ready: PromiseWithResolvers<void>;
}

export class GatewayWorkers implements EventRelay {
  readonly #workers = new Map<number, Worker>();
  readonly #metricsWaiting = new Map<number, (m: MetricsJson | null) => void>();
  #nextMetricsId = 0;
  /** The worker whose event is being passed on now (it has it already). */
  #origin: number | null = null;
  #stopping = false;

  private constructor(
    private readonly command: (index: number) => string[],
    private readonly bus: EventBus,
    private readonly caches: SharedCaches,
    /** The values the instance read from vaults and stores (this process reads them all): every worker learns them. */
    private readonly known: KnownValues | null,
  ) {}

  /**
   * Starts `count` workers and resolves once each listens on the gateway port. Changes made meanwhile (the API
   * already answers) are passed on from the first spawn: a starting worker applies them as soon as it listens for
   * messages, right after loading its snapshot (until then they wait in the IPC channel), instead of missing them.
   */
  static async start(count: number, command: (index: number) => string[], bus: EventBus, caches: SharedCaches, known: KnownValues | null = null): Promise<GatewayWorkers> {
    const hub = new GatewayWorkers(command, bus, caches, known);
    bus.attachRelay(hub);
    known?.onAdd((ref, value) => {
      for (const w of hub.#workers.values()) hub.#send(w, { type: "known-value", ref, value });
    });
    try {
      await Promise.all(Array.from({ length: count }, (_, i) => hub.#spawn(i + 1)));
    } catch (err) {
      await hub.stop(async () => {});
      throw err;
    }
    return hub;
  }

  get size(): number {
    return this.#workers.size;
  }

  relay(event: ChangeEvent): void {
    for (const w of this.#workers.values()) {
      if (w.index === this.#origin) continue;
      w.sent++;
      this.#send(w, { type: "event", seq: w.sent, event });
    }
  }

  async settled(): Promise<void> {
    await Promise.all(
      [...this.#workers.values()].map((w) => {
        const target = w.sent;
        if (w.applied >= target) return;
        return new Promise<void>((resolve) => {
          const timer = setTimeout(done, ANSWER_MS);
          function done() {
            clearTimeout(timer);
            w.waiting.delete(check);
            resolve();
          }
          const check = () => {
            if (w.applied >= target || !this.#workers.has(w.index)) done();
          };
          w.waiting.add(check);
        });
      }),
    );
  }

  /** Every worker's metrics (a worker that does not answer within a second is left out). */
  async metrics(): Promise<MetricsJson[]> {
    const answers = await Promise.all(
      [...this.#workers.values()].map(
        (w) =>
          new Promise<MetricsJson | null>((resolve) => {
            const id = ++this.#nextMetricsId;
            const timer = setTimeout(() => finish(null), ANSWER_MS);
            const finish = (m: MetricsJson | null) => {
              clearTimeout(timer);
              this.#metricsWaiting.delete(id);
              resolve(m);
            };
            this.#metricsWaiting.set(id, finish);
            this.#send(w, { type: "metrics", id });
          }),
      ),
    );
    return answers.filter((m): m is MetricsJson => m !== null);
  }

  /** Asks every worker to drain and stop; those still running when `drain` gives up are killed. */
  async stop(drain: (work: Promise<unknown>) => Promise<void>): Promise<void> {
    this.#stopping = true;
    const workers = [...this.#workers.values()];
    for (const w of workers) this.#send(w, { type: "stop" });
    await drain(Promise.all(workers.map((w) => w.proc.exited)));
    for (const w of workers) if (w.proc.exitCode === null) w.proc.kill("SIGKILL");
    await Promise.all(workers.map((w) => w.proc.exited));
  }

  #spawn(index: number): Promise<void> {
    const ready = Promise.withResolvers<void>();
    const proc = Bun.spawn(this.command(index), {
      stdin: "ignore",
      stdout: "inherit",
      stderr: "inherit",
      serialization: "json",
      ipc: (message: ToPrimary) => this.#onMessage(worker, message),
    });
    const worker: Worker = { index, proc, sent: 0, applied: 0, waiting: new Set(), ready };
    this.#workers.set(index, worker);
    // A worker started (again) later learns what was read before it (the messages wait in the pipe until it listens).
    if (this.known !== null) for (const [ref, value] of this.known.entries()) this.#send(worker, { type: "known-value", ref, value });
    void proc.exited.then((code) => this.#onExit(worker, code));
    const timer = setTimeout(() => ready.reject(new Error(`gateway worker ${index} did not start within ${START_MS / 1000} s`)), START_MS);
    return ready.promise.finally(() => clearTimeout(timer));
  }

  #onMessage(w: Worker, message: ToPrimary): void {
    switch (message.type) {
      case "ready":
        w.ready.resolve();
        return;
      case "applied":
        w.applied = Math.max(w.applied, message.seq);
        for (const check of [...w.waiting]) check();
        return;
      case "metrics":
        this.#metricsWaiting.get(message.id)?.(message.metrics);
        return;
      case "cache-get": {
        const answer = this.caches.answer(message.cache, message.key);
        if (!answer) return this.#send(w, { type: "cache-value", id: message.id, entry: null });
        void answer.then((entry) => this.#send(w, { type: "cache-value", id: message.id, entry }));
        return;
      }
      case "event":
        // Here (the primary's own listeners, other instances) and to the other workers.
        this.#origin = w.index;
        try {
          this.bus.emit(message.event);
        } finally {
          this.#origin = null;
        }
    }
  }

  #onExit(w: Worker, code: number): void {
    if (this.#workers.get(w.index) !== w) return;
    this.#workers.delete(w.index);
    for (const check of [...w.waiting]) check();
    w.ready.reject(new Error(`gateway worker ${w.index} exited with ${code} during start`));
    if (this.#stopping) return;
    log.error("gateway worker exited: starting it again", { worker: w.index, exitCode: code });
    setTimeout(() => {
      if (this.#stopping) return;
      this.#spawn(w.index).catch((err: Error) => log.error("gateway worker not started again", { worker: w.index, error: err.message }));
    }, RESTART_MS).unref();
  }

  #send(w: Worker, message: ToWorker): void {
    try {
      w.proc.send(message);
    } catch {
      // Gone: its exit is handled by #onExit.
    }
  }
}
