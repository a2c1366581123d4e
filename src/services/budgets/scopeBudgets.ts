// Budgets for every scope (docs/budgets.md#budgets-for-every-scope): spend limits an organization sets on
// itself, on a project or on one agent, per window (day, week, month, total) and per LLM key type (or both).
// This module keeps the records; the ledger (ledger.ts) admits requests against them and keeps their
// spend. One budget per (owner, key type, period): the check runs with the owner locked, and a unique index
// stands behind it.
import { and, asc, eq, inArray, isNull, type SQL } from "drizzle-orm";
import { DEFAULT_ALERT_PERCENTS, normalisePercents } from "../../core/budgetWindows.ts";
import { conflict, notFound } from "../../core/errors.ts";
import { creationTime, newId, nowIso } from "../../core/ids.ts";
import type { BudgetScope, ScopeBudgetPeriod } from "../../core/model.ts";
import type * as R from "../../core/records/budgets.ts";
import { NANOS_PER_CENT } from "../../core/pricing.ts";
import { clockNow } from "../../runtime/clock.ts";
import type { AgentService } from "../agents.ts";
import type { BudgetLedger } from "./ledger.ts";
import type { ServiceDeps } from "../deps.ts";
import type { ScopeBudget, ScopeBudgetRow } from "./scopeBudget.ts";
import { windowRefOf } from "./windowRows.ts";

export type { ScopeBudget, ScopeBudgetRow } from "./scopeBudget.ts";
export type LlmType = "llm_a" | "llm_b";

/** The Budget record of the API (docs/budgets.md#budgets-for-every-scope). */
export type BudgetView = R.Budget;

/** A project's budgets (its own and its agents'), or an organization's own (`projectId: null`). */
export interface BudgetOwner {
  organizationId: string;
  projectId: string | null;
}

export interface CreateBudget {
  scope: BudgetScope;
  agentId?: string;
  secretType?: LlmType | null;
  limitCents: number;
  period: ScopeBudgetPeriod;
  alertPercents?: number[];
}

export const BUDGET_NOT_FOUND = "Budget not found";
export const BUDGET_EXISTS = "A budget for this scope, key type and period already exists";

const SCOPE_RANK: Record<BudgetScope, number> = { agent: 0, project: 1, organization: 2 };
// Within a scope, the longest window first: when several refuse, the one that lasts longest is named.
const PERIOD_RANK: Record<ScopeBudgetPeriod, number> = { total: 0, month: 1, week: 2, day: 3 };

/** The order admission checks budgets in, and so which refusing budget a refusal names: agent, project, organization. */
export function refusalOrder(a: ScopeBudget, b: ScopeBudget): number {
  return (
    SCOPE_RANK[a.scope] - SCOPE_RANK[b.scope] ||
    PERIOD_RANK[a.period] - PERIOD_RANK[b.period] ||
    Number(a.secretType === null) - Number(b.secretType === null) ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}

export class ScopeBudgetService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly agents: AgentService,
    private readonly ledger: BudgetLedger,
  ) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t.scopeBudgets;
  }

  /** The project's budgets and its agents', or the organization's own. */
  #owned(owner: BudgetOwner): SQL {
    const b = this.t;
    return owner.projectId === null
      ? and(eq(b.organizationId, owner.organizationId), eq(b.scope, "organization"))!
      : and(eq(b.organizationId, owner.organizationId), eq(b.projectId, owner.projectId))!;
  }

  async list(owner: BudgetOwner): Promise<BudgetView[]> {
    const rows = await this.db.select().from(this.t).where(this.#owned(owner)).orderBy(asc(this.t.createdAt), asc(this.t.id));
    return Promise.all(rows.map((r) => this.view(r)));
  }

  async find(owner: BudgetOwner, id: string): Promise<ScopeBudgetRow> {
    const [row] = await this.db
      .select()
      .from(this.t)
      .where(and(this.#owned(owner), eq(this.t.id, id)))
      .limit(1);
    if (!row) throw notFound(BUDGET_NOT_FOUND);
    return row;
  }

  async create(owner: BudgetOwner, input: CreateBudget): Promise<BudgetView> {
    let agentId: string | null = null;
    if (input.scope === "agent") agentId = (await this.agents.get(owner.projectId!, input.agentId!)).id;
    const ownerId = input.scope === "organization" ? owner.organizationId : input.scope === "project" ? owner.projectId! : agentId!;
    const secretType = input.secretType ?? null;
    const now = creationTime();
    const row: ScopeBudgetRow = {
      id: newId(),
      scope: input.scope,
      organizationId: owner.organizationId,
      projectId: input.scope === "organization" ? null : owner.projectId,
      agentId,
      ownerId,
      secretType,
      limitCents: input.limitCents,
      period: input.period,
      alertPercents: normalisePercents(input.alertPercents ?? DEFAULT_ALERT_PERCENTS),
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.store.transaction(async () => {
      await this.deps.store.lockKey(`scope-budgets:${ownerId}`);
      const b = this.t;
      const [taken] = await this.db
        .select({ id: b.id })
        .from(b)
        .where(and(eq(b.ownerId, ownerId), eq(b.period, input.period), secretType === null ? isNull(b.secretType) : eq(b.secretType, secretType)))
        .limit(1);
      if (taken) throw conflict(BUDGET_EXISTS);
      await this.db.insert(b).values(row);
      await this.#audit(row, null, row);
      this.#changed(owner.organizationId);
    });
    return this.view(row);
  }

  /** Changes the limit or the alert percents; a raised limit admits again at once (docs/budgets.md#budgets-for-every-scope). */
  async update(owner: BudgetOwner, id: string, patch: { limitCents?: number; alertPercents?: number[] }): Promise<BudgetView> {
    const row = await this.find(owner, id);
    const set = {
      ...(patch.limitCents !== undefined ? { limitCents: patch.limitCents } : {}),
      ...(patch.alertPercents !== undefined ? { alertPercents: normalisePercents(patch.alertPercents) } : {}),
      updatedAt: nowIso(),
    };
    const updated = await this.deps.store.transaction(async () => {
      const [after] = await this.db.update(this.t).set(set).where(eq(this.t.id, row.id)).returning();
      if (!after) throw notFound(BUDGET_NOT_FOUND);
      await this.#audit(row, row, after);
      return after;
    });
    this.#changed(owner.organizationId);
    return this.view(updated);
  }

  async delete(owner: BudgetOwner, id: string): Promise<void> {
    const row = await this.find(owner, id);
    await this.deps.store.transaction(async () => {
      await this.db.delete(this.t).where(eq(this.t.id, row.id));
      await this.#audit(row, row, null);
    });
    this.#changed(owner.organizationId);
  }

  /** The budget's change in the current write's audit event (docs/operations.md#audit-log). */
  #audit(row: ScopeBudgetRow, before: ScopeBudgetRow | null, after: ScopeBudgetRow | null): Promise<void> {
    const state = (r: ScopeBudgetRow | null) => r && { scope: r.scope, agentId: r.agentId, secretType: r.secretType, limitCents: r.limitCents, period: r.period, alertPercents: r.alertPercents };
    return this.deps.audit.record({ targetType: "budget", targetId: row.id, organizationId: row.organizationId, projectId: row.projectId, before: state(before), after: state(after) });
  }

  /** Every budget that applies to an agent (its own, its project's, its organization's), in refusal order: for the gateway snapshot. */
  async forAgent(agent: { id: string; projectId: string; organizationId: string }): Promise<ScopeBudget[]> {
    const b = this.t;
    const rows = await this.db
      .select({
        id: b.id,
        scope: b.scope,
        organizationId: b.organizationId,
        projectId: b.projectId,
        agentId: b.agentId,
        secretType: b.secretType,
        limitCents: b.limitCents,
        period: b.period,
        alertPercents: b.alertPercents,
      })
      .from(b)
      .where(inArray(b.ownerId, [agent.id, agent.projectId, agent.organizationId]));
    // Owner ids of different scopes never collide (uuids, 16-letter ids), but the organization is checked anyway.
    return rows.filter((r) => r.organizationId === agent.organizationId).sort(refusalOrder);
  }

  /** The record with its current window's spend and end. */
  async view(row: ScopeBudgetRow): Promise<BudgetView> {
    const ref = windowRefOf(row, clockNow());
    const window = ref.window;
    const spent = await this.ledger.spentNanos(ref);
    return {
      id: row.id,
      scope: row.scope,
      organizationId: row.organizationId,
      projectId: row.projectId,
      agentId: row.agentId,
      secretType: row.secretType,
      limitCents: row.limitCents,
      period: row.period,
      alertPercents: row.alertPercents,
      spentCents: Math.floor(spent / NANOS_PER_CENT),
      resetsAt: window.end === null ? null : new Date(window.end).toISOString(),
      createdAt: row.createdAt,
    };
  }

  #changed(organizationId: string): void {
    this.deps.events.emit({ kind: "budget", organizationId });
  }
}
