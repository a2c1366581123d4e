// A scope budget as the gateway and the ledger use it (docs/budgets.md#budgets-for-every-scope). Its own file so
// that the ledger and spend services, which scopeBudgets.ts uses, can name it without importing that file.
import type { ServiceDeps } from "../deps.ts";

export type ScopeBudgetRow = ServiceDeps["store"]["t"]["scopeBudgets"]["$inferSelect"];

/** The row, without bookkeeping columns. */
export type ScopeBudget = Pick<ScopeBudgetRow, "id" | "scope" | "organizationId" | "projectId" | "agentId" | "secretType" | "limitCents" | "period" | "alertPercents">;
