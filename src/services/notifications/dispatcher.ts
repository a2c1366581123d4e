// Sends queued deliveries off every request path (docs/policy.md#notifications): a pass claims what is due,
// starts each attempt without waiting for it, and sets a timer for the next retry. A pass runs when a delivery
// is queued anywhere (the `delivery` change event, from this process, a gateway worker or another instance), when
// a retry falls due, and every few seconds in case an event was missed. A slow or unreachable channel costs one
// of a bounded number of attempts in flight, never the gateway.
import { log } from "../../observability/log.ts";
import type { NotificationDeliveryRow } from "../../store/rows.ts";
import type { DeliveryQueue } from "./deliveries.ts";

/** Attempts in flight at once in this process. */
const MAX_IN_FLIGHT = 16;
/** A pass at least this often: events from other instances may be lost, and leases of dead senders expire. */
const SWEEP_MS = 10_000;

export class DeliveryDispatcher {
  readonly #inFlight = new Set<Promise<void>>();
  #pass: Promise<void> | null = null;
  #again = false;
  #stopped = true;
  #timer: Timer | null = null;
  #timerAt = Infinity;
  #sweep: Timer | null = null;

  constructor(
    private readonly queue: DeliveryQueue,
    /** This process's name on the leases it takes. */
    private readonly owner: string,
    /** One attempt of a claimed delivery, recording its outcome; the time of its retry, if any. Never rejects. */
    private readonly attempt: (row: NotificationDeliveryRow) => Promise<number | null>,
  ) {}

  start(): void {
    this.#stopped = false;
    this.#sweep = setInterval(() => this.wake(), SWEEP_MS);
    this.wake();
  }

  /** Stops claiming; attempts in flight finish (each is bounded by its time limit). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#sweep) clearInterval(this.#sweep);
    if (this.#timer) clearTimeout(this.#timer);
    this.#sweep = this.#timer = null;
    await this.#pass;
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Runs a pass now (or right after the one running). */
  wake(): void {
    if (this.#stopped) return;
    if (this.#pass) {
      this.#again = true;
      return;
    }
    this.#pass = this.#run()
      .catch((err: Error) => log.warn("notification deliveries not claimed, retrying", { error: err.message }))
      .finally(() => {
        this.#pass = null;
        if (this.#again) {
          this.#again = false;
          this.wake();
        }
      });
  }

  async #run(): Promise<void> {
    const room = MAX_IN_FLIGHT - this.#inFlight.size;
    // Full: each attempt that ends runs another pass.
    if (room <= 0) return;
    const rows = await this.queue.claim(room, this.owner);
    for (const row of rows) this.#start(row);
    // A full batch: more may be due.
    if (rows.length === room) {
      this.#again = true;
      return;
    }
    const next = await this.queue.nextDue();
    if (next !== null) this.#schedule(next);
  }

  #start(row: NotificationDeliveryRow): void {
    const work = this.attempt(row).then((retryAt) => {
      if (retryAt !== null) this.#schedule(retryAt);
    });
    this.#inFlight.add(work);
    void work.finally(() => {
      this.#inFlight.delete(work);
      this.wake();
    });
  }

  #schedule(at: number): void {
    if (this.#stopped || at >= this.#timerAt) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#timerAt = Infinity;
      this.wake();
    }, Math.max(0, at - Date.now()));
  }
}
