// One agent connection on the gateway port after the front has read what it is: an intercepted tunnel
// (TLS-terminated or plain) or a plain proxy connection (absolute-form requests, or origin-form control
// requests). HTTP/1.1 is read here, in JS, request after request (docs/gateway.md#tunnels): the request line is kept
// byte for byte, bodies are streamed with backpressure both ways, and each request's answer is written
// before the next pipelined request is read.
import { randomUUID } from "node:crypto";
import { log } from "../../observability/log.ts";
import { AgentSideBase } from "../agentSideBase.ts";
import type { AgentSide } from "../agentSide.ts";
import { badGateway, headTooLarge, malformedRequest, rawAnswer, type JsonAnswer } from "../errors.ts";
import type { Idle } from "../idle.ts";
import { BodyFramer } from "../http1/body.ts";
import { connectionTokens, framingOf, headerValue, MAX_HEAD_BYTES, parseRequestHead, type HeaderLines, type RequestHead } from "../http1/head.ts";
import { Reply } from "../reply.ts";
import type { AgentSocket, AgentSocketEvents } from "./socket.ts";
import { writeReply, type ReplyInFlight } from "./write.ts";

/**
 * A request read off the connection. Its Headers object and its AbortSignal are made only if something asks
 * for them: the upstream exchange listens for the agent going away through a plain callback instead.
 */
class Http1AgentSide extends AgentSideBase implements AgentSide {
  constructor(
    private readonly connection: Http1AgentConnection,
    readonly method: string,
    readonly target: string,
    readonly headerLines: HeaderLines,
    readonly body: ReadableStream<Uint8Array> | null,
    readonly chunked: boolean,
  ) {
    super();
  }

  takeOver(): { socket: AgentSocket; buffered: Buffer } {
    return this.connection.detach();
  }

  /** gRPC needs HTTP/2: over HTTP/1.1 a request is never a gRPC call (docs/gateway.md#http2-and-grpc). */
  get grpc(): boolean {
    return false;
  }

  get trailers(): null {
    return null;
  }
}

/** What answers requests: a Reply, or null when the handler took the connection over (a WebSocket). */
export type RequestHandler = (request: AgentSide) => Promise<Reply | null>;

/** A request body as the connection reads it: `continue` until the agent has had its 100 Continue. */
interface RequestBodyState {
  framer: BodyFramer;
  controller: ReadableStreamDefaultController<Uint8Array> | null;
  done: boolean;
  continue: boolean;
}

const MAX_BUFFERED = 1024 * 1024;
/** How long a connection answered before its request body was read keeps reading (and dropping) that body. */
const LINGER_MS = 5_000;
const EMPTY = Buffer.alloc(0);

export class Http1AgentConnection implements AgentSocketEvents, Idle {
  /** Bytes came since the idle sweep last looked (idle.ts). */
  active = false;
  #buf: Buffer = EMPTY;
  #busy = false;
  #closed = false;
  #detached = false;
  /** Set by `closeWhenIdle`: the gateway is stopping. */
  #closing = false;
  /** The answer has gone; the rest of its request's body is read and dropped before the socket ends (#linger). */
  #lingering = false;
  /** The request being answered, told when the agent goes away. */
  #request: Http1AgentSide | null = null;
  /** The request body being read off the socket. */
  #body: RequestBodyState | null = null;

  /** The reply being written waits for the socket to drain. */
  #drained: (() => void) | null = null;
  /** The body being written, cut short if the agent goes away. */
  #writing: ReplyInFlight | null = null;
  readonly #track = (w: ReplyInFlight | null): void => {
    this.#writing = w;
  };

  constructor(
    readonly socket: AgentSocket,
    private readonly handler: RequestHandler,
  ) {
    socket.events = this;
  }

  /** Bytes that arrived before this connection took the socket (the front's read-ahead). */
  feed(initial: Buffer): void {
    if (initial.length > 0) this.data(initial);
  }

  /** The first request, its head already read by the front (`rest`: the bytes after it). */
  start(head: RequestHead, rest: Buffer): void {
    this.#begin(head, rest.length > 0 ? rest : null);
  }

  /** A request is in flight (or the connection was taken over): it is not idle, whatever the bytes say. */
  get busy(): boolean {
    return this.#busy;
  }

  /** Idle for too long (idle.ts): closed like a stopping gateway closes it. */
  closeIdle(): void {
    this.closeWhenIdle();
  }

  /** Closes now when no request is in flight, otherwise right after its answer. */
  closeWhenIdle(): void {
    this.#closing = true;
    if (!this.#busy || this.#lingering) this.socket.end();
  }

  /** Hands the socket to the caller (WebSocket after 101), with any bytes already read past the request. */
  detach(): { socket: AgentSocket; buffered: Buffer } {
    this.#detached = true;
    this.socket.events = null;
    const buffered = this.#buf;
    this.#buf = EMPTY;
    return { socket: this.socket, buffered };
  }

  data(chunk: Buffer): void {
    if (this.#closed) return;
    this.active = true;
    if (this.#body && !this.#body.done) {
      this.#readBody(chunk);
      return;
    }
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    if (this.#busy) {
      // Pipelined requests wait for the answer in flight.
      if (this.#buf.length > MAX_BUFFERED) this.socket.pause();
      return;
    }
    this.#next();
  }

  drain(): void {
    const drained = this.#drained;
    this.#drained = null;
    drained?.();
  }

  /** `fn` runs once the socket has taken everything queued (the reply writer's backpressure). */
  whenDrained(fn: (() => void) | null): void {
    this.#drained = fn;
  }

  close(): void {
    this.#closed = true;
    this.#request?.abandon();
    this.#writing?.abort();
    const body = this.#body;
    if (body && !body.done) {
      body.done = true;
      try {
        body.controller?.error(new Error("the agent closed the connection"));
      } catch {}
    }
  }

  #next(): void {
    if (this.#busy || this.#closed || this.#detached || this.#buf.length === 0) return;
    const end = this.#buf.indexOf("\r\n\r\n");
    // Over the limit whether or not the head's end has arrived (docs/agent-errors.md#bad_request): a head that
    // came whole in one read must not pass at any size.
    if (end < 0 ? this.#buf.length > MAX_HEAD_BYTES : end + 4 > MAX_HEAD_BYTES) return this.#refuse(headTooLarge());
    if (end < 0) return;
    const head = parseRequestHead(this.#buf, end);
    if (!head) return this.#refuse(malformedRequest());
    // Most requests come alone: no view made of nothing.
    const rest = end + 4 < this.#buf.length ? this.#buf.subarray(end + 4) : null;
    this.#buf = EMPTY;
    this.#begin(head, rest);
  }

  /** Reads `head`'s body off the connection and has the request answered; `rest` is what came after the head. */
  #begin(head: RequestHead, rest: Buffer | null): void {
    const framing = framingOf(head.headers);
    if (framing === undefined) return this.#refuse(malformedRequest());
    this.#busy = true;
    const body = framing === null || framing === 0 ? null : this.#bodyStream(framing, headerValue(head.headers, "expect")?.toLowerCase() === "100-continue");
    const request = (this.#request = new Http1AgentSide(this, head.method, head.target, head.headers, body, framing !== null && framing < 0));
    this.#serve(head, request);
    if (rest) this.data(rest);
  }

  #bodyStream(framing: number, expectsContinue: boolean): ReadableStream<Uint8Array> {
    const state: RequestBodyState = { framer: new BodyFramer(framing), controller: null, done: false, continue: expectsContinue };
    this.#body = state;
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          state.controller = controller;
        },
        pull: () => {
          if (state.continue) {
            // The agent waits for this before it sends the body (Expect: 100-continue).
            state.continue = false;
            this.socket.write("HTTP/1.1 100 Continue\r\n\r\n");
          }
          if (this.socket.paused) this.socket.resume();
        },
        cancel: () => {
          state.controller = null;
        },
      },
      { highWaterMark: 64 * 1024, size: (c) => c?.byteLength ?? 0 },
    );
  }

  #readBody(chunk: Buffer): void {
    const state = this.#body!;
    const end = state.framer.feed(chunk, 0, (data) => {
      try {
        state.controller?.enqueue(data);
      } catch {}
    });
    if (state.framer.failed) {
      state.done = true;
      try {
        state.controller?.error(new Error("invalid chunked request body"));
      } catch {}
      this.socket.destroy();
      return;
    }
    if (state.controller && (state.controller.desiredSize ?? 1) <= 0) this.socket.pause();
    if (end < 0) return;
    state.done = true;
    if (this.#lingering) return this.socket.end();
    try {
      state.controller?.close();
    } catch {}
    if (end < chunk.length) this.data(chunk.subarray(end));
  }

  /** Answers one request: its handler's reply is written, then the next request is read. Plain calls and promise callbacks (this runs per request). */
  #serve(head: RequestHead, request: AgentSide): void {
    let reply: Promise<Reply | null>;
    try {
      reply = this.handler(request);
    } catch (err) {
      reply = Promise.reject(err as Error);
    }
    reply.then(
      (r) => this.#answer(head, r),
      (err: Error) => {
        log.error("gateway request failed", { error: err.message });
        this.#answer(head, Reply.of(badGateway()));
      },
    );
  }

  #answer(head: RequestHead, reply: Reply | null): void {
    if (reply === null) return; // the connection was taken over
    const unreadBody = this.#body !== null && !this.#body.done;
    const close =
      this.#closing || head.http10 || unreadBody || connectionTokens(head.headers).has("close") || reply.header("connection")?.toLowerCase() === "close";
    const writing = writeReply(this, reply, { method: head.method, close, http10: head.http10 }, this.#track);
    if (writing) writing.then(() => this.#answered(close, unreadBody));
    else this.#answered(close, unreadBody);
  }

  /** The answer has gone: the connection ends, lingers, or reads the next request. */
  #answered(close: boolean, unreadBody: boolean): void {
    this.#request = null;
    // The writer ends the socket itself when an upstream body broke off.
    if (close || this.#closed || this.socket.ended) {
      if (this.socket.ended) return;
      // A stopping gateway does not wait for bodies.
      if (unreadBody && !this.#closed && !this.#closing) return this.#linger(this.#body!);
      this.socket.end();
      return;
    }
    this.#body = null;
    this.#busy = false;
    if (this.socket.paused) this.socket.resume();
    this.#next();
  }

  /**
   * Ends the connection once the agent has sent the rest of a body nobody will read. Closing with its bytes
   * unread would make the kernel answer them with a reset, and a reset can wipe the answer before the agent
   * has read it (curl: "Empty reply from server"). So, as nginx's lingering close does, the body is read and
   * dropped until it ends, the agent closes, or LINGER_MS pass.
   */
  #linger(body: RequestBodyState): void {
    body.controller = null;
    this.#lingering = true;
    const timer = setTimeout(() => this.socket.end(), LINGER_MS);
    this.socket.onceClosed(() => clearTimeout(timer));
    if (this.socket.paused) this.socket.resume();
  }

  /** A head that could not be read: answered raw (there is no request to give a Reply to) and the connection closed. */
  #refuse(answer: JsonAnswer): void {
    this.#closed = true;
    this.socket.end(rawAnswer(answer, randomUUID()));
  }
}
