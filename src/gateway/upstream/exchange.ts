// One request/response exchange with an upstream over a pooled connection (docs/gateway.md#forwarding): the head is
// written as the pipeline built it (request-target byte for byte), the body streamed with backpressure,
// redirects and encodings left alone, a header timeout, and the response handed back as a Reply whose body
// comes straight off the socket. The connection goes back to the pool only after a complete exchange.
import { BodyFramer, chunk, lastChunk, UNTIL_CLOSE } from "../http1/body.ts";
import { connectionTokens, framingOf, MAX_HEAD_BYTES, parseResponseHead, type ResponseHead } from "../http1/head.ts";
import { Reply, type BodySink, type BodySource } from "../reply.ts";
import type { ConnectionUser, UpstreamConnection } from "./originConnection.ts";
import type { Acquired, UpstreamPool } from "./pool.ts";
import type { GoneWatcher } from "../agentSide.ts";
import { responseLinesForAgent } from "../headers.ts";
import { H2Exchange } from "./h2Exchange.ts";
import { BodyLengthError, type ExchangeResult, type UpstreamRequest } from "./upstreamRequest.ts";

export { BodyLengthError, type ExchangeResult, type UpstreamRequest } from "./upstreamRequest.ts";

export function exchange(pool: UpstreamPool, rq: UpstreamRequest): Promise<ExchangeResult> {
  // A head that promises a body nobody will send is never written (docs/gateway.md#message-framing).
  if (rq.body === null && rq.length > 0) return Promise.resolve(SHORT_BODY);
  if (rq.body !== null && rq.length === 0) return emptyBodyFirst(pool, rq, rq.body);
  let acquired: Acquired | Promise<Acquired>;
  try {
    acquired = pool.acquire(rq.scheme, rq.target);
  } catch (err) {
    return Promise.resolve({ failure: "unreachable", reason: (err as Error).message });
  }
  // A pooled connection is used at once: no promise hop before the request leaves.
  if (!(acquired instanceof Promise)) return exchangeOn(pool, acquired, rq);
  return acquired.then(
    (a) => exchangeOn(pool, a, rq),
    (err: Error) => ({ failure: "unreachable", reason: err.message }),
  );
}

/**
 * A body declared empty whose end is still to come (an h2 stream with `content-length: 0` and no END_STREAM yet):
 * the head alone would be a whole request upstream, so it waits for the end; DATA, or a reset, and nothing is
 * sent (docs/gateway.md#message-framing).
 */
async function emptyBodyFirst(pool: UpstreamPool, rq: UpstreamRequest, body: ReadableStream<Uint8Array>): Promise<ExchangeResult> {
  const reader = body.getReader();
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      if (r.value.byteLength > 0) throw BodyLengthError.longer();
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    return { failure: "unreachable", reason: err instanceof BodyLengthError ? err.message : "the request body broke off" };
  }
  return exchange(pool, { ...rq, body: null });
}

/**
 * A reused connection the upstream had just closed gets a request without a body sent again on a fresh one
 * (nothing was answered); this first exchange settles with the second one's result.
 */
function exchangeOn(pool: UpstreamPool, acquired: Acquired, rq: UpstreamRequest, retryable = true): Promise<ExchangeResult> {
  if (acquired.h2 !== null) return new H2Exchange(pool, acquired.h2, rq, retryable && !rq.body, retry).run();
  // gRPC is never translated to HTTP/1.1 (docs/gateway.md#http2-and-grpc): the unused connection goes back.
  if (rq.source.grpc) {
    pool.release(acquired.key, acquired.conn);
    return Promise.resolve(NO_HTTP2);
  }
  return new Exchange(pool, acquired.key, acquired.conn, rq, retryable && acquired.reused && !rq.body).run();
}

const CLOSED_BEFORE_RESPONSE: ExchangeResult = { failure: "unreachable", reason: "connection closed before the response" };
const NO_HTTP2: ExchangeResult = { failure: "unreachable", reason: "the origin does not speak HTTP/2" };
const SHORT_BODY: ExchangeResult = { failure: "unreachable", reason: BodyLengthError.shorter().message };

/** The request once more on a fresh (or another pooled) connection; never retried a second time. */
export async function retry(pool: UpstreamPool, rq: UpstreamRequest): Promise<ExchangeResult> {
  let again: Acquired;
  try {
    again = await pool.acquire(rq.scheme, rq.target);
  } catch (err) {
    return { failure: "unreachable", reason: (err as Error).message };
  }
  return exchangeOn(pool, again, rq, false);
}

/**
 * The header timeout fired: a module function given the exchange as the timer's argument, so no closure is made
 * per request. (A shared deadline set swept by one interval made no timer per request, but under the bench's
 * load it raised the gateway's peak RSS by 25-30 MB; measured against this form.)
 */
function headTimedOut(exchange: Exchange): void {
  exchange.timedOut();
}

class Exchange implements ConnectionUser, BodySource, GoneWatcher {
  #resolve!: (r: ExchangeResult | Promise<ExchangeResult>) => void;
  #headBuf: Buffer | null = null;
  #head: ResponseHead | null = null;
  #framer: BodyFramer | null = null;
  #sink: BodySink | null = null;
  /** Body bytes that came before the agent's side started reading. */
  #pending: Buffer[] | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #requestSent = false;
  #responseDone = false;
  #keepAlive = true;
  #gotBytes = false;
  #connClosed = false;
  #drainWaiter: (() => void) | null = null;
  length: number | null = null;

  constructor(
    private readonly pool: UpstreamPool,
    private readonly key: string,
    private readonly conn: UpstreamConnection,
    private readonly rq: UpstreamRequest,
    /** Whether closing before any byte of the response means sending the request again on a fresh connection. */
    private readonly retryable: boolean,
  ) {}

  run(): Promise<ExchangeResult> {
    return new Promise((resolve) => {
      this.#resolve = resolve;
      if (this.rq.agent.gone) return this.#abort();
      this.rq.agent.watchGone(this);
      this.conn.user = this;
      this.#timer = setTimeout(headTimedOut, this.rq.headerTimeoutMs, this);
      this.conn.send(this.rq.head);
      if (this.rq.body) void this.#sendBody(this.rq.body);
      else this.#requestSent = true;
    });
  }

  async #sendBody(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader();
    // Bytes the head still promises (docs/gateway.md#message-framing); unused when chunked.
    let left = this.rq.length;
    try {
      for (;;) {
        const r = await reader.read();
        if (this.conn.closed) return void reader.cancel().catch(() => {});
        if (r.done) break;
        if (r.value.byteLength === 0) continue;
        if (!this.rq.chunked) {
          left -= r.value.byteLength;
          // Past the declared length the origin would read the bytes as the next request: none is written.
          if (left < 0) throw BodyLengthError.longer();
        }
        if (!this.conn.send(this.rq.chunked ? chunk(r.value) : r.value)) await new Promise<void>((resolve) => (this.#drainWaiter = resolve));
      }
      if (this.rq.chunked) this.conn.send(lastChunk());
      // Short of it, the origin would take the next request's first bytes for the rest.
      else if (left > 0) throw BodyLengthError.shorter();
      this.#requestSent = true;
      this.#maybeRelease();
    } catch (err) {
      // The agent's body broke off, did not match its length, or a body scan refused it
      // (docs/guards.md#credential-leak-guard): this connection carries half a request and cannot be reused,
      // and no answer is coming on it.
      reader.cancel().catch(() => {});
      this.#keepAlive = false;
      if (this.#head === null) this.#fail("unreachable", err instanceof BodyLengthError ? err.message : "the request body broke off");
      else this.conn.close();
    }
  }

  drain(): void {
    const waiter = this.#drainWaiter;
    this.#drainWaiter = null;
    waiter?.();
  }

  data(buf: Buffer): void {
    this.#gotBytes = true;
    if (this.#head === null) return this.#readHead(buf);
    this.#body(buf, 0);
  }

  #readHead(buf: Buffer): void {
    this.#headBuf = this.#headBuf ? Buffer.concat([this.#headBuf, buf]) : buf;
    for (;;) {
      const end = this.#headBuf.indexOf("\r\n\r\n");
      if (end < 0) {
        if (this.#headBuf.length > MAX_HEAD_BYTES) this.#fail("unreachable", "response head too large");
        return;
      }
      const head = parseResponseHead(this.#headBuf, end);
      if (!head) return this.#fail("unreachable", "malformed response from upstream");
      const rest = this.#headBuf.subarray(end + 4);
      // Interim responses (103 Early Hints; 100 when the agent's Expect was not forwarded) are not relayed.
      if (head.status >= 100 && head.status < 200) {
        this.#headBuf = rest;
        if (rest.length === 0) return;
        continue;
      }
      this.#headBuf = null;
      return this.#startResponse(head, rest);
    }
  }

  #startResponse(head: ResponseHead, rest: Buffer): void {
    this.#clearTimer();
    const listed = connectionTokens(head.headers);
    if (listed.has("close")) this.#keepAlive = false;
    const framing = framingOf(head.headers);
    if (framing === undefined) return this.#fail("unreachable", "invalid body framing in the upstream response");
    const kept = responseLinesForAgent(head.headers, listed);
    if (kept === null) return this.#fail("unreachable", "malformed response from upstream");
    this.#head = head;
    const bodyless = this.rq.method === "HEAD" || head.status === 204 || head.status === 304;
    const reply = new Reply(head.status, head.reason, kept, null);
    reply.fromUpstream = true;
    if (bodyless || framing === 0) {
      this.#responseDone = true;
      this.#settle({ reply });
      this.#maybeRelease();
      return;
    }
    this.#framer = new BodyFramer(framing ?? UNTIL_CLOSE);
    if (framing === null) this.#keepAlive = false;
    this.length = framing !== null && framing >= 0 ? framing : null;
    reply.body = this;
    if (rest.length > 0) this.#pending = [rest];
    this.#settle({ reply });
  }

  // --- BodySource: the response body, pushed to the agent's side ---

  start(sink: BodySink): void {
    this.#sink = sink;
    const pending = this.#pending;
    this.#pending = null;
    if (pending) for (const buf of pending) this.#body(buf, 0);
    if (this.#connClosed) this.#afterClose();
  }

  resume(): void {
    this.conn.resume();
  }

  cancel(): void {
    this.#sink = null;
    this.#finish();
    this.conn.close();
  }

  #body(buf: Buffer, from: number): void {
    const framer = this.#framer;
    if (!framer || this.#responseDone) {
      // Bytes after a complete response that nobody asked for: the connection is out of step.
      this.#keepAlive = false;
      this.conn.close();
      return;
    }
    if (!this.#sink) {
      (this.#pending ??= []).push(from === 0 ? buf : buf.subarray(from));
      return;
    }
    let paused = false;
    const end = framer.feed(buf, from, (data) => {
      if (this.#sink && !this.#sink.data(data)) paused = true;
    });
    if (framer.failed) {
      this.#keepAlive = false;
      this.#sink?.error(new Error("invalid chunked body from upstream"));
      this.#finish();
      this.conn.close();
      return;
    }
    if (paused) this.conn.pause();
    if (end < 0) return;
    if (end < buf.length) this.#keepAlive = false;
    this.#responseDone = true;
    this.#sink?.end();
    this.#maybeRelease();
  }

  closed(): void {
    this.#connClosed = true;
    if (this.#head === null) {
      if (!this.#gotBytes && !this.rq.agent.gone) {
        this.#finish();
        return this.#settle(this.retryable ? retry(this.pool, this.rq) : CLOSED_BEFORE_RESPONSE);
      }
      return this.#fail("unreachable", "connection closed before the response was complete");
    }
    // Before the agent's side has started reading, start() settles the end.
    if (this.#sink || this.#responseDone) this.#afterClose();
  }

  #afterClose(): void {
    if (!this.#responseDone) {
      this.#responseDone = true;
      if (this.#framer?.framing === UNTIL_CLOSE) this.#sink?.end();
      else this.#sink?.error(new Error("upstream closed the connection mid-body"));
    }
    this.#finish();
  }

  #maybeRelease(): void {
    if (!this.#responseDone || !this.#requestSent) return;
    this.#finish();
    if (this.#keepAlive && !this.conn.closed) this.pool.release(this.key, this.conn);
    else this.conn.close();
  }

  #finish(): void {
    this.#clearTimer();
    this.rq.agent.unwatchGone(this);
    if (this.conn.user === this) this.conn.user = null;
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** The response head did not come in time. */
  timedOut(): void {
    this.#fail("timeout", "header timeout");
  }

  agentGone(): void {
    this.#abort();
  }

  #abort(): void {
    this.#sink = null;
    this.#finish();
    this.conn.close();
    this.#settle({ failure: "unreachable", reason: "the agent went away" });
  }

  #fail(failure: "unreachable" | "timeout", reason: string): void {
    this.#finish();
    this.conn.close();
    this.#settle({ failure, reason });
  }

  #settled = false;
  #settle(r: ExchangeResult | Promise<ExchangeResult>): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(r);
  }
}
