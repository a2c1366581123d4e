// One HTTP/2 connection (RFC 9113), either side of the gateway (docs/gateway.md#http2-and-grpc): the agent's
// (server role, inside an intercepted tunnel) or an origin's (client role, pooled). It reads frames off the
// bytes it is fed, dispatches them, keeps HPACK in step and the table of open streams, and ends streams and
// the connection. A stream's receive window is credited only when its consumer has taken the bytes (a slow
// reader holds back its own stream and no other), the connection's on receipt. The attack limits are enforced
// here or in the part that owns them: concurrent streams (REFUSED_STREAM), the header list size (the stream is
// refused, the connection kept), HPACK tables beyond their limit; rapid reset (rapidReset.ts), CONTINUATION
// floods (headerBlock.ts) and answers the peer does not read (answers.ts) end it with ENHANCE_YOUR_CALM.
// The other parts: stream.ts (one stream's state), sender.ts (the send side), settings.ts (SETTINGS both ways), stoppedStreams.ts.
import { Answers } from "./answers.ts";
import * as f from "./frames.ts";
import { PendingHeaderBlock } from "./headerBlock.ts";
import { HpackDecoder, HpackEncoder, HpackError, type HeaderField } from "./hpack.ts";
import { blamesPeer, ResetCounter } from "./rapidReset.ts";
import { Sender, type H2Transport } from "./sender.ts";
import { announcedSettings, applyPeerSettings, DEFAULT_LIMITS, settingsFrameError, type SessionLimits } from "./settings.ts";
import { StoppedStreams } from "./stoppedStreams.ts";
import { H2Stream, type StreamHandler, type StreamOwner } from "./stream.ts";

export { DEFAULT_LIMITS, H2Stream };
export type { H2Transport, SessionLimits, StreamHandler };

export interface SessionEvents {
  /** Server role: a new request stream, with its header block (already checked to be within the limits). */
  stream?(stream: H2Stream, fields: HeaderField[], endStream: boolean): void;
  /** Server role: a request head over the header list limit (the stream is answered by the caller, or reset). */
  tooLarge?(stream: H2Stream): void;
  /** A stream has closed (both ends done, or reset). */
  streamClosed?(stream: H2Stream): void;
  /** Client role: the peer sent GOAWAY (no new streams on this session). */
  goaway?(code: number): void;
  /** The session is over: GOAWAY either way, a protocol error, or the transport closed. */
  closed?(): void;
}

type Role = "server" | "client";

export class H2Session implements StreamOwner {
  readonly #streams = new Map<number, H2Stream>();
  readonly #decoder = new HpackDecoder();
  readonly #encoder = new HpackEncoder();
  readonly #send: Sender;
  readonly #answers: Answers;
  /** A header block in progress (HEADERS without END_HEADERS, then its CONTINUATIONs). */
  readonly #block = new PendingHeaderBlock();
  readonly #resets = new ResetCounter();
  readonly #stopped = new StoppedStreams();
  /** Incoming bytes not yet a whole frame. */
  #in: Buffer | null = null;
  #prefaceLeft: number;
  #settingsSeen = false;
  /** Highest peer-opened stream id (server) or next id to use (client). */
  #lastPeerStream = 0;
  #nextStream = 1;
  peerInitialWindow = f.DEFAULT_WINDOW;
  /** The peer's stream limit (client role): new requests wait for a free slot, or go to another session. */
  peerMaxStreams = 100;
  /** We sent GOAWAY (no new streams are taken), or the peer did (none may be opened). */
  goingAway = false;
  peerWentAway = false;
  closed = false;

  constructor(
    readonly role: Role,
    private readonly transport: H2Transport,
    private readonly events: SessionEvents,
    readonly limits: SessionLimits = DEFAULT_LIMITS,
  ) {
    this.#send = new Sender(transport, this.#encoder, (stream) => this.#maybeClose(stream));
    this.#answers = new Answers(transport, limits.connectionWindow);
    this.#prefaceLeft = role === "server" ? f.PREFACE.length : 0;
    if (role === "client") transport.write(f.PREFACE);
    transport.write(announcedSettings(limits));
    transport.write(f.windowUpdate(0, limits.connectionWindow - f.DEFAULT_WINDOW));
  }

  /** Streams open now. */
  get activeStreams(): number {
    return this.#streams.size;
  }

  /** Client role: whether a new stream may be opened now. */
  get canOpen(): boolean {
    return !this.closed && !this.goingAway && !this.peerWentAway && this.#streams.size < this.peerMaxStreams && this.#nextStream < f.MAX_WINDOW;
  }

  // --- reading ---

  /** Bytes from the transport. */
  receive(chunk: Buffer): void {
    if (this.closed) return;
    let buf = this.#in === null ? chunk : Buffer.concat([this.#in, chunk]);
    this.#in = null;
    let at = 0;
    if (this.#prefaceLeft > 0) {
      const n = Math.min(this.#prefaceLeft, buf.length);
      const from = f.PREFACE.length - this.#prefaceLeft;
      if (buf.compare(f.PREFACE, from, from + n, 0, n) !== 0) return this.#fail(f.PROTOCOL_ERROR, "not an HTTP/2 connection preface");
      this.#prefaceLeft -= n;
      at = n;
    }
    while (!this.closed && buf.length - at >= f.FRAME_HEADER) {
      const length = (buf[at]! << 16) | (buf[at + 1]! << 8) | buf[at + 2]!;
      // We never raise SETTINGS_MAX_FRAME_SIZE above its default.
      if (length > f.DEFAULT_MAX_FRAME) return this.#fail(f.FRAME_SIZE_ERROR, "frame larger than SETTINGS_MAX_FRAME_SIZE");
      if (buf.length - at < f.FRAME_HEADER + length) break;
      const type = buf[at + 3]!;
      const flags = buf[at + 4]!;
      const stream = buf.readUInt32BE(at + 5) & f.MAX_WINDOW;
      const payload = buf.subarray(at + f.FRAME_HEADER, at + f.FRAME_HEADER + length);
      at += f.FRAME_HEADER + length;
      this.#frame(type, flags, stream, payload);
    }
    if (!this.closed && at < buf.length) this.#in = at === 0 ? buf : Buffer.from(buf.subarray(at));
    const acks = this.#answers.takeAcks();
    if (acks !== null) this.#answer(acks);
  }

  #frame(type: number, flags: number, id: number, payload: Buffer): void {
    if (this.role === "server" && !this.#settingsSeen && type !== f.SETTINGS) return this.#fail(f.PROTOCOL_ERROR, "the first frame is not SETTINGS");
    // Nothing may come between a HEADERS without END_HEADERS and its CONTINUATIONs (RFC 9113 §6.10).
    const pending = this.#block.stream;
    if (pending !== 0 && (type !== f.CONTINUATION || id !== pending)) return this.#fail(f.PROTOCOL_ERROR, "header block interrupted");
    switch (type) {
      case f.DATA:
        return this.#data(flags, id, payload);
      case f.HEADERS:
        return this.#headers(flags, id, payload);
      case f.PRIORITY:
        if (id === 0) return this.#fail(f.PROTOCOL_ERROR, "PRIORITY on stream 0");
        if (payload.length !== 5) return this.#resetId(id, f.FRAME_SIZE_ERROR);
        return;
      case f.RST_STREAM:
        return this.#rst(id, payload);
      case f.SETTINGS:
        return this.#settings(flags, id, payload);
      case f.PUSH_PROMISE:
        // We announce SETTINGS_ENABLE_PUSH 0, and a client never pushes.
        return this.#fail(f.PROTOCOL_ERROR, "PUSH_PROMISE");
      case f.PING:
        if (id !== 0) return this.#fail(f.PROTOCOL_ERROR, "PING on a stream");
        if (payload.length !== 8) return this.#fail(f.FRAME_SIZE_ERROR, "PING of the wrong size");
        if ((flags & f.ACK) === 0) this.#answers.ack(f.pingAck(payload));
        return;
      case f.GOAWAY:
        return this.#goaway(id, payload);
      case f.WINDOW_UPDATE:
        return this.#windowUpdate(id, payload);
      case f.CONTINUATION:
        return this.#continuation(flags, id, payload);
      default:
        // Unknown frame types are ignored (RFC 9113 §4.1).
        return;
    }
  }

  #data(flags: number, id: number, payload: Buffer): void {
    if (id === 0) return this.#fail(f.PROTOCOL_ERROR, "DATA on stream 0");
    const length = payload.length;
    if (!this.#answers.creditConnection(length)) this.#flooded();
    const stream = this.#streams.get(id);
    if (!stream || stream.remoteEnded) {
      if (!this.#known(id)) return this.#fail(f.PROTOCOL_ERROR, "DATA on an idle stream");
      if (!stream && this.#stopped.has(id, (flags & f.END_STREAM) !== 0)) return; // a stopped body's rest: dropped
      return this.#resetId(id, f.STREAM_CLOSED);
    }
    if (length > stream.recvWindow) return this.resetStream(stream, f.FLOW_CONTROL_ERROR);
    stream.recvWindow -= length;
    const data = f.unpad(flags, payload, 0);
    if (data === null) return this.#fail(f.PROTOCOL_ERROR, "padding longer than the frame");
    // Padding is flow-controlled too, but nobody reads it: credit it at once.
    if (data.length < length) stream.consumed(length - data.length);
    const endStream = (flags & f.END_STREAM) !== 0;
    if (this.role === "server" && stream.bodyDisagrees(data.length, endStream)) return this.#malformed(stream);
    if (endStream) stream.remoteEnded = true;
    if (data.length > 0 || endStream) stream.handler?.onData(stream, data, endStream);
    if (endStream) this.#maybeClose(stream);
  }

  #headers(flags: number, id: number, payload: Buffer): void {
    if (id === 0) return this.#fail(f.PROTOCOL_ERROR, "HEADERS on stream 0");
    const fragment = f.unpad(flags, payload, (flags & f.PRIORITY_FLAG) !== 0 ? 5 : 0);
    if (fragment === null) return this.#fail(f.PROTOCOL_ERROR, "padding longer than the frame");
    const endStream = (flags & f.END_STREAM) !== 0;
    if ((flags & f.END_HEADERS) !== 0) return this.#headerBlock(id, fragment, endStream);
    this.#block.begin(id, fragment, endStream);
  }

  #continuation(flags: number, id: number, payload: Buffer): void {
    const block = this.#block;
    if (block.stream === 0 || id !== block.stream) return this.#fail(f.PROTOCOL_ERROR, "CONTINUATION without a header block");
    if (!block.add(payload)) return this.#fail(f.ENHANCE_YOUR_CALM, "too many CONTINUATION frames");
    if ((flags & f.END_HEADERS) === 0) return;
    const endStream = block.endStream;
    this.#headerBlock(id, block.take(), endStream);
  }

  /** A complete header block: decoded (always: the table must stay in step), then a new stream, a response or trailers. */
  #headerBlock(id: number, block: Buffer, endStream: boolean): void {
    let fields: HeaderField[];
    let oversize: boolean;
    try {
      ({ headers: fields, oversize } = this.#decoder.decode(block, this.limits.maxHeaderListSize));
    } catch (err) {
      const calm = err instanceof HpackError && err.calm;
      return this.#fail(calm ? f.ENHANCE_YOUR_CALM : f.COMPRESSION_ERROR, (err as Error).message);
    }
    const existing = this.#streams.get(id);
    if (existing) return this.#moreHeaders(existing, fields, oversize, endStream);
    if (this.role === "client") {
      if (this.#known(id)) return this.#resetId(id, f.STREAM_CLOSED);
      return this.#fail(f.PROTOCOL_ERROR, "HEADERS on a stream we did not open");
    }
    // A new request: odd ids only, each above the last (RFC 9113 §5.1.1).
    if (id % 2 === 0 || id <= this.#lastPeerStream) {
      // Trailers the client sent before it heard our RST_STREAM (a body that disagreed with its content-length:
      // docs/gateway.md#message-framing): the block has been decoded, the stream stays closed, the others go on.
      if (id % 2 === 1 && id <= this.#lastPeerStream) return this.#stopped.has(id, true) ? undefined : this.#resetId(id, f.STREAM_CLOSED);
      return this.#fail(f.PROTOCOL_ERROR, "invalid stream id");
    }
    this.#lastPeerStream = id;
    if (this.goingAway || this.#streams.size >= this.limits.maxConcurrentStreams) return this.#resetId(id, f.REFUSED_STREAM);
    const stream = this.#open(id);
    if (endStream) stream.remoteEnded = true;
    if (oversize) {
      if (this.events.tooLarge) this.events.tooLarge(stream);
      else this.resetStream(stream, f.PROTOCOL_ERROR);
      return;
    }
    this.events.stream?.(stream, fields, endStream);
  }

  /** A header block on an open stream: the response (client role), or trailers. */
  #moreHeaders(stream: H2Stream, fields: HeaderField[], oversize: boolean, endStream: boolean): void {
    if (stream.remoteEnded) return this.resetStream(stream, f.STREAM_CLOSED);
    if (oversize) return this.resetStream(stream, f.PROTOCOL_ERROR);
    const trailers = this.role === "server" || stream.responded;
    // Trailers end the stream (RFC 9113 §8.1).
    if (trailers && !endStream) return this.resetStream(stream, f.PROTOCOL_ERROR);
    // Trailers end the body: before its declared length, the request is malformed (RFC 9113 §8.1.1).
    if (this.role === "server" && stream.endedShort()) return this.#malformed(stream);
    if (endStream) stream.remoteEnded = true;
    stream.handler?.onHeaders(stream, fields, endStream);
    if (endStream) this.#maybeClose(stream);
  }

  #rst(id: number, payload: Buffer): void {
    if (id === 0) return this.#fail(f.PROTOCOL_ERROR, "RST_STREAM on stream 0");
    if (payload.length !== 4) return this.#fail(f.FRAME_SIZE_ERROR, "RST_STREAM of the wrong size");
    if (!this.#known(id)) return this.#fail(f.PROTOCOL_ERROR, "RST_STREAM on an idle stream");
    if (this.role === "server" && this.#resets.tooMany()) return this.#fail(f.ENHANCE_YOUR_CALM, "too many stream resets");
    const stream = this.#streams.get(id);
    if (!stream) return void this.#stopped.has(id, true);
    const code = payload.readUInt32BE(0);
    this.#close(stream);
    stream.handler?.onReset(stream, code);
  }

  #settings(flags: number, id: number, payload: Buffer): void {
    const bad = settingsFrameError(flags, id, payload.length);
    if (bad !== null) return this.#fail(bad.code, bad.reason);
    if ((flags & f.ACK) !== 0) return;
    this.#settingsSeen = true;
    const error = applyPeerSettings(payload, this, this.#send, this.#encoder, this.#streams);
    if (error !== null) return this.#fail(error.code, error.reason);
    this.#answers.ack(f.SETTINGS_ACK);
    this.#send.pumpBlocked();
  }

  #goaway(id: number, payload: Buffer): void {
    if (id !== 0) return this.#fail(f.PROTOCOL_ERROR, "GOAWAY on a stream");
    if (payload.length < 8) return this.#fail(f.FRAME_SIZE_ERROR, "GOAWAY too short");
    const last = payload.readUInt32BE(0) & f.MAX_WINDOW;
    const code = payload.readUInt32BE(4);
    this.peerWentAway = true;
    this.events.goaway?.(code);
    // Streams above the last one the peer will process were never seen by it: safe to send again elsewhere.
    for (const s of [...this.#streams.values()]) {
      if (this.role === "client" && s.id > last) {
        this.#close(s);
        s.handler?.onReset(s, f.REFUSED_STREAM);
      }
    }
    if (this.#streams.size === 0) this.#finish();
  }

  #windowUpdate(id: number, payload: Buffer): void {
    if (payload.length !== 4) return this.#fail(f.FRAME_SIZE_ERROR, "WINDOW_UPDATE of the wrong size");
    const increment = payload.readUInt32BE(0) & f.MAX_WINDOW;
    if (id === 0) {
      if (increment === 0) return this.#fail(f.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
      this.#send.connWindow += increment;
      if (this.#send.connWindow > f.MAX_WINDOW) return this.#fail(f.FLOW_CONTROL_ERROR, "connection window overflow");
      return this.#send.pumpBlocked();
    }
    const stream = this.#streams.get(id);
    if (!stream) {
      if (!this.#known(id)) return this.#fail(f.PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream");
      return;
    }
    if (increment === 0) return this.resetStream(stream, f.PROTOCOL_ERROR);
    stream.sendWindow += increment;
    if (stream.sendWindow > f.MAX_WINDOW) return this.resetStream(stream, f.FLOW_CONTROL_ERROR);
    this.#send.pump(stream);
  }

  /** Whether `id` is a stream that was opened at some point (not idle). */
  #known(id: number): boolean {
    return this.role === "server" ? (id % 2 === 1 && id <= this.#lastPeerStream) || id % 2 === 0 : id % 2 === 1 ? id < this.#nextStream : false;
  }

  creditStream(stream: H2Stream, n: number): void {
    this.#answer(f.windowUpdate(stream.id, n));
  }

  /** Writes a control frame that answers the peer, within the budget of answers it does not read (answers.ts). */
  #answer(frame: Buffer): void {
    if (this.closed) return;
    if (!this.#answers.write(frame)) this.#flooded();
  }

  #flooded(): void {
    this.#fail(f.ENHANCE_YOUR_CALM, "control frames answered faster than the peer reads them");
  }

  // --- streams ---

  #open(id: number): H2Stream {
    const stream = new H2Stream(this, this.#send, id);
    this.#streams.set(id, stream);
    return stream;
  }

  /** Client role: opens a request stream and sends its head (`fields`: pseudo-headers first, names lowercase). */
  request(fields: Iterable<HeaderField>, endStream: boolean, handler: StreamHandler): H2Stream {
    if (!this.canOpen) throw new Error("the session takes no new streams");
    const id = this.#nextStream;
    this.#nextStream += 2;
    const stream = this.#open(id);
    stream.handler = handler;
    this.#send.headers(stream, fields, endStream);
    return stream;
  }

  /** The transport has written everything it held. */
  drained(): void {
    this.#answers.drained();
    this.#send.pumpBlocked();
  }

  resetStream(stream: H2Stream, code: number): void {
    if (stream.closed || this.#provokedTooOften(code)) return;
    if (code === f.NO_ERROR && stream.localEnded && this.role === "server") this.#stopped.add(stream.id); // its rest: ignored
    this.#answer(f.rstStream(stream.id, code));
    if (this.closed) return;
    this.#close(stream);
    stream.handler?.onReset(stream, code);
  }

  /** A request whose DATA disagrees with its content-length: reset, its user told why (docs/gateway.md#message-framing). */
  #malformed(stream: H2Stream): void {
    stream.malformed = true;
    this.resetStream(stream, f.PROTOCOL_ERROR);
  }

  /** A stream that has no object (refused, or already gone) is reset by its id. */
  #resetId(id: number, code: number): void {
    const stream = this.#streams.get(id);
    if (stream) return this.resetStream(stream, code);
    if (this.#provokedTooOften(code)) return;
    this.#answer(f.rstStream(id, code));
  }

  /** Server role: a reset the client provoked counts as one of its own; true when it was one too many (the session failed). */
  #provokedTooOften(code: number): boolean {
    if (this.role !== "server" || !blamesPeer(code) || !this.#resets.tooMany()) return false;
    this.#fail(f.ENHANCE_YOUR_CALM, "too many stream resets");
    return true;
  }

  #maybeClose(stream: H2Stream): void {
    if (!stream.localEnded) return;
    if (stream.remoteEnded) return this.#close(stream);
    // Server role: answered whole before the body ended (docs/gateway.md#http2-and-grpc): the rest is let go.
    if (this.role === "server") stream.handler?.onAnsweredEarly ? stream.handler.onAnsweredEarly(stream) : this.resetStream(stream, f.NO_ERROR);
  }

  #close(stream: H2Stream): void {
    if (stream.closed) return;
    stream.closed = true;
    this.#send.forget(stream);
    this.#streams.delete(stream.id);
    this.events.streamClosed?.(stream);
    if (this.#streams.size === 0 && (this.goingAway || this.peerWentAway)) this.#finish();
  }

  // --- the connection ---

  /**
   * GOAWAY: no new streams; the open ones finish, then the connection ends (graceful shutdown, an idle
   * connection, a token that no longer holds).
   */
  goaway(code = f.NO_ERROR): void {
    if (this.closed || this.goingAway) return;
    this.goingAway = true;
    this.transport.write(f.goaway(this.#lastPeerStream, code));
    if (this.#streams.size === 0) this.#finish();
  }

  /** A connection error: GOAWAY with `code`, every stream reset, the transport ended. */
  #fail(code: number, reason: string): void {
    if (this.closed) return;
    this.failure = { code, reason };
    this.transport.write(f.goaway(this.#lastPeerStream, code));
    this.#teardown(code);
    this.transport.end();
  }

  /** Why the session failed (a connection error it detected), for logs and tests. */
  failure: { code: number; reason: string } | null = null;

  #finish(): void {
    if (this.closed) return;
    this.#teardown(f.NO_ERROR);
    this.transport.end();
  }

  /** The transport closed under us. */
  transportClosed(): void {
    this.#teardown(f.CANCEL);
  }

  /** Ends the session at once (the pool's idle sweep, the gateway stopping). */
  destroy(): void {
    this.#teardown(f.CANCEL);
    this.transport.destroy();
  }

  #teardown(code: number): void {
    if (this.closed) return;
    this.closed = true;
    this.#in = null;
    this.#answers.clear();
    this.#block.clear();
    const open = [...this.#streams.values()];
    for (const s of open) this.#close(s);
    for (const s of open) s.handler?.onReset(s, code);
    this.events.closed?.();
  }
}
