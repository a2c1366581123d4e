// A byte stream read through a NeedleSet (needles.ts), chunk by chunk: every needle found is handed to a handler,
// which puts other bytes in its place (placeholder substitution, echo redaction), leaves it (a value going where
// it belongs) or throws (a credential leaving for the wrong host). Only a tail that may be the start of a needle
// is held back between chunks (at most the longest needle − 1 bytes), so a needle split across chunks is found
// and everything else — an SSE event — goes on at once. A stream of messages (WebSocket) cannot hold a message's
// end back until the next one: `endMessage` hands it on but keeps it as context, matched against and never
// handed on again, so a needle completed by the next message is still found there, from where it continues;
// `aside` scans a unit that stands beside the stream (a control frame) against the same context. Pure.
import { NEED_MORE, NOT_FOUND, type NeedleSet } from "./needles.ts";

const NOTHING = new Uint8Array(0);

export interface NeedleHandler {
  /** The bytes to write instead of needle `index` where it was found; null leaves it as it is. May throw. */
  replacement(index: number): Uint8Array | null;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  return Buffer.concat([a, b]);
}

export class NeedleStream {
  #held: Uint8Array = NOTHING;
  /** How many of the held bytes were handed on already (a message's end kept as context): matched, never emitted. */
  #seen = 0;

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
    if (held.length === 0) return NOTHING;
    const out = this.#scan(held, true);
    this.#held = NOTHING;
    this.#seen = 0;
    return out;
  }

  /**
   * At the end of a message: what was held back, read as final and handed on — and kept as context for the next
   * message (only what may be the start of a needle was held: at most the longest needle − 1 bytes).
   */
  endMessage(): Uint8Array {
    const held = this.#held;
    if (held.length === 0) return NOTHING;
    const out = this.#scan(held, true);
    this.#held = held;
    this.#seen = held.length;
    return out;
  }

  /**
   * A whole unit beside the stream (a control frame's payload), read as final against the stream's context. Between
   * messages it continues the stream (its own end becomes the context); in the middle of a message, whose held
   * bytes are still to come, it is read after them and the stream stays as it was.
   */
  aside(unit: Uint8Array): Uint8Array {
    const held = this.#held;
    const seen = this.#seen;
    if (held.length === seen) return concat(this.push(unit), this.endMessage());
    this.#seen = held.length;
    const out = this.#scan(concat(held, unit), true);
    this.#held = held;
    this.#seen = seen;
    return out;
  }

  #scan(buf: Uint8Array, final: boolean): Uint8Array {
    const set = this.set;
    // The first `seen` bytes were handed on before: a needle that ends there was dealt with then; one that
    // starts there and runs on is replaced from where it continues.
    const seen = this.#seen;
    let parts: Uint8Array[] | null = null;
    let emitted = seen;
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
      if (end <= seen) {
        at = start + 1;
        continue;
      }
      const replacement = this.handler.replacement(index);
      if (replacement !== null) {
        (parts ??= []).push(buf.subarray(emitted, Math.max(start, seen)), replacement);
        emitted = end;
      }
      at = end;
    }
    // What may still be the start of a needle waits for the next chunk (copied: the chunk is not ours to keep).
    this.#held = keep === buf.length ? NOTHING : new Uint8Array(buf.subarray(keep));
    this.#seen = Math.max(0, seen - keep);
    if (parts === null) return seen === 0 && keep === buf.length ? buf : keep <= seen ? NOTHING : buf.subarray(seen, keep);
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
