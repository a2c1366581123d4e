// Approval requests (CONTRACT §3.5, §5.4, §6.13). Records live in the database; the gateway request they
// hold waits in this process for a status change. Status moves only out of `pending`, by compare-and-swap,
// so a decision, the timeout, a disconnect and a shutdown can race safely: the first one wins.
import { and, asc, eq, gt, inArray, notInArray, type SQL } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import { approvals, type ApprovalStatus, type ApprovalSummary } from "../store/schema.ts";
import type { ServiceDeps } from "./deps.ts";

export type ApprovalRow = typeof approvals.$inferSelect;
export type Outcome = Exclude<ApprovalStatus, "pending">;

export interface NewApproval {
  organizationId: string;
  projectId: string;
  agent: { id: string; name: string; identifier: string };
  method: string;
  url: string;
  host: string;
  path: string;
  headers: Record<string, string>;
  bodyPreview: string | null;
  summary: ApprovalSummary | null;
}

export interface PendingScope {
  organizationId: string;
  /** Absent for the organization-wide list. */
  projectId?: string;
}

const notFoundBody = () => new ApiError(404, "approval_not_found", "flat");

export class ApprovalService {
  readonly #holders = new Map<string, (outcome: Outcome) => void>();
  readonly #pollers = new Set<() => void>();
  #shuttingDown = false;

  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.db;
  }

  get timeoutSeconds(): number {
    return this.deps.config.approvalTimeoutSeconds;
  }

  /** Pending approvals left by a previous process can never be answered: they are cancelled (§4). */
  cancelOrphans(): void {
    this.db.update(approvals).set({ status: "cancelled", decidedAt: nowIso() }).where(eq(approvals.status, "pending")).run();
  }

  requestView(row: ApprovalRow) {
    return {
      id: row.id,
      projectId: row.projectId,
      method: row.method,
      url: row.url,
      host: row.host,
      path: row.path,
      headers: row.headers,
      bodyPreview: row.bodyPreview,
      summary: row.summary,
      agent: { id: row.agentId, name: row.agentName, externalId: row.agentIdentifier },
      createdAt: row.createdAt,
      expiresAt: row.expiresAt,
    };
  }

  recordView(row: ApprovalRow) {
    return {
      ...this.requestView(row),
      status: row.status,
      decidedAt: row.decidedAt,
      decidedBy: row.decidedByEmail ? { userId: row.decidedByUserId, email: row.decidedByEmail } : null,
    };
  }

  /**
   * Creates a pending approval and returns it with a promise of its outcome, settled by a decision, the
   * timeout, `cancel` (agent gone) or `releaseAll` (shutdown).
   */
  hold(input: NewApproval): { row: ApprovalRow; outcome: Promise<Outcome> } {
    const now = Date.now();
    const row: ApprovalRow = {
      id: newId(),
      organizationId: input.organizationId,
      projectId: input.projectId,
      agentId: input.agent.id,
      agentName: input.agent.name,
      agentIdentifier: input.agent.identifier,
      method: input.method,
      url: input.url,
      host: input.host,
      path: input.path,
      headers: input.headers,
      bodyPreview: input.bodyPreview,
      summary: input.summary,
      status: "pending",
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + this.timeoutSeconds * 1000).toISOString(),
      decidedAt: null,
      decidedByUserId: null,
      decidedByEmail: null,
    };
    this.db.insert(approvals).values(row).run();
    const outcome = new Promise<Outcome>((resolve) => {
      const timer = setTimeout(() => this.settle(row.id, "expired"), this.timeoutSeconds * 1000);
      this.#holders.set(row.id, (o) => {
        clearTimeout(timer);
        this.#holders.delete(row.id);
        resolve(o);
      });
    });
    for (const wake of this.#pollers) wake();
    return { row, outcome };
  }

  /** Moves a pending approval to `status` (once) and wakes its holder; false when it was no longer pending. */
  settle(id: string, status: Outcome, by?: { userId: string | null; email: string | null }): boolean {
    const changed = this.db
      .update(approvals)
      .set({ status, decidedAt: nowIso(), decidedByUserId: by?.userId ?? null, decidedByEmail: by?.email ?? null })
      .where(and(eq(approvals.id, id), eq(approvals.status, "pending")))
      .returning({ id: approvals.id })
      .all();
    const moved = changed.length > 0;
    if (moved) this.#holders.get(id)?.(status);
    return moved;
  }

  get(scope: PendingScope, id: string): ApprovalRow {
    const row = this.db.select().from(approvals).where(eq(approvals.id, id)).get();
    if (!row || row.organizationId !== scope.organizationId || (scope.projectId !== undefined && row.projectId !== scope.projectId)) throw notFoundBody();
    return row;
  }

  decide(scope: PendingScope, id: string, decision: "approve" | "deny", by: { userId: string | null; email: string | null }): void {
    const row = this.get(scope, id);
    if (row.status !== "pending") throw new ApiError(410, "approval_expired", "flat");
    if (Date.parse(row.expiresAt) <= Date.now()) {
      this.settle(id, "expired");
      throw new ApiError(410, "approval_expired", "flat");
    }
    if (!this.settle(id, decision === "approve" ? "approved" : "denied", by)) throw new ApiError(410, "approval_expired", "flat");
  }

  pending(scope: PendingScope, exclude: string[]): ApprovalRow[] {
    const where: SQL[] = [eq(approvals.status, "pending"), eq(approvals.organizationId, scope.organizationId), gt(approvals.expiresAt, nowIso())];
    if (scope.projectId !== undefined) where.push(eq(approvals.projectId, scope.projectId));
    if (exclude.length > 0) where.push(notInArray(approvals.id, exclude));
    return this.db.select().from(approvals).where(and(...where)).orderBy(asc(approvals.createdAt), asc(approvals.id)).all();
  }

  /** The long-poll (§5.4): at once when something is pending, else when something arrives, else after the poll time. */
  async poll(scope: PendingScope, exclude: string[], signal?: AbortSignal): Promise<ApprovalRow[]> {
    if (this.#shuttingDown) return [];
    const now = this.pending(scope, exclude);
    if (now.length > 0) return now;
    const deadline = Date.now() + this.deps.config.approvalPollSeconds * 1000;
    while (Date.now() < deadline && !this.#shuttingDown && !signal?.aborted) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#pollers.delete(done);
          signal?.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
        this.#pollers.add(done);
        signal?.addEventListener("abort", done);
      });
      if (this.#shuttingDown) return [];
      const found = this.pending(scope, exclude);
      if (found.length > 0) return found;
    }
    return [];
  }

  /** Shutdown: answer long-polls at once and release every held request as cancelled. */
  releaseAll(): void {
    this.#shuttingDown = true;
    for (const wake of [...this.#pollers]) wake();
    const ids = [...this.#holders.keys()];
    if (ids.length === 0) return;
    this.db.update(approvals).set({ status: "cancelled", decidedAt: nowIso() }).where(and(inArray(approvals.id, ids), eq(approvals.status, "pending"))).run();
    for (const id of ids) this.#holders.get(id)?.("cancelled");
  }
}
