// Values read from an external vault or a secret store (docs/guards.md#credential-leak-guard): the leak guard
// watches them like inline values. Keyed by reference, bounded, with a generation that changes whenever a value is
// new or changed, so a watch compiled before is compiled again. Every read of an instance happens in its primary
// process (the shared cache loads there), which passes each new value on to its gateway workers (`onAdd`, over
// the IPC pipe): whichever process an agent's connection lands on knows every value any process has read.
const MAX = 4096;

export type KnownValueListener = (ref: string, value: string) => void;

export class KnownValues {
  readonly #values = new Map<string, string>();
  readonly #listeners = new Set<KnownValueListener>();
  #generation = 0;

  get generation(): number {
    return this.#generation;
  }

  /** Records `ref`'s value; a known, unchanged value costs one lookup. */
  add(ref: string, value: string): void {
    if (this.#values.get(ref) === value) return;
    this.#values.delete(ref);
    this.#values.set(ref, value);
    if (this.#values.size > MAX) this.#values.delete(this.#values.keys().next().value!);
    this.#generation++;
    for (const listener of this.#listeners) listener(ref, value);
  }

  get(ref: string): string | undefined {
    return this.#values.get(ref);
  }

  entries(): IterableIterator<[string, string]> {
    return this.#values.entries();
  }

  /** Called with every new or changed value from now on. */
  onAdd(listener: KnownValueListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
