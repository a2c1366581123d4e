// The delivery log and queue (docs/policy.md#notifications). A row is written once per event and channel
// (unique key), by the process that raised the event; any process may then send it, after claiming it with a
// compare-and-swap on its lease (the row changes only if nobody holds a live lease), so across gateway
// processes and instances on one database each delivery is sent by one of them at a time. Retries back off
// exponentially: 1 s, doubling, at most 10 attempts.
import { and, asc, desc, eq, inArray, isNull, lt, lte, or, type SQL } from "drizzle-orm";
import { ApiError } from "../../core/errors.ts";
import { nowIso } from "../../core/ids.ts";
import type { DeliveryStatus, NotificationEvent } from "../../core/model.ts";
import type { NotificationDeliveryRow } from "../../store/rows.ts";
import type { ServiceDeps } from "../deps.ts";
import type { ChannelOwner } from "./channels.ts";

export const MAX_ATTEMPTS = 10;
const FIRST_BACKOFF_MS = 1000;
/** A claimed delivery may be taken over after this (its sender died): well beyond one attempt's time limit. */
const LEASE_MS = 60_000;

/** The wait after the `attempts`-th failed attempt: 1 s, 2 s, 4 s, … */
export const backoffMs = (attempts: number) => FIRST_BACKOFF_MS * 2 ** (attempts - 1);

export interface DeliveryView {
  id: string;
  channelId: string;
  event: NotificationEvent;
  status: DeliveryStatus;
  attempts: number;
  lastStatus: number | null;
  /** Why the last attempt failed (beyond the contract's fields). */
  lastError: string | null;
  createdAt: string;
}

export interface DeliveryPage {
  data: DeliveryView[];
  nextCursor: string | null;
}

const encodeCursor = (row: { createdAt: string; id: string }) => Buffer.from(JSON.stringify([row.createdAt, row.id])).toString("base64url");

function decodeCursor(cursor: string): { createdAt: string; id: string } | null {
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(v) && typeof v[0] === "string" && typeof v[1] === "string") return { createdAt: v[0], id: v[1] };
  } catch {}
  return null;
}

const iso = (ms: number) => new Date(ms).toISOString();

export class DeliveryQueue {
  constructor(private readonly deps: ServiceDeps) {}

  private get t() {
    return this.deps.store.t.notificationDeliveries;
  }

  view(row: NotificationDeliveryRow): DeliveryView {
    return {
      id: row.id,
      channelId: row.channelId,
      event: row.event,
      status: row.status,
      attempts: row.attempts,
      lastStatus: row.lastStatus,
      lastError: row.lastError,
      createdAt: row.createdAt,
    };
  }

  /** Writes the deliveries of one event (once: a second write of the same event and channel changes nothing). */
  async enqueue(rows: NotificationDeliveryRow[]): Promise<void> {
    if (rows.length > 0) await this.deps.store.db.insert(this.t).values(rows).onConflictDoNothing();
  }

  async list(owner: ChannelOwner, q: { channelId?: string; limit: number; cursor?: string }): Promise<DeliveryPage> {
    const d = this.t;
    const cursor = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    if (cursor === null) throw ApiError.flat(400, "cursor is invalid");
    const where: SQL[] = [eq(d.organizationId, owner.organizationId), owner.projectId === null ? isNull(d.projectId) : eq(d.projectId, owner.projectId)];
    if (q.channelId) where.push(eq(d.channelId, q.channelId));
    if (cursor) where.push(or(lt(d.createdAt, cursor.createdAt), and(eq(d.createdAt, cursor.createdAt), lt(d.id, cursor.id)))!);
    const rows = await this.deps.store.db
      .select()
      .from(d)
      .where(and(...where))
      .orderBy(desc(d.createdAt), desc(d.id))
      .limit(q.limit + 1);
    const data = rows.slice(0, q.limit).map((r) => this.view(r));
    return { data, nextCursor: rows.length > q.limit ? encodeCursor(data[data.length - 1]!) : null };
  }

  #claimable(now: string): SQL {
    const d = this.t;
    return and(eq(d.status, "retrying"), lte(d.nextAttemptAt, now), or(isNull(d.leaseUntil), lt(d.leaseUntil, now)))!;
  }

  /**
   * Claims up to `max` deliveries that are due and not held by a live lease. Each is taken by a compare-and-swap
   * (the row changes only if still claimable), so two processes that read the same candidates never both send it.
   */
  async claim(max: number, owner: string): Promise<NotificationDeliveryRow[]> {
    const d = this.t;
    const now = nowIso();
    const candidates = await this.deps.store.db
      .select({ id: d.id })
      .from(d)
      .where(this.#claimable(now))
      .orderBy(asc(d.nextAttemptAt))
      .limit(max);
    const claimed: NotificationDeliveryRow[] = [];
    for (const { id } of candidates) {
      const [row] = await this.deps.store.db
        .update(d)
        .set({ leaseUntil: iso(Date.now() + LEASE_MS), leasedBy: owner })
        .where(and(eq(d.id, id), this.#claimable(now)))
        .returning();
      if (row) claimed.push(row);
    }
    return claimed;
  }

  /** Records an attempt's outcome, if `owner` still holds the delivery; the time of the next attempt, if any. */
  async finish(row: NotificationDeliveryRow, owner: string, outcome: { delivered: boolean; status: number | null; error: string | null }): Promise<number | null> {
    const d = this.t;
    const attempts = row.attempts + 1;
    const retryAt = !outcome.delivered && attempts < MAX_ATTEMPTS ? Date.now() + backoffMs(attempts) : null;
    const status: DeliveryStatus = outcome.delivered ? "delivered" : retryAt === null ? "failed" : "retrying";
    await this.deps.store.db
      .update(d)
      .set({
        status,
        attempts,
        lastStatus: outcome.status,
        lastError: outcome.error,
        nextAttemptAt: retryAt === null ? row.nextAttemptAt : iso(retryAt),
        leaseUntil: null,
        leasedBy: null,
      })
      .where(and(eq(d.id, row.id), eq(d.leasedBy, owner)));
    return retryAt;
  }

  /** Gives a claimed delivery up without an attempt (nothing left to send it for). */
  async abandon(row: NotificationDeliveryRow, owner: string, why: string): Promise<void> {
    const d = this.t;
    await this.deps.store.db
      .update(d)
      .set({ status: "failed", lastError: why, leaseUntil: null, leasedBy: null })
      .where(and(eq(d.id, row.id), eq(d.leasedBy, owner)));
  }

  /** An approval ended: its request's deliveries not being sent right now are not retried any more. */
  async endApproval(approvalId: string, why: string): Promise<void> {
    const d = this.t;
    const now = nowIso();
    await this.deps.store.db
      .update(d)
      .set({ status: "failed", lastError: why })
      .where(and(eq(d.approvalId, approvalId), eq(d.status, "retrying"), or(isNull(d.leaseUntil), lt(d.leaseUntil, now))));
  }

  /** The earliest time a delivery that nobody is sending is due, or null. */
  async nextDue(): Promise<number | null> {
    const d = this.t;
    const now = nowIso();
    const [row] = await this.deps.store.db
      .select({ at: d.nextAttemptAt })
      .from(d)
      .where(and(eq(d.status, "retrying"), or(isNull(d.leaseUntil), lt(d.leaseUntil, now))))
      .orderBy(asc(d.nextAttemptAt))
      .limit(1);
    return row ? Date.parse(row.at) : null;
  }

  /** Delivery rows older than `days`, deleted (the log keeps what people may still look at). */
  async purge(days: number): Promise<void> {
    const d = this.t;
    const cutoff = iso(Date.now() - days * 24 * 3600 * 1000);
    await this.deps.store.db.delete(d).where(and(lt(d.createdAt, cutoff), inArray(d.status, ["delivered", "failed"])));
  }
}
