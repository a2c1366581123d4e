// Policy (docs/policy.md): rules and their publishes, app blocklists, rate-limit counters.
// Part of the one table declaration (index.ts).
import { bigint, boolean, index, integer, json, table, text } from "./define.ts";

/** Policy rules (docs/policy.md#rules): draft rows (generation 0) and published generations of one scope. */
export const policyRules = table(
  "policy_rules",
  {
    id: text("id").primaryKey(),
    logicalId: text("logical_id").notNull(),
    scope: text("scope").type("PolicyScope").notNull(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    /** Null for organization-scope rules. */
    projectId: text("project_id").references("projects.id", "cascade"),
    status: text("status").type("RuleStatus").notNull(),
    generation: integer("generation").notNull(),
    priority: integer("priority").notNull(),
    enabled: boolean("enabled").notNull(),
    isDefault: boolean("is_default").notNull(),
    source: text("source").type("RuleSource").notNull(),
    name: text("name").notNull(),
    description: text("description"),
    action: text("action").type("RuleAction").notNull(),
    rateLimit: integer("rate_limit"),
    rateLimitWindow: text("rate_limit_window").type("RateWindow"),
    requireApproval: boolean("require_approval").notNull(),
    conditions: json("conditions").type("RuleCondition[]"),
    identities: json("identities").type("RuleIdentity[]").notNull(),
    targets: json("targets").type("RuleTarget[]").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  { indexes: [index("policy_rules_owner", ["organizationId", "projectId", "status", "generation"])] },
);

/** One row per publish of a scope (docs/policy.md#draft-and-publish). */
export const policyPublishes = table(
  "policy_publishes",
  {
    id: text("id").primaryKey(),
    scope: text("scope").type("PolicyScope").notNull(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    projectId: text("project_id").references("projects.id", "cascade"),
    generation: integer("generation").notNull(),
    ruleCount: integer("rule_count").notNull(),
    appliedAt: text("applied_at").notNull(),
    appliedByName: text("applied_by_name"),
    appliedByEmail: text("applied_by_email"),
  },
  { indexes: [index("policy_publishes_owner", ["organizationId", "projectId", "generation"])] },
);

/** Blocklist entries (docs/policy.md#app-blocklists): activated predefined hosts and custom rules, compiled to managed block rules. */
export const blocklistRules = table(
  "blocklist_rules",
  {
    id: text("id").primaryKey(),
    scope: text("scope").type("PolicyScope").notNull(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    projectId: text("project_id").references("projects.id", "cascade"),
    provider: text("provider").notNull(),
    hostId: text("host_id").notNull(),
    custom: boolean("custom").notNull(),
    name: text("name").notNull(),
    hostPattern: text("host_pattern").notNull(),
    enabled: boolean("enabled").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  { indexes: [index("blocklist_rules_owner", ["organizationId", "projectId", "provider"])] },
);

/**
 * Rate-limit counters (docs/policy.md#rate-limits): one row per (scope, rule, agent, window); incremented by an atomic upsert,
 * so every process and instance on the database counts against the same row. Old windows are purged.
 */
export const rateLimitCounters = table(
  "rate_limit_counters",
  {
    scope: text("scope").type("PolicyScope").notNull(),
    logicalId: text("logical_id").notNull(),
    agentId: text("agent_id").notNull(),
    window: text("window").type("RateWindow").notNull(),
    /** Epoch seconds at which the window starts. */
    windowStart: bigint("window_start").notNull(),
    count: integer("count").notNull(),
  },
  {
    primaryKey: ["scope", "logicalId", "agentId", "window", "windowStart"],
    indexes: [index("rate_limit_counters_start", ["windowStart"])],
  },
);
