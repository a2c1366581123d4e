// The change bus: services announce writes, the gateway's snapshots listen and rebuild lazily.
// In-process for the embedded store; a shared database would carry the same events over LISTEN/NOTIFY.

export type ChangeEvent =
  | { kind: "agent"; projectId: string; agentId: string }
  | { kind: "secret"; scope: "project" | "organization" | "partner"; id: string }
  | { kind: "membership"; organizationId: string }
  | { kind: "policy"; organizationId: string }
  | { kind: "grant"; agentId: string }
  /** App connections, BYOC configs and blocklist entries of an organization or its projects. */
  | { kind: "app"; organizationId: string };

type Listener = (event: ChangeEvent) => void;

export class EventBus {
  readonly #listeners = new Set<Listener>();

  on(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(event: ChangeEvent): void {
    for (const l of this.#listeners) l(event);
  }
}
