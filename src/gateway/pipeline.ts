// The per-request pipeline (CONTRACT §6.4) for tunnel and forward connections. Stages run in contract
// order; each either lets the request continue or answers it. Stages of later issues (policy, approvals,
// connections, budgets) slot in between without touching the others.
import { normalizeHost, pathWithoutQuery } from "../core/patterns.ts";
import { log } from "../log.ts";
import type { ForwardConn, TunnelConn } from "./connections.ts";
import type { GatewayContext } from "./context.ts";
import { badGateway, gatewayJson } from "./errors.ts";
import { isWebSocketUpgrade, requestHeadersForUpstream } from "./headers.ts";
import { latencyOf, logFieldsOf, writeLog } from "./log.ts";
import type { ProxyRequest } from "./request.ts";
import { holdForApproval } from "./stages/approval.ts";
import { authenticate } from "./stages/auth.ts";
import { forward } from "./stages/forward.ts";
import { guidance } from "./stages/guidance.ts";
import { describeConnections, selectConnection } from "./stages/connection.ts";
import { inject } from "./stages/inject.ts";
import { injectConnection } from "./stages/injectConnection.ts";
import { guardResources } from "./stages/resources.ts";
import { interceptPlaceholderRefresh } from "./stages/intercept.ts";
import { meterAndAdmit } from "./stages/budget.ts";
import { meterResponse } from "./meter.ts";
import { enforcePolicy } from "./stages/policy.ts";
import { websocket } from "./websocket.ts";

type Target = Pick<ProxyRequest, "scheme" | "host" | "port" | "authority" | "target">;

/** Where the request goes: the tunnel's CONNECT authority, or the absolute-form URL. */
function targetOf(request: Request, conn: TunnelConn | ForwardConn): Target | null {
  if (conn.kind === "tunnel") {
    const url = new URL(request.url);
    return { scheme: conn.scheme, host: conn.host, port: conn.port, authority: conn.authority, target: url.pathname + url.search };
  }
  let url: URL;
  try {
    url = new URL(conn.url);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  const scheme = url.protocol === "https:" ? "https" : "http";
  const port = Number(url.port) || (scheme === "https" ? 443 : 80);
  return { scheme, host: normalizeHost(url.hostname), port, authority: url.host, target: url.pathname + url.search };
}

export async function handleProxied(request: Request, conn: TunnelConn | ForwardConn, g: GatewayContext): Promise<Response> {
  const response = await proxied(request, conn, g);
  // One request per forward connection (see ForwardConn).
  if (conn.kind === "forward") response.headers.set("connection", "close");
  return response;
}

async function proxied(request: Request, conn: TunnelConn | ForwardConn, g: GatewayContext): Promise<Response> {
  const started = performance.now();
  const t = targetOf(request, conn);
  if (!t) return gatewayJson(400, { error: "bad_request", message: "Only http and https URLs can be proxied." });
  const method = request.method;
  const defaultPort = t.scheme === "https" ? 443 : 80;
  const rq = {
    request,
    conn,
    started,
    method,
    ...t,
    path: pathWithoutQuery(t.target),
    logHost: t.port === defaultPort ? t.host : `${t.host}:${t.port}`,
    headers: requestHeadersForUpstream(request.headers),
    upstreamTarget: t.target,
    body: method === "GET" || method === "HEAD" ? null : request.body,
    // Absolute-form requests never upgrade: Upgrade/Connection are stripped and it goes as plain HTTP.
    websocket: conn.kind === "tunnel" && isWebSocketUpgrade(request.headers),
    matched: [],
    connectionCandidates: [],
    connection: null,
    injectionCount: 0,
    decision: "allowed",
    provider: null,
    status: null,
    matchedRule: null,
    needsApproval: false,
    approvalId: null,
    logId: null,
    meter: null,
  } as unknown as ProxyRequest;

  let response: Response;
  try {
    const auth = authenticate(rq, g);
    const denied = auth instanceof Promise ? await auth : auth;
    if (denied) return denied;
  } catch (err) {
    // The agent's view could not be read from the store (it is unreachable and nothing was cached).
    log.error("gateway snapshot unavailable", { error: (err as Error).message });
    return badGateway();
  }
  // Injection is synchronous unless an external-vault value has to be fetched: no await otherwise.
  let injected: ReturnType<typeof inject>;
  try {
    response =
      (await interceptPlaceholderRefresh(rq)) ??
      selectConnection(rq) ??
      (await enforcePolicy(rq, g)) ??
      (await guardResources(rq)) ??
      (await injectConnection(rq, g)) ??
      ((injected = inject(rq, g)) instanceof Promise ? await injected : injected) ??
      (await meterAndAdmit(rq, g)) ??
      (await holdForApproval(rq, g)) ??
      (rq.websocket ? await websocket(rq, g) : await forward(rq, g));
  } catch (err) {
    log.error("gateway request failed", { host: rq.host, error: (err as Error).message });
    rq.decision = "error";
    response = badGateway();
  }
  const status = rq.status ?? response.status;
  const forwarded = rq.decision === "allowed" || rq.decision === "approval_approved";
  const latencyMs = latencyOf(started);
  const record = (costNanos: number | null) => {
    if (rq.logId) g.services.requestLogs.update(rq.logId, { status, decision: rq.decision, latencyMs, injectionCount: rq.injectionCount, costNanos });
    else writeLog(g.services, { ...logFieldsOf(rq), status, latencyMs, costNanos });
  };
  if (rq.meter && forwarded) {
    // A metered LLM response: logged with its cost once the body has gone by.
    response = meterResponse(rq, g, response, record);
  } else {
    record(null);
    // Admitted but never forwarded (denied, held and released, unreachable): the reservation is dropped.
    const reservation = rq.meter?.reservationId;
    if (reservation) g.services.budgets.release(reservation).catch((err: Error) => log.warn("budget reservation not released", { error: err.message }));
  }
  if (!forwarded || rq.websocket) return response;
  const out = await guidance(rq, g, response);
  if (rq.connectionCandidates.length > 0) out.headers.set("x-credgate-connections", JSON.stringify(describeConnections(rq.connectionCandidates)));
  return out;
}
