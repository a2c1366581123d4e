// Forward upstream (docs/gateway.md#forwarding): the request goes out on a pooled HTTP/1.1 connection with the
// request-target as the agent sent it (plus the documented injection rewrites), no redirects followed, no
// decompression, bodies streamed both ways, hop-by-hop headers stripped, a header timeout. A WebSocket upgrade
// gets a fresh connection of its own (websocket.ts). Always the last stage: it always answers.
import { upstreamTimeout, upstreamUnreachable } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { answer, relay, type RequestVerdict, type Stage } from "../stage.ts";
import { traceUpstream, upstreamSettled } from "../trace.ts";
import { exchange } from "../upstream/exchange.ts";
import type { UpstreamPool } from "../upstream/pool.ts";
import { CHUNKED_BODY, dialTarget, upstreamBodyLength, upstreamHead } from "../upstream/requestHead.ts";
import { websocket, type WebSocketDeps } from "../websocket.ts";

export interface ForwardDeps extends WebSocketDeps {
  upstreams: UpstreamPool;
}

export function forwardStage(deps: ForwardDeps): Stage {
  const { upstreams, headerTimeoutSeconds } = deps;
  const headerTimeoutMs = headerTimeoutSeconds * 1000;

  function forward(rq: ProxyRequest): Promise<RequestVerdict> {
    const length = upstreamBodyLength(rq);
    const chunked = length === CHUNKED_BODY;
    const sent = performance.now();
    return exchange(upstreams, {
      scheme: rq.scheme,
      target: dialTarget(rq),
      method: rq.method,
      head: upstreamHead(rq, chunked ? "transfer-encoding: chunked\r\n" : ""),
      body: rq.body,
      chunked,
      length,
      headerTimeoutMs,
      agent: rq.presence,
      source: rq,
    }).then((result) => {
      // A body scan refused the request while it streamed, and the exchange broke off for it.
      if (rq.refusal !== null && !("reply" in result)) return rq.refusal;
      if ("reply" in result) {
        rq.upstreamMs = performance.now() - sent;
        return relay(result.reply);
      }
      return answer("error", result.failure === "timeout" ? upstreamTimeout(rq.host, headerTimeoutSeconds) : upstreamUnreachable(rq.host, rq.port, result.reason));
    });
  }

  return {
    name: "forward",
    reads: ["dial"],
    provides: ["upstream"],
    request(rq) {
      // Traced: a CLIENT span whose traceparent goes upstream instead of the agent's (docs/operations.md#traces).
      const span = rq.trace === null ? null : traceUpstream(rq);
      const verdict = rq.websocket ? websocket(rq, deps) : forward(rq);
      return span === null ? verdict : upstreamSettled(span, rq, verdict);
    },
  };
}
