// Row types of the store's tables, as services read and write them (the same on both engines).
import type { Tables } from "./store.ts";

type Row<K extends keyof Tables> = Tables[K] extends { $inferSelect: infer R } ? R : never;

export type OrganizationRow = Row<"organizations">;
export type ProjectRow = Row<"projects">;
export type UserRow = Row<"users">;
export type ApiKeyRow = Row<"apiKeys">;
export type SessionRow = Row<"sessions">;
export type AgentRow = Row<"agents">;
export type SecretRow = Row<"secrets">;
export type RequestLogRecord = Row<"requestLogs">;
export type PolicyRuleRow = Row<"policyRules">;
export type ApprovalRow = Row<"approvals">;
export type ConnectionRow = Row<"appConnections">;
export type ConnectionGrantRow = Row<"agentConnectionGrants">;
export type AppConfigRow = Row<"appConfigs">;
export type BlocklistRow = Row<"blocklistRules">;
export type NotificationChannelRow = Row<"notificationChannels">;
export type NotificationDeliveryRow = Row<"notificationDeliveries">;
export type RememberedApprovalRow = Row<"rememberedApprovals">;
export type McpServerRow = Row<"mcpServers">;
export type McpGrantRow = Row<"agentMcpGrants">;
