// Spend budgets: a partner's (docs/budgets.md#partner-budgets) and every scope's (docs/budgets.md#budgets-for-every-scope), and the spend report.
import { Type as T, type Static } from "@sinclair/typebox";
import { Enum, Nullable, Timestamp, Uuid } from "./common.ts";

export const BudgetPeriod = Enum("monthly", "total");

export const SpendBudget = T.Object(
  { secretId: Uuid, organizationId: T.String(), limitCents: T.Integer(), period: BudgetPeriod, spentCents: T.Integer() },
  { $id: "SpendBudget" },
);
export type SpendBudget = Static<typeof SpendBudget>;

/** A budget of an organization, a project or an agent (docs/budgets.md#budgets-for-every-scope). */
export const Budget = T.Object(
  {
    id: Uuid,
    scope: Enum("organization", "project", "agent"),
    organizationId: T.String(),
    projectId: Nullable(T.String()),
    agentId: Nullable(Uuid),
    secretType: Nullable(Enum("llm_a", "llm_b")),
    limitCents: T.Integer(),
    period: Enum("day", "week", "month", "total"),
    alertPercents: T.Array(T.Integer({ minimum: 1, maximum: 100 })),
    spentCents: T.Integer({ description: "floor of the current window's spend" }),
    resetsAt: Nullable(T.String({ format: "date-time", description: "the end of the current window; null for total" })),
    createdAt: Timestamp,
  },
  { $id: "Budget" },
);
export type Budget = Static<typeof Budget>;

/** `GET /spend` and `GET /org/spend` (docs/budgets.md#spend-report). */
export const SpendReport = T.Object(
  {
    data: T.Array(T.Object({ key: T.String(), requests: T.Integer(), inputTokens: T.Integer(), outputTokens: T.Integer(), costUsd: T.Number() })),
    totalUsd: T.Number(),
  },
  { $id: "SpendReport" },
);
export type SpendReport = Static<typeof SpendReport>;
