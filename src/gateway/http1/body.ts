// The body of one HTTP/1.1 message, cut out of the byte stream by its framing: a Content-Length, chunked,
// or (responses only) everything until the connection closes.
import { ChunkedDecoder } from "./chunked.ts";
import { CHUNKED } from "./head.ts";

export const UNTIL_CLOSE = -2;

export class BodyFramer {
  readonly #chunked: ChunkedDecoder | null;
  #left: number;

  /** `framing`: a length, CHUNKED or UNTIL_CLOSE. */
  constructor(readonly framing: number) {
    this.#chunked = framing === CHUNKED ? new ChunkedDecoder() : null;
    this.#left = framing >= 0 ? framing : 0;
  }

  get failed(): boolean {
    return this.#chunked?.failed ?? false;
  }

  /** Bytes still expected for a Content-Length body. */
  get remaining(): number {
    return this.#left;
  }

  /** Feeds `buf[from…]`; returns the offset just past the body's end, or -1 while it continues. */
  feed(buf: Uint8Array, from: number, onData: (data: Uint8Array) => void): number {
    if (this.#chunked) return this.#chunked.decode(buf, from, onData);
    if (this.framing === UNTIL_CLOSE) {
      if (from < buf.length) onData(from === 0 ? buf : buf.subarray(from));
      return -1;
    }
    const n = Math.min(this.#left, buf.length - from);
    if (n > 0) onData(buf.subarray(from, from + n));
    this.#left -= n;
    return this.#left === 0 ? from + n : -1;
  }
}

const CRLF = Buffer.from("\r\n");
const LAST_CHUNK = Buffer.from("0\r\n\r\n");

/** One chunk of a chunked body, framed. */
export function chunk(data: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${data.byteLength.toString(16)}\r\n`, "latin1"), data, CRLF]);
}

export function lastChunk(): Buffer {
  return LAST_CHUNK;
}
