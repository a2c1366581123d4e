// Notifications (docs/policy.md#notifications): the one way credgate tells people something happened.
// `notify(scope, event, data)` is the entry point for every feature that raises an event (approvals here; budget
// alerts elsewhere): it writes one delivery per enabled channel of the project and of its organization that
// subscribes to the event, and returns; the serving process sends them in the background (dispatcher.ts).
import { and, eq, gt } from "drizzle-orm";
import { newId, nowIso } from "../../core/ids.ts";
import type { NotificationEvent } from "../../core/model.ts";
import { log } from "../../observability/log.ts";
import { clockIso } from "../../runtime/clock.ts";
import type { NotificationDeliveryRow } from "../../store/rows.ts";
import type { ServiceDeps } from "../deps.ts";
import type { Outbound } from "../outbound.ts";
import { ChannelService, type ChannelOwner } from "./channels.ts";
import { DeliveryQueue } from "./deliveries.ts";
import { DeliveryDispatcher } from "./dispatcher.ts";
import { TEST_EVENT, type EventData, type Payload } from "./events.ts";
import { channelRequest } from "./messages.ts";
import { sendChannelRequest, type EgressCheck, type SendResult } from "./send.ts";

export type { EventData } from "./events.ts";
export type { EgressCheck } from "./send.ts";

/** Where an event happened: a project (its channels and its organization's receive it), or only an organization. */
export interface NotifyScope {
  organizationId: string;
  projectId: string | null;
}

const DAY_MS = 24 * 3600 * 1000;

export class NotificationService {
  readonly channels: ChannelService;
  readonly deliveries: DeliveryQueue;
  #dispatcher: DeliveryDispatcher | null = null;
  #purge: Timer | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly outbound: Outbound,
    private readonly egress: EgressCheck,
  ) {
    this.channels = new ChannelService(deps);
    this.deliveries = new DeliveryQueue(deps);
    deps.events.on((event) => {
      if (event.kind === "delivery" || event.kind === "reload") this.#dispatcher?.wake();
    });
  }

  /**
   * Raises `event` in `scope`. Writes the deliveries (one per enabled channel subscribed to the event: the
   * project's and the organization's) and resolves with their number; sending happens later, elsewhere. Never
   * rejects (a failure is logged and resolves 0), so callers need not await it — the gateway never does.
   */
  async notify<E extends NotificationEvent>(scope: NotifyScope, event: E, data: EventData[E]): Promise<number> {
    try {
      const channels = await this.channels.subscribed(scope, event);
      if (channels.length === 0) return 0;
      const payload: Payload<E> = { id: newId(), event, createdAt: nowIso(), data: data as Payload<E>["data"] };
      const sealed = this.deps.sealer.seal(JSON.stringify(payload));
      const approvalId = event === "approval.requested" ? (data as EventData["approval.requested"]).approvalId : null;
      const rows: NotificationDeliveryRow[] = channels.map((c) => ({
        id: newId(),
        eventId: payload.id,
        channelId: c.id,
        organizationId: c.organizationId,
        projectId: c.projectId,
        event,
        approvalId,
        payloadSealed: sealed,
        status: "retrying",
        attempts: 0,
        lastStatus: null,
        lastError: null,
        nextAttemptAt: payload.createdAt,
        leaseUntil: null,
        leasedBy: null,
        createdAt: payload.createdAt,
      }));
      await this.deliveries.enqueue(rows);
      this.deps.events.emit({ kind: "delivery" });
      return rows.length;
    } catch (err) {
      log.error("notification not queued", { event, error: (err as Error).message });
      return 0;
    }
  }

  /** An approval ended: deliveries of its request are not sent or retried any more. */
  async endApproval(approvalId: string): Promise<void> {
    await this.deliveries.endApproval(approvalId, "the approval is no longer pending");
  }

  /** `POST …/channels/{id}/test`: one message sent now and answered with its outcome (not logged as a delivery). */
  async test(owner: ChannelOwner, id: string): Promise<SendResult> {
    const channel = await this.channels.find(owner, id);
    const target = this.channels.target(channel);
    const payload: Payload<typeof TEST_EVENT> = {
      id: newId(),
      event: TEST_EVENT,
      createdAt: nowIso(),
      data: { channelId: channel.id, message: "This is a test notification from credgate: the channel works." },
    };
    return sendChannelRequest(this.outbound, this.egress, target.url, channelRequest(target, payload, newId(), Math.floor(Date.now() / 1000)));
  }

  /** The serving process sends deliveries (one process per instance; the leases keep instances apart). */
  start(): void {
    const owner = this.deps.instanceId;
    this.#dispatcher = new DeliveryDispatcher(this.deliveries, owner, (row) => this.#attempt(row, owner));
    this.#dispatcher.start();
    const purge = () => void this.deliveries.purge(this.deps.config.logRetentionDays).catch((err: Error) => log.warn("delivery log purge failed", { error: err.message }));
    purge();
    this.#purge = setInterval(purge, DAY_MS);
  }

  async stop(): Promise<void> {
    if (this.#purge) clearInterval(this.#purge);
    this.#purge = null;
    await this.#dispatcher?.stop();
    this.#dispatcher = null;
  }

  /** One attempt of a claimed delivery; the time of its retry, if any. Never rejects. */
  async #attempt(row: NotificationDeliveryRow, owner: string): Promise<number | null> {
    try {
      if (row.approvalId !== null && !(await this.#approvalPending(row.approvalId))) {
        await this.deliveries.abandon(row, owner, "the approval is no longer pending");
        return null;
      }
      const channel = await this.channels.byId(row.channelId);
      if (!channel?.enabled) {
        await this.deliveries.abandon(row, owner, "the channel is disabled");
        return null;
      }
      const target = this.channels.target(channel);
      const payload = JSON.parse(this.deps.sealer.open(row.payloadSealed)) as Payload;
      const result = await sendChannelRequest(this.outbound, this.egress, target.url, channelRequest(target, payload, row.id, Math.floor(Date.now() / 1000)));
      const retryAt = await this.deliveries.finish(row, owner, result);
      if (!result.delivered) {
        log.warn("notification not delivered", { deliveryId: row.id, channelId: row.channelId, event: row.event, attempt: row.attempts + 1, status: result.status, error: result.error, retry: retryAt !== null });
      }
      return retryAt;
    } catch (err) {
      // The store failed mid-way: the lease runs out and the delivery is claimed again.
      log.warn("notification delivery interrupted", { deliveryId: row.id, error: (err as Error).message });
      return null;
    }
  }

  async #approvalPending(approvalId: string): Promise<boolean> {
    const { approvals } = this.deps.store.t;
    const [row] = await this.deps.store.db
      .select({ id: approvals.id })
      .from(approvals)
      .where(and(eq(approvals.id, approvalId), eq(approvals.status, "pending"), gt(approvals.expiresAt, clockIso())))
      .limit(1);
    return row !== undefined;
  }
}
