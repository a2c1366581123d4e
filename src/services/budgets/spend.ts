// Spend records and the spend report (docs/budgets.md#spend-report). The gateway records one row per metered
// request that was admitted — agent, model, tokens, cost — queued in memory and written about every second in
// one statement, so metering never waits on the database. The report adds them up per agent, model or day;
// a budget window opening after spend already happened starts from their sum (ledger.ts).
import { sql, type SQL } from "drizzle-orm";
import type { BudgetWindow } from "../../core/budgetWindows.ts";
import type * as R from "../../core/records/budgets.ts";
import { log } from "../../observability/log.ts";
import { countLlmSpend } from "../../observability/metrics.ts";
import { clockNow } from "../../runtime/clock.ts";
import type { SpendRecordInsert } from "../../store/store.ts";
import type { ServiceDeps } from "../deps.ts";
import type { ScopeBudget } from "./scopeBudget.ts";

export type SpendRecord = SpendRecordInsert;

export type SpendGroup = "agent" | "model" | "day" | "project";

export interface SpendQuery {
  organizationId: string;
  /** Null: the whole organization. */
  projectId: string | null;
  since: string;
  until: string;
  groupBy: SpendGroup;
}

export type SpendReport = R.SpendReport;

const FLUSH_MS = 1000;
/** Records kept while the store refuses them; beyond this the oldest are dropped (and said so). */
const QUEUE_MAX = 50_000;
const DAY_MS = 86_400_000;
/** Spend records outlive request logs: a year of monthly reports, and a little more. */
export const SPEND_RETENTION_DAYS = 400;
/** Budget windows that started this long ago have ended (a month is the longest); their rows go. */
const WINDOWS_KEPT_DAYS = 62;

const GROUP_KEY: Record<SpendGroup, SQL> = {
  agent: sql`agent_id`,
  model: sql`model`,
  day: sql`substr(created_at, 1, 10)`,
  project: sql`project_id`,
};

/** The current UTC month of the budget clock: the report's default range. */
export function currentMonth(now = clockNow()): { since: string; until: string } {
  const d = new Date(now);
  return { since: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString(), until: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString() };
}

export class SpendService {
  #queue: SpendRecord[] = [];
  #timer: Timer | null = null;
  #flushing: Promise<void> = Promise.resolve();
  #dropped = 0;
  #purge: Timer | null = null;

  constructor(private readonly deps: ServiceDeps) {}

  /** One admitted metered request's spend: queued, written within about a second. */
  record(rec: SpendRecord): void {
    this.#queue.push(rec);
    countLlmSpend(rec.projectId, rec.model, rec.costNanos);
    if (this.#queue.length > QUEUE_MAX) {
      this.#dropped += this.#queue.length - QUEUE_MAX;
      this.#queue.splice(0, this.#queue.length - QUEUE_MAX);
    }
    this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what is queued; a batch the store refuses is kept for the next try. Never rejects. */
  flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const batch = this.#queue;
    this.#queue = [];
    this.#flushing = this.#flushing.then(() => this.#write(batch));
    return this.#flushing;
  }

  async #write(batch: SpendRecord[]): Promise<void> {
    if (batch.length === 0) return;
    try {
      await this.deps.store.insertSpendRecords(batch);
    } catch (err) {
      log.warn("LLM spend records not written yet, will retry", { rows: batch.length, error: (err as Error).message });
      this.#queue = batch.concat(this.#queue);
      this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
    }
    if (this.#dropped > 0) {
      log.error("LLM spend records dropped: the store refused them too long", { rows: this.#dropped });
      this.#dropped = 0;
    }
  }

  /** The serving process purges old records once a day. */
  start(): void {
    const purge = () => void this.purge().catch((err: Error) => log.warn("spend record purge failed", { error: err.message }));
    purge();
    this.#purge = setInterval(purge, DAY_MS);
  }

  async stop(): Promise<void> {
    if (this.#purge) clearInterval(this.#purge);
    this.#purge = null;
    await this.flush();
  }

  /** Spend records past the retention; budget windows and alert markers of windows long over (a month is the longest). */
  async purge(): Promise<void> {
    const now = clockNow();
    const before = new Date(now - Math.max(SPEND_RETENTION_DAYS, this.deps.config.logRetentionDays) * DAY_MS).toISOString();
    await this.deps.store.query(sql`DELETE FROM spend_records WHERE created_at < ${before}`);
    const endedBefore = Math.floor((now - WINDOWS_KEPT_DAYS * DAY_MS) / 1000);
    await this.deps.store.query(sql`DELETE FROM budget_windows WHERE window_start > 0 AND window_start < ${endedBefore}`);
    await this.deps.store.query(sql`DELETE FROM budget_alerts WHERE window_start > 0 AND window_start < ${endedBefore}`);
  }

  /** `GET /spend` (docs/budgets.md#spend-report): requests, tokens and cost per key; days in order, others by cost. */
  async report(q: SpendQuery): Promise<SpendReport> {
    const key = GROUP_KEY[q.groupBy];
    const owner = q.projectId === null ? sql`organization_id = ${q.organizationId}` : sql`project_id = ${q.projectId} AND organization_id = ${q.organizationId}`;
    const rows = await this.deps.store.query<{ key: string; requests: number | string; input: number | string | null; output: number | string | null; nanos: number | string | null }>(sql`
      SELECT ${key} AS key, COUNT(*) AS requests, SUM(input_tokens) AS input, SUM(output_tokens) AS output, SUM(cost_nanos) AS nanos
      FROM spend_records
      WHERE ${owner} AND created_at >= ${q.since} AND created_at < ${q.until}
      GROUP BY ${key}`);
    let total = 0;
    const data = rows.map((r) => {
      const nanos = Number(r.nanos ?? 0);
      total += nanos;
      return { key: String(r.key), requests: Number(r.requests), inputTokens: Number(r.input ?? 0), outputTokens: Number(r.output ?? 0), costUsd: nanos / 1e9, nanos };
    });
    data.sort(q.groupBy === "day" ? (a, b) => (a.key < b.key ? -1 : 1) : (a, b) => b.nanos - a.nanos || (a.key < b.key ? -1 : 1));
    return { data: data.map(({ nanos: _, ...row }) => row), totalUsd: total / 1e9 };
  }

  /**
   * The SQL sum of the recorded spend a budget counts in a window: its agent's, project's or organization's,
   * of its key type. A window that opens after spend happened (a budget made mid-month) starts from it.
   */
  windowSpend(budget: ScopeBudget, window: BudgetWindow): SQL {
    const owner =
      budget.scope === "agent"
        ? sql`project_id = ${budget.projectId} AND agent_id = ${budget.agentId}`
        : budget.scope === "project"
          ? sql`project_id = ${budget.projectId}`
          : sql`organization_id = ${budget.organizationId}`;
    const type = budget.secretType === null ? sql`` : sql` AND secret_type = ${budget.secretType}`;
    const since = new Date(window.start).toISOString();
    const until = window.end === null ? sql`` : sql` AND created_at < ${new Date(window.end).toISOString()}`;
    return sql`SELECT COALESCE(SUM(cost_nanos), 0) FROM spend_records WHERE ${owner} AND created_at >= ${since}${until}${type}`;
  }
}
