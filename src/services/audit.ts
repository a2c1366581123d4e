// The audit log (docs/operations.md#audit-log). A management write (a successful mutating API route, or a CLI
// command that writes) runs inside an audit scope that says who acts, what the action is and from where. The
// services that write call `record` with the target's state before and after, inside the transaction that
// writes it: the event is appended just before that transaction commits, so a change and its event are stored
// together or not at all. A write whose services recorded nothing still gets one event (no changes) when it
// succeeds. Events form one hash chain over the whole store: appends take a lock (PostgreSQL advisory lock;
// SQLite's single writer) and read the head under it, so the chain stays linear across instances and processes.
// The chain is anchored (docs/operations.md#the-checkpoint): `seq` counts from 1 without gaps, and each append
// moves a checkpoint of the head, MACed under a key derived from the master key, in the same transaction (and,
// with SQLite, into the data dir's copy once committed). An append that finds the checkpoint not matching the
// head (rows cut or rewritten meanwhile) leaves it where it was, so the evidence stays until someone looks.
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import { and, asc, desc, eq, gt, gte, lt, lte, type SQL } from "drizzle-orm";
import { diffChanges, type Changes } from "../core/auditChanges.ts";
import { formatCheckpoint, judgeChain, readCheckpoint, type ChainCheck, type Checkpoint } from "../core/auditCheckpoint.ts";
import { canonicalJson } from "../core/canonicalJson.ts";
import { ApiError } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import { log } from "../observability/log.ts";
import type { Sealer } from "../crypto/seal.ts";
import { auditCheckpointPath, readCheckpointFile, writeCheckpointFile } from "../runtime/auditCheckpointFile.ts";
import type { Store } from "../store/store.ts";

export type { ChainCheck } from "../core/auditCheckpoint.ts";

export type ActorKind = "user" | "project_key" | "org_key" | "partner_key" | "cli";

export interface AuditActor {
  kind: ActorKind;
  /** The user's id (session), the API key's id, or the CLI's operating-system user. */
  id: string;
  /** The user behind the actor (a session's user, a key's holder), whose email the event carries. */
  userId: string | null;
}

/** Who performs a write, what it is and where it comes from; the tenant fields default the events' own. */
export interface AuditScopeInit {
  /** Null when the write itself establishes it (sign-in, sign-up): see `actAs`. */
  actor: AuditActor | null;
  /** `METHOD /v1/path/{param}` as in the OpenAPI document, or `credgate <command>`. */
  action: string;
  address: string | null;
  organizationId: string | null;
  projectId: string | null;
  partnerId: string | null;
}

interface AuditScope extends AuditScopeInit {
  recorded: boolean;
  email?: Promise<string | null>;
}

/** One target's change, as a service reports it. */
export interface AuditChange {
  targetType: string;
  targetId: string | null;
  /** The target's state before the write (null on a create) and after it (null on a delete). */
  before: object | null;
  after: object | null;
  /** Where the target lives, when it is not where the scope acts (e.g. a partner creating an organization). */
  organizationId?: string | null;
  projectId?: string | null;
}

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

/** What anchors the chain: the MAC key (derived from the master key) and, with SQLite, the data dir's copy. */
export interface AuditAnchor {
  key: Buffer;
  /** `<data dir>/audit-checkpoint` with SQLite; null with PostgreSQL (the instances share no directory). */
  file: string | null;
}

/** The purpose the checkpoint's MAC key is derived for (Sealer.deriveKey). */
export const CHECKPOINT_KEY_PURPOSE = "audit-checkpoint";
/** The `settings` row holding the database's checkpoint. */
export const CHECKPOINT_SETTING = "audit_checkpoint";

/** The anchor of the store `where` names, under the master key `sealer` holds. */
export function auditAnchorOf(sealer: Sealer, where: { dataDir: string; databaseUrl: string | null }): AuditAnchor {
  return { key: sealer.deriveKey(CHECKPOINT_KEY_PURPOSE), file: where.databaseUrl ? null : auditCheckpointPath(where.dataDir) };
}

/** The `hash` before the first event. */
export const GENESIS_HASH = "0".repeat(64);

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

type EventRow = {
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

function hashedOf(row: Omit<EventRow, "seq" | "hash">): HashedEvent {
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

/** The lock key appends take (PostgreSQL advisory lock; SQLite's writer lock serialises them already). */
const CHAIN_LOCK = "audit-chain";
const VERIFY_PAGE = 1000;

export class AuditService {
  readonly #scopes = new AsyncLocalStorage<AuditScope>();

  #warned = false;
  /** The `seq` of the newest checkpoint this process has scheduled for the data dir's file. */
  #fileScheduled = 0;

  constructor(
    private readonly store: Store,
    private anchor: AuditAnchor,
  ) {}

  /**
   * Runs `work` as the management write `init` describes. When it succeeds and none of the services recorded a
   * change, one event without changes is recorded for `fallback(result)`; a failure records nothing itself.
   */
  async write<T>(init: AuditScopeInit, fallback: (result: T) => { targetType: string; targetId: string | null }, work: () => Promise<T>): Promise<T> {
    const scope: AuditScope = { ...init, recorded: false };
    const result = await this.#scopes.run(scope, work);
    if (!scope.recorded) await this.#scopes.run(scope, () => this.record({ ...fallback(result), before: null, after: null }));
    return result;
  }

  /** Names the actor of the current write when the route had none (sign-in and sign-up establish it). */
  actAs(actor: AuditActor, organizationId?: string): void {
    const scope = this.#scopes.getStore();
    if (!scope || scope.actor) return;
    scope.actor = actor;
    if (organizationId) this.setOrganization(organizationId);
  }

  /** The organization the rest of the current write acts in, when its route could not name one (a partner creating it). */
  setOrganization(organizationId: string): void {
    const scope = this.#scopes.getStore();
    if (scope && !scope.organizationId) scope.organizationId = organizationId;
  }

  /**
   * Records one target's change in the current write. Call it inside the transaction that makes the change: the
   * event is appended just before that commits. Outside any write scope (the gateway, background work) nothing
   * is recorded.
   */
  async record(change: AuditChange): Promise<void> {
    const scope = this.#scopes.getStore();
    if (!scope) return;
    scope.recorded = true;
    const changes = diffChanges(change.before, change.after);
    const at = nowIso();
    const organizationId = change.organizationId !== undefined ? change.organizationId : scope.organizationId;
    const projectId = change.projectId !== undefined ? change.projectId : scope.projectId;
    const actor = scope.actor;
    await this.store.beforeCommit(async () => {
      const email = actor?.userId ? await (scope.email ??= this.#emailOf(actor.userId)) : null;
      await this.#append({
        id: newId(),
        at,
        organizationId,
        partnerId: scope.partnerId,
        projectId: projectId || null,
        actorKind: actor?.kind ?? "user",
        actorId: actor?.id ?? "unknown",
        actorEmail: email,
        action: scope.action,
        targetType: change.targetType,
        targetId: change.targetId,
        address: scope.address,
        changes: canonicalJson(changes),
      });
    });
  }

  async #emailOf(userId: string): Promise<string | null> {
    const { users } = this.store.t;
    const [row] = await this.store.db.select({ email: users.email }).from(users).where(eq(users.id, userId)).limit(1);
    return row?.email ?? null;
  }

  /** Appends one event at the head of the chain; runs inside a transaction (store.beforeCommit). */
  async #append(row: Omit<EventRow, "seq" | "hash">): Promise<void> {
    const { auditEvents: a } = this.store.t;
    await this.store.lockKey(CHAIN_LOCK);
    const head = await this.#head();
    const anchored = await this.#anchoredAt(head);
    const next: Checkpoint = { seq: head.seq + 1, hash: chainHash(head.hash, hashedOf(row)) };
    await this.store.db.insert(a).values({ ...row, ...next });
    if (anchored.stored) await this.#storeCheckpoint(next);
    else this.#warnNotAnchored();
    if (anchored.file) this.#writeFileAfterCommit(next);
  }

  /** The newest event's `seq` and `hash`; seq 0 and 64 zeros when there is none. */
  async #head(): Promise<Checkpoint> {
    const { auditEvents: a } = this.store.t;
    const [head] = await this.store.db.select({ seq: a.seq, hash: a.hash }).from(a).orderBy(desc(a.seq)).limit(1);
    return head ? { seq: Number(head.seq), hash: head.hash } : { seq: 0, hash: GENESIS_HASH };
  }

  /** The hash of the event `seq` (64 zeros for 0), or null when there is no such event. */
  async #hashAt(seq: number): Promise<string | null> {
    if (seq === 0) return GENESIS_HASH;
    const { auditEvents: a } = this.store.t;
    const [row] = await this.store.db.select({ hash: a.hash }).from(a).where(eq(a.seq, seq)).limit(1);
    return row?.hash ?? null;
  }

  /** The database's checkpoint text, or null when the row is absent. */
  async #storedText(): Promise<string | null> {
    const { settings } = this.store.t;
    const [row] = await this.store.db.select({ value: settings.value }).from(settings).where(eq(settings.key, CHECKPOINT_SETTING)).limit(1);
    return row?.value ?? null;
  }

  async #storeCheckpoint(cp: Checkpoint): Promise<void> {
    const { settings } = this.store.t;
    const value = formatCheckpoint(this.anchor.key, cp);
    await this.store.db.insert(settings).values({ key: CHECKPOINT_SETTING, value }).onConflictDoUpdate({ target: settings.key, set: { value } });
  }

  /**
   * Whether the checkpoints may move on from `head`: the database's when it names exactly that head; the data
   * dir's copy when it is absent, or names that head or an event before it on the same chain (it is written
   * after each commit, so it may lag). One that names anything else is evidence, and stays.
   */
  async #anchoredAt(head: Checkpoint): Promise<{ stored: boolean; file: boolean }> {
    const stored = readCheckpoint(this.anchor.key, await this.#storedText());
    const atHead = stored !== null && stored.seq === head.seq && stored.hash === head.hash;
    if (this.anchor.file === null) return { stored: atHead, file: false };
    const text = readCheckpointFile(this.anchor.file);
    if (text === null) return { stored: atHead, file: atHead };
    const beside = readCheckpoint(this.anchor.key, text);
    return { stored: atHead, file: atHead && beside !== null && (await this.#onChain(beside, head)) };
  }

  /** Whether `cp` names the head or an event before it with that event's hash. */
  async #onChain(cp: Checkpoint, head: Checkpoint): Promise<boolean> {
    if (cp.seq === head.seq) return cp.hash === head.hash;
    return cp.seq < head.seq && (await this.#hashAt(cp.seq)) === cp.hash;
  }

  #writeFileAfterCommit(cp: Checkpoint): void {
    const file = this.anchor.file;
    if (file === null) return;
    const text = formatCheckpoint(this.anchor.key, cp);
    this.#fileScheduled = cp.seq;
    this.store.afterCommit(() => {
      // A transaction that appended many events writes the file once, for its last one.
      if (cp.seq < this.#fileScheduled) return;
      try {
        // Another process on the same file may have committed and written a later head meanwhile.
        const current = readCheckpoint(this.anchor.key, readCheckpointFile(file));
        if (current === null || current.seq < cp.seq) writeCheckpointFile(file, text);
      } catch (err) {
        log.error("audit checkpoint file not written", { file, error: (err as Error).message });
      }
    });
  }

  #warnNotAnchored(): void {
    if (this.#warned) return;
    this.#warned = true;
    log.error("audit chain checkpoint does not match the newest event: it is left as it was; run credgate audit verify");
  }

  /**
   * At start, before any write: a store that has never had a checkpoint (new, or kept by an older credgate) gets
   * one for its current head; the data dir's copy is written when it is missing or behind. A checkpoint row that
   * is there but wrong is left alone, and so is a store without one whose data dir still holds a valid copy
   * (the row was removed): both are for `credgate audit verify` to report.
   */
  async anchorAtStart(): Promise<void> {
    await this.store.transaction(async () => {
      await this.store.lockKey(CHAIN_LOCK);
      const head = await this.#head();
      const text = await this.#storedText();
      if (text === null) {
        const copy = this.anchor.file === null ? null : readCheckpoint(this.anchor.key, readCheckpointFile(this.anchor.file));
        if (copy !== null) {
          log.error("the audit chain's checkpoint row is missing from the database although the data dir holds one: not replaced; run credgate audit verify");
          return;
        }
        if (head.seq > 0) log.warn("the audit chain had no checkpoint: anchored at its newest event", { seq: head.seq });
        await this.#storeCheckpoint(head);
        this.#writeFileAfterCommit(head);
        return;
      }
      const anchored = await this.#anchoredAt(head);
      if (anchored.file) this.#writeFileAfterCommit(head);
    });
  }

  /**
   * The rotation of the master key (cli/rotateMasterKey.ts), inside its transaction: once the rotation's own event
   * has moved the checkpoint, it is MACed again under the new key. One that did not match stays unreadable.
   */
  async rekey(newKey: Buffer): Promise<void> {
    await this.store.beforeCommit(async () => {
      await this.store.lockKey(CHAIN_LOCK);
      const stored = readCheckpoint(this.anchor.key, await this.#storedText());
      const head = await this.#head();
      const old = this.anchor;
      this.anchor = { ...old, key: newKey };
      if (stored === null || stored.seq !== head.seq || stored.hash !== head.hash) return;
      await this.#storeCheckpoint(head);
      if (old.file !== null) {
        const file = old.file;
        const text = formatCheckpoint(newKey, head);
        // Never thrown after the commit: the rotation has happened, and its caller must go on to keep the new key.
        this.store.afterCommit(() => {
          try {
            writeCheckpointFile(file, text);
          } catch (err) {
            log.error("audit checkpoint file not written", { file, error: (err as Error).message });
          }
        });
      }
    });
  }

  /** One page of an organization's events, newest first. */
  async list(q: AuditQuery): Promise<{ data: AuditEventView[]; nextCursor: string | null }> {
    const { auditEvents: a } = this.store.t;
    const cursor = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    if (cursor === null) throw ApiError.flat(400, "cursor is invalid");
    const where: SQL[] = [eq(a.organizationId, q.organizationId)];
    if (q.actorId) where.push(eq(a.actorId, q.actorId));
    if (q.targetId) where.push(eq(a.targetId, q.targetId));
    if (q.action) where.push(eq(a.action, q.action));
    if (q.since) where.push(gte(a.at, q.since));
    if (q.until) where.push(lte(a.at, q.until));
    if (cursor !== undefined) where.push(lt(a.seq, cursor));
    const rows = await this.store.db
      .select()
      .from(a)
      .where(and(...where))
      .orderBy(desc(a.seq))
      .limit(q.limit + 1);
    const page = rows.slice(0, q.limit);
    return { data: page.map(viewOf), nextCursor: rows.length > q.limit ? encodeCursor(page[page.length - 1]!.seq) : null };
  }

  /**
   * Walks the whole chain in order (the first event whose `seq` skips one or whose hash does not follow from its
   * predecessor breaks it), then holds the head against the checkpoints.
   */
  async verify(): Promise<ChainCheck> {
    const { auditEvents: a } = this.store.t;
    let previous = GENESIS_HASH;
    let events = 0;
    let headId: string | null = null;
    let after = Number.MIN_SAFE_INTEGER; // a row put in before `seq` 1 is read too
    for (;;) {
      const rows = await this.store.db.select().from(a).where(gt(a.seq, after)).orderBy(asc(a.seq)).limit(VERIFY_PAGE);
      for (const row of rows) {
        let expected: string | null;
        try {
          expected = chainHash(previous, hashedOf(row));
        } catch {
          expected = null; // `changes` is no longer JSON: edited.
        }
        if (Number(row.seq) !== events + 1 || expected !== row.hash) return { intact: false, events, brokenAt: row.id };
        previous = row.hash;
        headId = row.id;
        events++;
      }
      if (rows.length < VERIFY_PAGE) break;
      after = events;
    }
    const stored = readCheckpoint(this.anchor.key, await this.#storedText());
    const walk = { kind: "linked" as const, events, head: { seq: events, hash: previous, id: headId } };
    if (this.anchor.file === null) return judgeChain(walk, stored);
    const beside = readCheckpoint(this.anchor.key, readCheckpointFile(this.anchor.file));
    return judgeChain(walk, stored, beside, beside !== null && (await this.#onChain(beside, walk.head)));
  }
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
