// Approval requests (docs/policy.md#approvals): creating one and holding the gateway request, and deciding it.
// Records live in the database; the gateway request they hold waits in the process that holds it, for a status
// change made by any process or instance. Status moves only out of `pending`, by compare-and-swap, so a decision,
// the timeout, a disconnect and a shutdown can race safely: the first one wins, and every holder reads the winner
// back from the store. Every held request also gets an approval link (approvalLinks.ts); people hear of it
// through notifications (docs/policy.md#notifications), raised here without waiting for them. Reviewers' queue:
// approvalQueue.ts; holders that died: approvalLiveness.ts.
import { and, eq, gt, inArray, ne } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { newId, nowIso, randomHex } from "../core/ids.ts";
import type { ApprovalStatus, ApprovalSummary } from "../core/model.ts";
import { tokenHash } from "../crypto/hash.ts";
import { log } from "../observability/log.ts";
import { metrics } from "../observability/metrics.ts";
import { clockIso, clockNow } from "../runtime/clock.ts";
import type { ApprovalRow } from "../store/rows.ts";
import type { ChangeEvent } from "../events/bus.ts";
import { approvalLinkState, approvalLinkUrl, linkGone, linkNotFound, type Decision, type LinkState } from "./approvalLinks.ts";
import { ApprovalLiveness, HEARTBEAT_MS, ORPHAN_AFTER_MS } from "./approvalLiveness.ts";
import { ApprovalQueue, RECHECK_MS, type PendingScope } from "./approvalQueue.ts";
import type { ServiceDeps } from "./deps.ts";
import type { NotificationService } from "./notifications/index.ts";
import type { DecidedBy } from "./notifications/events.ts";
import type { RememberedApprovalService } from "./rememberedApprovals.ts";

export type { ApprovalRow };
export type { Decision, LinkState } from "./approvalLinks.ts";
export type { PendingScope } from "./approvalQueue.ts";
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
  /** The rule whose verdict held the request (remembered approvals are per rule). */
  rule?: { logicalId: string; name: string } | null;
}

/**
 * The key a remembered approval is kept under: the rule's. An MCP tool call's key ends in its arguments' hash
 * (`mcp:<server>:<tool>:<sha256>`, gateway/stages/mcpTools.ts); `anyArguments` remembers the tool whatever its
 * arguments (`…:*`) (docs/gateway.md#mcp-servers). Other rules ignore it.
 */
function rememberedRuleId(ruleId: string, anyArguments: boolean): string {
  return anyArguments && ruleId.startsWith("mcp:") ? ruleId.replace(/:[0-9a-f]{64}$/, ":*") : ruleId;
}

const notFoundBody = () => new ApiError(404, "approval_not_found", "flat");
const expiredBody = () => new ApiError(410, "approval_expired", "flat");

export class ApprovalService {
  readonly #holders = new Map<string, (outcome: Outcome) => void>();
  readonly #queue: ApprovalQueue;
  readonly #liveness: ApprovalLiveness;
  #timers: Timer[] = [];

  constructor(
    private readonly deps: ServiceDeps,
    private readonly notifications: NotificationService,
    private readonly remembered: RememberedApprovalService,
  ) {
    this.#queue = new ApprovalQueue(deps);
    this.#liveness = new ApprovalLiveness(deps);
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
   * (docs/policy.md#approvals: "the holding process died"), and re-check held requests' status periodically.
   * `previousLife`: what else was held before this start and is held by nobody now — this process's own
   * (`mine`), or every pending approval (`all`: a server starting on a SQLite file, before any of its gateway
   * processes listens, is the only one that could hold any; its gateway workers are `mine`, beside processes
   * that hold requests). Called before this process's gateway listens: a request held earlier would be
   * cancelled with the previous life's.
   */
  async start(previousLife: "mine" | "all"): Promise<void> {
    await this.#liveness.heartbeat();
    await this.#liveness.cancelOrphans(previousLife);
    this.#timers.push(
      setInterval(() => void this.#liveness.heartbeat().catch(() => this.#liveness.failed()), HEARTBEAT_MS),
      setInterval(() => void this.#liveness.sweep().catch(() => {}), ORPHAN_AFTER_MS / 2),
      setInterval(() => void this.#recheckHeld().catch(() => {}), RECHECK_MS),
      setInterval(() => void this.remembered.purge().catch(() => {}), ORPHAN_AFTER_MS * 10),
    );
  }

  stop(): void {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
  }

  /**
   * Creates a pending approval held by this process and returns it with a promise of its outcome, settled by a
   * decision (on any instance), the timeout, `settle(…, "cancelled")` (agent gone) or `releaseAll` (shutdown).
   */
  async hold(input: NewApproval): Promise<{ row: ApprovalRow; outcome: Promise<Outcome> }> {
    const now = clockNow();
    const token = randomHex(32);
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
      linkTokenHash: tokenHash(token),
      ruleId: input.rule?.logicalId ?? null,
      ruleName: input.rule?.name ?? null,
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
    // Not awaited: a slow store or channel must not delay the hold (notify never rejects).
    void this.notifications.notify({ organizationId: row.organizationId, projectId: row.projectId }, "approval.requested", {
      approvalId: row.id,
      projectId: row.projectId,
      agent: { id: row.agentId, name: row.agentName },
      method: row.method,
      host: row.host,
      path: notifiedPath(row),
      summary: row.summary,
      expiresAt: row.expiresAt,
      approveUrl: approvalLinkUrl(this.deps.config.publicUrl, row.id, token, "approve"),
      denyUrl: approvalLinkUrl(this.deps.config.publicUrl, row.id, token, "deny"),
    });
    return { row, outcome };
  }

  /**
   * The outcome of an approval this process holds, cancelled when `signal` aborts first (the agent went away, so
   * nobody is left to decide for): every door that holds — HTTP, the database broker, SSH — waits this way.
   */
  async awaitOutcome(id: string, outcome: Promise<Outcome>, signal: AbortSignal): Promise<Outcome> {
    const cancel = () => void this.settle(id, "cancelled").catch((err: Error) => log.warn("approval not cancelled", { error: err.message }));
    signal.addEventListener("abort", cancel);
    try {
      return await outcome;
    } finally {
      signal.removeEventListener("abort", cancel);
    }
  }

  #resolve(id: string, outcome: Outcome): void {
    this.#holders.get(id)?.(outcome);
  }

  /**
   * Moves a pending approval to `status` (once); false when it was no longer pending. Whoever holds it learns
   * the outcome: at once in this process, through the change event elsewhere.
   */
  async settle(id: string, status: Outcome, by?: { userId: string | null; email: string | null }): Promise<boolean> {
    const changed = await this.#markSettled(id, status, by);
    if (changed) {
      this.deps.events.emit({ kind: "approval", ...changed });
      this.#settled(id, status);
      return true;
    }
    // Someone else settled it first: a holder here follows the stored outcome.
    if (this.#holders.has(id)) await this.#followStored([id]);
    return false;
  }

  /**
   * The compare-and-swap out of `pending`: what changed, or null when it was no longer pending. `unexpiredAt`
   * (a person's decision): also null when the approval's `expiresAt` is not after that time, whatever this or any
   * other process's timer did (docs/policy.md#approvals).
   */
  async #markSettled(id: string, status: Outcome, by?: { userId: string | null; email: string | null }, unexpiredAt?: string): Promise<{ id: string; projectId: string; organizationId: string } | null> {
    const { approvals } = this.t;
    const where = [eq(approvals.id, id), eq(approvals.status, "pending")];
    if (unexpiredAt !== undefined) where.push(gt(approvals.expiresAt, unexpiredAt));
    const [changed] = await this.db
      .update(approvals)
      .set({ status, decidedAt: nowIso(), decidedByUserId: by?.userId ?? null, decidedByEmail: by?.email ?? null })
      .where(and(...where))
      .returning({ id: approvals.id, projectId: approvals.projectId, organizationId: approvals.organizationId });
    return changed ?? null;
  }

  /** After a settle committed: the holder here goes on, and the request's notifications stop. */
  #settled(id: string, status: Outcome): void {
    this.#resolve(id, status);
    void this.notifications.endApproval(id).catch((err: Error) => log.warn("approval deliveries not stopped", { error: err.message }));
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
    this.#queue.wake();
    if (event.kind === "reload") void this.#recheckHeld().catch(() => {});
    else if (this.#holders.has(event.id)) void this.#followStored([event.id]).catch(() => {});
  }

  async get(scope: PendingScope, id: string): Promise<ApprovalRow> {
    const [row] = await this.db.select().from(this.t.approvals).where(eq(this.t.approvals.id, id)).limit(1);
    if (!row || row.organizationId !== scope.organizationId || (scope.projectId !== undefined && row.projectId !== scope.projectId)) throw notFoundBody();
    return row;
  }

  /** A reviewer's decision (`POST /approvals/{id}/decision`); the end of the remembered approval it made, or null. */
  async decide(scope: PendingScope, id: string, decision: Decision, by: { userId: string | null; email: string | null }, rememberMinutes?: number, anyArguments = false): Promise<string | null> {
    return this.#decide(await this.get(scope, id), decision, by, rememberMinutes, expiredBody, anyArguments);
  }

  /** A decision through the approval link (`POST /approvals/{id}/link-decision`): the token is the only credential. */
  async decideByLink(id: string, token: string, decision: Decision, rememberMinutes?: number, anyArguments = false): Promise<string | null> {
    const link = await this.linkState(id, token);
    if (link.state === "not_found") throw linkNotFound();
    if (link.state === "gone") {
      // Past its expiresAt: the decision expires it, as a reviewer's would (#decide).
      if (link.unsettled) await this.settle(id, "expired");
      throw linkGone();
    }
    return this.#decide(link.row, decision, { kind: "link" }, rememberMinutes, linkGone, anyArguments);
  }

  /** What the approval link `id` + `token` opens (approvalLinks.ts). */
  linkState(id: string, token: string): Promise<LinkState> {
    return approvalLinkState(this.deps.store, id, token);
  }

  /**
   * A person's decision. An approval past its `expiresAt` is expired, never decided, even while its row still
   * says pending: the timer that settles it runs only in the process holding the request, and that process may
   * have restarted, or another process or instance may serve this decision (docs/policy.md#approvals).
   */
  async #decide(row: ApprovalRow, decision: Decision, by: DecidedBy, rememberMinutes: number | undefined, gone: () => ApiError, anyArguments = false): Promise<string | null> {
    if (row.status !== "pending") throw gone();
    if (Date.parse(row.expiresAt) <= clockNow()) {
      await this.settle(row.id, "expired");
      throw gone();
    }
    const status = decision === "approve" ? "approved" : "denied";
    const person = "kind" in by ? undefined : by;
    // The remembered approval is in place, and announced before the decision (events go out in order at commit),
    // so the agent's next request, whichever process or instance takes it, already finds it.
    const outcome = await this.deps.store.transaction(async () => {
      // The expiry is part of the swap too: the approval may expire between the check above and this statement.
      const changed = await this.#markSettled(row.id, status, person, clockIso());
      if (!changed) return null;
      const remember = decision === "approve" && rememberMinutes !== undefined && row.ruleId !== null && row.ruleName !== null;
      const until = remember
        ? await this.remembered.remember({ organizationId: row.organizationId, projectId: row.projectId, agentId: row.agentId, ruleId: rememberedRuleId(row.ruleId!, anyArguments), ruleName: row.ruleName!, minutes: rememberMinutes!, by })
        : null;
      this.deps.events.emit({ kind: "approval", ...changed });
      return { until };
    });
    if (!outcome) {
      if (Date.parse(row.expiresAt) <= clockNow()) await this.settle(row.id, "expired");
      else if (this.#holders.has(row.id)) await this.#followStored([row.id]);
      throw gone();
    }
    this.#settled(row.id, status);
    // After the decision, not in its transaction: settling releases the held request in this process at once.
    await this.deps.audit.record({ targetType: "approval", targetId: row.id, projectId: row.projectId, before: { status: row.status }, after: { status } });
    void this.notifications.notify({ organizationId: row.organizationId, projectId: row.projectId }, "approval.decided", {
      approvalId: row.id,
      decision,
      decidedBy: by,
      rememberedUntil: outcome.until,
      projectId: row.projectId,
      agent: { id: row.agentId, name: row.agentName },
      method: row.method,
      host: row.host,
      path: notifiedPath(row),
    });
    return outcome.until;
  }

  pending(scope: PendingScope, exclude: string[]): Promise<ApprovalRow[]> {
    return this.#queue.pending(scope, exclude);
  }

  /** The reviewers' long-poll (ApprovalQueue.poll). */
  poll(scope: PendingScope, exclude: string[], signal?: AbortSignal): Promise<ApprovalRow[]> {
    return this.#queue.poll(scope, exclude, signal);
  }

  /** Shutdown: answer long-polls at once and release every held request as cancelled. */
  async releaseAll(): Promise<void> {
    this.stop();
    this.#queue.shutDown();
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

/**
 * The path notifications show: an HTTP request's without its query (docs/policy.md#approvals), a held SQL
 * statement whole (its `?` is an operator, not a query: docs/databases.md#writes-that-need-approval).
 */
function notifiedPath(row: ApprovalRow): string {
  return row.method === "SQL" ? row.path : pathOnly(row.path);
}

function pathOnly(path: string): string {
  const q = path.indexOf("?");
  return q < 0 ? path : path.slice(0, q);
}
