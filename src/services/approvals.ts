// Approval requests (CONTRACT §3.5, §5.4, §6.13). Records live in the database; the gateway request they
// hold waits in the process that holds it, for a status change made by any process or instance. Status moves
// only out of `pending`, by compare-and-swap, so a decision, the timeout, a disconnect and a shutdown can race
// safely: the first one wins, and every holder reads the winner back from the store.
import { and, asc, eq, gt, inArray, isNull, lt, ne, notInArray, or, type SQL } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import type { ApprovalStatus, ApprovalSummary } from "../core/model.ts";
import { log } from "../observability/log.ts";
import { metrics } from "../observability/metrics.ts";
import type { ApprovalRow } from "../store/rows.ts";
import type { ChangeEvent } from "../events/bus.ts";
import type { ServiceDeps } from "./deps.ts";

export type { ApprovalRow };
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

/** Held requests re-read their status this often, in case a change event from another instance was lost. */
const RECHECK_MS = 1500;
/** How often a process records that it is alive, and how old that record may get before its holds are orphans. */
export const HEARTBEAT_MS = 5000;
const ORPHAN_AFTER_MS = 30_000;

export class ApprovalService {
  readonly #holders = new Map<string, (outcome: Outcome) => void>();
  readonly #pollers = new Set<() => void>();
  #shuttingDown = false;
  #timers: Timer[] = [];
  /** Since when this process has reached the store without a failure (null: it just failed). */
  #healthySince: number | null = null;

  constructor(private readonly deps: ServiceDeps) {
    deps.events.on((event) => this.#onEvent(event));
  }

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  get timeoutSeconds(): number {
    return this.deps.config.approvalTimeoutSeconds;
  }

  /** Held requests waiting in this process. */
  get held(): number {
    return this.#holders.size;
  }

  /**
   * The serving process's duties: announce itself, cancel the pending approvals no live process holds any more
   * (§4: "the holding process died"), and re-check held requests' status periodically.
   */
  async start(): Promise<void> {
    await this.#heartbeat();
    // Held by this instance's previous life, or (one process owns a SQLite file) by anyone: nobody holds them now.
    await this.cancelOrphans(this.deps.store.engine === "sqlite" ? "all" : "mine");
    this.#timers.push(
      setInterval(() => void this.#heartbeat().catch(() => (this.#healthySince = null)), HEARTBEAT_MS),
      setInterval(() => void this.#sweep().catch(() => {}), ORPHAN_AFTER_MS / 2),
      setInterval(() => void this.#recheckHeld().catch(() => {}), RECHECK_MS),
    );
  }

  stop(): void {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
  }

  /**
   * Periodic orphan sweep. Only after this process has reached the store for a whole orphan period: after an
   * outage every heartbeat is old, and the others must get the chance to beat again first.
   */
  async #sweep(): Promise<void> {
    if (this.#healthySince === null || Date.now() - this.#healthySince < ORPHAN_AFTER_MS) return;
    await this.cancelOrphans();
  }

  async #heartbeat(): Promise<void> {
    const { instances } = this.t;
    const now = nowIso();
    await this.db
      .insert(instances)
      .values({ id: this.deps.instanceId, startedAt: now, heartbeatAt: now })
      .onConflictDoUpdate({ target: instances.id, set: { heartbeatAt: now } });
    this.#healthySince ??= Date.now();
  }

  /**
   * Pending approvals whose holder is gone (no heartbeat for a while, or none at all) become `cancelled`. At
   * start (`also`), those of this instance's previous life (`mine`), or every pending one (`all`).
   */
  async cancelOrphans(also: "mine" | "all" | null = null): Promise<void> {
    const { approvals, instances } = this.t;
    const me = this.deps.instanceId;
    const staleBefore = new Date(Date.now() - ORPHAN_AFTER_MS).toISOString();
    const live = this.db.select({ id: instances.id }).from(instances).where(gt(instances.heartbeatAt, staleBefore));
    const gone = or(isNull(approvals.instanceId), notInArray(approvals.instanceId, live));
    const holderGone = also === "all" ? undefined : also === "mine" ? or(gone, eq(approvals.instanceId, me)) : and(gone, ne(approvals.instanceId, me));
    const orphaned = await this.db
      .update(approvals)
      .set({ status: "cancelled", decidedAt: nowIso() })
      .where(and(eq(approvals.status, "pending"), holderGone))
      .returning({ id: approvals.id, projectId: approvals.projectId, organizationId: approvals.organizationId });
    for (const o of orphaned) this.deps.events.emit({ kind: "approval", ...o });
    await this.db.delete(instances).where(and(lt(instances.heartbeatAt, staleBefore), ne(instances.id, me)));
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
   * Creates a pending approval held by this process and returns it with a promise of its outcome, settled by a
   * decision (on any instance), the timeout, `settle(…, "cancelled")` (agent gone) or `releaseAll` (shutdown).
   */
  async hold(input: NewApproval): Promise<{ row: ApprovalRow; outcome: Promise<Outcome> }> {
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
      instanceId: this.deps.instanceId,
    };
    await this.db.insert(this.t.approvals).values(row);
    const outcome = new Promise<Outcome>((resolve) => {
      const timer = setTimeout(() => void this.settle(row.id, "expired").catch(() => this.#resolve(row.id, "expired")), this.timeoutSeconds * 1000);
      this.#holders.set(row.id, (o) => {
        clearTimeout(timer);
        this.#holders.delete(row.id);
        metrics.heldApprovals.dec();
        resolve(o);
      });
      metrics.heldApprovals.inc();
    });
    this.deps.events.emit({ kind: "approval", id: row.id, projectId: row.projectId, organizationId: row.organizationId });
    return { row, outcome };
  }

  #resolve(id: string, outcome: Outcome): void {
    this.#holders.get(id)?.(outcome);
  }

  /**
   * Moves a pending approval to `status` (once); false when it was no longer pending. Whoever holds it learns
   * the outcome: at once in this process, through the change event elsewhere.
   */
  async settle(id: string, status: Outcome, by?: { userId: string | null; email: string | null }): Promise<boolean> {
    const { approvals } = this.t;
    const [changed] = await this.db
      .update(approvals)
      .set({ status, decidedAt: nowIso(), decidedByUserId: by?.userId ?? null, decidedByEmail: by?.email ?? null })
      .where(and(eq(approvals.id, id), eq(approvals.status, "pending")))
      .returning({ id: approvals.id, projectId: approvals.projectId, organizationId: approvals.organizationId });
    if (changed) {
      this.#resolve(id, status);
      this.deps.events.emit({ kind: "approval", ...changed });
      return true;
    }
    // Someone else settled it first: a holder here follows the stored outcome.
    if (this.#holders.has(id)) await this.#followStored([id]);
    return false;
  }

  /** Resolves the holders of `ids` whose approvals are no longer pending in the store. */
  async #followStored(ids: string[]): Promise<void> {
    const { approvals } = this.t;
    const rows = await this.db
      .select({ id: approvals.id, status: approvals.status })
      .from(approvals)
      .where(and(inArray(approvals.id, ids), ne(approvals.status, "pending")));
    for (const r of rows) this.#resolve(r.id, r.status as Outcome);
  }

  async #recheckHeld(): Promise<void> {
    if (this.#holders.size > 0) await this.#followStored([...this.#holders.keys()]);
  }

  #onEvent(event: ChangeEvent): void {
    if (event.kind !== "approval" && event.kind !== "reload") return;
    for (const wake of [...this.#pollers]) wake();
    if (event.kind === "reload") void this.#recheckHeld().catch(() => {});
    else if (this.#holders.has(event.id)) void this.#followStored([event.id]).catch(() => {});
  }

  async get(scope: PendingScope, id: string): Promise<ApprovalRow> {
    const [row] = await this.db.select().from(this.t.approvals).where(eq(this.t.approvals.id, id)).limit(1);
    if (!row || row.organizationId !== scope.organizationId || (scope.projectId !== undefined && row.projectId !== scope.projectId)) throw notFoundBody();
    return row;
  }

  async decide(scope: PendingScope, id: string, decision: "approve" | "deny", by: { userId: string | null; email: string | null }): Promise<void> {
    const row = await this.get(scope, id);
    if (row.status !== "pending") throw new ApiError(410, "approval_expired", "flat");
    if (Date.parse(row.expiresAt) <= Date.now()) {
      await this.settle(id, "expired");
      throw new ApiError(410, "approval_expired", "flat");
    }
    const status = decision === "approve" ? "approved" : "denied";
    if (!(await this.settle(id, status, by))) throw new ApiError(410, "approval_expired", "flat");
    // After the decision, not in its transaction: settling releases the held request in this process at once.
    await this.deps.audit.record({ targetType: "approval", targetId: id, projectId: row.projectId, before: { status: row.status }, after: { status } });
  }

  pending(scope: PendingScope, exclude: string[]): Promise<ApprovalRow[]> {
    const { approvals } = this.t;
    const where: SQL[] = [eq(approvals.status, "pending"), eq(approvals.organizationId, scope.organizationId), gt(approvals.expiresAt, nowIso())];
    if (scope.projectId !== undefined) where.push(eq(approvals.projectId, scope.projectId));
    if (exclude.length > 0) where.push(notInArray(approvals.id, exclude));
    return this.db.select().from(approvals).where(and(...where)).orderBy(asc(approvals.createdAt), asc(approvals.id));
  }

  /**
   * The long-poll (§5.4): at once when something is pending, else when something arrives (an approval event
   * from any instance), else after the poll time. It also re-reads every few seconds, so a lost event only
   * delays an answer.
   */
  async poll(scope: PendingScope, exclude: string[], signal?: AbortSignal): Promise<ApprovalRow[]> {
    if (this.#shuttingDown) return [];
    const now = await this.pending(scope, exclude);
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
        const timer = setTimeout(done, Math.max(0, Math.min(deadline - Date.now(), RECHECK_MS * 2)));
        this.#pollers.add(done);
        signal?.addEventListener("abort", done);
      });
      if (this.#shuttingDown || signal?.aborted) return [];
      const found = await this.pending(scope, exclude);
      if (found.length > 0) return found;
    }
    return [];
  }

  /** Shutdown: answer long-polls at once and release every held request as cancelled. */
  async releaseAll(): Promise<void> {
    this.#shuttingDown = true;
    this.stop();
    for (const wake of [...this.#pollers]) wake();
    const ids = [...this.#holders.keys()];
    if (ids.length === 0) return;
    const { approvals } = this.t;
    try {
      await this.db.update(approvals).set({ status: "cancelled", decidedAt: nowIso() }).where(and(inArray(approvals.id, ids), eq(approvals.status, "pending")));
    } catch (err) {
      // The store is gone: the next process to start marks them (cancelOrphans).
      log.warn("held approvals not marked cancelled", { count: ids.length, error: (err as Error).message });
    }
    for (const id of ids) this.#resolve(id, "cancelled");
  }
}
