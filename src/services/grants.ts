// Agent grants (CONTRACT §3.2, §5.1 "Grants"): which secrets and app connections an agent in mode `grants`
// may use, and with which tools. Writes take effect at once: the gateway listens.
import { and, asc, eq, inArray, or, sql } from "drizzle-orm";
import { findApp } from "../apps/index.ts";
import { ApiError } from "../core/errors.ts";
import { nowIso } from "../core/ids.ts";
import { parseResources, type Resources } from "../core/resources.ts";
import {
  agentConnectionGrants,
  agents,
  agentSecretGrants,
  appConnections,
  secrets,
  type AgentMode,
  type ConnectionAccess,
  type SecretScope,
  type SecretType,
} from "../store/schema.ts";
import type { AgentService } from "./agents.ts";
import { CONNECTION_NOT_FOUND, type ConnectionService } from "./connections.ts";
import type { ServiceDeps } from "./deps.ts";

export interface SecretGrant {
  secretId: string;
  name: string;
  type: SecretType;
  scope: SecretScope;
}

export interface ConnectionGrant {
  connectionId: string;
  provider: string;
  label: string | null;
  scope: "project" | "organization";
  access: ConnectionAccess;
  allow: string[];
  ask: string[];
  resources: Resources | null;
}

export interface GrantSet {
  agentId: string;
  mode: AgentMode;
  connections: ConnectionGrant[];
  secrets: SecretGrant[];
}

/** A grant write: `resources` absent keeps the stored value, null clears it. */
export interface ConnectionGrantInput {
  access: ConnectionAccess;
  allow?: string[];
  ask?: string[];
  resources?: unknown;
}

export type ConnectionGrantRow = typeof agentConnectionGrants.$inferSelect;

export { CONNECTION_NOT_FOUND };

export class GrantService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly agents: AgentService,
    private readonly connections: ConnectionService,
  ) {}

  private get db() {
    return this.deps.db;
  }

  /** The secret ids of the attachable pool (the project's own and its organization's) among `ids`. */
  private attachable(projectId: string, organizationId: string, ids: string[]): Set<string> {
    if (ids.length === 0) return new Set();
    const rows = this.db
      .select({ id: secrets.id })
      .from(secrets)
      .where(
        and(
          inArray(secrets.id, ids),
          or(and(eq(secrets.scope, "project"), eq(secrets.projectId, projectId)), and(eq(secrets.scope, "organization"), eq(secrets.organizationId, organizationId))),
        ),
      )
      .all();
    return new Set(rows.map((r) => r.id));
  }

  /** The secret rows an agent may inject: partner secrets always; the others in mode `all` or when granted. */
  injectableRows(agent: { id: string; projectId: string; mode: AgentMode }, organizationId: string, partnerId: string | null) {
    const rows = this.deps.db.transaction(() => ({ rows: this.secretRows(agent.projectId, organizationId, partnerId), granted: new Set(this.secretIds(agent.id)) }));
    return rows.rows.filter((s) => s.scope === "partner" || agent.mode === "all" || rows.granted.has(s.id));
  }

  private secretRows(projectId: string, organizationId: string, partnerId: string | null) {
    const scopes = [
      and(eq(secrets.scope, "project"), eq(secrets.projectId, projectId)),
      and(eq(secrets.scope, "organization"), eq(secrets.organizationId, organizationId)),
    ];
    if (partnerId) scopes.push(and(eq(secrets.scope, "partner"), eq(secrets.partnerId, partnerId)));
    return this.db.select().from(secrets).where(or(...scopes)).all();
  }

  secretIds(agentId: string): string[] {
    return this.db.select({ id: agentSecretGrants.secretId }).from(agentSecretGrants).where(eq(agentSecretGrants.agentId, agentId)).all().map((r) => r.id);
  }

  /** agentId → granted secret ids, for every agent given. */
  secretIdsByAgent(agentIds: string[]): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    if (agentIds.length === 0) return out;
    for (const r of this.db.select().from(agentSecretGrants).where(inArray(agentSecretGrants.agentId, agentIds)).all()) {
      if (!out.has(r.agentId)) out.set(r.agentId, new Set());
      out.get(r.agentId)!.add(r.secretId);
    }
    return out;
  }

  grantSet(projectId: string, agentId: string): GrantSet {
    const agent = this.agents.get(projectId, agentId, "flat");
    const rows = this.db
      .select({ secretId: secrets.id, name: secrets.name, type: secrets.type, scope: secrets.scope, createdAt: agentSecretGrants.createdAt })
      .from(agentSecretGrants)
      .innerJoin(secrets, eq(agentSecretGrants.secretId, secrets.id))
      .where(eq(agentSecretGrants.agentId, agentId))
      .all()
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.secretId.localeCompare(b.secretId));
    return { agentId, mode: agent.mode, connections: this.connectionGrants(agentId), secrets: rows.map(({ createdAt: _c, ...g }) => g) };
  }

  connectionGrants(agentId: string): ConnectionGrant[] {
    return this.db
      .select({ grant: agentConnectionGrants, provider: appConnections.provider, label: appConnections.label, scope: appConnections.scope })
      .from(agentConnectionGrants)
      .innerJoin(appConnections, eq(agentConnectionGrants.connectionId, appConnections.id))
      .where(eq(agentConnectionGrants.agentId, agentId))
      .orderBy(asc(agentConnectionGrants.createdAt), sql`${agentConnectionGrants}.rowid`)
      .all()
      .map(({ grant: g, provider, label, scope }) => ({
        connectionId: g.connectionId,
        provider,
        label,
        scope,
        access: g.access,
        allow: g.access === "full" ? [] : g.allow,
        ask: g.access === "full" ? [] : g.ask,
        resources: g.resources ?? null,
      }));
  }

  /** The stored connection grants of an agent, for the gateway snapshot. */
  connectionGrantRows(agentId: string): ConnectionGrantRow[] {
    return this.db.select().from(agentConnectionGrants).where(eq(agentConnectionGrants.agentId, agentId)).all();
  }

  /** agentId → its connection grants, for every agent given. */
  connectionGrantsByAgent(agentIds: string[]): Map<string, ConnectionGrantRow[]> {
    const out = new Map<string, ConnectionGrantRow[]>();
    if (agentIds.length === 0) return out;
    for (const r of this.db.select().from(agentConnectionGrants).where(inArray(agentConnectionGrants.agentId, agentIds)).all()) {
      if (!out.has(r.agentId)) out.set(r.agentId, []);
      out.get(r.agentId)!.push(r);
    }
    return out;
  }

  /**
   * PUT of a connection grant (§5.1): the body's own rules are checked by the route; here the agent, the
   * connection (the project's own or its organization's), the tool ids and the resources shape.
   */
  grantConnection(projectId: string, organizationId: string, agentId: string, connectionId: string, input: ConnectionGrantInput): GrantSet {
    this.agents.get(projectId, agentId, "flat");
    const connection = this.connections.visibleToProject(projectId, organizationId, connectionId, "flat");
    const app = findApp(connection.provider);
    const allow = input.access === "custom" ? [...new Set(input.allow ?? [])] : [];
    const ask = input.access === "custom" ? [...new Set(input.ask ?? [])] : [];
    if (input.access === "custom") {
      if (!app || app.tools.length === 0) throw ApiError.flat(400, `Per-tool permissions need a permission catalog; "${connection.provider}" has none.`);
      const known = new Set(app.tools.map((t) => t.id));
      const unknown = [...allow, ...ask].filter((id) => !known.has(id));
      if (unknown.length > 0) throw ApiError.flat(400, `Unknown tool id(s) for "${connection.provider}": ${unknown.join(", ")}`);
    }
    const existing = this.db
      .select()
      .from(agentConnectionGrants)
      .where(and(eq(agentConnectionGrants.agentId, agentId), eq(agentConnectionGrants.connectionId, connectionId)))
      .get();
    let resources: Resources | null = existing?.resources ?? null;
    if (input.resources !== undefined) {
      const parsed = parseResources(input.resources, app?.resources, connection.provider, "resources");
      if (!parsed.ok) throw ApiError.flat(400, parsed.message);
      resources = parsed.value;
    }
    const now = nowIso();
    this.db
      .insert(agentConnectionGrants)
      .values({ agentId, connectionId, access: input.access, allow, ask, resources, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({
        target: [agentConnectionGrants.agentId, agentConnectionGrants.connectionId],
        set: { access: input.access, allow, ask, resources, updatedAt: now },
      })
      .run();
    this.changed(agentId);
    return this.grantSet(projectId, agentId);
  }

  revokeConnection(projectId: string, agentId: string, connectionId: string): void {
    this.agents.get(projectId, agentId, "flat");
    this.db.delete(agentConnectionGrants).where(and(eq(agentConnectionGrants.agentId, agentId), eq(agentConnectionGrants.connectionId, connectionId))).run();
    this.changed(agentId);
  }

  /** `GET /connections/{id}/grants`: the agents of the caller's project holding this connection. */
  grantsOfConnection(projectId: string, organizationId: string, connectionId: string) {
    this.connections.visibleToProject(projectId, organizationId, connectionId, "flat");
    const rows = this.db
      .select({ grant: agentConnectionGrants, agentName: agents.name })
      .from(agentConnectionGrants)
      .innerJoin(agents, eq(agentConnectionGrants.agentId, agents.id))
      .where(and(eq(agentConnectionGrants.connectionId, connectionId), eq(agents.projectId, projectId)))
      .orderBy(asc(agentConnectionGrants.createdAt), sql`${agentConnectionGrants}.rowid`)
      .all();
    return {
      connectionId,
      agents: rows.map(({ grant: g, agentName }) => ({
        agentId: g.agentId,
        agentName,
        access: g.access,
        allow: g.access === "full" ? [] : g.allow,
        ask: g.access === "full" ? [] : g.ask,
      })),
    };
  }

  /** Legacy `PUT /agents/{id}/connections`: the listed connections become the agent's connection grants. */
  replaceConnections(projectId: string, organizationId: string, agentId: string, list: { appConnectionId: string; sessionPolicy?: unknown }[]): void {
    this.agents.get(projectId, agentId);
    const rows = list.map((item) => {
      const connection = this.db.select().from(appConnections).where(eq(appConnections.id, item.appConnectionId)).get();
      const visible =
        connection &&
        ((connection.scope === "project" && connection.projectId === projectId) || (connection.scope === "organization" && connection.organizationId === organizationId));
      if (!visible) throw ApiError.envelope(400, "One or more app connections not found");
      const parsed = parseResources(item.sessionPolicy, findApp(connection.provider)?.resources, connection.provider, "sessionPolicy");
      if (!parsed.ok) throw ApiError.flat(400, parsed.message);
      return { connectionId: connection.id, resources: parsed.value };
    });
    const now = nowIso();
    this.db.transaction((tx) => {
      const keep = new Map(tx.select().from(agentConnectionGrants).where(eq(agentConnectionGrants.agentId, agentId)).all().map((g) => [g.connectionId, g]));
      tx.delete(agentConnectionGrants).where(eq(agentConnectionGrants.agentId, agentId)).run();
      for (const r of rows) {
        const old = keep.get(r.connectionId);
        tx.insert(agentConnectionGrants)
          .values({
            agentId,
            connectionId: r.connectionId,
            access: old?.access ?? "full",
            allow: old?.allow ?? [],
            ask: old?.ask ?? [],
            resources: r.resources,
            createdAt: old?.createdAt ?? now,
            updatedAt: now,
          })
          .onConflictDoNothing()
          .run();
      }
    });
    this.changed(agentId);
  }

  grantSecret(projectId: string, organizationId: string, agentId: string, secretId: string): GrantSet {
    this.agents.get(projectId, agentId, "flat");
    if (!this.attachable(projectId, organizationId, [secretId]).has(secretId)) throw ApiError.flat(404, "Secret not found");
    this.db.insert(agentSecretGrants).values({ agentId, secretId, createdAt: nowIso() }).onConflictDoNothing().run();
    this.changed(agentId);
    return this.grantSet(projectId, agentId);
  }

  revokeSecret(projectId: string, agentId: string, secretId: string): void {
    this.agents.get(projectId, agentId, "flat");
    this.db.delete(agentSecretGrants).where(and(eq(agentSecretGrants.agentId, agentId), eq(agentSecretGrants.secretId, secretId))).run();
    this.changed(agentId);
  }

  /** Legacy `PUT /agents/{id}/secrets`: replaces every secret grant, all or nothing. */
  replaceSecrets(projectId: string, organizationId: string, agentId: string, secretIds: string[]): void {
    this.agents.get(projectId, agentId);
    const unique = [...new Set(secretIds)];
    const found = this.attachable(projectId, organizationId, unique);
    if (found.size !== unique.length) throw ApiError.envelope(400, "One or more secrets not found");
    const now = nowIso();
    this.db.transaction((tx) => {
      tx.delete(agentSecretGrants).where(eq(agentSecretGrants.agentId, agentId)).run();
      for (const secretId of unique) tx.insert(agentSecretGrants).values({ agentId, secretId, createdAt: now }).run();
    });
    this.changed(agentId);
  }

  private changed(agentId: string): void {
    this.deps.events.emit({ kind: "grant", agentId });
  }
}
