// One HTTP/2 stream's state (docs/gateway.md#http2-and-grpc): its windows both ways, what waits to be sent, how
// far each end has got, and (server role) whether the request's DATA agrees with its content-length
// (docs/gateway.md#message-framing). Its session reads its frames and the send side (sender.ts) writes them;
// the stream is what its user holds.
import type { HeaderField } from "./hpack.ts";
import { NO_ERROR } from "./frames.ts";

/** What one stream's user hears. */
export interface StreamHandler {
  /** A header block: a response head (client role; 1xx included), or trailers (`endStream` then true). */
  onHeaders(stream: H2Stream, fields: HeaderField[], endStream: boolean): void;
  onData(stream: H2Stream, chunk: Buffer, endStream: boolean): void;
  /** The peer reset the stream, or the connection went away (`code`: the h2 error code). */
  onReset(stream: H2Stream, code: number): void;
  /** Everything queued has been sent: more may be written. */
  onWritable(stream: H2Stream): void;
  /**
   * Server role: the answer has gone whole (END_STREAM sent) while the request's body is still coming
   * (docs/gateway.md#http2-and-grpc): its rest is of no use.
   */
  onAnsweredEarly?(stream: H2Stream): void;
}

// The session and its send side implement these two, declared here so that neither file imports the other.
/** What a stream asks of the session it belongs to. */
export interface StreamOwner {
  readonly peerInitialWindow: number;
  readonly limits: { readonly streamWindow: number };
  creditStream(stream: H2Stream, n: number): void;
  resetStream(stream: H2Stream, code: number): void;
}

/** What a stream asks of its session's send side (sender.ts). */
export interface StreamSender {
  headers(stream: H2Stream, fields: Iterable<HeaderField>, endStream: boolean): void;
  data(stream: H2Stream, chunk: Uint8Array, endStream: boolean): boolean;
  end(stream: H2Stream, trailers: HeaderField[] | null): void;
}

export class H2Stream {
  /** The stream's user (set by whoever handles it: the front's request, or the upstream exchange). */
  handler: StreamHandler | null = null;
  sendWindow: number;
  recvWindow: number;
  /** Bytes the consumer took that the peer has not been credited for yet. */
  #unacked = 0;
  /** What waits to be sent: data chunks, then (once `#ending`) END_STREAM or trailers. */
  readonly queue: Buffer[] = [];
  queuedBytes = 0;
  ending = false;
  trailers: HeaderField[] | null = null;
  /** The writer was told to wait: it hears `writable` once the queue has gone. */
  waiting = false;
  localEnded = false;
  remoteEnded = false;
  closed = false;
  /** Client role: the final response head has arrived. */
  responded = false;
  /** Server role: the request's announced content-length (−1: none), and the data bytes seen. */
  declaredLength = -1;
  receivedLength = 0;
  /**
   * Server role: the request's DATA disagreed with its content-length (RFC 9113 §8.1.1), and the stream was reset
   * for it: its user must not take what it received as a whole body (docs/gateway.md#message-framing).
   */
  malformed = false;

  constructor(
    readonly session: StreamOwner,
    private readonly send: StreamSender,
    readonly id: number,
  ) {
    this.sendWindow = session.peerInitialWindow;
    this.recvWindow = session.limits.streamWindow;
  }

  /** The consumer has taken `n` bytes of data: the peer may send that many more. */
  consumed(n: number): void {
    if (this.closed || this.remoteEnded || n <= 0) return;
    this.#unacked += n;
    if (this.#unacked >= this.session.limits.streamWindow / 4) {
      this.session.creditStream(this, this.#unacked);
      this.recvWindow += this.#unacked;
      this.#unacked = 0;
    }
  }

  /**
   * Server role: `n` more bytes of request DATA arrived (`endStream`: the last); true when the body now disagrees
   * with its declared content-length: longer, or ended short (RFC 9113 §8.1.1).
   */
  bodyDisagrees(n: number, endStream: boolean): boolean {
    this.receivedLength += n;
    const declared = this.declaredLength;
    return declared >= 0 && (this.receivedLength > declared || (endStream && this.receivedLength !== declared));
  }

  /** Server role: trailers arrived, which end the body: true when that is before its declared length. */
  endedShort(): boolean {
    return this.declaredLength >= 0 && this.receivedLength !== this.declaredLength;
  }

  sendHeaders(fields: Iterable<HeaderField>, endStream: boolean): void {
    this.send.headers(this, fields, endStream);
  }

  /** Queues a chunk; false when the writer should wait for `writable`. */
  sendData(chunk: Uint8Array, endStream = false): boolean {
    return this.send.data(this, chunk, endStream);
  }

  /** Ends the stream after what is queued, with trailers when given. */
  end(trailers: HeaderField[] | null = null): void {
    this.send.end(this, trailers);
  }

  reset(code: number): void {
    this.session.resetStream(this, code);
  }

  /** Server role, once the answer has gone whole: RST_STREAM NO_ERROR, the agent need not send the rest (RFC 9113 §8.1). */
  stop(): void {
    if (this.localEnded) this.session.resetStream(this, NO_ERROR);
  }
}
