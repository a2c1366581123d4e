// The change bus: services announce committed writes; the gateway's snapshots (and long-polls, held
// approvals) listen. Events are delivered in this process once the write commits, and carried to other
// processes by transports: LISTEN/NOTIFY between instances on PostgreSQL (transports/ may add more, e.g.
// IPC to gateway workers). Payloads are small: kinds and ids, never values.

export type ChangeEvent =
  | { kind: "agent"; projectId: string; agentId: string }
  | { kind: "secret"; scope: "project" | "organization" | "partner"; id: string }
  | { kind: "membership"; organizationId: string }
  /** An organization's partner state (claimed, claim link, detached) changed, or it was deleted. */
  | { kind: "organization"; organizationId: string }
  | { kind: "policy"; organizationId: string }
  | { kind: "grant"; agentId: string }
  /** App connections, BYOC configs and blocklist entries of an organization or its projects. */
  | { kind: "app"; organizationId: string }
  /** A spend budget of an organization was set or removed. */
  | { kind: "budget"; organizationId: string }
  /** An approval was created or left `pending`. */
  | { kind: "approval"; id: string; projectId: string; organizationId: string }
  /** Notification deliveries were queued: the sending process looks for work (docs/policy.md#notifications). */
  | { kind: "delivery" }
  /** A remembered approval was made (`expiresAt`) or ended (`expiresAt: null`) (docs/policy.md#remembered-approvals). */
  | { kind: "remembered"; agentId: string; ruleId: string; expiresAt: string | null }
  /** Events may have been missed (a transport reconnected): drop every cached view. */
  | { kind: "reload" };

type Listener = (event: ChangeEvent) => void;

/** Carries events to and from other processes. */
export interface EventTransport {
  publish(event: ChangeEvent): void;
  stop(): Promise<void>;
}

/**
 * Carries every event this process sees — its own and those of other instances — on to the processes behind
 * it (gateway workers), and knows when they have applied them.
 */
export interface EventRelay {
  relay(event: ChangeEvent): void;
  /** Resolves once every event relayed so far has been applied behind the relay (or they stopped answering). */
  settled(): Promise<void>;
}

export class EventBus {
  readonly #listeners = new Set<Listener>();
  readonly #transports: EventTransport[] = [];
  readonly #relays: EventRelay[] = [];

  /** `defer` holds an event back until the surrounding transaction commits (Store.afterCommit). */
  constructor(private readonly defer: (fn: () => void) => void = (fn) => fn()) {}

  on(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Announces a write: to this process's listeners and every other process, once it has committed. */
  emit(event: ChangeEvent): void {
    this.defer(() => {
      this.deliver(event);
      for (const t of this.#transports) t.publish(event);
    });
  }

  /** An event from another process: this process's listeners (and the processes behind it) only. */
  deliver(event: ChangeEvent): void {
    for (const r of this.#relays) r.relay(event);
    for (const l of this.#listeners) {
      try {
        l(event);
      } catch {
        // A listener's failure must not stop the others (each logs its own errors).
      }
    }
  }

  attach(transport: EventTransport): void {
    this.#transports.push(transport);
  }

  attachRelay(relay: EventRelay): void {
    this.#relays.push(relay);
  }

  /**
   * Resolves once every event seen so far has been applied behind the relays (gateway workers): an API write
   * answered after this is seen by the next request, whichever worker takes it.
   */
  async settled(): Promise<void> {
    await Promise.all(this.#relays.map((r) => r.settled()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.#transports.splice(0).map((t) => t.stop()));
  }
}
