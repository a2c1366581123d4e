// Values a process has read from an external vault or a secret store (docs/guards.md#credential-leak-guard): the
// leak guard watches them like inline values once they are known. Keyed by reference, bounded, with a generation
// that changes whenever a value is new or changed, so a watch compiled before is compiled again.
const MAX = 4096;

export class KnownValues {
  readonly #values = new Map<string, string>();
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
  }

  get(ref: string): string | undefined {
    return this.#values.get(ref);
  }
}
