// App connections (docs/injection.md#app-connections): the stored OAuth tokens or API-key fields of a project or an
// organization, sealed at rest. Credential writes bump `version`, so refreshes can compare-and-swap.
import { and, desc, eq, or, sql } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import type { ConnectionStatus } from "../core/model.ts";
import type { ConnectionRow } from "../store/rows.ts";
import type { ServiceDeps } from "./deps.ts";
import type { PolicyOwner } from "./policyOwner.ts";
import type { Connection } from "../core/records/apps.ts";

export type { ConnectionRow };
export type ConnectionOwner = PolicyOwner;

export type ConnectionCredential =
  | { kind: "oauth"; accessToken: string; refreshToken: string | null; /** epoch ms */ expiresAt: number | null; tokenType: string }
  | { kind: "api_key"; fields: Record<string, string> };

export const CONNECTION_NOT_FOUND = "Connection not found";

export interface SaveConnection {
  provider: string;
  label: string | null;
  credential: ConnectionCredential;
  scopes: string[];
  metadata?: Record<string, unknown> | null;
  /** Reconnect this connection (it must belong to the owner and be of the same provider). */
  connectionId?: string;
}


export class ConnectionService {
  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  private get byNewest() {
    return [desc(this.t.appConnections.connectedAt), desc(this.t.appConnections.id)];
  }

  private ownerWhere(owner: ConnectionOwner) {
    const { appConnections } = this.t;
    return owner.scope === "project"
      ? and(eq(appConnections.scope, "project"), eq(appConnections.projectId, owner.projectId))!
      : and(eq(appConnections.scope, "organization"), eq(appConnections.organizationId, owner.organizationId))!;
  }

  /** A project sees its own connections and its organization's. */
  private visibleWhere(projectId: string, organizationId: string) {
    return or(this.ownerWhere({ scope: "project", projectId, organizationId }), this.ownerWhere({ scope: "organization", organizationId }))!;
  }

  /**
   * The status a read reports: a `connected` OAuth connection whose token has expired and cannot be refreshed
   * is `expired` (docs/injection.md#app-connections) even before the gateway next tries it; the change is stored.
   */
  async effectiveStatus(row: ConnectionRow): Promise<ConnectionStatus> {
    if (row.status !== "connected") return row.status;
    const c = this.credential(row);
    if (c.kind !== "oauth" || c.refreshToken || c.expiresAt === null || c.expiresAt > Date.now()) return row.status;
    await this.setStatus(row.id, "expired", row.refreshFailures);
    return "expired";
  }

  async view(row: ConnectionRow): Promise<Connection> {
    return {
      id: row.id,
      provider: row.provider,
      label: row.label,
      status: await this.effectiveStatus(row),
      scopes: row.scopes,
      scope: row.scope,
      metadata: row.metadata ?? null,
      connectedAt: row.connectedAt,
    };
  }

  async orgView(row: ConnectionRow) {
    const { metadata: _m, ...rest } = await this.view(row);
    return rest;
  }

  /** The project's connections plus the organization's, newest first. */
  listForProject(projectId: string, organizationId: string, provider?: string | null): Promise<ConnectionRow[]> {
    const { appConnections } = this.t;
    const where = provider ? and(this.visibleWhere(projectId, organizationId), eq(appConnections.provider, provider)) : this.visibleWhere(projectId, organizationId);
    return this.db.select().from(appConnections).where(where).orderBy(...this.byNewest);
  }

  listForOwner(owner: ConnectionOwner, provider?: string | null): Promise<ConnectionRow[]> {
    const { appConnections } = this.t;
    const where = provider ? and(this.ownerWhere(owner), eq(appConnections.provider, provider)) : this.ownerWhere(owner);
    return this.db.select().from(appConnections).where(where).orderBy(...this.byNewest);
  }

  async byId(id: string): Promise<ConnectionRow | null> {
    const [row] = await this.db.select().from(this.t.appConnections).where(eq(this.t.appConnections.id, id)).limit(1);
    return row ?? null;
  }

  /** A connection the project may use (its own or its organization's), or 404 in the given shape. */
  async visibleToProject(projectId: string, organizationId: string, id: string, shape: "flat" | "envelope" = "envelope"): Promise<ConnectionRow> {
    const { appConnections } = this.t;
    const [row] = await this.db.select().from(appConnections).where(and(eq(appConnections.id, id), this.visibleWhere(projectId, organizationId))).limit(1);
    if (!row) throw shape === "flat" ? ApiError.flat(404, CONNECTION_NOT_FOUND) : ApiError.envelope(404, CONNECTION_NOT_FOUND);
    return row;
  }

  /** A connection of exactly this owner, or 404. */
  async owned(owner: ConnectionOwner, id: string): Promise<ConnectionRow> {
    const { appConnections } = this.t;
    const [row] = await this.db.select().from(appConnections).where(and(eq(appConnections.id, id), this.ownerWhere(owner))).limit(1);
    if (!row) throw ApiError.envelope(404, CONNECTION_NOT_FOUND);
    return row;
  }

  async rename(row: ConnectionRow, label: string) {
    const { appConnections } = this.t;
    await this.deps.store.transaction(async () => {
      await this.db.update(appConnections).set({ label, updatedAt: nowIso() }).where(eq(appConnections.id, row.id));
      await this.#audit(row, row, { ...row, label });
    });
    this.changed(row.organizationId);
    return { id: row.id, provider: row.provider, status: await this.effectiveStatus(row), label };
  }

  async delete(row: ConnectionRow): Promise<void> {
    await this.deps.store.transaction(async () => {
      await this.db.delete(this.t.appConnections).where(eq(this.t.appConnections.id, row.id));
      await this.#audit(row, row, null);
    });
    this.changed(row.organizationId);
  }

  /** A connection's change in the current write's audit event (docs/operations.md#audit-log); its credential reads "<redacted>". */
  #audit(row: ConnectionRow, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "connection", targetId: row.id, projectId: row.projectId, before, after });
  }

  /**
   * Creates or reconnects a connection: the given `connectionId`, else the owner's connection of the provider
   * with the same label (case-insensitive), else a new one. Always ends `connected`.
   */
  save(owner: ConnectionOwner, input: SaveConnection): Promise<ConnectionRow> {
    const { appConnections } = this.t;
    const now = nowIso();
    const sealed = this.deps.sealer.seal(JSON.stringify(input.credential));
    return this.deps.store.transaction(async () => {
      let target: ConnectionRow | undefined;
      if (input.connectionId) {
        // A connection of another provider is not a reconnect target: its credential would be overwritten.
        [target] = await this.db
          .select()
          .from(appConnections)
          .where(and(eq(appConnections.id, input.connectionId), this.ownerWhere(owner), eq(appConnections.provider, input.provider)))
          .limit(1);
        if (!target) throw ApiError.envelope(404, CONNECTION_NOT_FOUND);
      } else if (input.label) {
        [target] = await this.db
          .select()
          .from(appConnections)
          .where(and(this.ownerWhere(owner), eq(appConnections.provider, input.provider), sql`lower(${appConnections.label}) = lower(${input.label})`))
          .orderBy(...this.byNewest)
          .limit(1);
      }
      const fields = {
        label: input.label ?? target?.label ?? null,
        status: "connected" as const,
        scopes: input.scopes,
        metadata: input.metadata ?? target?.metadata ?? null,
        credentialSealed: sealed,
        refreshFailures: 0,
        connectedAt: now,
        updatedAt: now,
      };
      let row: ConnectionRow;
      if (target) {
        [row] = (await this.db
          .update(appConnections)
          .set({ ...fields, version: sql`${appConnections.version} + 1` })
          .where(eq(appConnections.id, target.id))
          .returning()) as [ConnectionRow];
      } else {
        [row] = (await this.db
          .insert(appConnections)
          .values({
            id: newId(),
            scope: owner.scope,
            organizationId: owner.organizationId,
            projectId: owner.scope === "project" ? owner.projectId : null,
            provider: input.provider,
            version: 1,
            createdAt: now,
            ...fields,
          })
          .returning()) as [ConnectionRow];
      }
      await this.#audit(row, target ?? null, row);
      this.changed(owner.organizationId);
      return row;
    });
  }

  credential(row: Pick<ConnectionRow, "credentialSealed">): ConnectionCredential {
    return JSON.parse(this.deps.sealer.open(row.credentialSealed)) as ConnectionCredential;
  }

  /**
   * Writes refreshed tokens only if nobody else wrote since `version` was read (compare-and-swap), so two
   * instances refreshing at once never clobber each other. Returns the stored row either way.
   */
  async swapCredential(id: string, version: number, credential: ConnectionCredential): Promise<{ swapped: boolean; row: ConnectionRow | null }> {
    const { appConnections } = this.t;
    const now = nowIso();
    const [row] = await this.db
      .update(appConnections)
      .set({ credentialSealed: this.deps.sealer.seal(JSON.stringify(credential)), version: version + 1, status: "connected", refreshFailures: 0, updatedAt: now })
      .where(and(eq(appConnections.id, id), eq(appConnections.version, version)))
      .returning();
    if (row) this.changed(row.organizationId);
    return row ? { swapped: true, row } : { swapped: false, row: await this.byId(id) };
  }

  /**
   * Records a refresh outcome that is not a new token: a status change and/or the failure count. With `version`,
   * only if no credential was written since that version was read (compare-and-swap): a refresh's failure never
   * lands over another instance's fresh token. Null when nothing was written.
   */
  async setStatus(id: string, status: ConnectionStatus, refreshFailures: number, version?: number): Promise<ConnectionRow | null> {
    const { appConnections } = this.t;
    const where = version === undefined ? eq(appConnections.id, id) : and(eq(appConnections.id, id), eq(appConnections.version, version));
    const [row] = await this.db.update(appConnections).set({ status, refreshFailures, updatedAt: nowIso() }).where(where).returning();
    if (row) this.changed(row.organizationId);
    return row ?? null;
  }

  private changed(organizationId: string): void {
    this.deps.events.emit({ kind: "app", organizationId });
  }
}
