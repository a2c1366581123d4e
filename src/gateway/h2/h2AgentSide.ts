// One request stream of an agent's HTTP/2 connection (h2AgentConnection.ts), as the pipeline reads it
// (docs/gateway.md#http2-and-grpc): its head, its body as a stream credited to the agent only as it is read, its
// trailers, and the stream's events — a reset (the agent went away), or an answer that went whole before the body
// ended (the rest is let go).
import { AgentSideBase } from "../agentSideBase.ts";
import type { AgentSide } from "../agentSide.ts";
import { isGrpcContentType } from "../grpc.ts";
import { headerValue, type HeaderLines } from "../http1/head.ts";
import * as f from "./frames.ts";
import type { HeaderField } from "./hpack.ts";
import { trailerFields } from "./message.ts";
import type { H2Stream, StreamHandler } from "./stream.ts";

/** What writes the stream's answer: told when the stream goes away or may take more. */
export interface StreamWriter {
  abort(): void;
  writable(): void;
}

/** How much of a request body waits in the stream before the agent is told to hold back (its window). */
const BODY_HIGH_WATER = 64 * 1024;
/**
 * How much more of a body answered before it was read is taken (credited and dropped) for the agent to finish it
 * cleanly; past it the stream is stopped with RST_STREAM NO_ERROR (docs/gateway.md#http2-and-grpc). Taking the
 * rest rather than stopping at once: some clients (curl 7.x) take a reset while they still upload as a failure.
 */
const DRAIN_LIMIT = 8 * 1024 * 1024;

/** One request stream, as the pipeline reads it. */
export class H2AgentSide extends AgentSideBase implements AgentSide, StreamHandler {
  readonly body: ReadableStream<Uint8Array> | null;
  readonly chunked: boolean;
  readonly grpc: boolean;
  trailers: HeaderLines | null = null;
  #body: ReadableStreamDefaultController<Uint8Array> | null = null;
  /** Body bytes handed to the stream, and the part of them the agent has been credited for. */
  #enqueued = 0;
  #credited = 0;
  #bodyDone = false;
  /**
   * The chunk that completes a declared content-length, held until the stream ends there: DATA beyond it, or a
   * reset, must leave the upstream without a whole request (docs/gateway.md#message-framing).
   */
  #last: Buffer | null = null;
  /** The reply being written: told when the stream goes away or may take more. */
  writer: StreamWriter | null = null;
  /**
   * The answer is the gateway's own (a stage's refusal or local answer), not the origin's: nothing will forward the
   * body. An origin that answered early may still be reading it, and it goes on to the origin.
   */
  gatewayAnswer = false;
  /** Answered early: how much more of the body is taken and dropped before the stream is stopped (−1: not answered). */
  #drainLeft = -1;

  constructor(
    readonly stream: H2Stream,
    readonly method: string,
    readonly target: string,
    readonly headerLines: HeaderLines,
    endStream: boolean,
    contentLength: number,
  ) {
    super();
    stream.handler = this;
    stream.declaredLength = contentLength;
    this.grpc = isGrpcContentType(headerValue(headerLines, "content-type"));
    // Even a declared length of 0 is a body until the stream ends: the request is whole only then
    // (docs/gateway.md#message-framing).
    const hasBody = !endStream;
    this.chunked = hasBody && contentLength < 0;
    this.body = hasBody ? this.#bodyStream() : null;
    if (!hasBody) this.#bodyDone = true;
  }

  #bodyStream(): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#body = controller;
        },
        pull: (controller) => this.#credit(controller),
        cancel: () => {
          // Nobody reads the rest: it is credited as it comes and dropped, and so is what waited unread.
          this.#body = null;
          this.#creditUnread();
        },
      },
      { highWaterMark: BODY_HIGH_WATER, size: (c) => c?.byteLength ?? 0 },
    );
  }

  /** The agent may send as much again as the reader has taken. */
  #credit(controller: ReadableStreamDefaultController<Uint8Array>): void {
    const queued = BODY_HIGH_WATER - (controller.desiredSize ?? 0);
    const taken = this.#enqueued - Math.max(0, queued) - this.#credited;
    if (taken > 0) {
      this.#credited += taken;
      this.stream.consumed(taken);
    }
  }

  /** Body bytes handed to the stream that the agent has not been credited for (the reader never took them): credited. */
  #creditUnread(): void {
    const owed = this.#enqueued - this.#credited;
    this.#credited = this.#enqueued;
    this.stream.consumed(owed);
  }

  /**
   * The answer has gone whole before the body ended (docs/gateway.md#http2-and-grpc). The gateway's own answer: whoever
   * still reads the body stops, what waited unread is credited, and the rest is taken and dropped as it comes — up to
   * DRAIN_LIMIT, then the stream is stopped. The origin's: the body goes on to it.
   */
  onAnsweredEarly(): void {
    if (!this.gatewayAnswer) return;
    const last = this.#last;
    this.#last = null;
    if (last !== null) this.stream.consumed(last.length);
    const body = this.#body;
    this.#body = null;
    if (!this.#bodyDone) {
      this.#bodyDone = true;
      try {
        body?.error(new Error("the answer was complete before the request body"));
      } catch {}
    }
    this.#creditUnread();
    this.#drainLeft = DRAIN_LIMIT;
  }

  /** The stream's DATA disagreed with its content-length, and it was reset for it. */
  get malformed(): boolean {
    return this.stream.malformed;
  }

  takeOver(): never {
    throw new Error("an HTTP/2 stream cannot be taken over (WebSocket over HTTP/2 is not offered)");
  }

  // --- the stream's events ---

  onHeaders(_stream: H2Stream, fields: HeaderField[]): void {
    const lines = trailerFields(fields);
    if (lines === null) return this.stream.reset(f.PROTOCOL_ERROR);
    this.trailers = lines;
    this.#endBody();
  }

  onData(_stream: H2Stream, chunk: Buffer, endStream: boolean): void {
    const body = this.#body;
    if (chunk.length > 0) {
      if (this.#drainLeft >= 0 && (this.#drainLeft -= chunk.length) < 0) return this.stream.stop();
      if (body === null || this.#bodyDone) this.stream.consumed(chunk.length);
      else if (!endStream && this.stream.receivedLength === this.stream.declaredLength) this.#last = chunk;
      else this.#enqueue(body, chunk);
    }
    if (endStream) this.#endBody();
  }

  #enqueue(body: ReadableStreamDefaultController<Uint8Array>, chunk: Buffer): void {
    this.#enqueued += chunk.length;
    try {
      body.enqueue(chunk);
    } catch {}
    if ((body.desiredSize ?? 0) > 0) this.#credit(body);
  }

  #endBody(): void {
    if (this.#bodyDone) return;
    this.#bodyDone = true;
    const last = this.#last;
    this.#last = null;
    if (last !== null && this.#body !== null) this.#enqueue(this.#body, last);
    try {
      this.#body?.close();
    } catch {}
  }

  onReset(_stream: H2Stream, code: number): void {
    this.#last = null;
    // NO_ERROR once the answer is complete: the agent has it whole (the stream was stopped past DRAIN_LIMIT, or the
    // agent ended it itself); the body's reader, if any, stops, and nothing else is undone.
    const answered = code === f.NO_ERROR && this.stream.localEnded;
    if (!this.#bodyDone) {
      this.#bodyDone = true;
      const why = answered
        ? "the answer was complete before the request body"
        : this.stream.malformed
          ? "the request body disagreed with its content-length"
          : `the agent reset the stream (${code})`;
      try {
        this.#body?.error(new Error(why));
      } catch {}
    }
    if (answered) return;
    this.abandon();
    this.writer?.abort();
  }

  onWritable(): void {
    this.writer?.writable();
  }
}
