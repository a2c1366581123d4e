// A header block arriving in pieces (RFC 9113 §6.10): a HEADERS frame without END_HEADERS, then CONTINUATION frames
// on the same stream with nothing between them. More than MAX_CONTINUATIONS is a CONTINUATION flood
// (docs/gateway.md#http2-and-grpc); the session then ends with ENHANCE_YOUR_CALM.
const MAX_CONTINUATIONS = 32;

export class PendingHeaderBlock {
  /** The stream whose block is in progress; 0 when none is (HEADERS never comes on stream 0). */
  stream = 0;
  /** Whether END_STREAM came with the HEADERS frame. */
  endStream = false;
  readonly #parts: Buffer[] = [];
  #continuations = 0;

  /** A HEADERS frame without END_HEADERS: its fragment is copied (the bytes read are not kept). */
  begin(stream: number, fragment: Buffer, endStream: boolean): void {
    this.stream = stream;
    this.endStream = endStream;
    this.#parts.length = 0;
    this.#parts.push(Buffer.from(fragment));
    this.#continuations = 0;
  }

  /** A CONTINUATION's fragment; false when it is one too many. */
  add(fragment: Buffer): boolean {
    if (++this.#continuations > MAX_CONTINUATIONS) return false;
    this.#parts.push(Buffer.from(fragment));
    return true;
  }

  /** The whole block (END_HEADERS came); none is in progress after. */
  take(): Buffer {
    const block = Buffer.concat(this.#parts);
    this.clear();
    return block;
  }

  clear(): void {
    this.stream = 0;
    this.#parts.length = 0;
  }
}
