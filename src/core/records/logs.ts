// Request logs (docs/gateway.md#request-logs): one row per proxied request, read a page at a time.
import { Type as T, type Static } from "@sinclair/typebox";
import { Nullable, Timestamp, Uuid } from "./common.ts";

export const RequestLog = T.Object(
  {
    id: Uuid,
    projectId: T.String(),
    agentId: Uuid,
    method: T.String(),
    host: T.String(),
    path: T.String(),
    provider: Nullable(T.String()),
    status: T.Integer(),
    latencyMs: T.Integer(),
    injectionCount: T.Integer(),
    decision: T.String(),
    matchedRuleLogicalId: Nullable(T.String()),
    matchedRuleName: Nullable(T.String()),
    approvalId: Nullable(T.String()),
    costNanos: Nullable(T.Integer()),
    createdAt: Timestamp,
    requestId: Nullable(T.String({ description: "the request's x-request-id" })),
    mcpServerId: Nullable(T.String({ description: "the MCP server of a tools/call row (method MCP, the tool as path)" })),
  },
  { $id: "RequestLog" },
);
export type RequestLog = Static<typeof RequestLog>;

export const RequestLogPage = T.Object({ data: T.Array(RequestLog), nextCursor: Nullable(T.String()) }, { $id: "RequestLogPage" });
export type RequestLogPage = Static<typeof RequestLogPage>;
