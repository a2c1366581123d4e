// What a traced flow records (docs/operations.md#traces). The runner (pipeline.ts) calls these only when a
// Tracer exists, so with tracing off none of this runs:
//   - a SERVER span per request (`credgate.gateway <METHOD>`) continuing the agent's `traceparent`, from the
//     head until the reply's body is delivered, with what the request log knows (agent, project, decision,
//     status, injections, matched rule, request id; the path without its query, never a value);
//   - a SERVER span per CONNECT (`credgate.gateway CONNECT`), until it is answered (passthrough: dialled);
//   - a child span per stage that had to wait (`credgate.stage <name>`: a vault lookup, an approval hold, a
//     rate-limit count, an OAuth refresh, a DNS answer), from when its hook returned until it settled. Stages
//     that answer at once are not timed: together they take a few µs, and what makes a request slow is a wait;
//   - a CLIENT span for the upstream exchange (`credgate.upstream <METHOD>`, forward stage), from the dial or
//     pooled connection to the end of the response body; its `traceparent` replaces the agent's upstream.
import { SpanKind, type Span, type Tracer } from "../observability/tracing.ts";
import { TRACEPARENT_HEADER } from "../observability/traceContext.ts";
import type { Flow } from "./flow.ts";
import { Reply } from "./reply.ts";
import type { ProxyRequest } from "./request.ts";
import type { RequestVerdict } from "./stage.ts";
import type { Tunnel } from "./tunnel.ts";

/** Paths longer than this are cut in the span (a request-target can be 64 KiB). */
const MAX_PATH = 2048;

/** Starts the request's span when its trace is sampled (`rq.trace`); false when it is not traced. */
export function traceRequest(tracer: Tracer, rq: ProxyRequest): boolean {
  const span = tracer.serverSpan(`credgate.gateway ${rq.method}`, rq.headers.get(TRACEPARENT_HEADER), rq.started);
  if (span === null) return false;
  span
    .set("http.request.method", rq.method)
    .set("url.scheme", rq.scheme)
    .set("url.path", rq.path.length > MAX_PATH ? rq.path.slice(0, MAX_PATH) : rq.path)
    .set("server.address", rq.host)
    .set("server.port", rq.port)
    .set("credgate.request_id", rq.requestId);
  rq.trace = span;
  return true;
}

/** The request has its reply: the span takes what the stages found and ends when the body is delivered. */
export function traceReply(rq: ProxyRequest, reply: Reply): Reply {
  const span = rq.trace!;
  span.set("http.response.status_code", reply.status).set("credgate.decision", rq.decision).set("credgate.injection_count", rq.injectionCount);
  flowAttributes(span, rq);
  if (rq.matchedRule) span.set("credgate.rule.name", rq.matchedRule.name).set("credgate.rule.id", rq.matchedRule.logicalId);
  if (rq.approval) span.set("credgate.approval.id", rq.approval.id);
  // What the gateway's own stages took until the response head, the upstream's time excepted (the
  // credgate_gateway_added_latency_seconds figure, per request).
  if (rq.upstreamMs !== null) span.set("credgate.gateway.added_ms", Math.max(0, performance.now() - rq.started - rq.upstreamMs));
  if (reply.status >= 500) span.fail();
  reply.onEnd(() => span.finish());
  return reply;
}

/** Starts the CONNECT's span when its trace is sampled (`tunnel.trace`). */
export function traceConnect(tracer: Tracer, tunnel: Tunnel): void {
  const span = tracer.serverSpan("credgate.gateway CONNECT", tunnel.traceparent, tunnel.started);
  if (span === null) return;
  span.set("http.request.method", "CONNECT").set("server.address", tunnel.host).set("server.port", tunnel.port).set("credgate.request_id", tunnel.requestId);
  tunnel.trace = span;
}

/** The CONNECT was answered (`tunnel.status`): its span ends. */
export function traceConnected(tunnel: Tunnel): void {
  const span = tunnel.trace!;
  span
    .set("http.response.status_code", tunnel.status)
    .set("credgate.decision", tunnel.decision)
    .set("credgate.tunnel", tunnel.status !== 200 ? "refused" : tunnel.passthrough ? "passthrough" : "intercepted");
  flowAttributes(span, tunnel);
  if (tunnel.status >= 500) span.fail();
  span.finish();
}

function flowAttributes(span: Span, flow: Flow): void {
  if (!flow.authenticated) return;
  span.set("credgate.agent.id", flow.agent.id).set("credgate.project.id", flow.agent.projectId);
}

/** A stage's hook returned a promise: a child span of the flow's until it settles. */
export function traceWait<T>(span: Span, stage: string, pending: Promise<T>): Promise<T> {
  const wait = span.child(`credgate.stage ${stage}`, SpanKind.INTERNAL).set("credgate.stage", stage);
  return pending.then(
    (v) => {
      wait.finish();
      return v;
    },
    (err: unknown) => {
      wait.fail().finish();
      throw err;
    },
  );
}

/**
 * The request goes upstream: a CLIENT span, whose `traceparent` replaces the agent's in the request (the
 * agent's `tracestate` goes on as it came). Called before the request head is written.
 */
export function traceUpstream(rq: ProxyRequest): Span {
  const span = rq.trace!.child(`credgate.upstream ${rq.method}`, SpanKind.CLIENT);
  span.set("http.request.method", rq.method).set("server.address", rq.host).set("server.port", rq.port).set("url.scheme", rq.scheme);
  if (rq.dial !== null) span.set("network.peer.address", rq.dial.address);
  rq.headers.set(TRACEPARENT_HEADER, span.traceparent);
  return span;
}

/** The upstream exchange's outcome: the CLIENT span ends with the response body, or at once without a response. */
export function upstreamSettled(span: Span, rq: ProxyRequest, verdict: Promise<RequestVerdict>): Promise<RequestVerdict> {
  return verdict.then(
    (v) => {
      const response = v.response;
      if (response === null) return v;
      span.set("http.response.status_code", response.status);
      if (rq.upstreamMs !== null) span.set("credgate.upstream.time_to_head_ms", rq.upstreamMs);
      // An answer of the gateway's own (unreachable, timeout) or an upstream's error status.
      if (v.decision === "error" || response.status >= 400) span.fail();
      if (response instanceof Reply) response.onEnd(() => span.finish());
      else span.finish();
      return v;
    },
    (err: unknown) => {
      span.fail().finish();
      throw err;
    },
  );
}
