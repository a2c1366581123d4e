// Budget windows and what a refusal says (docs/budgets.md#budgets-for-every-scope). Windows are UTC: a day
// from midnight, a week from Monday midnight, a month from the 1st; `total` is one window that never ends.
// Spend is kept per window (its start names it), so a window resets by ending, not by someone zeroing a
// counter. Pure: times are milliseconds since the epoch, passed in.
import type { BudgetScope, ScopeBudgetPeriod } from "./model.ts";

const DAY_MS = 86_400_000;

export interface BudgetWindow {
  /** Milliseconds since the epoch; 0 for `total`. */
  start: number;
  /** The first instant after the window; null for `total`. */
  end: number | null;
}

/** The window of `period` that holds the instant `at`. */
export function windowOf(period: ScopeBudgetPeriod, at: number): BudgetWindow {
  switch (period) {
    case "day": {
      const start = Math.floor(at / DAY_MS) * DAY_MS;
      return { start, end: start + DAY_MS };
    }
    case "week": {
      // 1970-01-01 was a Thursday: three days after a Monday.
      const day = Math.floor(at / DAY_MS);
      const start = (day - ((((day + 3) % 7) + 7) % 7)) * DAY_MS;
      return { start, end: start + 7 * DAY_MS };
    }
    case "month": {
      const d = new Date(at);
      return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
    }
    case "total":
      return { start: 0, end: null };
  }
}

/** How events and refusals name a period (the Budget record says `day`, `week`, `month`, `total`). */
export function periodAdjective(period: ScopeBudgetPeriod): "daily" | "weekly" | "monthly" | "total" {
  return period === "day" ? "daily" : period === "week" ? "weekly" : period === "month" ? "monthly" : "total";
}

const SPAN: Record<ScopeBudgetPeriod, string> = { day: "today", week: "this week", month: "this month", total: "in total" };

/** The `message` of a scope budget's 403 `budget_exceeded` (docs/agent-errors.md#budget_exceeded). */
export function budgetExceededMessage(scope: BudgetScope, secretType: "llm_a" | "llm_b" | null, limitCents: number, period: ScopeBudgetPeriod, resetsAt: string | null): string {
  const keys = secretType === null ? "LLM keys" : `the ${secretType} key`;
  const limit = `$${(limitCents / 100).toFixed(2)} ${SPAN[period]}`;
  const reset = resetsAt === null ? "" : ` It resets at ${resetsAt}.`;
  return `This ${scope}'s spend budget for ${keys} (${limit}) has been reached.${reset}`;
}

/** The alert percents a window's spend has reached (spent ≥ percent % of the limit), ascending. */
export function reachedPercents(alertPercents: readonly number[], spentNanos: number, limitNanos: number): number[] {
  return alertPercents.filter((p) => spentNanos * 100 >= p * limitNanos);
}

/** Normalises alert percents as stored: unique, ascending. */
export function normalisePercents(percents: readonly number[]): number[] {
  return [...new Set(percents)].sort((a, b) => a - b);
}

export const DEFAULT_ALERT_PERCENTS: readonly number[] = [80, 100];

/**
 * The admission rule of every budget, scope or partner (docs/budgets.md#admission): a request is admitted when
 * the budget is not spent and what is spent, what is reserved by requests in flight and its estimate fit the
 * limit. All in nano-USD.
 */
export function admits(spentNanos: number, reservedNanos: number, estimateNanos: number, limitNanos: number): boolean {
  return spentNanos < limitNanos && spentNanos + reservedNanos + estimateNanos <= limitNanos;
}
