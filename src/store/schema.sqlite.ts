// The SQLite schema (drizzle). Migrations in migrations/sqlite/ are generated from this file by drizzle-kit.
// schema.pg.ts defines the same tables for PostgreSQL; test/unit/schemaParity.test.ts keeps the two in step.
// Timestamps are ISO 8601 strings; secrets, key copies and tokens are sealed (crypto/seal.ts); keys and
// tokens are found by their SHA-256 hash and never stored in plaintext.
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import type {
  AgentMode,
  BudgetPeriod,
  BudgetScope,
  ClaimKind,
  ApiKeyKind,
  ApprovalStatus,
  ApprovalSummary,
  ChannelKind,
  ConnectionAccess,
  ConnectionStatus,
  DeliveryStatus,
  InjectionConfig,
  MembershipStatus,
  NotificationEvent,
  PolicyScope,
  RateWindow,
  Role,
  RuleAction,
  RuleCondition,
  RuleIdentity,
  RuleSource,
  RuleStatus,
  RuleTarget,
  ScopeBudgetPeriod,
  SecretMetadata,
  SecretScope,
  SecretType,
  ValueSource,
} from "../core/model.ts";


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
  /** When a partner organization was claimed, and by whom (docs/api.md#partners). */
  claimedAt: text("claimed_at"),
  claimedByUserId: text("claimed_by_user_id").references(() => users.id, { onDelete: "set null" }),
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
    status: text("status").$type<MembershipStatus>().notNull().default("active"),
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
  /** A session made from an API key (docs/api.md#accounts-and-sessions): that key's hash at sign-in; null for a person's session. */
  apiKeyHash: text("api_key_hash"),
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
    /**
     * The rowid: rows are appended in time order, so inserts touch the end of the table's B-tree. The public
     * uuid `id` has no index of its own: a random key's index cost a random page write per row, the biggest
     * single cost of the gateway's log writes. Listing pages on (createdAt, id) through the project index.
     */
    seq: integer("seq").primaryKey(),
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
    costNanos: integer("cost_nanos"),
    /** The request's x-request-id (docs/operations.md#request-ids), null for rows written before it was recorded. */
    requestId: text("request_id"),
    createdAt: text("created_at").notNull(),
  },
  // One index, and a narrow one: every index is a B-tree insert per row on the gateway's core, and its key's
  // bytes are written twice (WAL, checkpoint). Lists walk it newest first (the rowid is its implicit last
  // column); ties within a millisecond are put in id order by a small sort. The organization's list is one
  // walk per project, merged (RequestLogService.query).
  (t) => [index("request_logs_project_time").on(t.projectId, t.createdAt)],
);

/** Secret grants (docs/injection.md#grants): which secrets an agent in mode `grants` may inject. */
export const agentSecretGrants = sqliteTable(
  "agent_secret_grants",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    secretId: text("secret_id")
      .notNull()
      .references(() => secrets.id, { onDelete: "cascade" }),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.secretId] }), index("agent_secret_grants_secret").on(t.secretId)],
);


/** Policy rules (docs/policy.md#rules): draft rows (generation 0) and published generations of one scope. */
export const policyRules = sqliteTable(
  "policy_rules",
  {
    id: text("id").primaryKey(),
    logicalId: text("logical_id").notNull(),
    scope: text("scope").$type<PolicyScope>().notNull(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    /** Null for organization-scope rules. */
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    status: text("status").$type<RuleStatus>().notNull(),
    generation: integer("generation").notNull(),
    priority: integer("priority").notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    isDefault: integer("is_default", { mode: "boolean" }).notNull(),
    source: text("source").$type<RuleSource>().notNull(),
    name: text("name").notNull(),
    description: text("description"),
    action: text("action").$type<RuleAction>().notNull(),
    rateLimit: integer("rate_limit"),
    rateLimitWindow: text("rate_limit_window").$type<RateWindow>(),
    requireApproval: integer("require_approval", { mode: "boolean" }).notNull(),
    conditions: text("conditions", { mode: "json" }).$type<RuleCondition[]>(),
    identities: text("identities", { mode: "json" }).$type<RuleIdentity[]>().notNull(),
    targets: text("targets", { mode: "json" }).$type<RuleTarget[]>().notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("policy_rules_owner").on(t.organizationId, t.projectId, t.status, t.generation)],
);

/** One row per publish of a scope (docs/policy.md#draft-and-publish). */
export const policyPublishes = sqliteTable(
  "policy_publishes",
  {
    id: text("id").primaryKey(),
    scope: text("scope").$type<PolicyScope>().notNull(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    generation: integer("generation").notNull(),
    ruleCount: integer("rule_count").notNull(),
    appliedAt: text("applied_at").notNull(),
    appliedByName: text("applied_by_name"),
    appliedByEmail: text("applied_by_email"),
  },
  (t) => [index("policy_publishes_owner").on(t.organizationId, t.projectId, t.generation)],
);


/** Approval requests (docs/policy.md#approvals): held gateway requests waiting for a human decision. */
export const approvals = sqliteTable(
  "approvals",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    agentId: text("agent_id").notNull(),
    agentName: text("agent_name").notNull(),
    agentIdentifier: text("agent_identifier").notNull(),
    method: text("method").notNull(),
    url: text("url").notNull(),
    host: text("host").notNull(),
    path: text("path").notNull(),
    headers: text("headers", { mode: "json" }).$type<Record<string, string>>().notNull(),
    bodyPreview: text("body_preview"),
    summary: text("summary", { mode: "json" }).$type<ApprovalSummary>(),
    status: text("status").$type<ApprovalStatus>().notNull(),
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
  (t) => [index("approvals_pending").on(t.status, t.organizationId, t.projectId, t.createdAt)],
);


/** App connections (docs/injection.md#app-connections): a project's or organization's OAuth tokens or API-key fields, sealed. */
export const appConnections = sqliteTable(
  "app_connections",
  {
    id: text("id").primaryKey(),
    scope: text("scope").$type<PolicyScope>().notNull(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    /** Null for organization connections. */
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    provider: text("provider").notNull(),
    label: text("label"),
    status: text("status").$type<ConnectionStatus>().notNull(),
    scopes: text("scopes", { mode: "json" }).$type<string[]>().notNull(),
    metadata: text("metadata", { mode: "json" }).$type<Record<string, unknown>>(),
    /** Sealed JSON of the credential (see services/connections.ts ConnectionCredential). */
    credentialSealed: text("credential_sealed").notNull(),
    /** Bumped on every credential write: refreshes write with compare-and-swap on it. */
    version: integer("version").notNull(),
    refreshFailures: integer("refresh_failures").notNull().default(0),
    connectedAt: text("connected_at").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("app_connections_owner").on(t.organizationId, t.projectId, t.provider)],
);

/** Connection grants (docs/injection.md#grants): which app connections an agent in mode `grants` may use, and how. */
export const agentConnectionGrants = sqliteTable(
  "agent_connection_grants",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    connectionId: text("connection_id")
      .notNull()
      .references(() => appConnections.id, { onDelete: "cascade" }),
    access: text("access").$type<ConnectionAccess>().notNull(),
    allow: text("allow", { mode: "json" }).$type<string[]>().notNull(),
    ask: text("ask", { mode: "json" }).$type<string[]>().notNull(),
    resources: text("resources", { mode: "json" }).$type<Record<string, string[]>>(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.connectionId] }), index("agent_connection_grants_connection").on(t.connectionId)],
);

/** Bring-your-own-credentials app configuration (docs/api.md#records) of a project or organization. */
export const appConfigs = sqliteTable(
  "app_configs",
  {
    id: text("id").primaryKey(),
    scope: text("scope").$type<PolicyScope>().notNull(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    provider: text("provider").notNull(),
    /** Non-secret fields, shown back as `settings`. */
    settings: text("settings", { mode: "json" }).$type<Record<string, string>>().notNull(),
    /** Sealed JSON of the secret fields. */
    secretsSealed: text("secrets_sealed"),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("app_configs_project").on(t.projectId, t.provider).where(sql`scope = 'project'`),
    uniqueIndex("app_configs_org").on(t.organizationId, t.provider).where(sql`scope = 'organization'`),
  ],
);

/** Blocklist entries (docs/policy.md#app-blocklists): activated predefined hosts and custom rules, compiled to managed block rules. */
export const blocklistRules = sqliteTable(
  "blocklist_rules",
  {
    id: text("id").primaryKey(),
    scope: text("scope").$type<PolicyScope>().notNull(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    provider: text("provider").notNull(),
    hostId: text("host_id").notNull(),
    custom: integer("custom", { mode: "boolean" }).notNull(),
    name: text("name").notNull(),
    hostPattern: text("host_pattern").notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("blocklist_rules_owner").on(t.organizationId, t.projectId, t.provider)],
);

/**
 * Rate-limit counters (docs/policy.md#rate-limits): one row per (scope, rule, agent, window); incremented by an atomic upsert,
 * so every process and instance on the database counts against the same row. Old windows are purged.
 */
export const rateLimitCounters = sqliteTable(
  "rate_limit_counters",
  {
    scope: text("scope").$type<PolicyScope>().notNull(),
    logicalId: text("logical_id").notNull(),
    agentId: text("agent_id").notNull(),
    window: text("window").$type<RateWindow>().notNull(),
    /** Epoch seconds at which the window starts. */
    windowStart: integer("window_start").notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.logicalId, t.agentId, t.window, t.windowStart] }), index("rate_limit_counters_start").on(t.windowStart)],
);

/**
 * Minted credentials (docs/injection.md#github-app): one row per token source (`github-app:<appId>:<installationId>`),
 * shared by every process and instance on the database. The token is sealed. A process that mints holds the lease
 * (`leaseUntil`, epoch ms, taken by a conditional write) so that one mint happens at a time for all instances.
 */
export const mintedTokens = sqliteTable("minted_tokens", {
  key: text("key").primaryKey(),
  tokenSealed: text("token_sealed"),
  /** Epoch ms at which the token stops being valid, as the issuer said. */
  expiresAt: integer("expires_at"),
  leaseOwner: text("lease_owner"),
  leaseUntil: integer("lease_until"),
  updatedAt: text("updated_at").notNull(),
});

/** Running credgate processes: each beats every few seconds; a held approval of a process that stopped beating is cancelled. */
export const instances = sqliteTable("instances", {
  id: text("id").primaryKey(),
  startedAt: text("started_at").notNull(),
  heartbeatAt: text("heartbeat_at").notNull(),
});

/** Spend budgets (docs/budgets.md#partner-budgets): a cap on one partner LLM secret for one organization. */
export const budgets = sqliteTable(
  "budgets",
  {
    secretId: text("secret_id")
      .notNull()
      .references(() => secrets.id, { onDelete: "cascade" }),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    limitCents: integer("limit_cents").notNull(),
    period: text("period").$type<BudgetPeriod>().notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.secretId, t.organizationId] })],
);

/**
 * Metered spend in nano-USD per (secret, organization) and bucket: `total`, and one per month (`YYYY-MM`, UTC).
 * Kept for every metered LLM secret, budget or not; charged with one atomic upsert per request.
 */
export const budgetSpend = sqliteTable(
  "budget_spend",
  {
    secretId: text("secret_id").notNull(),
    organizationId: text("organization_id").notNull(),
    bucket: text("bucket").notNull(),
    nanos: integer("nanos").notNull(),
  },
  (t) => [primaryKey({ columns: [t.secretId, t.organizationId, t.bucket] })],
);

/** Estimates of admitted requests still in flight (docs/budgets.md#admission); expired ones (a crashed holder) no longer count. */
export const budgetReservations = sqliteTable(
  "budget_reservations",
  {
    id: text("id").primaryKey(),
    secretId: text("secret_id").notNull(),
    organizationId: text("organization_id").notNull(),
    estimateNanos: integer("estimate_nanos").notNull(),
    expiresAt: text("expires_at").notNull(),
  },
  (t) => [index("budget_reservations_owner").on(t.secretId, t.organizationId, t.expiresAt)],
);

/**
 * Budgets for every scope (docs/budgets.md#budgets-for-every-scope): a cap on the metered LLM spend of an
 * agent, a project or an organization in a window (day, week, month, total), for one LLM key type or both
 * (null). An agent's budget carries its project too. One budget per (scope owner, key type, period).
 */
export const scopeBudgets = sqliteTable(
  "scope_budgets",
  {
    id: text("id").primaryKey(),
    scope: text("scope").$type<BudgetScope>().notNull(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    agentId: text("agent_id").references(() => agents.id, { onDelete: "cascade" }),
    /** Whom the budget caps: the agent's, project's or organization's id (by `scope`). */
    ownerId: text("owner_id").notNull(),
    secretType: text("secret_type").$type<"llm_a" | "llm_b">(),
    limitCents: integer("limit_cents").notNull(),
    period: text("period").$type<ScopeBudgetPeriod>().notNull(),
    alertPercents: text("alert_percents", { mode: "json" }).$type<number[]>().notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  // NULLs are never equal in a unique index: budgets for both key types (null) have an index of their own.
  (t) => [
    uniqueIndex("scope_budgets_owner_type").on(t.ownerId, t.secretType, t.period).where(sql`secret_type IS NOT NULL`),
    uniqueIndex("scope_budgets_owner_any").on(t.ownerId, t.period).where(sql`secret_type IS NULL`),
    // The gateway reads an agent's budgets by owner; the API lists a project's or an organization's.
    index("scope_budgets_owner").on(t.ownerId),
    index("scope_budgets_project").on(t.organizationId, t.projectId),
  ],
);

/**
 * A scope budget's spend and holds in one window, in nano-USD (docs/budgets.md#admission). A window is named by
 * its start (epoch seconds; 0 for `total`): a new window is a new set of rows, so nothing has to be reset. Each
 * gateway process writes its own row (`holder`): what it charged and what it holds for its admitted requests
 * still in flight, kept from expiring while it lives. The row of holder '' opens the window with the spend
 * recorded before it (and is the row admission locks); the window's spend is the sum of its rows, what is
 * reserved the sum of the live holds.
 */
export const budgetWindows = sqliteTable(
  "budget_windows",
  {
    budgetId: text("budget_id")
      .notNull()
      .references(() => scopeBudgets.id, { onDelete: "cascade" }),
    windowStart: integer("window_start").notNull(),
    holder: text("holder").notNull(),
    spentNanos: integer("spent_nanos").notNull(),
    heldNanos: integer("held_nanos").notNull(),
    expiresAt: text("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.budgetId, t.windowStart, t.holder] }), index("budget_windows_holder").on(t.holder)],
);

/** `budget.threshold` alerts sent (docs/budgets.md#alerts): the key makes each (budget, window, percent) go out once. */
export const budgetAlerts = sqliteTable(
  "budget_alerts",
  {
    budgetId: text("budget_id")
      .notNull()
      .references(() => scopeBudgets.id, { onDelete: "cascade" }),
    windowStart: integer("window_start").notNull(),
    percent: integer("percent").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.budgetId, t.windowStart, t.percent] })],
);

/**
 * One row per metered request that was admitted (docs/budgets.md#spend-report): who spent, on which model, how
 * many tokens, at what cost. Written in batches, like request logs; the spend report and a new budget window's
 * opening spend read it.
 */
export const spendRecords = sqliteTable(
  "spend_records",
  {
    seq: integer("seq").primaryKey(),
    organizationId: text("organization_id").notNull(),
    projectId: text("project_id").notNull(),
    agentId: text("agent_id").notNull(),
    secretType: text("secret_type").$type<"llm_a" | "llm_b">().notNull(),
    /** The model the vendor reported (else the one the request named, else `unknown`). */
    model: text("model").notNull(),
    inputTokens: integer("input_tokens").notNull(),
    outputTokens: integer("output_tokens").notNull(),
    costNanos: integer("cost_nanos").notNull(),
    /** When the request was admitted (the budget clock): the window it counts in. */
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("spend_records_project_time").on(t.projectId, t.createdAt), index("spend_records_org_time").on(t.organizationId, t.createdAt)],
);

/** Partner members (docs/api.md#partners): the people of a partner's portal; a user belongs to at most one partner. */
export const partnerMembers = sqliteTable(
  "partner_members",
  {
    partnerId: text("partner_id")
      .notNull()
      .references(() => partners.id, { onDelete: "cascade" }),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    role: text("role").$type<Role>().notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.partnerId, t.userId] }), uniqueIndex("partner_members_user").on(t.userId)],
);

/**
 * Claim links (docs/api.md#states, docs/api.md#projects-and-team, docs/api.md#partners): a partner organization's (one at a time, no expiry) or a team
 * provision's (expires after 7 days). `userId` is the placeholder the claimant replaces. The token is kept as
 * a lookup hash and a sealed copy: the gateway's `claim_required` answer shows the current link.
 */
export const claimLinks = sqliteTable(
  "claim_links",
  {
    id: text("id").primaryKey(),
    kind: text("kind").$type<ClaimKind>().notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    tokenSealed: text("token_sealed").notNull(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    /** The provision's project (null for organizations, or once that project is gone). */
    projectId: text("project_id").references(() => projects.id, { onDelete: "set null" }),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    expiresAt: text("expires_at"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [uniqueIndex("claim_links_org").on(t.organizationId).where(sql`kind = 'organization'`), index("claim_links_user").on(t.userId)],
);

/**
 * Invites (docs/api.md#accounts-and-sessions accept-invite): set a password for an invited user (a partner member), or, with no
 * user yet, create the partner owner's account (`credgate partner create` without an owner email).
 */
export const invites = sqliteTable(
  "invites",
  {
    id: text("id").primaryKey(),
    tokenHash: text("token_hash").notNull().unique(),
    userId: text("user_id").references(() => users.id, { onDelete: "cascade" }),
    partnerId: text("partner_id").references(() => partners.id, { onDelete: "cascade" }),
    expiresAt: text("expires_at").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("invites_user").on(t.userId)],
);

/**
 * Failed logins (docs/api.md#accounts-and-sessions throttling): one row per failure of a subject (the hash of an email or a key),
 * in the store so that every instance counts the same failures. Rows older than the window are deleted.
 */
export const loginFailures = sqliteTable(
  "login_failures",
  {
    id: text("id").primaryKey(),
    subject: text("subject").notNull(),
    failedAt: text("failed_at").notNull(),
  },
  (t) => [index("login_failures_subject").on(t.subject, t.failedAt)],
);

/**
 * Notification channels (docs/policy.md#notifications): where a project's (or, with no project, an
 * organization's) events are sent. The URL is sealed (a Slack or ntfy URL is itself a credential), and so is a
 * webhook's signing secret.
 */
export const notificationChannels = sqliteTable(
  "notification_channels",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    /** Null for an organization's channel. */
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    kind: text("kind").$type<ChannelKind>().notNull(),
    urlSealed: text("url_sealed").notNull(),
    events: text("events", { mode: "json" }).$type<NotificationEvent[]>().notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    signingSecretSealed: text("signing_secret_sealed"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("notification_channels_owner").on(t.organizationId, t.projectId)],
);

/**
 * One delivery of one event to one channel, written once (unique per event and channel) by the process that
 * raised the event, and sent by whichever process claims it first (a lease set by compare-and-swap), so an
 * event reaches each channel once however many processes and instances share the store. The payload is sealed:
 * an approval's links carry its token.
 */
export const notificationDeliveries = sqliteTable(
  "notification_deliveries",
  {
    id: text("id").primaryKey(),
    eventId: text("event_id").notNull(),
    channelId: text("channel_id")
      .notNull()
      .references(() => notificationChannels.id, { onDelete: "cascade" }),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    /** The channel's project (null for an organization's channel). */
    projectId: text("project_id"),
    event: text("event").$type<NotificationEvent>().notNull(),
    /** For `approval.requested`: the approval whose end stops the retries. */
    approvalId: text("approval_id"),
    payloadSealed: text("payload_sealed").notNull(),
    status: text("status").$type<DeliveryStatus>().notNull(),
    attempts: integer("attempts").notNull(),
    lastStatus: integer("last_status"),
    lastError: text("last_error"),
    nextAttemptAt: text("next_attempt_at").notNull(),
    /** Set while a process sends it; another may take it over once this has passed. */
    leaseUntil: text("lease_until"),
    leasedBy: text("leased_by"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("notification_deliveries_event_channel").on(t.eventId, t.channelId),
    index("notification_deliveries_due").on(t.status, t.nextAttemptAt),
    index("notification_deliveries_owner").on(t.organizationId, t.projectId, t.createdAt),
    index("notification_deliveries_approval").on(t.approvalId),
  ],
);

/**
 * Remembered approvals (docs/policy.md#remembered-approvals): until `expiresAt`, requests of this agent that
 * this rule (its logicalId) would hold pass without a hold. One row per agent and rule; a new one replaces it.
 */
export const rememberedApprovals = sqliteTable(
  "remembered_approvals",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    ruleId: text("rule_id").notNull(),
    ruleName: text("rule_name").notNull(),
    expiresAt: text("expires_at").notNull(),
    /** `user` (createdByUserId/createdByEmail) or `link` (an approval link). */
    createdVia: text("created_via").$type<"user" | "link">().notNull(),
    createdByUserId: text("created_by_user_id"),
    createdByEmail: text("created_by_email"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [uniqueIndex("remembered_approvals_agent_rule").on(t.agentId, t.ruleId), index("remembered_approvals_owner").on(t.organizationId, t.projectId)],
);

/**
 * The audit log (docs/operations.md#audit-log): one row per management write, appended in `seq` order. Each row's
 * `hash` chains it to the previous row's (services/audit.ts), so an edited or deleted row breaks the chain.
 * `changes` is canonical JSON text (kept as written: the hash covers it exactly).
 */
export const auditEvents = sqliteTable(
  "audit_events",
  {
    seq: integer("seq").primaryKey(),
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
  (t) => [index("audit_events_org").on(t.organizationId, t.seq)],
);
