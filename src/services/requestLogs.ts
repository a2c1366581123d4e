// Request logs (CONTRACT §6.16): the gateway enqueues one row per proxied request; rows are written in
// batches (every 5 s or 500 rows) together with the agents' lastSeenAt, and purged after the retention.
import { and, desc, eq, getTableColumns, getTableName, gte, lt, lte, or, type SQL } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { requestLogs } from "../store/schema.ts";
import type { ServiceDeps } from "./deps.ts";
import type { AgentService } from "./agents.ts";

/** A row as the gateway builds it; `seq` (the rowid) is assigned by the insert. */
export type RequestLogRow = Omit<typeof requestLogs.$inferSelect, "seq">;
export type RequestLogView = Omit<RequestLogRow, "organizationId">;

export const LOG_DECISIONS = [
  "allowed",
  "blocked",
  "blocked_by_default_policy",
  "rate_limited",
  "approval_pending",
  "approval_approved",
  "approval_denied",
  "approval_expired",
  "approval_cancelled",
  "budget_exceeded",
  "claim_required",
  "error",
] as const;

export interface LogQuery {
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

function encodeCursor(row: { createdAt: string; id: string }): string {
  return Buffer.from(JSON.stringify([row.createdAt, row.id])).toString("base64url");
}

export function decodeCursor(cursor: string): { createdAt: string; id: string } | null {
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(v) && typeof v[0] === "string" && typeof v[1] === "string") return { createdAt: v[0], id: v[1] };
  } catch {}
  return null;
}

/**
 * Writes a batch on the gateway's event loop: one prepared single-row INSERT, run for each row inside one
 * transaction. Drizzle's multi-row inserts spent most of their time building the query (~20 µs a row against
 * ~6 µs). Columns come from the drizzle schema; every column here is plain text or integer (no mapping).
 * `remember` receives the rowid of each row that will be updated later (a held request's row).
 */
function batchWriter(deps: ServiceDeps, remember: (id: string, seq: number) => void): (rows: RequestLogRow[]) => void {
  const columns = Object.entries(getTableColumns(requestLogs)).filter(([key]) => key !== "seq");
  const keys = columns.map(([key]) => key as keyof RequestLogRow);
  const names = columns.map(([, c]) => `"${c.name}"`).join(", ");
  const client = deps.db.$client;
  const insert = client.prepare(`INSERT INTO "${getTableName(requestLogs)}" (${names}) VALUES (${keys.map(() => "?").join(", ")})`);
  return client.transaction((rows: RequestLogRow[]) => {
    for (const row of rows) {
      const { lastInsertRowid } = insert.run(...keys.map((k) => row[k] ?? null));
      if (row.decision === PENDING) remember(row.id, Number(lastInsertRowid));
    }
  });
}

/** The decision of a row that is written before its request ends and updated in place afterwards. */
const PENDING = "approval_pending";

export class RequestLogService {
  #queue: RequestLogRow[] = [];
  #lastSeen = new Map<string, string>();
  #timers: Timer[] = [];
  #writeBatch: ((rows: RequestLogRow[]) => void) | null = null; // prepared on the first batch
  /** Rowids of written rows still waiting for their final update (held requests): ids have no index. */
  #pendingSeq = new Map<string, number>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly agents: AgentService,
  ) {}

  /** Starts the periodic flush and the daily purge (the serving process only). */
  start(): void {
    this.purge();
    this.#timers.push(setInterval(() => this.flush(), BATCH_MS), setInterval(() => this.purge(), DAY_MS));
  }

  stop(): void {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    this.flush();
  }

  enqueue(row: RequestLogRow): void {
    this.#queue.push(row);
    this.#lastSeen.set(row.agentId, row.createdAt);
    if (this.#queue.length >= BATCH_ROWS) this.flush();
  }

  /** Updates a row in place (e.g. the final outcome of a held request), queued or already written. */
  update(id: string, patch: Partial<RequestLogRow>): void {
    const queued = this.#queue.find((r) => r.id === id);
    if (queued) {
      Object.assign(queued, patch);
      return;
    }
    const seq = this.#pendingSeq.get(id);
    this.#pendingSeq.delete(id);
    this.deps.db
      .update(requestLogs)
      .set(patch)
      .where(seq !== undefined ? eq(requestLogs.seq, seq) : eq(requestLogs.id, id))
      .run();
  }

  flush(): void {
    const rows = this.#queue;
    const seen = this.#lastSeen;
    if (rows.length === 0 && seen.size === 0) return;
    this.#queue = [];
    this.#lastSeen = new Map();
    if (rows.length > 0) (this.#writeBatch ??= batchWriter(this.deps, (id, seq) => this.#pendingSeq.set(id, seq)))(rows);
    this.agents.touch(seen);
  }

  purge(now = Date.now()): void {
    const cutoff = new Date(now - this.deps.config.logRetentionDays * DAY_MS).toISOString();
    this.deps.db.delete(requestLogs).where(lt(requestLogs.createdAt, cutoff)).run();
  }

  query(q: LogQuery): { data: RequestLogView[]; nextCursor: string | null } {
    this.flush();
    const where: SQL[] = [eq(requestLogs.organizationId, q.organizationId)];
    if (q.projectId) where.push(eq(requestLogs.projectId, q.projectId));
    if (q.agentId) where.push(eq(requestLogs.agentId, q.agentId));
    if (q.host) where.push(eq(requestLogs.host, q.host.toLowerCase()));
    if (q.decision) where.push(eq(requestLogs.decision, q.decision));
    if (q.status !== undefined) where.push(eq(requestLogs.status, q.status));
    if (q.since) where.push(gte(requestLogs.createdAt, q.since));
    if (q.until) where.push(lte(requestLogs.createdAt, q.until));
    if (q.cursor) {
      const c = decodeCursor(q.cursor);
      if (!c) throw ApiError.flat(400, "cursor is invalid");
      where.push(or(lt(requestLogs.createdAt, c.createdAt), and(eq(requestLogs.createdAt, c.createdAt), lt(requestLogs.id, c.id)))!);
    }
    const { seq: _seq, organizationId: _org, ...columns } = getTableColumns(requestLogs);
    const rows = this.deps.db
      .select(columns)
      .from(requestLogs)
      .where(and(...where))
      .orderBy(desc(requestLogs.createdAt), desc(requestLogs.id))
      .limit(q.limit + 1)
      .all();
    const page = rows.slice(0, q.limit);
    const data: RequestLogView[] = page;
    return { data, nextCursor: rows.length > q.limit ? encodeCursor(page[page.length - 1]!) : null };
  }
}
