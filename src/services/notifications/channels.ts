// Notification channels (docs/policy.md#notifications): a project's, or an organization's (no project), places
// to send events to. The URL and a webhook's signing secret are sealed; the secret is shown once, at creation.
import { and, asc, eq, isNull, type SQL } from "drizzle-orm";
import { isLoopback, parseAddress } from "../../core/addressRules.ts";
import { ApiError } from "../../core/errors.ts";
import { creationTime, newId, nowIso } from "../../core/ids.ts";
import { NOTIFICATION_EVENTS, type ChannelKind, type NotificationEvent } from "../../core/model.ts";
import { newSigningSecret } from "../../crypto/webhookSignature.ts";
import type { Mode } from "../../runtime/config.ts";
import type { NotificationChannelRow } from "../../store/rows.ts";
import type { ServiceDeps } from "../deps.ts";
import type { ChannelTarget } from "./events.ts";

/** Whose channels: a project's, or with `projectId: null` the organization's own. */
export interface ChannelOwner {
  organizationId: string;
  projectId: string | null;
}

export interface ChannelView {
  id: string;
  kind: ChannelKind;
  url: string;
  events: NotificationEvent[];
  enabled: boolean;
  createdAt: string;
}

export const URL_MESSAGE = "url must be an https:// URL";
export const EVENTS_MESSAGE = `events must be a non-empty list of: ${NOTIFICATION_EVENTS.join(", ")}`;
export const URL_MAX = 2048;

/**
 * Why `raw` cannot be a channel URL, or null. https only; plain http only to this machine (a receiver on
 * loopback) and only self-hosted: events carry approval links, which must not cross a network in clear.
 */
export function channelUrlError(raw: string, mode: Mode | null): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return URL_MESSAGE;
  }
  if (u.protocol === "https:" && u.hostname !== "") return null;
  if (u.protocol !== "http:" || mode === "cloud") return URL_MESSAGE;
  const address = parseAddress(u.hostname);
  return u.hostname === "localhost" || (address !== null && isLoopback(address)) ? null : URL_MESSAGE;
}

const notFound = () => ApiError.envelope(404, "Channel not found");

export class ChannelService {
  constructor(private readonly deps: ServiceDeps) {}

  private get t() {
    return this.deps.store.t.notificationChannels;
  }

  #owned(owner: ChannelOwner): SQL {
    const c = this.t;
    return and(eq(c.organizationId, owner.organizationId), owner.projectId === null ? isNull(c.projectId) : eq(c.projectId, owner.projectId))!;
  }

  view(row: NotificationChannelRow): ChannelView {
    return { id: row.id, kind: row.kind, url: this.deps.sealer.open(row.urlSealed), events: row.events, enabled: row.enabled, createdAt: row.createdAt };
  }

  /** What sending needs: the URL and the signing secret, opened. */
  target(row: NotificationChannelRow): ChannelTarget {
    return { kind: row.kind, url: this.deps.sealer.open(row.urlSealed), signingSecret: row.signingSecretSealed ? this.deps.sealer.open(row.signingSecretSealed) : null };
  }

  #checkUrl(url: string): void {
    const message = channelUrlError(url, this.deps.config.mode);
    if (message) throw ApiError.flat(400, message);
  }

  async create(owner: ChannelOwner, input: { kind: ChannelKind; url: string; events?: NotificationEvent[] }): Promise<ChannelView & { signingSecret?: string }> {
    this.#checkUrl(input.url);
    const signingSecret = input.kind === "webhook" ? newSigningSecret() : null;
    const now = creationTime();
    const row: NotificationChannelRow = {
      id: newId(),
      organizationId: owner.organizationId,
      projectId: owner.projectId,
      kind: input.kind,
      urlSealed: this.deps.sealer.seal(input.url),
      events: dedupe(input.events ?? [...NOTIFICATION_EVENTS]),
      enabled: true,
      signingSecretSealed: signingSecret ? this.deps.sealer.seal(signingSecret) : null,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.store.db.insert(this.t).values(row);
    return { ...this.view(row), ...(signingSecret ? { signingSecret } : {}) };
  }

  list(owner: ChannelOwner): Promise<NotificationChannelRow[]> {
    return this.deps.store.db.select().from(this.t).where(this.#owned(owner)).orderBy(asc(this.t.createdAt), asc(this.t.id));
  }

  async find(owner: ChannelOwner, id: string): Promise<NotificationChannelRow> {
    const [row] = await this.deps.store.db.select().from(this.t).where(and(eq(this.t.id, id), this.#owned(owner))).limit(1);
    if (!row) throw notFound();
    return row;
  }

  async byId(id: string): Promise<NotificationChannelRow | null> {
    const [row] = await this.deps.store.db.select().from(this.t).where(eq(this.t.id, id)).limit(1);
    return row ?? null;
  }

  async update(owner: ChannelOwner, id: string, patch: { url?: string; events?: NotificationEvent[]; enabled?: boolean }): Promise<ChannelView> {
    const row = await this.find(owner, id);
    if (patch.url !== undefined) this.#checkUrl(patch.url);
    const set: Partial<NotificationChannelRow> = { updatedAt: nowIso() };
    if (patch.url !== undefined) set.urlSealed = this.deps.sealer.seal(patch.url);
    if (patch.events !== undefined) set.events = dedupe(patch.events);
    if (patch.enabled !== undefined) set.enabled = patch.enabled;
    const [updated] = await this.deps.store.db.update(this.t).set(set).where(eq(this.t.id, row.id)).returning();
    if (!updated) throw notFound();
    return this.view(updated);
  }

  async delete(owner: ChannelOwner, id: string): Promise<void> {
    const gone = await this.deps.store.db.delete(this.t).where(and(eq(this.t.id, id), this.#owned(owner))).returning({ id: this.t.id });
    if (gone.length === 0) throw notFound();
  }

  /** The enabled channels that receive `event` raised in `scope`: the project's (if any) and the organization's. */
  async subscribed(scope: { organizationId: string; projectId: string | null }, event: NotificationEvent): Promise<NotificationChannelRow[]> {
    const c = this.t;
    const rows = await this.deps.store.db.select().from(c).where(and(eq(c.organizationId, scope.organizationId), eq(c.enabled, true)));
    return rows.filter((r) => (r.projectId === null || r.projectId === scope.projectId) && r.events.includes(event));
  }
}

function dedupe(events: NotificationEvent[]): NotificationEvent[] {
  return NOTIFICATION_EVENTS.filter((e) => events.includes(e));
}
