// Remembered approvals (docs/policy.md#remembered-approvals): an approve may say "and the same again for N
// minutes": later requests of that agent that the same rule (its logicalId) would hold pass without a hold
// until then. One row per agent and rule (a new one replaces it). The gateway keeps the live ones in memory
// (src/gateway/rememberedApprovals.ts), kept current by the `remembered` change events written here.
import { and, asc, eq, gt, lte } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import { clockIso, clockNow } from "../runtime/clock.ts";
import type { RememberedApprovalRow } from "../store/rows.ts";
import type { ServiceDeps } from "./deps.ts";
import type { DecidedBy } from "./notifications/events.ts";

export const REMEMBER_MESSAGE = "remember.minutes must be from 1 to 1440";

export interface RememberedView {
  id: string;
  agentId: string;
  /** The rule's logicalId. */
  ruleId: string;
  ruleName: string;
  expiresAt: string;
  createdBy: DecidedBy;
}

/** What the gateway needs of a live remembered approval. */
export interface RememberedEntry {
  agentId: string;
  ruleId: string;
  expiresAt: string;
}

export class RememberedApprovalService {
  constructor(private readonly deps: ServiceDeps) {}

  private get t() {
    return this.deps.store.t.rememberedApprovals;
  }

  view(row: RememberedApprovalRow): RememberedView {
    return {
      id: row.id,
      agentId: row.agentId,
      ruleId: row.ruleId,
      ruleName: row.ruleName,
      expiresAt: row.expiresAt,
      createdBy: row.createdVia === "link" ? { kind: "link" } : { userId: row.createdByUserId, email: row.createdByEmail },
    };
  }

  /** Makes (or replaces) the remembered approval of `agentId` under rule `ruleId`; its end. */
  async remember(input: { organizationId: string; projectId: string; agentId: string; ruleId: string; ruleName: string; minutes: number; by: DecidedBy }): Promise<string> {
    const expiresAt = new Date(clockNow() + input.minutes * 60_000).toISOString();
    const byLink = "kind" in input.by;
    const created = {
      createdVia: byLink ? ("link" as const) : ("user" as const),
      createdByUserId: "kind" in input.by ? null : input.by.userId,
      createdByEmail: "kind" in input.by ? null : input.by.email,
    };
    await this.deps.store.db
      .insert(this.t)
      .values({ id: newId(), organizationId: input.organizationId, projectId: input.projectId, agentId: input.agentId, ruleId: input.ruleId, ruleName: input.ruleName, expiresAt, ...created, createdAt: nowIso() })
      .onConflictDoUpdate({ target: [this.t.agentId, this.t.ruleId], set: { ruleName: input.ruleName, expiresAt, ...created, createdAt: nowIso() } });
    this.deps.events.emit({ kind: "remembered", agentId: input.agentId, ruleId: input.ruleId, expiresAt });
    return expiresAt;
  }

  /** The project's remembered approvals still in force, soonest end first. */
  async list(scope: { organizationId: string; projectId: string }): Promise<RememberedView[]> {
    const r = this.t;
    const rows = await this.deps.store.db
      .select()
      .from(r)
      .where(and(eq(r.organizationId, scope.organizationId), eq(r.projectId, scope.projectId), gt(r.expiresAt, clockIso())))
      .orderBy(asc(r.expiresAt), asc(r.id));
    return rows.map((row) => this.view(row));
  }

  /** Ends one at once. */
  async revoke(scope: { organizationId: string; projectId: string }, id: string): Promise<void> {
    const r = this.t;
    const [gone] = await this.deps.store.db
      .delete(r)
      .where(and(eq(r.id, id), eq(r.organizationId, scope.organizationId), eq(r.projectId, scope.projectId), gt(r.expiresAt, clockIso())))
      .returning({ agentId: r.agentId, ruleId: r.ruleId });
    if (!gone) throw ApiError.envelope(404, "Remembered approval not found");
    this.deps.events.emit({ kind: "remembered", agentId: gone.agentId, ruleId: gone.ruleId, expiresAt: null });
  }

  /** Every remembered approval still in force (the gateway's view, read at start and after a `reload`). */
  async live(): Promise<RememberedEntry[]> {
    const r = this.t;
    return this.deps.store.db.select({ agentId: r.agentId, ruleId: r.ruleId, expiresAt: r.expiresAt }).from(r).where(gt(r.expiresAt, clockIso()));
  }

  /** Ended ones are deleted now and then (they no longer show anywhere). */
  async purge(): Promise<void> {
    await this.deps.store.db.delete(this.t).where(lte(this.t.expiresAt, clockIso()));
  }
}
