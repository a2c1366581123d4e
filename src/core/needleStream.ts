// A byte stream read through a NeedleSet (needles.ts), chunk by chunk: every needle found is handed to a handler,
// which puts other bytes in its place (placeholder substitution, echo redaction), leaves it (a value going where
// it belongs) or throws (a credential leaving for the wrong host). Only a tail that may be the start of a needle
// is held back between chunks (at most the longest needle − 1 bytes), so a needle split across chunks is found
// and everything else — an SSE event — goes on at once. Pure.
import { NEED_MORE, NOT_FOUND, type NeedleSet } from "./needles.ts";

const NOTHING = new Uint8Array(0);

export interface NeedleHandler {
  /** The bytes to write instead of needle `index` where it was found; null leaves it as it is. May throw. */
  replacement(index: number): Uint8Array | null;
}

export class NeedleStream {
  #held: Uint8Array = NOTHING;

  constructor(
    readonly set: NeedleSet,
    private readonly handler: NeedleHandler,
  ) {}

  /** The bytes that can go on now (the chunk itself when nothing was found or held). */
  push(chunk: Uint8Array): Uint8Array {
    const held = this.#held;
    const buf = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
    return this.#scan(buf, false);
  }

  /** At the end of the stream: what was held back, read as final. */
  end(): Uint8Array {
    const held = this.#held;
    this.#held = NOTHING;
    return held.length === 0 ? NOTHING : this.#scan(held, true);
  }

  #scan(buf: Uint8Array, final: boolean): Uint8Array {
    const set = this.set;
    let parts: Uint8Array[] | null = null;
    let emitted = 0;
    let at = 0;
    let keep = buf.length;
    for (;;) {
      const start = set.find(buf, at, buf.length, final);
      if (start === NOT_FOUND) break;
      if (start === NEED_MORE) {
        keep = set.lastNeedle;
        break;
      }
      const index = set.lastNeedle;
      const end = start + set.needles[index]!.length;
      const replacement = this.handler.replacement(index);
      if (replacement !== null) {
        (parts ??= []).push(buf.subarray(emitted, start), replacement);
        emitted = end;
      }
      at = end;
    }
    // What may still be the start of a needle waits for the next chunk (copied: the chunk is not ours to keep).
    this.#held = keep === buf.length ? NOTHING : new Uint8Array(buf.subarray(keep));
    if (parts === null) return keep === buf.length ? buf : buf.subarray(0, keep);
    if (keep > emitted) parts.push(buf.subarray(emitted, keep));
    return Buffer.concat(parts);
  }
}

/** Every needle in a string of byte-valued characters (a header value) replaced by `replacement(index)` (null: kept). */
export function replaceInString(text: string, set: NeedleSet, replacement: (index: number) => string | null): string {
  let out: string | null = null;
  let emitted = 0;
  let at = 0;
  for (;;) {
    const start = set.findInString(text, at);
    if (start < 0) break;
    const index = set.lastNeedle;
    const end = start + set.needles[index]!.length;
    const r = replacement(index);
    if (r !== null) {
      out = (out ?? "") + text.slice(emitted, start) + r;
      emitted = end;
    }
    at = end;
  }
  return out === null ? text : out + text.slice(emitted);
}
