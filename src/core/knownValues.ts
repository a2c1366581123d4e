// Values a process has read from an external vault or a secret store (docs/guards.md#credential-leak-guard): the
// leak guard watches them like inline values. Keyed by reference, bounded, with a generation that changes whenever
// a value is new or changed, so a watch compiled before is compiled again. A value the guard needs but this
// process has not read (another gateway process of the instance used it) is asked for through `want`, once per
// reference at a time, and not again for RETRY_MS after a failed read.
const MAX = 4096;
const RETRY_MS = 5_000;

export class KnownValues {
  readonly #values = new Map<string, string>();
  readonly #pending = new Map<string, Promise<void>>();
  readonly #failedAt = new Map<string, number>();
  #generation = 0;
  /** Reads a reference (the resolver's `resolve`, which records the value here); null: nothing is read. */
  loader: ((ref: string) => Promise<unknown>) | null = null;

  get generation(): number {
    return this.#generation;
  }

  /** Records `ref`'s value; a known, unchanged value costs one lookup. */
  add(ref: string, value: string): void {
    if (this.#values.get(ref) === value) return;
    this.#values.delete(ref);
    this.#values.set(ref, value);
    if (this.#values.size > MAX) this.#values.delete(this.#values.keys().next().value!);
    this.#failedAt.delete(ref);
    this.#generation++;
  }

  get(ref: string): string | undefined {
    return this.#values.get(ref);
  }

  /** Reads the references not known yet; null when there is nothing to wait for (all known, or failed lately). */
  want(refs: readonly string[], now = Date.now()): Promise<void> | null {
    const loader = this.loader;
    if (loader === null) return null;
    let waits: Promise<void>[] | null = null;
    for (const ref of refs) {
      if (this.#values.has(ref)) continue;
      const failed = this.#failedAt.get(ref);
      if (failed !== undefined && now - failed < RETRY_MS) continue;
      let pending = this.#pending.get(ref);
      if (pending === undefined) {
        pending = loader(ref).then(
          () => this.#settled(ref),
          () => this.#settled(ref),
        );
        this.#pending.set(ref, pending);
      }
      (waits ??= []).push(pending);
    }
    return waits === null ? null : Promise.all(waits).then(() => {});
  }

  #settled(ref: string): void {
    this.#pending.delete(ref);
    if (!this.#values.has(ref)) this.#failedAt.set(ref, Date.now());
  }
}
