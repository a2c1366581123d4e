// The echo guard's scanner (docs/guards.md#echo-guard): replaces secret values in a byte stream as it passes, chunk by
// chunk. Only the tail that could still be the start of a value is held back (at most the longest value − 1
// bytes), so a value split across chunks is caught and everything else — an SSE event — goes on at once.

export const REDACTED = "credgate-redacted";
const MIN_LENGTH = 8;
const NOTHING = Buffer.alloc(0);
/** Shared by every scanner: only ever copied from (one per response would be a native allocation each). */
const REPLACEMENT = Buffer.from(REDACTED);

/** A value as it may appear in a response: raw, base64 (a Basic-auth pair) and percent-encoded. */
export function needlesFor(values: readonly string[]): string[] {
  const out = new Set<string>();
  for (const v of values) {
    for (const form of [v, Buffer.from(v).toString("base64"), encodeURIComponent(v)]) if (form.length >= MIN_LENGTH) out.add(form);
  }
  // Longest first, so a value that contains another is replaced whole.
  return [...out].sort((a, b) => b.length - a.length);
}

export function redactText(text: string, needles: string[]): string {
  let out = text;
  for (const n of needles) if (out.includes(n)) out = out.split(n).join(REDACTED);
  return out;
}

export class StreamRedactor {
  readonly #needles: readonly Buffer[];
  #held: Buffer = NOTHING;

  /** `needles` as bytes (kept, not copied: callers reuse one array for the same secrets). */
  constructor(needles: readonly Buffer[]) {
    this.#needles = needles;
  }

  /** The bytes that can go on now. */
  push(chunk: Uint8Array): Uint8Array {
    const buf = this.#held.length > 0 ? Buffer.concat([this.#held, chunk]) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const replaced = this.#replace(buf);
    const keep = this.#partialTail(replaced);
    this.#held = keep === 0 ? NOTHING : Buffer.from(replaced.subarray(replaced.length - keep));
    return keep === 0 ? replaced : replaced.subarray(0, replaced.length - keep);
  }

  /** What was held back, at the end of the body. */
  end(): Uint8Array {
    const rest = this.#held;
    this.#held = NOTHING;
    return rest;
  }

  #replace(buf: Buffer): Buffer {
    let out = buf;
    for (const n of this.#needles) {
      let at = out.indexOf(n);
      if (at < 0) continue;
      const parts: Buffer[] = [];
      let from = 0;
      while (at >= 0) {
        parts.push(out.subarray(from, at), REPLACEMENT);
        from = at + n.length;
        at = out.indexOf(n, from);
      }
      parts.push(out.subarray(from));
      out = Buffer.concat(parts);
    }
    return out;
  }

  /** Length of the longest tail of `buf` that is a proper prefix of some needle. */
  #partialTail(buf: Buffer): number {
    let best = 0;
    for (const n of this.#needles) {
      const max = Math.min(n.length - 1, buf.length);
      for (let len = max; len > best; len--) {
        if (buf[buf.length - len] === n[0] && buf.subarray(buf.length - len).equals(n.subarray(0, len))) {
          best = len;
          break;
        }
      }
    }
    return best;
  }
}
