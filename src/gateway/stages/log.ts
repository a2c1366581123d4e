// The request log (docs/gateway.md#request-logs): one row per authenticated proxied request (a metered one once its
// cost is known, when its body has ended; a held one updates the row the approval stage wrote), and one per
// passthrough tunnel or CONNECT refused after authentication. An intercepted tunnel has no row of its own:
// each request inside it has one. First in the list, so its response hook sees the final reply.
import type { RequestLogService } from "../../services/requestLogs.ts";
import { countGatewayRequest, observeGatewayLatency } from "../../observability/metrics.ts";
import { latencyOf, requestLogFieldsOf, writeRequestLog } from "../requestLog.ts";
import type { ProxyRequest } from "../request.ts";
import type { Stage } from "../stage.ts";
import type { Tunnel } from "../tunnel.ts";

export interface LogDeps {
  requestLogs: RequestLogService;
}

export function logStage({ requestLogs }: LogDeps): Stage {
  function record(rq: ProxyRequest, status: number, latencyMs: number): void {
    const approval = rq.approval;
    if (approval) {
      requestLogs.update(approval.requestLogId, { status, decision: rq.decision, latencyMs, injectionCount: rq.injectionCount, costNanos: rq.meter?.costNanos ?? null });
      countGatewayRequest(rq.decision, status);
    } else {
      writeRequestLog(requestLogs, requestLogFieldsOf(rq, status, latencyMs));
    }
    if (rq.upstreamMs !== null) observeGatewayLatency(rq.upstreamMs / 1000, Math.max(0, performance.now() - rq.started - rq.upstreamMs) / 1000);
  }

  return {
    name: "log",
    reads: [],
    provides: [],
    connected(tunnel: Tunnel) {
      if (!tunnel.authenticated || (tunnel.status === 200 && !tunnel.passthrough)) return;
      writeRequestLog(requestLogs, {
        agent: tunnel.agent,
        method: "CONNECT",
        host: tunnel.displayHost,
        path: "",
        status: tunnel.status,
        started: tunnel.started,
        injectionCount: 0,
        decision: tunnel.decision,
        requestId: tunnel.requestId,
      });
    },
    response(rq, reply) {
      if (!rq.authenticated) return reply;
      const status = reply.status;
      const latencyMs = latencyOf(rq.started);
      // A metered request is logged with its cost, a placeholder one with its final count: when the body has ended.
      if ((rq.meter || rq.placeholders.length > 0) && rq.forwarded) reply.onEnd(() => record(rq, status, latencyMs));
      else record(rq, status, latencyMs);
      return reply;
    },
  };
}
