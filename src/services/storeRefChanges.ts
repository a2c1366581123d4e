// When a secret stops using a store reference (docs/injection.md#changing-the-source): deleted, or its storeRef
// changed — on this instance or another (the change events cross instances). What holds something per secret and
// reference (a vault-db:// lease, vaultstore's broker hook) calls `track` when it takes it, and `onReleased` tells it
// to give it back. One store read per secret event about a tracked secret; nothing on the hot path.
import { log } from "../observability/log.ts";
import type { ChangeEvent } from "../events/bus.ts";

export type ReleasedListener = (secretId: string, storeRef: string) => void | Promise<void>;

export interface StoreRefSource {
  /** The secret's current storeRef (null when it has none), or undefined when it no longer exists. */
  storeRefOf(secretId: string): Promise<string | null | undefined>;
  on(listener: (event: ChangeEvent) => void): () => void;
}

export class StoreRefChanges {
  readonly #tracked = new Map<string, string>();
  readonly #listeners = new Set<ReleasedListener>();

  constructor(private readonly source: StoreRefSource) {
    source.on((event) => {
      if (event.kind === "secret" && this.#tracked.has(event.id)) void this.#check(event.id);
      else if (event.kind === "reload") for (const id of [...this.#tracked.keys()]) void this.#check(id);
    });
  }

  /** `secretId` holds something for `storeRef` now: tell the listeners when it stops using it. */
  track(secretId: string, storeRef: string): void {
    this.#tracked.set(secretId, storeRef);
  }

  /** Stops watching (what was held was given back another way). */
  untrack(secretId: string): void {
    this.#tracked.delete(secretId);
  }

  onReleased(listener: ReleasedListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async #check(secretId: string): Promise<void> {
    const was = this.#tracked.get(secretId);
    if (was === undefined) return;
    let now: string | null | undefined;
    try {
      now = await this.source.storeRefOf(secretId);
    } catch (err) {
      log.warn("secret store reference not checked after a change", { secretId, error: (err as Error).message });
      return;
    }
    if (now === was || this.#tracked.get(secretId) !== was) return;
    this.#tracked.delete(secretId);
    for (const listener of this.#listeners) {
      try {
        await listener(secretId, was);
      } catch (err) {
        log.warn("releasing what a secret held in its store failed", { secretId, storeRef: was, error: (err as Error).message });
      }
    }
  }
}
