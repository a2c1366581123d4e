// Request-log rows (docs/gateway.md#request-logs): one per authenticated proxied request, WebSocket upgrade and
// passthrough tunnel; never a secret: the path is logged without its query, as the agent sent it.
import { newId } from "../core/ids.ts";
import type { RequestLogDecision, RequestLogService } from "../services/requestLogs.ts";
import type { ProxyRequest } from "./request.ts";
import type { AgentEntry } from "./snapshot.ts";
import { countGatewayRequest } from "../observability/metrics.ts";

export interface RequestLogFields {
  agent: AgentEntry;
  method: string;
  /** Host with its non-default port. */
  host: string;
  path: string;
  status: number;
  /** performance.now() at the start; latency runs until the upstream response headers. */
  started: number;
  injectionCount: number;
  decision: RequestLogDecision;
  provider?: string | null;
  matchedRule?: { logicalId: string; name: string } | null;
  approvalId?: string | null;
  /** Measured earlier (until the upstream response headers) when the row is written later. */
  latencyMs?: number;
  costNanos?: number | null;
  /** The request's x-request-id. */
  requestId: string;
  /** The MCP server of a tools/call (docs/gateway.md#mcp-servers). */
  mcpServerId?: string | null;
}

/**
 * The log fields of a proxied request as it stands, with its answer's status (and latency, when it was taken
 * earlier). One object with every field: no field is added to it afterwards.
 */
export function requestLogFieldsOf(rq: ProxyRequest, status: number, latencyMs?: number): RequestLogFields {
  // An MCP tools/call is logged as method MCP and the tool's name (docs/gateway.md#mcp-servers).
  const tool = rq.mcp !== null && rq.mcp.tools.length > 0 ? rq.mcp.tools[0]! : null;
  return {
    agent: rq.agent,
    method: tool !== null ? "MCP" : rq.websocket ? "GET" : rq.method,
    host: rq.displayHost,
    path: tool ?? rq.leak?.loggedPath ?? rq.path,
    status,
    started: rq.started,
    injectionCount: rq.injectionCount,
    decision: rq.decision,
    provider: rq.provider,
    matchedRule: rq.matchedRule,
    approvalId: rq.approval?.id ?? null,
    latencyMs,
    costNanos: rq.meter?.costNanos ?? null,
    requestId: rq.requestId,
    mcpServerId: tool !== null ? rq.mcp!.server.id : null,
  };
}

/** The current time as ISO 8601, formatted once per millisecond (many rows share one at load). */
let isoMs = -1;
let iso = "";
export function logTime(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
}

export function latencyOf(started: number): number {
  return Math.max(0, Math.round(performance.now() - started));
}

export function writeRequestLog(requestLogs: RequestLogService, f: RequestLogFields): string {
  const id = newId();
  // A held request's row is written at 202 and updated once decided: that final answer is what is counted.
  if (f.decision !== "approval_pending") countGatewayRequest(f.decision, f.status);
  requestLogs.enqueue({
    id,
    organizationId: f.agent.organizationId,
    projectId: f.agent.projectId,
    agentId: f.agent.id,
    method: f.method,
    host: f.host.toLowerCase(),
    path: f.path.slice(0, 2048),
    provider: f.provider ?? null,
    status: f.status,
    latencyMs: f.latencyMs ?? latencyOf(f.started),
    injectionCount: f.injectionCount,
    decision: f.decision,
    matchedRuleLogicalId: f.matchedRule?.logicalId ?? null,
    matchedRuleName: f.matchedRule?.name ?? null,
    approvalId: f.approvalId ?? null,
    costNanos: f.costNanos ?? null,
    requestId: f.requestId,
    createdAt: logTime(),
    mcpServerId: f.mcpServerId ?? null,
  });
  return id;
}
