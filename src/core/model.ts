// The domain's value types: what records hold, independent of the database engine that stores them.
// Pure types; the store schemas (SQLite and PostgreSQL) and every layer above use these. Shapes that are
// part of an API record are declared once, by its schema in ./records, and re-exported here.

export type Role = "owner" | "admin" | "member";
export type AgentMode = "all" | "grants";
export type SecretType = "llm_a" | "llm_b" | "generic";
export type SecretScope = "project" | "organization" | "partner";
export type ValueSource = "inline" | "external_vault" | "vault";
export type ApiKeyKind = "project" | "organization" | "partner";
export type MembershipStatus = "active" | "pending";
export type ClaimKind = "organization" | "provision";

export type { InjectionConfig, SecretMetadata } from "./records/secrets.ts";

export type PolicyScope = "project" | "organization";
export type RuleStatus = "draft" | "published";
export type RuleSource = "custom" | "grant" | "blocklist" | "default";
export type RuleAction = "allow" | "block";
export type RateWindow = "minute" | "hour" | "day";

export interface RuleCondition {
  target: "body";
  operator: "contains";
  value: string;
}

export interface RuleIdentity {
  type: "agent";
  id: string;
}

export type { RuleTarget } from "./records/policy.ts";

export type ApprovalStatus = "pending" | "approved" | "denied" | "expired" | "cancelled";

export interface ApprovalSummary {
  action: string;
  details: { label: string; value: string }[];
}

export type ConnectionStatus = "connected" | "expired" | "error" | "revoked";
export type ConnectionAccess = "full" | "custom";
/** MCP servers (docs/mcp.md): how credgate authenticates to one, and where it stands. */
export type McpAuthKind = "bearer" | "header" | "oauth";
export type McpServerStatus = "pending" | "connected" | "error" | "revoked";
export type { McpTool } from "./records/mcp.ts";
export type BudgetPeriod = "monthly" | "total";
/** Budgets for every scope (docs/budgets.md#budgets-for-every-scope): who a budget caps, and its window. */
export type BudgetScope = "agent" | "project" | "organization";
export type ScopeBudgetPeriod = "day" | "week" | "month" | "total";
export const SCOPE_BUDGET_PERIODS: readonly ScopeBudgetPeriod[] = ["day", "week", "month", "total"];

/** Notification channels (docs/policy.md#notifications). */
export type ChannelKind = "webhook" | "slack" | "ntfy";
export const CHANNEL_KINDS: readonly ChannelKind[] = ["webhook", "slack", "ntfy"];
export type NotificationEvent = "approval.requested" | "approval.decided" | "budget.threshold";
export const NOTIFICATION_EVENTS: readonly NotificationEvent[] = ["approval.requested", "approval.decided", "budget.threshold"];
export type DeliveryStatus = "delivered" | "retrying" | "failed";
