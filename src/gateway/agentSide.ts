// The agent's side of one proxied request, whatever carries it: an HTTP/1.1 connection (client/) or an HTTP/2
// stream (h2/). The pipeline reads the request through this and never touches the connection itself.
import type { AgentSocket } from "./client/socket.ts";
import type { HeaderLines } from "./http1/head.ts";

/** Who wants to hear that the agent went away (an object, not a closure: one is made per request). */
export interface GoneWatcher {
  agentGone(): void;
}

/** Whether the agent is still there for its answer, told by plain calls (no AbortSignal on the hot path). */
export interface AgentPresence {
  /** The agent went away before the answer was complete. */
  readonly gone: boolean;
  /** `watcher` hears it once if the agent goes away. */
  watchGone(watcher: GoneWatcher): void;
  unwatchGone(watcher: GoneWatcher): void;
}

export interface AgentSide extends AgentPresence {
  readonly method: string;
  /** The request-target exactly as sent. */
  readonly target: string;
  /** The head's header lines (names as sent, repeats kept). */
  readonly headerLines: HeaderLines;
  /** The same headers as a Headers object (made on first use: most requests need none). */
  readonly headers: Headers;
  readonly body: ReadableStream<Uint8Array> | null;
  /** The agent sent its body chunked. */
  readonly chunked: boolean;
  /** Aborted when the agent goes away before the answer is complete. */
  readonly signal: AbortSignal;
  /** A gRPC call: HTTP/2 with an `application/grpc` content type (docs/gateway.md#http2-and-grpc). */
  readonly grpc: boolean;
  /** The agent's HTTP/2 request trailers, once its body has ended (null: none, or HTTP/1.1). */
  readonly trailers: HeaderLines | null;
  /**
   * The body turned out not to be what its head declared (an HTTP/2 stream whose DATA disagreed with its
   * content-length: docs/gateway.md#message-framing): the request is refused, whatever it reached.
   */
  readonly malformed?: boolean;
  /** Hands the agent's connection over (a WebSocket after 101), with any bytes already read past the request. */
  takeOver(): { socket: AgentSocket; buffered: Buffer };
}
