// Budgets and metered spend (docs/budgets.md).
// Part of the one table declaration (index.ts).
import { bigint, index, integer, json, serial, table, text, uniqueIndex } from "./define.ts";

/**
 * Spend budgets (docs/budgets.md#partner-budgets): a cap on one partner LLM secret for one organization. `id`
 * names the budget's windows in `budget_windows` (the key is two columns); budgets made before it existed got
 * `secret_id:organization_id`.
 */
export const budgets = table(
  "budgets",
  {
    id: text("id").notNull().unique(),
    secretId: text("secret_id").notNull().references("secrets.id", "cascade"),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    limitCents: integer("limit_cents").notNull(),
    period: text("period").type("BudgetPeriod").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  { primaryKey: ["secretId", "organizationId"] },
);

/**
 * Metered spend in nano-USD per (secret, organization) and bucket: `total`, and one per month (`YYYY-MM`, UTC).
 * Kept for every metered LLM secret, budget or not, written in batches; a partner budget's window opens from it.
 */
export const budgetSpend = table(
  "budget_spend",
  {
    secretId: text("secret_id").notNull(),
    organizationId: text("organization_id").notNull(),
    bucket: text("bucket").notNull(),
    nanos: bigint("nanos").notNull(),
  },
  { primaryKey: ["secretId", "organizationId", "bucket"] },
);

/**
 * Budgets for every scope (docs/budgets.md#budgets-for-every-scope): a cap on the metered LLM spend of an
 * agent, a project or an organization in a window (day, week, month, total), for one LLM key type or both
 * (null). An agent's budget carries its project too. One budget per (scope owner, key type, period).
 */
export const scopeBudgets = table(
  "scope_budgets",
  {
    id: text("id").primaryKey(),
    scope: text("scope").type("BudgetScope").notNull(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    projectId: text("project_id").references("projects.id", "cascade"),
    agentId: text("agent_id").references("agents.id", "cascade"),
    /** Whom the budget caps: the agent's, project's or organization's id (by `scope`). */
    ownerId: text("owner_id").notNull(),
    secretType: text("secret_type").type('"llm_a" | "llm_b"'),
    limitCents: integer("limit_cents").notNull(),
    period: text("period").type("ScopeBudgetPeriod").notNull(),
    alertPercents: json("alert_percents").type("number[]").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  // NULLs are never equal in a unique index: budgets for both key types (null) have an index of their own.
  {
    indexes: [
      uniqueIndex("scope_budgets_owner_type", ["ownerId", "secretType", "period"], "secret_type IS NOT NULL"),
      uniqueIndex("scope_budgets_owner_any", ["ownerId", "period"], "secret_type IS NULL"),
      // The gateway reads an agent's budgets by owner; the API lists a project's or an organization's.
      index("scope_budgets_owner", ["ownerId"]),
      index("scope_budgets_project", ["organizationId", "projectId"]),
    ],
  },
);

/**
 * A budget's spend and holds in one window, in nano-USD (docs/budgets.md#admission), for budgets of every kind:
 * scope budgets and partner budgets alike. A window is named by its budget's id and its start (epoch seconds; 0
 * for `total`): a new window is a new set of rows, so nothing has to be reset. Each gateway process writes its
 * own row (`holder`): what it charged and what it holds for its admitted requests still in flight, kept from
 * expiring while it lives. The row of holder '' opens the window with the spend recorded before it (and is the
 * row admission locks); the window's spend is the sum of its rows, what is reserved the sum of the live holds.
 *
 * Whose window it is: exactly one of `scopeBudgetId` and `partnerBudgetId` is set, to `budgetId`. The two
 * nullable foreign keys are there for their cascades: deleting a budget of either kind (or its agent, project,
 * secret or organization) deletes its windows, and a window without its opening row is one admission ignores.
 * Budget ids of both kinds are unique ids, so `budgetId` alone names the budget in the key and in the lock order.
 */
export const budgetWindows = table(
  "budget_windows",
  {
    budgetId: text("budget_id").notNull(),
    scopeBudgetId: text("scope_budget_id").references("scopeBudgets.id", "cascade"),
    partnerBudgetId: text("partner_budget_id").references("budgets.id", "cascade"),
    windowStart: bigint("window_start").notNull(),
    holder: text("holder").notNull(),
    spentNanos: bigint("spent_nanos").notNull(),
    heldNanos: bigint("held_nanos").notNull(),
    expiresAt: text("expires_at").notNull(),
  },
  {
    primaryKey: ["budgetId", "windowStart", "holder"],
    indexes: [
      index("budget_windows_holder", ["holder"]),
      // What a budget's deletion cascades through (and a partner budget's new period clears).
      index("budget_windows_scope_budget", ["scopeBudgetId"]),
      index("budget_windows_partner_budget", ["partnerBudgetId"]),
    ],
  },
);

/** `budget.threshold` alerts of scope budgets sent (docs/budgets.md#alerts): the key makes each (budget, window, percent) go out once. */
export const budgetAlerts = table(
  "budget_alerts",
  {
    budgetId: text("budget_id").notNull().references("scopeBudgets.id", "cascade"),
    windowStart: bigint("window_start").notNull(),
    percent: integer("percent").notNull(),
    createdAt: text("created_at").notNull(),
  },
  { primaryKey: ["budgetId", "windowStart", "percent"] },
);

/**
 * One row per metered request that was admitted (docs/budgets.md#spend-report): who spent, on which model, how
 * many tokens, at what cost. Written in batches, like request logs; the spend report and a new budget window's
 * opening spend read it.
 */
export const spendRecords = table(
  "spend_records",
  {
    seq: serial("seq").primaryKey(),
    organizationId: text("organization_id").notNull(),
    projectId: text("project_id").notNull(),
    agentId: text("agent_id").notNull(),
    secretType: text("secret_type").type('"llm_a" | "llm_b"').notNull(),
    /** The model the vendor reported (else the one the request named, else `unknown`). */
    model: text("model").notNull(),
    inputTokens: bigint("input_tokens").notNull(),
    outputTokens: bigint("output_tokens").notNull(),
    costNanos: bigint("cost_nanos").notNull(),
    /** When the request was admitted (the budget clock): the window it counts in. */
    createdAt: text("created_at").notNull(),
  },
  {
    indexes: [
      index("spend_records_project_time", ["projectId", "createdAt"]),
      index("spend_records_org_time", ["organizationId", "createdAt"]),
    ],
  },
);
