// A partner budget as the gateway and the ledger use it (docs/budgets.md#partner-budgets), and where its window's
// opening spend comes from. Its own file, like scopeBudget.ts, so that the ledger's parts can name it without
// importing partnerBudgets.ts (which uses the ledger). To the ledger a partner budget is one more kind of budget:
// windows of the UTC month (`monthly`) or one that never ends (`total`), kept in the same window rows and leases
// as scope budgets', opening from the spend recorded for its (secret, organization) in the matching bucket.
import { sql, type SQL } from "drizzle-orm";
import type { BudgetWindow } from "../../core/budgetWindows.ts";
import type { BudgetPeriod, ScopeBudgetPeriod } from "../../core/model.ts";

/** A partner budget: one organization's limit on one partner LLM key. `id` names its windows. */
export interface PartnerBudget {
  id: string;
  secretId: string;
  organizationId: string;
  limitCents: number;
  period: BudgetPeriod;
}

/** The month bucket of an instant: `YYYY-MM`, UTC. */
export function monthBucket(at: number): string {
  return new Date(at).toISOString().slice(0, 7);
}

/** A partner budget's windows are those of a scope budget of this period: the UTC month, or `total`. */
export function partnerWindowPeriod(period: BudgetPeriod): ScopeBudgetPeriod {
  return period === "total" ? "total" : "month";
}

/**
 * The SQL sum of the recorded spend a partner budget counts in a window: its (secret, organization) bucket of
 * that month, or `total`. A window that opens after spend happened (the budget set mid-month, or made before
 * partner budgets had windows) starts from it.
 */
export function partnerWindowSpend(budget: PartnerBudget, window: BudgetWindow): SQL {
  const bucket = budget.period === "total" ? "total" : monthBucket(window.start);
  return sql`SELECT COALESCE(SUM(nanos), 0) FROM budget_spend WHERE secret_id = ${budget.secretId} AND organization_id = ${budget.organizationId} AND bucket = ${bucket}`;
}
