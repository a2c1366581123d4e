// The audit log's writer (docs/operations.md#audit-log). A management write (a successful mutating API route, or a
// CLI command that writes) runs inside an audit scope that says who acts, what the action is and from where. The
// services that write call `record` with the target's state before and after, inside the transaction that
// writes it: the event is appended just before that transaction commits, so a change and its event are stored
// together or not at all. A write whose services recorded nothing still gets one event (no changes) when it
// succeeds. Appends take a lock (PostgreSQL advisory lock; SQLite's single writer) and read the head under it,
// so the chain (auditChain.ts) stays linear across instances and processes; each moves the checkpoints
// (auditCheckpoints.ts). Reading is auditQuery.ts.
import { AsyncLocalStorage } from "node:async_hooks";
import { eq } from "drizzle-orm";
import { diffChanges } from "../core/auditChanges.ts";
import type { ChainCheck, Checkpoint } from "../core/auditCheckpoint.ts";
import { canonicalJson } from "../core/canonicalJson.ts";
import { newId, nowIso } from "../core/ids.ts";
import type { Store } from "../store/store.ts";
import { CHAIN_LOCK, chainHash, chainHead, hashedOf, walkChain, type EventRow } from "./auditChain.ts";
import { AuditCheckpoints, type AuditAnchor } from "./auditCheckpoints.ts";
import { listAuditEvents, type ActorKind, type AuditEventView, type AuditQuery } from "./auditQuery.ts";

export type { ChainCheck } from "../core/auditCheckpoint.ts";

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

export class AuditService {
  readonly #scopes = new AsyncLocalStorage<AuditScope>();
  readonly #checkpoints: AuditCheckpoints;

  constructor(
    private readonly store: Store,
    anchor: AuditAnchor,
  ) {
    this.#checkpoints = new AuditCheckpoints(store, anchor);
  }

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
    const head = await chainHead(this.store);
    const anchored = await this.#checkpoints.anchoredAt(head);
    const next: Checkpoint = { seq: head.seq + 1, hash: chainHash(head.hash, hashedOf(row)) };
    await this.store.db.insert(a).values({ ...row, ...next });
    await this.#checkpoints.advance(next, anchored);
  }

  /** Anchors the chain at start, before any write (AuditCheckpoints.anchorAtStart). */
  anchorAtStart(): Promise<void> {
    return this.#checkpoints.anchorAtStart();
  }

  /** MACs the checkpoint again under the rotated master key's (AuditCheckpoints.rekey). */
  rekey(newKey: Buffer): Promise<void> {
    return this.#checkpoints.rekey(newKey);
  }

  /** One page of an organization's events, newest first. */
  list(q: AuditQuery): Promise<{ data: AuditEventView[]; nextCursor: string | null }> {
    return listAuditEvents(this.store, q);
  }

  /** Walks the whole chain in order, then holds the head against the checkpoints. */
  async verify(): Promise<ChainCheck> {
    return this.#checkpoints.judge(await walkChain(this.store));
  }
}
