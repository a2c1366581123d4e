// Reading the audit log (GET /v1/org/audit, docs/operations.md#audit-log): one organization's events, newest
// first, filtered and paged by an opaque cursor over `seq`.
import { and, desc, eq, gte, lt, lte, type SQL } from "drizzle-orm";
import type { Changes } from "../core/auditChanges.ts";
import { ApiError } from "../core/errors.ts";
import type { Store } from "../store/store.ts";
import type { EventRow } from "./auditChain.ts";

export type ActorKind = "user" | "project_key" | "org_key" | "partner_key" | "cli";

/** The record of the contract (GET /v1/org/audit). */
export interface AuditEventView {
  id: string;
  at: string;
  actor: { kind: ActorKind; id: string; email: string | null };
  action: string;
  targetType: string;
  targetId: string | null;
  projectId: string | null;
  address: string | null;
  changes: Changes;
  hash: string;
}

export interface AuditQuery {
  organizationId: string;
  actorId?: string;
  targetId?: string;
  action?: string;
  since?: string;
  until?: string;
  limit: number;
  cursor?: string;
}

function encodeCursor(seq: number): string {
  return Buffer.from(JSON.stringify([seq])).toString("base64url");
}

function decodeCursor(cursor: string): number | null {
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(v) && Number.isSafeInteger(v[0])) return v[0];
  } catch {}
  return null;
}

/** One page of an organization's events, newest first. */
export async function listAuditEvents(store: Store, q: AuditQuery): Promise<{ data: AuditEventView[]; nextCursor: string | null }> {
  const { auditEvents: a } = store.t;
  const cursor = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
  if (cursor === null) throw ApiError.flat(400, "cursor is invalid");
  const where: SQL[] = [eq(a.organizationId, q.organizationId)];
  if (q.actorId) where.push(eq(a.actorId, q.actorId));
  if (q.targetId) where.push(eq(a.targetId, q.targetId));
  if (q.action) where.push(eq(a.action, q.action));
  if (q.since) where.push(gte(a.at, q.since));
  if (q.until) where.push(lte(a.at, q.until));
  if (cursor !== undefined) where.push(lt(a.seq, cursor));
  const rows = await store.db
    .select()
    .from(a)
    .where(and(...where))
    .orderBy(desc(a.seq))
    .limit(q.limit + 1);
  const page = rows.slice(0, q.limit);
  return { data: page.map(viewOf), nextCursor: rows.length > q.limit ? encodeCursor(page[page.length - 1]!.seq) : null };
}

function viewOf(row: EventRow): AuditEventView {
  return {
    id: row.id,
    at: row.at,
    actor: { kind: row.actorKind as ActorKind, id: row.actorId, email: row.actorEmail },
    action: row.action,
    targetType: row.targetType,
    targetId: row.targetId,
    projectId: row.projectId,
    address: row.address,
    changes: JSON.parse(row.changes) as Changes,
    hash: row.hash,
  };
}
