// One request as one stream on a pooled h2 origin connection (docs/gateway.md#http2-and-grpc), the sibling of
// exchange.ts: whatever the agent spoke, the request is translated to an h2 head (pseudo-header fields from the
// method, scheme, authority and request-target; fields lowercased, connection-specific ones gone), its body
// sent with the stream's flow control and the agent's trailers after it, and the response handed back as a
// Reply whose body is credited to the origin only as the agent's side takes it — a slow reader holds back its
// own stream, never its neighbours. The origin's trailers (gRPC's status) travel on the Reply.
import type { AgentPresence, GoneWatcher } from "../agentSide.ts";
import * as f from "../h2/frames.ts";
import type { HeaderField } from "../h2/hpack.ts";
import { h2Fields, responseHead, trailerFields } from "../h2/message.ts";
import type { H2Stream, StreamHandler } from "../h2/session.ts";
import { headerValue } from "../http1/head.ts";
import { Reply, type BodySink, type BodySource } from "../reply.ts";
import { BodyLengthError, type ExchangeResult, type Retry, type UpstreamRequest } from "./upstreamRequest.ts";
import type { H2Origin } from "./h2Origin.ts";
import type { UpstreamPool } from "./pool.ts";

function headTimedOut(exchange: H2Exchange): void {
  exchange.timedOut();
}

/** The request's h2 head: pseudo-header fields first, then the outgoing fields (`te: trailers` for gRPC, which needs it). */
export function h2RequestFields(rq: UpstreamRequest): HeaderField[] {
  const source = rq.source;
  const fields: HeaderField[] = [
    [":method", rq.method],
    [":scheme", rq.scheme],
    [":authority", source.authority],
    [":path", source.upstreamTarget],
  ];
  h2Fields(source.headers, fields);
  if (source.grpc) fields.push(["te", "trailers"]);
  return fields;
}

export class H2Exchange implements StreamHandler, BodySource, GoneWatcher {
  #resolve!: (r: ExchangeResult | Promise<ExchangeResult>) => void;
  #stream: H2Stream | null = null;
  #reply: Reply | null = null;
  #sink: BodySink | null = null;
  /** Body bytes that came before the agent's side started reading (credited as it takes them). */
  #pending: Buffer[] | null = null;
  #pendingEnd = false;
  /** Bytes the agent's side has been handed but asked to pause on: credited on resume. */
  #uncredited = 0;
  #paused = false;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #settled = false;
  #done = false;
  #writableWaiter: (() => void) | null = null;
  length: number | null = null;

  constructor(
    private readonly pool: UpstreamPool,
    private readonly origin: H2Origin,
    private readonly rq: UpstreamRequest,
    /** A body-less request the origin refused unseen (REFUSED_STREAM, or above its GOAWAY) is sent again once. */
    private readonly retryable: boolean,
    /** exchange.ts retry, handed in: this file does not import exchange.ts, which imports it. */
    private readonly retry: Retry,
  ) {}

  run(): Promise<ExchangeResult> {
    return new Promise((resolve) => {
      this.#resolve = resolve;
      const agent: AgentPresence = this.rq.agent;
      if (agent.gone) return this.#settle({ failure: "unreachable", reason: "the agent went away" });
      agent.watchGone(this);
      this.#timer = setTimeout(headTimedOut, this.rq.headerTimeoutMs, this);
      const body = this.rq.body;
      try {
        this.#stream = this.origin.session.request(h2RequestFields(this.rq), body === null, this);
      } catch (err) {
        return this.#fail("unreachable", (err as Error).message);
      }
      if (body) void this.#sendBody(body);
    });
  }

  async #sendBody(body: ReadableStream<Uint8Array>): Promise<void> {
    const stream = this.#stream!;
    const reader = body.getReader();
    // Bytes the head still promises (docs/gateway.md#message-framing); unused when chunked.
    let left = this.rq.length;
    try {
      for (;;) {
        const r = await reader.read();
        if (stream.closed) return void reader.cancel().catch(() => {});
        if (r.done) break;
        if (r.value.byteLength === 0) continue;
        if (!this.rq.chunked && (left -= r.value.byteLength) < 0) throw BodyLengthError.longer();
        if (!stream.sendData(r.value)) await new Promise<void>((resolve) => (this.#writableWaiter = resolve));
      }
      if (!this.rq.chunked && left > 0) throw BodyLengthError.shorter();
      const trailers = this.rq.source.agentTrailers;
      stream.end(trailers ? h2Fields(trailers, []) : null);
    } catch {
      // The agent's body broke off or did not match its length: the origin must not take half a request as a whole one.
      reader.cancel().catch(() => {});
      stream.reset(f.CANCEL);
    }
  }

  // --- StreamHandler: the origin's side of the stream ---

  onHeaders(stream: H2Stream, fields: HeaderField[], endStream: boolean): void {
    if (stream.responded) {
      // Trailers (they end the stream).
      const lines = trailerFields(fields);
      if (lines && this.#reply) this.#reply.trailers = lines;
      return this.#bodyEnd();
    }
    const head = responseHead(fields);
    if (head === null) {
      stream.reset(f.PROTOCOL_ERROR);
      return this.#fail("unreachable", "malformed response from upstream");
    }
    // Interim responses (103 Early Hints, 100) are not relayed.
    if (head.status < 200 && !endStream) return;
    stream.responded = true;
    this.#clearTimer();
    const reply = new Reply(head.status, "", head.headers, null);
    reply.fromUpstream = true;
    this.#reply = reply;
    const bodyless = this.rq.method === "HEAD" || head.status === 204 || head.status === 304;
    if (endStream || bodyless) {
      if (!endStream) stream.reset(f.CANCEL);
      this.#finish();
      return this.#settle({ reply });
    }
    const declared = headerValue(head.headers, "content-length");
    this.length = declared !== null && /^\d{1,15}$/.test(declared) ? Number(declared) : null;
    reply.body = this;
    this.#settle({ reply });
  }

  onData(stream: H2Stream, chunk: Buffer, endStream: boolean): void {
    if (chunk.length > 0) {
      const sink = this.#sink;
      if (sink === null) (this.#pending ??= []).push(chunk);
      else if (this.#paused) this.#hold(sink, chunk);
      else if (sink.data(chunk)) stream.consumed(chunk.length);
      else {
        this.#paused = true;
        this.#uncredited += chunk.length;
      }
    }
    if (endStream) this.#bodyEnd();
  }

  /** A chunk while the agent's side asked to pause: handed on (the sink buffers it), credited only on resume. */
  #hold(sink: BodySink, chunk: Buffer): void {
    sink.data(chunk);
    this.#uncredited += chunk.length;
  }

  #bodyEnd(): void {
    if (this.#sink === null) {
      this.#pendingEnd = true;
      return;
    }
    const sink = this.#sink;
    this.#finish();
    sink.end();
  }

  onReset(_stream: H2Stream, code: number): void {
    if (this.#done) return;
    // The origin never processed it (RFC 9113 §8.7): safe to send again, on another connection.
    if (code === f.REFUSED_STREAM && this.#reply === null && this.retryable && !this.rq.agent.gone) {
      this.#finish();
      return this.#settle(this.retry(this.pool, this.rq));
    }
    const reason = code === f.REFUSED_STREAM ? "the origin refused the stream" : `the origin reset the stream (HTTP/2 error ${code})`;
    if (this.#reply === null) return this.#fail("unreachable", reason);
    const sink = this.#sink;
    this.#finish();
    sink?.error(new Error(reason));
  }

  onWritable(): void {
    const waiter = this.#writableWaiter;
    this.#writableWaiter = null;
    waiter?.();
  }

  // --- BodySource: the response body, pushed to the agent's side ---

  start(sink: BodySink): void {
    this.#sink = sink;
    const pending = this.#pending;
    this.#pending = null;
    if (pending) {
      for (const chunk of pending) {
        if (this.#paused) this.#hold(sink, chunk);
        else if (sink.data(chunk)) this.#stream?.consumed(chunk.length);
        else {
          this.#paused = true;
          this.#uncredited += chunk.length;
        }
      }
    }
    if (this.#pendingEnd) this.#bodyEnd();
  }

  resume(): void {
    this.#paused = false;
    const n = this.#uncredited;
    this.#uncredited = 0;
    if (n > 0) this.#stream?.consumed(n);
  }

  cancel(): void {
    this.#sink = null;
    this.#stream?.reset(f.CANCEL);
    this.#finish();
  }

  // --- the agent, the clock ---

  agentGone(): void {
    this.#sink = null;
    this.#stream?.reset(f.CANCEL);
    this.#fail("unreachable", "the agent went away");
  }

  timedOut(): void {
    this.#stream?.reset(f.CANCEL);
    this.#fail("timeout", "header timeout");
  }

  #fail(failure: "unreachable" | "timeout", reason: string): void {
    this.#finish();
    this.#settle({ failure, reason });
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#clearTimer();
    this.rq.agent.unwatchGone(this);
    this.onWritable();
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #settle(r: ExchangeResult | Promise<ExchangeResult>): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(r);
  }
}
