// Approvals (docs/policy.md#approvals): held requests and remembered decisions.
// Part of the one table declaration (index.ts).
import { index, json, table, text, uniqueIndex } from "./define.ts";

/** Approval requests (docs/policy.md#approvals): held gateway requests waiting for a human decision. */
export const approvals = table(
  "approvals",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    projectId: text("project_id").notNull().references("projects.id", "cascade"),
    agentId: text("agent_id").notNull(),
    agentName: text("agent_name").notNull(),
    agentIdentifier: text("agent_identifier").notNull(),
    method: text("method").notNull(),
    url: text("url").notNull(),
    host: text("host").notNull(),
    path: text("path").notNull(),
    headers: json("headers").type("Record<string, string>").notNull(),
    bodyPreview: text("body_preview"),
    summary: json("summary").type("ApprovalSummary"),
    status: text("status").type("ApprovalStatus").notNull(),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    decidedAt: text("decided_at"),
    decidedByUserId: text("decided_by_user_id"),
    decidedByEmail: text("decided_by_email"),
    /** The process whose gateway holds the request (see `instances`); null in rows from before 0004. */
    instanceId: text("instance_id"),
    /** SHA-256 of the approval link's token (docs/policy.md#approval-links); the token itself is never stored. */
    linkTokenHash: text("link_token_hash"),
    /** The rule that held the request (its logicalId and name), for remembered approvals; null in older rows. */
    ruleId: text("rule_id"),
    ruleName: text("rule_name"),
  },
  { indexes: [index("approvals_pending", ["status", "organizationId", "projectId", "createdAt"])] },
);

/**
 * Remembered approvals (docs/policy.md#remembered-approvals): until `expiresAt`, requests of this agent that
 * this rule (its logicalId) would hold pass without a hold. One row per agent and rule; a new one replaces it.
 */
export const rememberedApprovals = table(
  "remembered_approvals",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    projectId: text("project_id").notNull().references("projects.id", "cascade"),
    agentId: text("agent_id").notNull().references("agents.id", "cascade"),
    ruleId: text("rule_id").notNull(),
    ruleName: text("rule_name").notNull(),
    expiresAt: text("expires_at").notNull(),
    /** `user` (createdByUserId/createdByEmail) or `link` (an approval link). */
    createdVia: text("created_via").type('"user" | "link"').notNull(),
    createdByUserId: text("created_by_user_id"),
    createdByEmail: text("created_by_email"),
    createdAt: text("created_at").notNull(),
  },
  {
    indexes: [
      uniqueIndex("remembered_approvals_agent_rule", ["agentId", "ruleId"]),
      index("remembered_approvals_owner", ["organizationId", "projectId"]),
    ],
  },
);
