// The tokens a process has minted or been given for the cloud identities (docs/guards.md#credential-leak-guard):
// the leak guard watches them like secret values. Bounded (the newest only: a token lives an hour), and with a
// generation that changes with every new token, so a watch compiled before it is compiled again.
export type TokenCloud = "gcp" | "azure";

const MAX = 64;

export class KnownTokens {
  readonly #tokens = new Map<string, TokenCloud>();
  #generation = 0;

  get generation(): number {
    return this.#generation;
  }

  add(token: string, cloud: TokenCloud): void {
    if (this.#tokens.has(token)) return;
    this.#tokens.set(token, cloud);
    if (this.#tokens.size > MAX) this.#tokens.delete(this.#tokens.keys().next().value!);
    this.#generation++;
  }

  entries(): IterableIterator<[string, TokenCloud]> {
    return this.#tokens.entries();
  }
}
