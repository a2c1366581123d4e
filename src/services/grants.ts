// Agent grants (docs/injection.md#grants): which secrets and app connections an agent in mode `grants` may
// use, and with which tools. Writes take effect at once: the gateway listens.
import { and, asc, desc, eq, inArray, or, type SQL } from "drizzle-orm";
import { findApp } from "../apps/index.ts";
import { ApiError } from "../core/errors.ts";
import { creationTime } from "../core/ids.ts";
import type { ConnectionAccess } from "../core/model.ts";
import type { ConnectionGrant, GrantSet, SecretGrant } from "../core/records/grants.ts";
import { parseResources, type Resources } from "../core/resources.ts";
import type { ConnectionGrantRow } from "../store/rows.ts";
import type { AgentService } from "./agents.ts";
import { CONNECTION_NOT_FOUND, type ConnectionService } from "./connections.ts";
import type { ServiceDeps } from "./deps.ts";
import type { McpGrantService } from "./mcpGrants.ts";

export type { ConnectionGrant, GrantSet, SecretGrant };

/** An agent with its grants, secrets first: what its managed grant rules are compiled from (core/grantRules.ts). */
export interface AgentGrants {
  agent: { id: string; name: string };
  secrets: SecretGrant[];
  connections: ConnectionGrant[];
}

/** A grant write: `resources` absent keeps the stored value, null clears it. */
export interface ConnectionGrantInput {
  access: ConnectionAccess;
  allow?: string[];
  ask?: string[];
  resources?: unknown;
}

export type { ConnectionGrantRow };

export { CONNECTION_NOT_FOUND };

type ConnectionGrantInputRow = Pick<ConnectionGrantRow, "access" | "allow" | "ask" | "resources">;

export class GrantService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly agents: AgentService,
    private readonly connections: ConnectionService,
    private readonly mcpGrants: McpGrantService,
  ) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  /** The secret ids of the attachable pool (the project's own and its organization's) among `ids`. */
  private async attachable(projectId: string, organizationId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const { secrets } = this.t;
    const rows = await this.db
      .select({ id: secrets.id })
      .from(secrets)
      .where(
        and(
          inArray(secrets.id, ids),
          or(and(eq(secrets.scope, "project"), eq(secrets.projectId, projectId)), and(eq(secrets.scope, "organization"), eq(secrets.organizationId, organizationId))),
        ),
      );
    return new Set(rows.map((r) => r.id));
  }

  async secretIds(agentId: string): Promise<string[]> {
    const { agentSecretGrants } = this.t;
    const rows = await this.db.select({ id: agentSecretGrants.secretId }).from(agentSecretGrants).where(eq(agentSecretGrants.agentId, agentId));
    return rows.map((r) => r.id);
  }

  async grantSet(projectId: string, agentId: string): Promise<GrantSet> {
    const agent = await this.agents.get(projectId, agentId, "flat");
    const { agentSecretGrants } = this.t;
    const secrets = await this.secretGrantsWhere(eq(agentSecretGrants.agentId, agentId));
    return {
      agentId,
      mode: agent.mode,
      connections: await this.connectionGrants(agentId),
      secrets: secrets.map((g) => g.grant),
      mcpServers: await this.mcpGrants.ofAgent(agentId),
    };
  }

  async connectionGrants(agentId: string): Promise<ConnectionGrant[]> {
    const { agentConnectionGrants } = this.t;
    return (await this.connectionGrantsWhere(eq(agentConnectionGrants.agentId, agentId))).map((g) => g.grant);
  }

  /**
   * Every agent of a project with its grants, agents in list order (default first, then newest) and grants in
   * grant order: three queries, whatever the number of agents (the managed rules of `?include=managed`).
   */
  async grantsOfProject(projectId: string): Promise<AgentGrants[]> {
    const { agents } = this.t;
    const inProject = eq(agents.projectId, projectId);
    const list = await this.db
      .select({ id: agents.id, name: agents.name })
      .from(agents)
      .where(inProject)
      .orderBy(desc(agents.isDefault), desc(agents.createdAt), desc(agents.id));
    const out = new Map<string, AgentGrants>(list.map((agent) => [agent.id, { agent, secrets: [], connections: [] }]));
    for (const g of await this.secretGrantsWhere(inProject)) out.get(g.agentId)?.secrets.push(g.grant);
    for (const g of await this.connectionGrantsWhere(inProject)) out.get(g.agentId)?.connections.push(g.grant);
    return [...out.values()];
  }

  /** Secret grants (with their agent) matching `where`, in grant order. */
  private async secretGrantsWhere(where: SQL): Promise<{ agentId: string; grant: SecretGrant }[]> {
    const { agentSecretGrants, secrets, agents } = this.t;
    const rows = await this.db
      .select({ agentId: agentSecretGrants.agentId, secretId: secrets.id, name: secrets.name, type: secrets.type, scope: secrets.scope })
      .from(agentSecretGrants)
      .innerJoin(secrets, eq(agentSecretGrants.secretId, secrets.id))
      .innerJoin(agents, eq(agentSecretGrants.agentId, agents.id))
      .where(where)
      .orderBy(asc(agentSecretGrants.createdAt), asc(agentSecretGrants.secretId));
    return rows.map(({ agentId, secretId, name, type, scope }) => ({ agentId, grant: { secretId, name, type, scope } }));
  }

  /** Connection grants (with their agent) matching `where`, in grant order. */
  private async connectionGrantsWhere(where: SQL): Promise<{ agentId: string; grant: ConnectionGrant }[]> {
    const { agentConnectionGrants, appConnections, agents } = this.t;
    const rows = await this.db
      .select({ grant: agentConnectionGrants, provider: appConnections.provider, label: appConnections.label, scope: appConnections.scope })
      .from(agentConnectionGrants)
      .innerJoin(appConnections, eq(agentConnectionGrants.connectionId, appConnections.id))
      .innerJoin(agents, eq(agentConnectionGrants.agentId, agents.id))
      .where(where)
      .orderBy(asc(agentConnectionGrants.createdAt), asc(agentConnectionGrants.connectionId));
    return rows.map(({ grant: g, provider, label, scope }) => ({
      agentId: g.agentId,
      grant: {
        connectionId: g.connectionId,
        provider,
        label,
        scope,
        access: g.access,
        allow: g.access === "full" ? [] : g.allow,
        ask: g.access === "full" ? [] : g.ask,
        resources: g.resources ?? null,
      },
    }));
  }

  /** The stored connection grants of an agent, for the gateway snapshot. */
  connectionGrantRows(agentId: string): Promise<ConnectionGrantRow[]> {
    const { agentConnectionGrants } = this.t;
    return this.db.select().from(agentConnectionGrants).where(eq(agentConnectionGrants.agentId, agentId));
  }

  /**
   * PUT of a connection grant (docs/injection.md#grants): the body's own rules are checked by the route; here the agent, the
   * connection (the project's own or its organization's), the tool ids and the resources shape.
   */
  async grantConnection(projectId: string, organizationId: string, agentId: string, connectionId: string, input: ConnectionGrantInput): Promise<GrantSet> {
    await this.agents.get(projectId, agentId, "flat");
    const connection = await this.connections.visibleToProject(projectId, organizationId, connectionId, "flat");
    const app = findApp(connection.provider);
    const allow = input.access === "custom" ? [...new Set(input.allow ?? [])] : [];
    const ask = input.access === "custom" ? [...new Set(input.ask ?? [])] : [];
    if (input.access === "custom") {
      if (!app || app.tools.length === 0) throw ApiError.flat(400, `Per-tool permissions need a permission catalog; "${connection.provider}" has none.`);
      const known = new Set(app.tools.map((t) => t.id));
      const unknown = [...allow, ...ask].filter((id) => !known.has(id));
      if (unknown.length > 0) throw ApiError.flat(400, `Unknown tool id(s) for "${connection.provider}": ${unknown.join(", ")}`);
    }
    const { agentConnectionGrants } = this.t;
    const [existing] = await this.db
      .select()
      .from(agentConnectionGrants)
      .where(and(eq(agentConnectionGrants.agentId, agentId), eq(agentConnectionGrants.connectionId, connectionId)))
      .limit(1);
    let resources: Resources | null = existing?.resources ?? null;
    if (input.resources !== undefined) {
      const parsed = parseResources(input.resources, app?.resources, connection.provider, "resources");
      if (!parsed.ok) throw ApiError.flat(400, parsed.message);
      resources = parsed.value;
    }
    const now = creationTime();
    await this.deps.store.transaction(async () => {
      await this.db
        .insert(agentConnectionGrants)
        .values({ agentId, connectionId, access: input.access, allow, ask, resources, createdAt: now, updatedAt: now })
        .onConflictDoUpdate({
          target: [agentConnectionGrants.agentId, agentConnectionGrants.connectionId],
          set: { access: input.access, allow, ask, resources, updatedAt: now },
        });
      await this.#auditConnection(projectId, agentId, connectionId, existing ?? null, { access: input.access, allow, ask, resources });
    });
    this.changed(agentId);
    return this.grantSet(projectId, agentId);
  }

  async revokeConnection(projectId: string, agentId: string, connectionId: string): Promise<void> {
    await this.agents.get(projectId, agentId, "flat");
    const { agentConnectionGrants } = this.t;
    await this.deps.store.transaction(async () => {
      const gone = await this.db
        .delete(agentConnectionGrants)
        .where(and(eq(agentConnectionGrants.agentId, agentId), eq(agentConnectionGrants.connectionId, connectionId)))
        .returning();
      await this.#auditConnection(projectId, agentId, connectionId, gone[0] ?? null, null);
    });
    this.changed(agentId);
  }

  /** `GET /connections/{id}/grants`: the agents of the caller's project holding this connection. */
  async grantsOfConnection(projectId: string, organizationId: string, connectionId: string) {
    await this.connections.visibleToProject(projectId, organizationId, connectionId, "flat");
    const { agentConnectionGrants, agents } = this.t;
    const rows = await this.db
      .select({ grant: agentConnectionGrants, agentName: agents.name })
      .from(agentConnectionGrants)
      .innerJoin(agents, eq(agentConnectionGrants.agentId, agents.id))
      .where(and(eq(agentConnectionGrants.connectionId, connectionId), eq(agents.projectId, projectId)))
      .orderBy(asc(agentConnectionGrants.createdAt), asc(agentConnectionGrants.agentId));
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
  async replaceConnections(projectId: string, organizationId: string, agentId: string, list: { appConnectionId: string; sessionPolicy?: unknown }[]): Promise<void> {
    await this.agents.get(projectId, agentId);
    const { agentConnectionGrants, appConnections } = this.t;
    const rows: { connectionId: string; resources: Resources | null }[] = [];
    for (const item of list) {
      const [connection] = await this.db.select().from(appConnections).where(eq(appConnections.id, item.appConnectionId)).limit(1);
      const visible =
        connection &&
        ((connection.scope === "project" && connection.projectId === projectId) || (connection.scope === "organization" && connection.organizationId === organizationId));
      if (!visible) throw ApiError.envelope(400, "One or more app connections not found");
      const parsed = parseResources(item.sessionPolicy, findApp(connection.provider)?.resources, connection.provider, "sessionPolicy");
      if (!parsed.ok) throw ApiError.flat(400, parsed.message);
      rows.push({ connectionId: connection.id, resources: parsed.value });
    }
    await this.deps.store.transaction(async () => {
      const keep = new Map((await this.db.select().from(agentConnectionGrants).where(eq(agentConnectionGrants.agentId, agentId))).map((g) => [g.connectionId, g]));
      const after = Object.fromEntries(rows.map((r) => [r.connectionId, { access: keep.get(r.connectionId)?.access ?? "full", resources: r.resources }]));
      const before = Object.fromEntries([...keep.values()].map((g) => [g.connectionId, { access: g.access, resources: g.resources }]));
      await this.deps.audit.record({ targetType: "agent", targetId: agentId, projectId, before: { connectionGrants: before }, after: { connectionGrants: after } });
      await this.db.delete(agentConnectionGrants).where(eq(agentConnectionGrants.agentId, agentId));
      for (const r of rows) {
        const old = keep.get(r.connectionId);
        const now = creationTime();
        await this.db
          .insert(agentConnectionGrants)
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
          .onConflictDoNothing();
      }
    });
    this.changed(agentId);
  }

  async grantSecret(projectId: string, organizationId: string, agentId: string, secretId: string): Promise<GrantSet> {
    await this.agents.get(projectId, agentId, "flat");
    if (!(await this.attachable(projectId, organizationId, [secretId])).has(secretId)) throw ApiError.flat(404, "Secret not found");
    await this.deps.store.transaction(async () => {
      const before = await this.secretIds(agentId);
      await this.db.insert(this.t.agentSecretGrants).values({ agentId, secretId, createdAt: creationTime() }).onConflictDoNothing();
      await this.#auditSecrets(projectId, agentId, before, [...before, secretId]);
    });
    this.changed(agentId);
    return this.grantSet(projectId, agentId);
  }

  async revokeSecret(projectId: string, agentId: string, secretId: string): Promise<void> {
    await this.agents.get(projectId, agentId, "flat");
    const { agentSecretGrants } = this.t;
    await this.deps.store.transaction(async () => {
      const before = await this.secretIds(agentId);
      await this.db.delete(agentSecretGrants).where(and(eq(agentSecretGrants.agentId, agentId), eq(agentSecretGrants.secretId, secretId)));
      await this.#auditSecrets(projectId, agentId, before, before.filter((id) => id !== secretId));
    });
    this.changed(agentId);
  }

  /** Legacy `PUT /agents/{id}/secrets`: replaces every secret grant, all or nothing. */
  async replaceSecrets(projectId: string, organizationId: string, agentId: string, secretIds: string[]): Promise<void> {
    await this.agents.get(projectId, agentId);
    const unique = [...new Set(secretIds)];
    const found = await this.attachable(projectId, organizationId, unique);
    if (found.size !== unique.length) throw ApiError.envelope(400, "One or more secrets not found");
    const { agentSecretGrants } = this.t;
    await this.deps.store.transaction(async () => {
      const before = await this.secretIds(agentId);
      await this.db.delete(agentSecretGrants).where(eq(agentSecretGrants.agentId, agentId));
      for (const secretId of unique) await this.db.insert(agentSecretGrants).values({ agentId, secretId, createdAt: creationTime() });
      await this.#auditSecrets(projectId, agentId, before, unique);
    });
    this.changed(agentId);
  }

  /** An agent's secret grants before and after, in the current write's audit event (docs/operations.md#audit-log). */
  #auditSecrets(projectId: string, agentId: string, before: string[], after: string[]): Promise<void> {
    return this.deps.audit.record({ targetType: "agent", targetId: agentId, projectId, before: { secretIds: [...new Set(before)].sort() }, after: { secretIds: [...new Set(after)].sort() } });
  }

  /** One connection grant of an agent before and after (null: none). */
  #auditConnection(projectId: string, agentId: string, connectionId: string, before: ConnectionGrantInputRow | null, after: ConnectionGrantInputRow | null): Promise<void> {
    const shape = (g: ConnectionGrantInputRow | null) => (g ? { access: g.access, allow: g.allow, ask: g.ask, resources: g.resources } : null);
    return this.deps.audit.record({
      targetType: "agent",
      targetId: agentId,
      projectId,
      before: { connectionGrants: { [connectionId]: shape(before) } },
      after: { connectionGrants: { [connectionId]: shape(after) } },
    });
  }

  private changed(agentId: string): void {
    this.deps.events.emit({ kind: "grant", agentId });
  }
}
