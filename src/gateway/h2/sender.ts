// The send side of an HTTP/2 session (docs/gateway.md#http2-and-grpc): header blocks, and DATA cut to what the
// stream's window, the connection's window and the peer's frame size allow. What does not fit waits per stream,
// and the waiting streams go on, oldest first, when a window opens or the socket drains.
import * as f from "./frames.ts";
import type { HeaderField, HpackEncoder } from "./hpack.ts";
import type { H2Stream, StreamSender } from "./stream.ts";

/** Where the session's bytes go: the agent's socket or the origin's connection, batched per turn. */
export interface H2Transport {
  write(data: Uint8Array): void;
  readonly needsDrain: boolean;
  end(): void;
  destroy(): void;
}

/** A send queue past this many bytes tells its writer to wait. */
const STREAM_HIGH_WATER = 64 * 1024;

export class Sender implements StreamSender {
  /** The connection's send window (the peer's receive window for all streams together). */
  connWindow = f.DEFAULT_WINDOW;
  /** The peer's SETTINGS_MAX_FRAME_SIZE. */
  maxFrame = f.DEFAULT_MAX_FRAME;
  /** Streams with bytes waiting for a window or the socket, in the order they started waiting. */
  readonly #blocked = new Set<H2Stream>();

  constructor(
    private readonly transport: H2Transport,
    private readonly encoder: HpackEncoder,
    /** A stream has sent its last frame (END_STREAM): the session closes it if the peer is done too. */
    private readonly localEnded: (stream: H2Stream) => void,
  ) {}

  headers(stream: H2Stream, fields: Iterable<HeaderField>, endStream: boolean): void {
    if (stream.closed || stream.localEnded) return;
    this.#writeHeaders(stream.id, this.encoder.encode(fields), endStream);
    if (endStream) {
      stream.localEnded = true;
      this.localEnded(stream);
    }
  }

  /** Queues a chunk; false when the writer should wait for `writable`. */
  data(stream: H2Stream, chunk: Uint8Array, endStream: boolean): boolean {
    if (stream.closed || stream.localEnded || stream.ending) return false;
    if (chunk.byteLength > 0) {
      stream.queue.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      stream.queuedBytes += chunk.byteLength;
    }
    if (endStream) stream.ending = true;
    this.pump(stream);
    if (stream.closed || stream.localEnded) return !stream.closed;
    if (stream.queuedBytes < STREAM_HIGH_WATER && !this.transport.needsDrain) return true;
    stream.waiting = true;
    // Nothing queued, the socket full: the stream waits for its drain with the others.
    this.#blocked.add(stream);
    return false;
  }

  end(stream: H2Stream, trailers: HeaderField[] | null): void {
    if (stream.closed || stream.localEnded || stream.ending) return;
    stream.ending = true;
    stream.trailers = trailers;
    this.pump(stream);
  }

  /** A header block: one HEADERS frame (its 9-byte header, then the block as it is), or HEADERS + CONTINUATIONs. */
  #writeHeaders(id: number, block: Buffer, endStream: boolean): void {
    if (block.length > this.maxFrame) return this.transport.write(f.headerFrames(id, block, endStream, this.maxFrame));
    this.transport.write(f.frameHeader(block.length, f.HEADERS, (endStream ? f.END_STREAM : 0) | f.END_HEADERS, id));
    this.transport.write(block);
  }

  /** Sends what the stream's windows and the socket allow; tells the writer once its queue is empty. */
  pump(stream: H2Stream): void {
    if (stream.closed) return;
    const queue = stream.queue;
    while (queue.length > 0) {
      if (this.transport.needsDrain) return void this.#blocked.add(stream);
      const chunk = queue[0]!;
      const n = Math.min(chunk.length, stream.sendWindow, this.connWindow, this.maxFrame);
      if (n <= 0) return void this.#blocked.add(stream);
      const last = n === chunk.length && queue.length === 1 && stream.ending && stream.trailers === null;
      this.transport.write(f.frameHeader(n, f.DATA, last ? f.END_STREAM : 0, stream.id));
      this.transport.write(n === chunk.length ? chunk : chunk.subarray(0, n));
      if (n === chunk.length) queue.shift();
      else queue[0] = chunk.subarray(n);
      stream.queuedBytes -= n;
      stream.sendWindow -= n;
      this.connWindow -= n;
      if (last) {
        stream.localEnded = true;
        this.#blocked.delete(stream);
        return this.localEnded(stream);
      }
    }
    this.#blocked.delete(stream);
    if (stream.ending && !stream.localEnded) {
      stream.localEnded = true;
      if (stream.trailers !== null) this.#writeHeaders(stream.id, this.encoder.encode(stream.trailers), true);
      else this.transport.write(f.frame(f.DATA, f.END_STREAM, stream.id, null));
      return this.localEnded(stream);
    }
    if (!stream.waiting) return;
    if (this.transport.needsDrain) return void this.#blocked.add(stream);
    stream.waiting = false;
    stream.handler?.onWritable(stream);
  }

  /** Windows opened or the socket drained: the waiting streams go on, oldest first. */
  pumpBlocked(): void {
    if (this.#blocked.size === 0) return;
    for (const stream of [...this.#blocked]) {
      if (this.transport.needsDrain) return;
      this.pump(stream);
    }
  }

  /** A stream closed: nothing of it waits any more. */
  forget(stream: H2Stream): void {
    stream.queue.length = 0;
    stream.queuedBytes = 0;
    this.#blocked.delete(stream);
  }
}
