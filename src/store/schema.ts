// The SQLite schema (drizzle). Migrations in migrations/sqlite/ are generated from this file by drizzle-kit.
// Timestamps are ISO 8601 strings; secrets, key copies and tokens are sealed (crypto/seal.ts); keys and
// tokens are found by their SHA-256 hash and never stored in plaintext.
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export type Role = "owner" | "admin" | "member";
export type AgentMode = "all" | "grants";
export type SecretType = "llm_a" | "llm_b" | "generic";
export type SecretScope = "project" | "organization" | "partner";
export type ValueSource = "inline" | "external_vault";
export type ApiKeyKind = "project" | "organization" | "partner";

export const partners = sqliteTable("partners", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: text("created_at").notNull(),
});

export const organizations = sqliteTable("organizations", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  slug: text("slug").notNull(),
  partnerId: text("partner_id").references(() => partners.id, { onDelete: "set null" }),
  claimed: integer("claimed", { mode: "boolean" }).notNull().default(true),
  partnerDetached: integer("partner_detached", { mode: "boolean" }).notNull().default(false),
  createdAt: text("created_at").notNull(),
});

export const projects = sqliteTable(
  "projects",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    slug: text("slug").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [uniqueIndex("projects_org_slug").on(t.organizationId, t.slug)],
);

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  name: text("name"),
  passwordHash: text("password_hash"),
  createdAt: text("created_at").notNull(),
});

export const memberships = sqliteTable(
  "memberships",
  {
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    role: text("role").$type<Role>().notNull(),
    status: text("status").$type<"active" | "pending">().notNull().default("active"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.userId] }), index("memberships_user").on(t.userId)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    kind: text("kind").$type<ApiKeyKind>().notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    tokenSealed: text("token_sealed").notNull(),
    userId: text("user_id").references(() => users.id, { onDelete: "cascade" }),
    organizationId: text("organization_id").references(() => organizations.id, { onDelete: "cascade" }),
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    partnerId: text("partner_id").references(() => partners.id, { onDelete: "cascade" }),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("api_keys_project_holder").on(t.userId, t.projectId).where(sql`kind = 'project'`),
    uniqueIndex("api_keys_org_holder").on(t.userId, t.organizationId).where(sql`kind = 'organization'`),
  ],
);

export const sessions = sqliteTable("sessions", {
  id: text("id").primaryKey(),
  tokenHash: text("token_hash").notNull().unique(),
  userId: text("user_id")
    .notNull()
    .references(() => users.id, { onDelete: "cascade" }),
  createdAt: text("created_at").notNull(),
  expiresAt: text("expires_at").notNull(),
  revokedAt: text("revoked_at"),
});

export const agents = sqliteTable(
  "agents",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    identifier: text("identifier").notNull(),
    mode: text("mode").$type<AgentMode>().notNull(),
    isDefault: integer("is_default", { mode: "boolean" }).notNull().default(false),
    tokenHash: text("token_hash").notNull().unique(),
    tokenSealed: text("token_sealed").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    lastSeenAt: text("last_seen_at"),
  },
  (t) => [uniqueIndex("agents_project_identifier").on(t.projectId, t.identifier)],
);

export interface InjectionConfig {
  headerName?: string;
  valueFormat?: string;
  paramName?: string;
  paramFormat?: string;
  pathTemplate?: string;
  pathRegex?: string;
  pathReplacement?: string;
}

export interface SecretMetadata {
  authMode?: "api-key" | "oauth";
  accountId?: string;
  opDisplay?: { vault?: string; item?: string; field?: string };
}

export const secrets = sqliteTable(
  "secrets",
  {
    id: text("id").primaryKey(),
    scope: text("scope").$type<SecretScope>().notNull(),
    organizationId: text("organization_id").references(() => organizations.id, { onDelete: "cascade" }),
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    partnerId: text("partner_id").references(() => partners.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    type: text("type").$type<SecretType>().notNull(),
    valueSource: text("value_source").$type<ValueSource>().notNull(),
    valueSealed: text("value_sealed"),
    opRef: text("op_ref"),
    hostPattern: text("host_pattern").notNull(),
    pathPattern: text("path_pattern"),
    injectionConfig: text("injection_config", { mode: "json" }).$type<InjectionConfig>(),
    metadata: text("metadata", { mode: "json" }).$type<SecretMetadata>(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("secrets_project").on(t.projectId), index("secrets_org").on(t.organizationId), index("secrets_partner").on(t.partnerId)],
);

/** Small process-wide facts, e.g. which organization/project/user the bootstrap created. */
export const settings = sqliteTable("settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

export const requestLogs = sqliteTable(
  "request_logs",
  {
    id: text("id").primaryKey(),
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
    costNanos: integer("cost_nanos"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    index("request_logs_project_time").on(t.projectId, t.createdAt, t.id),
    index("request_logs_org_time").on(t.organizationId, t.createdAt, t.id),
  ],
);
