// Which processes are alive to hold approvals (docs/policy.md#approvals: "the holding process died"): each one
// records a heartbeat, and the pending approvals no live process holds any more become `cancelled`.
import { and, eq, gt, isNull, lt, ne, notInArray, or } from "drizzle-orm";
import { nowIso } from "../core/ids.ts";
import type { ServiceDeps } from "./deps.ts";

/** How often a process records that it is alive, and how old that record may get before its holds are orphans. */
export const HEARTBEAT_MS = 5000;
export const ORPHAN_AFTER_MS = 30_000;

export class ApprovalLiveness {
  /** Since when this process has reached the store without a failure (null: it just failed). */
  #healthySince: number | null = null;

  constructor(private readonly deps: ServiceDeps) {}

  /** Marks the store unreachable: the orphan sweep waits for a whole healthy period again. */
  failed(): void {
    this.#healthySince = null;
  }

  /**
   * Periodic orphan sweep. Only after this process has reached the store for a whole orphan period: after an
   * outage every heartbeat is old, and the others must get the chance to beat again first.
   */
  async sweep(): Promise<void> {
    if (this.#healthySince === null || Date.now() - this.#healthySince < ORPHAN_AFTER_MS) return;
    await this.cancelOrphans();
  }

  async heartbeat(): Promise<void> {
    const { instances } = this.deps.store.t;
    const now = nowIso();
    await this.deps.store.db
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
    const { db } = this.deps.store;
    const { approvals, instances } = this.deps.store.t;
    const me = this.deps.instanceId;
    const staleBefore = new Date(Date.now() - ORPHAN_AFTER_MS).toISOString();
    const live = db.select({ id: instances.id }).from(instances).where(gt(instances.heartbeatAt, staleBefore));
    const gone = or(isNull(approvals.instanceId), notInArray(approvals.instanceId, live));
    const holderGone = also === "all" ? undefined : also === "mine" ? or(gone, eq(approvals.instanceId, me)) : and(gone, ne(approvals.instanceId, me));
    const orphaned = await db
      .update(approvals)
      .set({ status: "cancelled", decidedAt: nowIso() })
      .where(and(eq(approvals.status, "pending"), holderGone))
      .returning({ id: approvals.id, projectId: approvals.projectId, organizationId: approvals.organizationId });
    for (const o of orphaned) this.deps.events.emit({ kind: "approval", ...o });
    await db.delete(instances).where(and(lt(instances.heartbeatAt, staleBefore), ne(instances.id, me)));
  }
}
