// What the forward stage hands an upstream exchange, and what the exchange settles with: shared by the HTTP/1.1
// exchange (exchange.ts) and the HTTP/2 one (h2Exchange.ts), which otherwise would import each other.
import type { DialTarget } from "../../services/outbound.ts";
import type { AgentPresence } from "../agentSide.ts";
import type { Reply } from "../reply.ts";
import type { ProxyRequest } from "../request.ts";
import type { UpstreamPool } from "./pool.ts";

export interface UpstreamRequest {
  scheme: "https" | "http";
  /** Where to dial (checked by the egress guard) and the name to verify. */
  target: DialTarget;
  method: string;
  /** The whole request head, CRLFCRLF included (latin1 bytes). */
  head: string;
  body: ReadableStream<Uint8Array> | null;
  /** Send the body with chunked framing (the agent sent it so); otherwise its Content-Length is in the head. */
  chunked: boolean;
  /**
   * The body's length as the head declares it (−1: chunked): exactly that many bytes are sent, or the connection
   * is aborted (docs/gateway.md#message-framing).
   */
  length: number;
  headerTimeoutMs: number;
  /** Tells when the agent goes away. */
  agent: AgentPresence;
  /** The request itself: an h2 origin gets its head as fields, and its trailers (docs/gateway.md#http2-and-grpc). */
  source: ProxyRequest;
}

export type ExchangeResult = { reply: Reply } | { failure: "unreachable" | "timeout"; reason: string };

/** Sends the request once more on a fresh connection (exchange.ts retry): handed to an HTTP/2 exchange. */
export type Retry = (pool: UpstreamPool, rq: UpstreamRequest) => Promise<ExchangeResult>;

/** A request body that does not match the length its head declares (docs/gateway.md#message-framing). */
export class BodyLengthError extends Error {
  static shorter(): BodyLengthError {
    return new BodyLengthError("the request body is shorter than its content-length");
  }

  static longer(): BodyLengthError {
    return new BodyLengthError("the request body is longer than its content-length");
  }
}
