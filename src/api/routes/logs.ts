// Request logs (docs/gateway.md#request-logs): `/logs` for the project (project·any), `/org/logs` across projects (organization·admin).
import { ApiError } from "../../core/errors.ts";
import { REQUEST_LOG_DECISIONS, type RequestLogQuery } from "../../services/requestLogs.ts";
import type { RequestContext } from "../auth.ts";
import { route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import * as S from "../schemas.ts";
import { returns } from "../responses.ts";

/** A timestamp query parameter (ISO 8601 or anything Date.parse reads), as ISO; absent when empty. */
export function timestamp(name: string, raw: string | null): string | undefined {
  if (raw === null || raw === "") return undefined;
  const t = Date.parse(raw);
  if (Number.isNaN(t)) throw ApiError.flat(400, `${name} must be a valid timestamp`);
  return new Date(t).toISOString();
}

function integer(name: string, raw: string | null, min: number, max: number): number | undefined {
  if (raw === null || raw === "") return undefined;
  const n = Number(raw);
  if (!/^-?\d+$/.test(raw.trim()) || n < min || n > max) throw ApiError.flat(400, `${name} must be between ${min} and ${max}`);
  return n;
}

/** Query parameters in the documented order: agentId, host, decision, status, since, until, limit, cursor. */
export function parseRequestLogQuery(q: URLSearchParams, ctx: RequestContext, scope: "project" | "organization"): RequestLogQuery {
  const decision = q.get("decision") || undefined;
  if (decision !== undefined && !(REQUEST_LOG_DECISIONS as readonly string[]).includes(decision)) {
    throw ApiError.flat(400, `decision must be one of: ${REQUEST_LOG_DECISIONS.join(", ")}`);
  }
  const status = integer("status", q.get("status"), 100, 599);
  const since = timestamp("since", q.get("since"));
  const until = timestamp("until", q.get("until"));
  const limit = integer("limit", q.get("limit"), 1, 500) ?? 100;
  return {
    organizationId: ctx.organizationId,
    projectId: scope === "project" ? ctx.projectId : q.get("projectId") || undefined,
    agentId: q.get("agentId") || undefined,
    host: q.get("host") || undefined,
    decision,
    status,
    since,
    until,
    limit,
    cursor: q.get("cursor") || undefined,
  };
}

export const logsRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/logs",
    query: S.LogsQuery,
    response: returns(R.RequestLogPage, "Newest first"),
    access: "project",
    handler: ({ services, ctx, query }) => services.requestLogs.query(parseRequestLogQuery(query, ctx, "project")),
  }),
  route({
    method: "GET",
    path: "/org/logs",
    query: S.OrgLogsQuery,
    response: returns(R.RequestLogPage, "Newest first, across the organization's projects"),
    access: "organization",
    role: "admin",
    handler: ({ services, ctx, query }) => services.requestLogs.query(parseRequestLogQuery(query, ctx, "organization")),
  }),
];
