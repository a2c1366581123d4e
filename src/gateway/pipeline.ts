// The per-request pipeline (CONTRACT §6.4): every gateway concern is a stage (stage.ts), in this one list,
// in contract order. Request hooks run top to bottom until one answers (the forward stage always does);
// response hooks run bottom to top for the stages that were reached. Adding a feature adds a stage here.
import { log } from "../log.ts";
import { REQUEST_ID_HEADER } from "../requestId.ts";
import type { GatewayContext } from "./context.ts";
import { badGateway } from "./errors.ts";
import { latencyOf, logFieldsOf, writeLog } from "./log.ts";
import { countGatewayRequest, observeGatewayLatency } from "../metrics.ts";
import { meterReply, releaseReservation } from "./meter.ts";
import { Reply } from "./reply.ts";
import type { ProxyRequest } from "./request.ts";
import type { Stage } from "./stage.ts";
import { holdForApproval } from "./stages/approval.ts";
import { authenticate } from "./stages/auth.ts";
import { meterAndAdmit } from "./stages/budget.ts";
import { describeConnections, selectConnection } from "./stages/connection.ts";
import { forward } from "./stages/forward.ts";
import { guidance } from "./stages/guidance.ts";
import { inject } from "./stages/inject.ts";
import { injectConnection } from "./stages/injectConnection.ts";
import { interceptPlaceholderRefresh } from "./stages/intercept.ts";
import { enforcePolicy } from "./stages/policy.ts";
import { askForIdentity, redactEcho } from "./stages/echo.ts";
import { guardCleartext, guardEgress } from "./stages/egress.ts";
import { guardResources } from "./stages/resources.ts";
import { requireClaim } from "./stages/claim.ts";
import { websocket } from "./websocket.ts";

const STAGES: Stage[] = [
  {
    // One request-log row per authenticated request (§6.16); a metered one once its cost is known.
    name: "log",
    response(rq, g, reply) {
      if (!rq.authenticated) return reply;
      const status = rq.status ?? reply.status;
      const latencyMs = latencyOf(rq.started);
      if (rq.meter && rq.forwarded) reply.onEnd(() => recordLog(rq, g, status, latencyMs));
      else recordLog(rq, g, status, latencyMs);
      return reply;
    },
  },
  { name: "auth", request: authenticate },
  { name: "egress", request: guardEgress },
  { name: "intercept", request: (rq) => interceptPlaceholderRefresh(rq) },
  {
    name: "connection",
    request: (rq) => selectConnection(rq),
    response(rq, _g, reply) {
      if (rq.forwarded && !rq.websocket && rq.connectionCandidates.length > 0) {
        reply.headers.set("x-credgate-connections", JSON.stringify(describeConnections(rq.connectionCandidates)));
      }
      return reply;
    },
  },
  { name: "policy", request: enforcePolicy },
  { name: "resources", request: (rq) => guardResources(rq) },
  { name: "inject-connection", request: injectConnection },
  { name: "inject", request: inject },
  { name: "cleartext", request: guardCleartext },
  { name: "claim", request: requireClaim },
  { name: "echo-guard", request: askForIdentity, response: redactEcho },
  {
    name: "budget",
    request: meterAndAdmit,
    response(rq, g, reply) {
      if (rq.meter && rq.forwarded) meterReply(rq, g, reply);
      else releaseReservation(rq, g);
      return reply;
    },
  },
  { name: "approval", request: holdForApproval },
  { name: "guidance", response: guidance },
  { name: "forward", request: (rq, g) => (rq.websocket ? websocket(rq, g) : forward(rq, g)) },
];

function recordLog(rq: ProxyRequest, g: GatewayContext, status: number, latencyMs: number): void {
  if (rq.logId) {
    g.services.requestLogs.update(rq.logId, { status, decision: rq.decision, latencyMs, injectionCount: rq.injectionCount, costNanos: rq.costNanos });
    countGatewayRequest(rq.decision, status);
  } else {
    writeLog(g.services, logFieldsOf(rq, status, latencyMs));
  }
  if (rq.upstreamMs !== null) observeGatewayLatency(rq.upstreamMs / 1000, Math.max(0, performance.now() - rq.started - rq.upstreamMs) / 1000);
}

export function runStages(rq: ProxyRequest, g: GatewayContext): Promise<Reply> {
  // Every log line written while the request is handled carries its id.
  return log.withContext({ requestId: rq.requestId }, run, rq, g);
}

async function run(rq: ProxyRequest, g: GatewayContext): Promise<Reply> {
  let reached = 0;
  let outcome: Response | Reply | undefined;
  for (const stage of STAGES) {
    reached++;
    if (!stage.request) continue;
    try {
      const r = stage.request(rq, g);
      outcome = r instanceof Promise ? await r : r;
    } catch (err) {
      log.error("gateway stage failed", { stage: stage.name, host: rq.host, error: (err as Error).message });
      rq.decision = "error";
      outcome = badGateway();
    }
    if (outcome) break;
  }
  let reply = outcome instanceof Reply ? outcome : Reply.of(outcome ?? badGateway());
  for (let i = reached - 1; i >= 0; i--) {
    const hook = STAGES[i]!.response;
    if (!hook) continue;
    try {
      const r = hook(rq, g, reply);
      reply = r instanceof Promise ? await r : r;
    } catch (err) {
      log.error("gateway response stage failed", { stage: STAGES[i]!.name, host: rq.host, error: (err as Error).message });
    }
  }
  if (!reply.fromUpstream) reply.headers.set(REQUEST_ID_HEADER, rq.requestId);
  return reply;
}
