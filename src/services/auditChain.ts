// The audit log's hash chain (docs/operations.md#audit-log): what an event's hash covers, the head appends build
// on, and the walk that checks every link. Events form one chain over the whole store; `seq` counts from 1
// without gaps.
import { createHash } from "node:crypto";
import { asc, desc, eq, gt } from "drizzle-orm";
import type { ChainWalk, Checkpoint } from "../core/auditCheckpoint.ts";
import { canonicalJson } from "../core/canonicalJson.ts";
import type { Store } from "../store/store.ts";

/** The `hash` before the first event. */
export const GENESIS_HASH = "0".repeat(64);

/** The lock key appends take (PostgreSQL advisory lock; SQLite's writer lock serialises them already). */
export const CHAIN_LOCK = "audit-chain";
const VERIFY_PAGE = 1000;

/** What an event's hash covers: every stored field but `seq` and `hash` itself. */
interface HashedEvent {
  id: string;
  at: string;
  organizationId: string | null;
  partnerId: string | null;
  projectId: string | null;
  actor: { kind: string; id: string; email: string | null };
  action: string;
  targetType: string;
  targetId: string | null;
  address: string | null;
  changes: unknown;
}

/** SHA-256 (lowercase hex) of the previous event's hash followed by this event's canonical JSON (UTF-8). */
export function chainHash(previous: string, event: HashedEvent): string {
  return createHash("sha256").update(previous).update(canonicalJson(event)).digest("hex");
}

export type EventRow = {
  seq: number;
  id: string;
  at: string;
  organizationId: string | null;
  partnerId: string | null;
  projectId: string | null;
  actorKind: string;
  actorId: string;
  actorEmail: string | null;
  action: string;
  targetType: string;
  targetId: string | null;
  address: string | null;
  changes: string;
  hash: string;
};

export function hashedOf(row: Omit<EventRow, "seq" | "hash">): HashedEvent {
  return {
    id: row.id,
    at: row.at,
    organizationId: row.organizationId,
    partnerId: row.partnerId,
    projectId: row.projectId,
    actor: { kind: row.actorKind, id: row.actorId, email: row.actorEmail },
    action: row.action,
    targetType: row.targetType,
    targetId: row.targetId,
    address: row.address,
    changes: JSON.parse(row.changes),
  };
}

/** The newest event's `seq` and `hash`; seq 0 and 64 zeros when there is none. */
export async function chainHead(store: Store): Promise<Checkpoint> {
  const { auditEvents: a } = store.t;
  const [head] = await store.db.select({ seq: a.seq, hash: a.hash }).from(a).orderBy(desc(a.seq)).limit(1);
  return head ? { seq: Number(head.seq), hash: head.hash } : { seq: 0, hash: GENESIS_HASH };
}

/** The hash of the event `seq` (64 zeros for 0), or null when there is no such event. */
export async function chainHashAt(store: Store, seq: number): Promise<string | null> {
  if (seq === 0) return GENESIS_HASH;
  const { auditEvents: a } = store.t;
  const [row] = await store.db.select({ hash: a.hash }).from(a).where(eq(a.seq, seq)).limit(1);
  return row?.hash ?? null;
}

/**
 * Walks the whole chain in order: the first event whose `seq` skips one or whose hash does not follow from its
 * predecessor breaks it.
 */
export async function walkChain(store: Store): Promise<ChainWalk> {
  const { auditEvents: a } = store.t;
  let previous = GENESIS_HASH;
  let events = 0;
  let headId: string | null = null;
  let after = Number.MIN_SAFE_INTEGER; // a row put in before `seq` 1 is read too
  for (;;) {
    const rows = await store.db.select().from(a).where(gt(a.seq, after)).orderBy(asc(a.seq)).limit(VERIFY_PAGE);
    for (const row of rows) {
      let expected: string | null;
      try {
        expected = chainHash(previous, hashedOf(row));
      } catch {
        expected = null; // `changes` is no longer JSON: edited.
      }
      if (Number(row.seq) !== events + 1 || expected !== row.hash) return { kind: "broken", events, brokenAt: row.id };
      previous = row.hash;
      headId = row.id;
      events++;
    }
    if (rows.length < VERIFY_PAGE) break;
    after = events;
  }
  return { kind: "linked", events, head: { seq: events, hash: previous, id: headId } };
}
