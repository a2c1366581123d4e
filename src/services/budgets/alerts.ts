// Budget threshold alerts (docs/budgets.md#alerts): a `budget.threshold` notification when a scope budget's
// window's spend first reaches one of the budget's alert percents, and (as 100) when the budget first refuses in
// the window (partner budgets have no alerts). Once per (budget, window, percent) across processes and
// instances: the marker row's key decides who sends it. Sent in the background; nothing waits for it.
import { sql } from "drizzle-orm";
import { periodAdjective } from "../../core/budgetWindows.ts";
import { NANOS_PER_CENT } from "../../core/pricing.ts";
import { log } from "../../observability/log.ts";
import type { ServiceDeps } from "../deps.ts";
import type { NotificationService } from "../notifications/index.ts";
import type { ScopeWindowRef } from "./windowRows.ts";

/** Alerts known to be sent are remembered up to this many (then forgotten: the marker row still decides). */
const SENT_MAX = 10_000;

export class BudgetAlerts {
  #sent = new Set<string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly notifications: NotificationService,
  ) {}

  /** The `percent` alert of window `w`, whose spend is `spentNanos`. Not awaited by anyone. */
  send(w: ScopeWindowRef, percent: number, spentNanos: number): void {
    const key = `${w.key}:${percent}`;
    if (this.#sent.has(key)) return;
    if (this.#sent.size >= SENT_MAX) this.#sent.clear();
    this.#sent.add(key);
    void this.#notify(w, percent, spentNanos).catch((err: Error) => {
      this.#sent.delete(key);
      log.warn("budget alert not sent", { budgetId: w.budget.id, percent, error: err.message });
    });
  }

  async #notify(w: ScopeWindowRef, percent: number, spentNanos: number): Promise<void> {
    const inserted = await this.deps.store.query(sql`
      INSERT INTO budget_alerts (budget_id, window_start, percent, created_at) VALUES (${w.budget.id}, CAST(${w.start} AS BIGINT), ${percent}, ${new Date().toISOString()})
      ON CONFLICT (budget_id, window_start, percent) DO NOTHING RETURNING percent`);
    if (inserted.length === 0) return;
    const b = w.budget;
    await this.notifications.notify({ organizationId: b.organizationId, projectId: b.projectId }, "budget.threshold", {
      budgetId: b.id,
      scope: b.scope,
      percent,
      spentCents: Math.floor(spentNanos / NANOS_PER_CENT),
      limitCents: b.limitCents,
      period: periodAdjective(b.period),
      resetsAt: w.window.end === null ? null : new Date(w.window.end).toISOString(),
    });
  }
}
