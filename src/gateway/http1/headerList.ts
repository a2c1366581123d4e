// A request's outgoing header lines, edited by name (case-insensitively) the way a Headers object is, but
// kept as the agent sent them: each name in its own case, repeated fields as separate lines, in order. The
// gateway forwards most headers untouched and edits one or two, and building then iterating a Headers object
// for every request cost more than those edits (bench/README.md).
import { FORBIDDEN_IN_VALUE, isNamed, TOKEN, type HeaderLines } from "./head.ts";

/**
 * Refuses what Headers.set would refuse — the rules the head parser reads fields by — so that no edit can
 * break the head it is written into.
 */
function checked(name: string, value: string): [string, string] {
  if (!TOKEN.test(name)) throw new TypeError(`invalid header name: ${JSON.stringify(name)}`);
  if (FORBIDDEN_IN_VALUE.test(value)) throw new TypeError(`invalid value for header ${name}`);
  return [name, value];
}

export class HeaderList implements Iterable<[string, string]> {
  readonly #lines: HeaderLines;

  /** Takes `lines` over: the list edits that array in place. */
  constructor(lines: HeaderLines = []) {
    this.#lines = lines;
  }

  /** Every field of that name, joined with ", " as Headers.get does; null when there is none. */
  get(name: string): string | null {
    const lower = name.toLowerCase();
    let out: string | null = null;
    for (const [n, v] of this.#lines) if (isNamed(n, lower)) out = out === null ? v : `${out}, ${v}`;
    return out;
  }

  has(name: string): boolean {
    const lower = name.toLowerCase();
    return this.#lines.some(([n]) => isNamed(n, lower));
  }

  /** One field `name: value` where the first of that name was (or at the end); the others go. */
  set(name: string, value: string): void {
    const lower = name.toLowerCase();
    let kept = -1;
    for (let i = 0; i < this.#lines.length; i++) {
      if (!isNamed(this.#lines[i]![0], lower)) continue;
      if (kept === -1) {
        kept = i;
        this.#lines[i] = checked(name, value);
      } else this.#lines.splice(i--, 1);
    }
    if (kept === -1) this.#lines.push(checked(name, value));
  }

  delete(name: string): void {
    const lower = name.toLowerCase();
    for (let i = this.#lines.length - 1; i >= 0; i--) if (isNamed(this.#lines[i]![0], lower)) this.#lines.splice(i, 1);
  }

  [Symbol.iterator](): Iterator<[string, string]> {
    return this.#lines[Symbol.iterator]();
  }
}
