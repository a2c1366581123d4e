// An agent's HTTP/2 connection inside an intercepted tunnel (ALPN h2, docs/gateway.md#http2-and-grpc): the
// sibling of client/http1AgentConnection.ts. Every stream is one request: its head becomes an AgentSide that runs
// through the same pipeline as an HTTP/1.1 request, and its Reply goes back as an h2 response — headers, DATA
// through the reply's transforms, trailers — with the stream's own flow control, so a held or slow stream never
// holds up the others. A gRPC call refused by the gateway gets a trailers-only gRPC answer (grpc.ts); a reply
// that asks to close the connection (a 407 after a token regeneration) ends it with GOAWAY once it is written.
import { log } from "../../observability/log.ts";
import type { RequestHandler } from "../client/http1AgentConnection.ts";
import type { AgentSocket, AgentSocketEvents } from "../client/socket.ts";
import { badGateway, headTooLarge, malformedRequest, type JsonAnswer } from "../errors.ts";
import { grpcRefusal } from "../grpc.ts";
import { isNamed } from "../http1/head.ts";
import type { Idle } from "../idle.ts";
import { Reply, type BodySink, type BodySource, type BodyTransform } from "../reply.ts";
import * as f from "./frames.ts";
import { H2AgentSide, type StreamWriter } from "./h2AgentSide.ts";
import type { HeaderField } from "./hpack.ts";
import { h2Fields, requestHead } from "./message.ts";
import { H2Session, type H2Stream, type H2Transport } from "./session.ts";

/**
 * After a connection error the GOAWAY leaves, then the socket is read (and the bytes dropped) this long before
 * it closes: closed with unread bytes, TCP would answer RST, and the client could lose the GOAWAY that says why.
 */
const LINGER_MS = 500;
/**
 * A connection that failed is gone this long after, whether or not the agent took what it was sent: one that
 * floods without reading would otherwise hold it (and have its bytes read and dropped) for as long as it likes.
 */
const FAILED_CLOSE_MS = 10_000;

/** Bytes dropped after a connection error between two young collections (see #drop). */
const DROPPED_PER_COLLECTION = 4 * 1024 * 1024;

function endSocket(socket: AgentSocket): void {
  socket.end();
}

function destroySocket(socket: AgentSocket): void {
  if (!socket.closed) socket.destroy();
}

export class H2AgentConnection implements AgentSocketEvents, Idle, H2Transport {
  /** Bytes came since the idle sweep last looked (idle.ts). */
  active = false;
  readonly session: H2Session;

  constructor(
    readonly socket: AgentSocket,
    private readonly handler: RequestHandler,
  ) {
    socket.events = this;
    this.session = new H2Session("server", this, {
      stream: (stream, fields, endStream) => this.#stream(stream, fields, endStream),
      tooLarge: (stream) => this.#tooLarge(stream),
      closed: () => {
        if (this.session.failure) log.warn("an agent's HTTP/2 connection was closed for a protocol violation", this.session.failure);
      },
    });
  }

  /** Streams in flight: the connection is not idle, whatever the bytes say. */
  get busy(): boolean {
    return this.session.activeStreams > 0;
  }

  closeIdle(): void {
    this.closeWhenIdle();
  }

  /** GOAWAY: no new streams; the connection ends once the open ones are answered. */
  closeWhenIdle(): void {
    this.session.goaway();
  }

  data(chunk: Buffer): void {
    this.active = true;
    if (this.session.failure !== null) return this.#drop(chunk.byteLength);
    this.session.receive(chunk);
  }

  /**
   * Bytes after a connection error are read and dropped until the socket closes (it keeps reading, however it is
   * asked to pause). An agent flooding without reading sends them as fast as they are taken, and each read's
   * buffer holds native memory until a collection finds it: a young collection every few MiB keeps that flat.
   */
  #drop(bytes: number): void {
    this.#dropped += bytes;
    if (this.#dropped < DROPPED_PER_COLLECTION) return;
    this.#dropped = 0;
    Bun.gc(false);
  }

  #dropped = 0;

  // --- H2Transport: the session's bytes go to the agent's socket ---

  write(data: Uint8Array): void {
    this.socket.write(data);
  }

  get needsDrain(): boolean {
    return this.socket.needsDrain;
  }

  end(): void {
    if (this.session.failure === null) return this.socket.end();
    setTimeout(destroySocket, FAILED_CLOSE_MS, this.socket).unref();
    // An agent that does not read what it was sent (a flood of frames it wants answered) finds the GOAWAY behind
    // those bytes: the socket ends once it has taken them, and lingering would not help.
    if (this.socket.needsDrain) return this.socket.end();
    setTimeout(endSocket, LINGER_MS, this.socket).unref();
  }

  destroy(): void {
    this.socket.destroy();
  }

  drain(): void {
    this.session.drained();
  }

  close(): void {
    this.session.transportClosed();
  }

  #stream(stream: H2Stream, fields: HeaderField[], endStream: boolean): void {
    const head = requestHead(fields);
    if (head === null) return stream.reset(f.PROTOCOL_ERROR);
    // The whole request is here and ends short of its content-length: malformed (RFC 9113 §8.1.1), answered
    // before it reaches the pipeline (docs/gateway.md#message-framing).
    if (endStream && head.contentLength > 0) return this.#malformedHead(stream);
    const request = new H2AgentSide(stream, head.method, head.target, head.headers, endStream, head.contentLength);
    let reply: Promise<Reply | null>;
    try {
      reply = this.handler(request);
    } catch (err) {
      reply = Promise.reject(err as Error);
    }
    reply.then(
      (r) => this.#answer(request, r),
      (err: Error) => {
        log.error("gateway request failed", { error: err.message });
        this.#answer(request, Reply.of(badGateway()));
      },
    );
  }

  /** A request that ended on its HEADERS although its content-length promised a body: 400, nothing forwarded. */
  #malformedHead(stream: H2Stream): void {
    stream.malformed = true;
    this.#refuseHead(stream, malformedRequest());
  }

  /** A request head over SETTINGS_MAX_HEADER_LIST_SIZE: 431, the connection kept (it never reached the pipeline). */
  #tooLarge(stream: H2Stream): void {
    this.#refuseHead(stream, headTooLarge());
  }

  /** The gateway's own answer to a stream whose head never reached the pipeline. */
  #refuseHead(stream: H2Stream, answer: JsonAnswer): void {
    const body = Buffer.from(JSON.stringify(answer.body));
    stream.sendHeaders(
      [
        [":status", String(answer.status)],
        ["content-type", "application/json"],
        ["content-length", String(body.length)],
      ],
      false,
    );
    stream.sendData(body, true);
  }

  #answer(request: H2AgentSide, reply: Reply | null): void {
    if (reply === null) return;
    const stream = request.stream;
    if (stream.closed) {
      reply.body?.cancel();
      reply.finish(false);
      return;
    }
    request.gatewayAnswer = !reply.fromUpstream;
    const close = reply.header("connection")?.toLowerCase() === "close";
    if (request.grpc && !reply.fromUpstream) void this.#grpcRefusal(request, reply, close);
    else {
      const writer = new ReplyWriter(stream, reply, request.method);
      request.writer = writer;
      writer.start();
    }
    if (close) this.session.goaway();
  }

  /** The gateway's own answer to a gRPC call, as gRPC: trailers-only (docs/agent-errors.md#grpc). */
  async #grpcRefusal(request: H2AgentSide, reply: Reply, close: boolean): Promise<void> {
    let body = "";
    try {
      body = reply.body ? await reply.toResponse().text() : "";
    } catch {}
    reply.finish(true);
    request.stream.sendHeaders(grpcRefusal(reply.status, body, reply.header("x-request-id") ?? ""), true);
    if (close) this.session.goaway();
  }
}

function bodyless(method: string, status: number): boolean {
  return method === "HEAD" || status === 204 || status === 304;
}

/** Runs the end of every transform, each one's held-back bytes passing through the ones after it. */
function endTransforms(transforms: BodyTransform[], complete: boolean): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < transforms.length; i++) {
    let tail = transforms[i]!.end(complete);
    for (let j = i + 1; tail && j < transforms.length; j++) tail = transforms[j]!.data(tail);
    if (tail && tail.byteLength > 0) out.push(tail);
  }
  return out;
}

/** Writes one Reply on its stream: headers at once, then the body with the stream's backpressure, then trailers. */
class ReplyWriter implements BodySink, StreamWriter {
  #finished = false;
  #paused = false;
  readonly #source: BodySource | null;

  constructor(
    private readonly stream: H2Stream,
    private readonly reply: Reply,
    method: string,
  ) {
    const noBody = bodyless(method, reply.status);
    if (noBody && reply.body) reply.body.cancel();
    this.#source = noBody ? null : reply.body;
  }

  start(): void {
    const reply = this.reply;
    let resizes = false;
    for (const t of reply.transforms) resizes ||= t.resizes;
    const fields: HeaderField[] = [[":status", String(reply.status)]];
    for (const [name, value] of reply.headerLines()) {
      if (resizes && isNamed(name, "content-length")) continue;
      fields.push([name, value]);
    }
    const lines = h2Fields(fields.splice(1), fields);
    const source = this.#source;
    if (source === null) {
      this.stream.sendHeaders(lines, true);
      return this.#done(true);
    }
    this.stream.sendHeaders(lines, false);
    source.start(this);
  }

  data(chunk: Uint8Array): boolean {
    if (this.#finished) return false;
    let out = chunk;
    for (const t of this.reply.transforms) out = t.data(out);
    if (out.byteLength > 0 && !this.stream.sendData(out)) {
      this.#paused = true;
      return false;
    }
    return true;
  }

  writable(): void {
    if (!this.#paused || this.#finished) return;
    this.#paused = false;
    this.#source?.resume();
  }

  end(): void {
    if (this.#finished) return;
    for (const tail of endTransforms(this.reply.transforms, true)) this.stream.sendData(tail);
    const trailers = this.reply.trailers;
    this.stream.end(trailers ? h2Fields(trailers, []) : null);
    this.#done(true);
  }

  error(): void {
    if (this.#finished) return;
    endTransforms(this.reply.transforms, false);
    // Mid-body the only way to say it: the stream is reset (the agent sees the response cut short).
    this.stream.reset(f.INTERNAL_ERROR);
    this.#done(false);
  }

  /** The agent reset the stream, or the connection went away. */
  abort(): void {
    if (this.#finished) return;
    this.#source?.cancel();
    endTransforms(this.reply.transforms, false);
    this.#done(false);
  }

  #done(complete: boolean): void {
    if (this.#finished) return;
    this.#finished = true;
    this.reply.finish(complete);
  }
}
