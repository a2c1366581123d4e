// Request logs (docs/gateway.md#request-logs): the gateway enqueues one row per proxied request; rows are written in
// batches (every 5 s or 500 rows), and purged after the retention. The agents' lastSeenAt goes with the timed and
// the asked-for batches, not with every full one: under load that is one transaction every 5 s instead of one per
// 500 rows (on PostgreSQL its round trips, commit and WAL flush cost the server ~2 µs per request).
// A batch the store cannot take is kept and retried; past QUEUE_MAX rows the oldest are dropped, counted
// and reported, so an unreachable database never grows the gateway's memory without bound.
import { and, desc, eq, getTableColumns, gte, lt, lte, or, type SQL } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { log } from "../observability/log.ts";
import { metrics, watchRequestLogQueue } from "../observability/metrics.ts";
import type { RequestLogRecord } from "../store/rows.ts";
import type { ServiceDeps } from "./deps.ts";
import type { AgentService } from "./agents.ts";
import type { RequestLog } from "../core/records/logs.ts";

/** A row as the gateway builds it; `seq` is assigned by the insert. */
export type RequestLogRow = Omit<RequestLogRecord, "seq">;
export type RequestLogView = RequestLog;

export const REQUEST_LOG_DECISIONS = [
  "allowed",
  "blocked",
  "blocked_by_default_policy",
  "rate_limited",
  "approval_pending",
  "approval_approved",
  "approval_denied",
  "approval_expired",
  "approval_cancelled",
  "approved_by_memory",
  "budget_exceeded",
  "claim_required",
  "error",
] as const;

export type RequestLogDecision = (typeof REQUEST_LOG_DECISIONS)[number];

export interface RequestLogQuery {
  organizationId: string;
  projectId?: string;
  agentId?: string;
  host?: string;
  decision?: string;
  status?: number;
  since?: string;
  until?: string;
  limit: number;
  cursor?: string;
}

const BATCH_ROWS = 500;
const BATCH_MS = 5000;
const DAY_MS = 24 * 3600 * 1000;
/** Rows kept while the store refuses them; beyond this the oldest are dropped. */
const QUEUE_MAX = 50_000;
const DROP_REPORT_MS = 60_000;

function encodeCursor(row: { createdAt: string; id: string }): string {
  return Buffer.from(JSON.stringify([row.createdAt, row.id])).toString("base64url");
}

/** The lists' order: newest first, ties by id (as the queries' ORDER BY). */
function newestFirst(a: RequestLogView, b: RequestLogView): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

export function decodeCursor(cursor: string): { createdAt: string; id: string } | null {
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(v) && typeof v[0] === "string" && typeof v[1] === "string") return { createdAt: v[0], id: v[1] };
  } catch {}
  return null;
}

/** The lastSeenAt of a full batch: none (it goes with the next timed or asked-for flush). Never written to. */
const NONE_SEEN: ReadonlyMap<string, string> = new Map();

/** The decision of a row that is written before its request ends and updated in place afterwards. */
const PENDING = "approval_pending";

export class RequestLogService {
  #queue: RequestLogRow[] = [];
  #lastSeen = new Map<string, string>();
  /** Final outcomes of rows already written (held requests), waiting to be stored. */
  #updates = new Map<string, Partial<RequestLogRow>>();
  #timers: Timer[] = [];
  /** Seqs of written rows still waiting for their final update (held requests): ids have no index. */
  #pendingSeq = new Map<string, number>();
  #flushing: Promise<void> = Promise.resolve();
  #dropped = 0;
  #droppedReportedAt = 0;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly agents: AgentService,
  ) {}

  /** Rows dropped because the store refused them for too long (since start). */
  get dropped(): number {
    return this.#dropped;
  }

  get queued(): number {
    return this.#queue.length;
  }

  /** Starts the periodic flush and the daily purge (the serving process only). */
  start(): void {
    watchRequestLogQueue(() => this.#queue.length);
    void this.purge().catch((err: Error) => log.warn("request-log purge failed", { error: err.message }));
    this.#timers.push(
      setInterval(() => void this.flush(), BATCH_MS),
      setInterval(() => void this.purge().catch((err: Error) => log.warn("request-log purge failed", { error: err.message })), DAY_MS),
    );
  }

  async stop(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await this.flush();
  }

  enqueue(row: RequestLogRow): void {
    this.#queue.push(row);
    this.#lastSeen.set(row.agentId, row.createdAt);
    if (this.#queue.length > QUEUE_MAX) this.#drop(this.#queue.length - QUEUE_MAX);
    else if (this.#queue.length === BATCH_ROWS) void this.#write(false);
  }

  /** Updates a row in place (e.g. the final outcome of a held request), queued or already written. */
  update(id: string, patch: Partial<RequestLogRow>): void {
    const queued = this.#queue.find((r) => r.id === id);
    if (queued) {
      Object.assign(queued, patch);
      return;
    }
    this.#updates.set(id, { ...this.#updates.get(id), ...patch });
    void this.flush();
  }

  /** Writes what is queued now, with the agents' lastSeenAt; batches run one at a time, in order. Never rejects. */
  flush(): Promise<void> {
    return this.#write(true);
  }

  /** `withSeen` false: a full batch, whose agents' lastSeenAt waits for the next timed or asked-for flush. */
  #write(withSeen: boolean): Promise<void> {
    const batch = { rows: this.#queue, seen: withSeen ? this.#lastSeen : NONE_SEEN, updates: this.#updates };
    this.#queue = [];
    if (withSeen) this.#lastSeen = new Map();
    this.#updates = new Map();
    this.#flushing = this.#flushing.then(() => this.#store(batch));
    return this.#flushing;
  }

  async #store({ rows, seen, updates }: { rows: RequestLogRow[]; seen: ReadonlyMap<string, string>; updates: Map<string, Partial<RequestLogRow>> }): Promise<void> {
    if (rows.length === 0 && seen.size === 0 && updates.size === 0) return;
    // Only held requests' rows are updated later, by their seq; the rest go the engine's fastest way (COPY).
    const held = rows.filter((r) => r.decision === PENDING);
    const done = held.length === 0 ? rows : rows.filter((r) => r.decision !== PENDING);
    let stored = 0;
    try {
      if (done.length > 0) await this.deps.store.appendRequestLogs(done);
      stored = done.length;
      if (held.length > 0) {
        const seqs = await this.deps.store.insertRequestLogs(held);
        held.forEach((r, i) => this.#pendingSeq.set(r.id, seqs[i]!));
      }
    } catch (err) {
      // Kept for the next flush, ahead of what arrived meanwhile (the rows of a statement that failed only).
      const kept = stored === 0 ? rows : held;
      this.#queue = kept.concat(this.#queue);
      for (const [id, at] of seen) if (!this.#lastSeen.has(id)) this.#lastSeen.set(id, at);
      for (const [id, patch] of updates) this.#updates.set(id, { ...patch, ...this.#updates.get(id) });
      if (this.#queue.length > QUEUE_MAX) this.#drop(this.#queue.length - QUEUE_MAX);
      log.warn("request logs not written, will retry", { rows: kept.length, queued: this.#queue.length, error: (err as Error).message });
      return;
    }
    const { requestLogs } = this.deps.store.t;
    for (const [id, patch] of updates) {
      const seq = this.#pendingSeq.get(id);
      try {
        await this.deps.store.db
          .update(requestLogs)
          .set(patch)
          .where(seq !== undefined ? eq(requestLogs.seq, seq) : eq(requestLogs.id, id));
        this.#pendingSeq.delete(id);
      } catch (err) {
        this.#updates.set(id, { ...patch, ...this.#updates.get(id) });
        log.warn("request log update not written, will retry", { error: (err as Error).message });
      }
    }
    try {
      await this.agents.touch(seen);
    } catch {
      // lastSeenAt is advisory: the next batch carries newer times.
    }
  }

  #drop(count: number): void {
    this.#queue.splice(0, count);
    this.#dropped += count;
    metrics.requestLogDrops.inc(count);
    const now = Date.now();
    if (now - this.#droppedReportedAt >= DROP_REPORT_MS) {
      this.#droppedReportedAt = now;
      log.warn("request logs dropped: the store has refused them too long", { dropped: this.#dropped });
    }
  }

  async purge(now = Date.now()): Promise<void> {
    const { requestLogs } = this.deps.store.t;
    const cutoff = new Date(now - this.deps.config.logRetentionDays * DAY_MS).toISOString();
    await this.deps.store.db.delete(requestLogs).where(lt(requestLogs.createdAt, cutoff));
  }

  /**
   * One page, newest first. The table's one index is per project (store/schema/logs.ts), so an organization's list
   * is one walk per project — each already in order and cut at the page size — merged here.
   */
  async query(q: RequestLogQuery): Promise<{ data: RequestLogView[]; nextCursor: string | null }> {
    await this.flush();
    const cursor = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    if (cursor === null) throw ApiError.flat(400, "cursor is invalid");
    const projectIds = await this.#projectsToWalk(q);
    const walks = await Promise.all(projectIds.map((projectId) => this.#walk(q, projectId, cursor)));
    const rows = walks.length === 1 ? walks[0]! : walks.flat().sort(newestFirst).slice(0, q.limit + 1);
    const data: RequestLogView[] = rows.slice(0, q.limit);
    return { data, nextCursor: rows.length > q.limit ? encodeCursor(data[data.length - 1]!) : null };
  }

  /** The projects whose rows can match: the one asked for, the agent's, or all of the organization's. */
  async #projectsToWalk(q: RequestLogQuery): Promise<string[]> {
    if (q.projectId) return [q.projectId];
    const { agents, projects } = this.deps.store.t;
    if (q.agentId) {
      const [agent] = await this.deps.store.db.select({ projectId: agents.projectId }).from(agents).where(eq(agents.id, q.agentId));
      // A deleted agent's rows stay with its project: then every project is walked.
      if (agent) return [agent.projectId];
    }
    const rows = await this.deps.store.db.select({ id: projects.id }).from(projects).where(eq(projects.organizationId, q.organizationId));
    return rows.map((r) => r.id);
  }

  /** Up to one more row than the page, newest first, of one project. */
  async #walk(q: RequestLogQuery, projectId: string, cursor: { createdAt: string; id: string } | undefined): Promise<RequestLogView[]> {
    const { requestLogs } = this.deps.store.t;
    const where: SQL[] = [eq(requestLogs.projectId, projectId), eq(requestLogs.organizationId, q.organizationId)];
    if (q.agentId) where.push(eq(requestLogs.agentId, q.agentId));
    if (q.host) where.push(eq(requestLogs.host, q.host.toLowerCase()));
    if (q.decision) where.push(eq(requestLogs.decision, q.decision));
    if (q.status !== undefined) where.push(eq(requestLogs.status, q.status));
    if (q.since) where.push(gte(requestLogs.createdAt, q.since));
    if (q.until) where.push(lte(requestLogs.createdAt, q.until));
    if (cursor) {
      // The plain bound lets the walk start at the cursor instead of filtering every newer row.
      where.push(lte(requestLogs.createdAt, cursor.createdAt));
      where.push(or(lt(requestLogs.createdAt, cursor.createdAt), and(eq(requestLogs.createdAt, cursor.createdAt), lt(requestLogs.id, cursor.id)))!);
    }
    const { seq: _seq, organizationId: _org, ...columns } = getTableColumns(requestLogs);
    return this.deps.store.db
      .select(columns)
      .from(requestLogs)
      .where(and(...where))
      .orderBy(desc(requestLogs.createdAt), desc(requestLogs.id))
      .limit(q.limit + 1);
  }
}
