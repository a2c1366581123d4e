// The per-request pipeline (docs/gateway.md#order-of-checks): every gateway concern is a stage (stage.ts), in this one list,
// in the documented order. Request hooks run top to bottom until one answers (the forward stage always does);
// response hooks run bottom to top for the stages that were reached. Adding a feature adds a stage here.
import { log } from "../observability/log.ts";
import { REQUEST_ID_HEADER } from "../observability/requestId.ts";
import type { GatewayContext } from "./context.ts";
import { badGateway } from "./errors.ts";
import { latencyOf, logFieldsOf, writeLog } from "./requestLog.ts";
import { countGatewayRequest, observeGatewayLatency } from "../observability/metrics.ts";
import { meterReply, releaseReservation } from "./meter.ts";
import { Reply } from "./reply.ts";
import type { ProxyRequest } from "./request.ts";
import type { Stage } from "./stage.ts";
import { holdForApproval } from "./stages/approval.ts";
import { authenticate } from "./stages/auth.ts";
import { meterAndAdmit } from "./stages/budget.ts";
import { describeConnections, selectConnection } from "./stages/appConnection.ts";
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
    // One request-log row per authenticated request (docs/gateway.md#request-logs); a metered one once its cost is known.
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

export function runStages(rq: ProxyRequest, g: GatewayContext): Reply | Promise<Reply> {
  // Every log line written while the request is handled carries its id.
  return log.withContext({ requestId: rq.requestId }, requestFrom, rq, g, 0);
}

type Outcome = Response | Reply | undefined;

/**
 * The request hooks from stage `i` on, synchronously until one returns a promise (then from its answer on);
 * then the response hooks back from the stage that answered. Plain calls and promise callbacks rather than an
 * async function: this runs for every request.
 */
function requestFrom(rq: ProxyRequest, g: GatewayContext, i: number): Reply | Promise<Reply> {
  for (; i < STAGES.length; i++) {
    const stage = STAGES[i]!;
    if (!stage.request) continue;
    let outcome: Outcome | Promise<Outcome>;
    try {
      outcome = stage.request(rq, g);
    } catch (err) {
      outcome = stageFailed(rq, stage, err as Error);
    }
    if (outcome instanceof Promise) {
      const at = i;
      return outcome.then(
        (o) => (o ? responseFrom(rq, g, at, o) : requestFrom(rq, g, at + 1)),
        (err: Error) => responseFrom(rq, g, at, stageFailed(rq, stage, err)),
      );
    }
    if (outcome) return responseFrom(rq, g, i, outcome);
  }
  // The forward stage always answers: reaching the end is a gap in the list.
  return responseFrom(rq, g, STAGES.length - 1, undefined);
}

function stageFailed(rq: ProxyRequest, stage: Stage, err: Error): Response {
  log.error("gateway stage failed", { stage: stage.name, host: rq.host, error: err.message });
  rq.decision = "error";
  return badGateway();
}

/** The response hooks from stage `i` down to the first, each given the reply the one after it left. */
function responseFrom(rq: ProxyRequest, g: GatewayContext, i: number, outcome: Outcome): Reply | Promise<Reply> {
  let reply = outcome instanceof Reply ? outcome : Reply.of(outcome ?? badGateway());
  for (; i >= 0; i--) {
    const stage = STAGES[i]!;
    if (!stage.response) continue;
    let next: Reply | Promise<Reply>;
    try {
      next = stage.response(rq, g, reply);
    } catch (err) {
      responseStageFailed(rq, stage, err as Error);
      continue;
    }
    if (next instanceof Promise) {
      const at = i;
      const before = reply;
      return next.then(
        (r) => responseFrom(rq, g, at - 1, r),
        (err: Error) => {
          responseStageFailed(rq, stage, err);
          return responseFrom(rq, g, at - 1, before);
        },
      );
    }
    reply = next;
  }
  if (!reply.fromUpstream) reply.headers.set(REQUEST_ID_HEADER, rq.requestId);
  return reply;
}

function responseStageFailed(rq: ProxyRequest, stage: Stage, err: Error): void {
  log.error("gateway response stage failed", { stage: stage.name, host: rq.host, error: err.message });
}
