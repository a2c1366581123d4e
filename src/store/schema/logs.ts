// Append-only logs: the gateway's request log and the audit log.
// Part of the one table declaration (index.ts).
import { bigint, index, integer, serial, table, text } from "./define.ts";

export const requestLogs = table(
  "request_logs",
  {
    /**
     * The rowid: rows are appended in time order, so inserts touch the end of the table's B-tree. The public
     * uuid `id` has no index of its own: a random key's index cost a random page write per row, the biggest
     * single cost of the gateway's log writes. Listing pages on (createdAt, id) through the project index.
     */
    seq: serial("seq").primaryKey(),
    id: text("id").notNull(),
    organizationId: text("organization_id").notNull(),
    projectId: text("project_id").notNull(),
    agentId: text("agent_id").notNull(),
    method: text("method").notNull(),
    host: text("host").notNull(),
    path: text("path").notNull(),
    provider: text("provider"),
    status: integer("status").notNull(),
    latencyMs: integer("latency_ms").notNull(),
    injectionCount: integer("injection_count").notNull(),
    decision: text("decision").notNull(),
    matchedRuleLogicalId: text("matched_rule_logical_id"),
    matchedRuleName: text("matched_rule_name"),
    approvalId: text("approval_id"),
    costNanos: bigint("cost_nanos"),
    /** The request's x-request-id (docs/operations.md#request-ids), null for rows written before it was recorded. */
    requestId: text("request_id"),
    createdAt: text("created_at").notNull(),
    /** The MCP server of a tools/call row (method `MCP`, the tool as path: docs/gateway.md#mcp-servers), else null. */
    mcpServerId: text("mcp_server_id"),
  },
  // One index, and a narrow one: every index is a B-tree insert per row on the gateway's core, and its key's
  // bytes are written twice (WAL, checkpoint). Lists walk it newest first (the rowid is its implicit last
  // column); ties within a millisecond are put in id order by a small sort. The organization's list is one
  // walk per project, merged (RequestLogService.query).
  { indexes: [index("request_logs_project_time", ["projectId", "createdAt"])] },
);

/**
 * The audit log (docs/operations.md#audit-log): one row per management write, appended in `seq` order. Each row's
 * `hash` chains it to the previous row's (services/auditChain.ts), so an edited or deleted row breaks the chain.
 * `changes` is canonical JSON text (kept as written: the hash covers it exactly).
 */
export const auditEvents = table(
  "audit_events",
  {
    seq: serial("seq").primaryKey(),
    id: text("id").notNull().unique(),
    at: text("at").notNull(),
    organizationId: text("organization_id"),
    partnerId: text("partner_id"),
    projectId: text("project_id"),
    actorKind: text("actor_kind").notNull(),
    actorId: text("actor_id").notNull(),
    actorEmail: text("actor_email"),
    action: text("action").notNull(),
    targetType: text("target_type").notNull(),
    targetId: text("target_id"),
    address: text("address"),
    changes: text("changes").notNull(),
    hash: text("hash").notNull(),
  },
  { indexes: [index("audit_events_org", ["organizationId", "seq"])] },
);
