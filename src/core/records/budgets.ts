// Spend budgets (docs/budgets.md#partner-budgets).
import { Type as T, type Static } from "@sinclair/typebox";
import { Enum, Uuid } from "./common.ts";

export const BudgetPeriod = Enum("monthly", "total");

export const SpendBudget = T.Object(
  { secretId: Uuid, organizationId: T.String(), limitCents: T.Integer(), period: BudgetPeriod, spentCents: T.Integer() },
  { $id: "SpendBudget" },
);
export type SpendBudget = Static<typeof SpendBudget>;
