// The reviewers' queue (docs/policy.md#reviewing-approvals): the pending approvals of a scope, and the long-poll
// that answers when one arrives from any instance.
import { and, asc, eq, gt, notInArray, type SQL } from "drizzle-orm";
import { clockIso } from "../runtime/clock.ts";
import type { ApprovalRow } from "../store/rows.ts";
import type { ServiceDeps } from "./deps.ts";

export interface PendingScope {
  organizationId: string;
  /** Absent for the organization-wide list. */
  projectId?: string;
}

/** Held requests re-read their status this often, in case a change event from another instance was lost. */
export const RECHECK_MS = 1500;

export class ApprovalQueue {
  readonly #pollers = new Set<() => void>();
  #shuttingDown = false;

  constructor(private readonly deps: ServiceDeps) {}

  /** Something about approvals changed (an event from any instance): every long-poll reads again. */
  wake(): void {
    for (const wake of [...this.#pollers]) wake();
  }

  /** Shutdown: long-polls answer at once, with nothing. */
  shutDown(): void {
    this.#shuttingDown = true;
    this.wake();
  }

  pending(scope: PendingScope, exclude: string[]): Promise<ApprovalRow[]> {
    const { approvals } = this.deps.store.t;
    const where: SQL[] = [eq(approvals.status, "pending"), eq(approvals.organizationId, scope.organizationId), gt(approvals.expiresAt, clockIso())];
    if (scope.projectId !== undefined) where.push(eq(approvals.projectId, scope.projectId));
    if (exclude.length > 0) where.push(notInArray(approvals.id, exclude));
    return this.deps.store.db.select().from(approvals).where(and(...where)).orderBy(asc(approvals.createdAt), asc(approvals.id));
  }

  /**
   * The long-poll (docs/policy.md#reviewing-approvals): at once when something is pending, else when something arrives (an approval event
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
}
