// Agents of a project: CRUD, the default agent, and access tokens (agt_…, hash + sealed copy).
import { and, desc, eq } from "drizzle-orm";
import { ApiError, badRequest, conflict, notFound } from "../core/errors.ts";
import { creationTime, newId, nowIso } from "../core/ids.ts";
import type { AgentMode } from "../core/model.ts";
import type { Agent } from "../core/records/agents.ts";
import type { AgentRow } from "../store/rows.ts";
import { issueCredential } from "./credentials.ts";
import type { ServiceDeps } from "./deps.ts";

export type { AgentRow };

export const AGENT_NOT_FOUND = "Agent not found";

export class AgentService {
  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  view(row: AgentRow, withToken: boolean): Agent {
    const v: Agent = {
      id: row.id,
      name: row.name,
      identifier: row.identifier,
      mode: row.mode,
      isDefault: row.isDefault,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      lastSeenAt: row.lastSeenAt,
    };
    if (withToken) v.accessToken = this.accessToken(row);
    return v;
  }

  /** The agent's access token (agt_…), opened from its sealed copy. */
  accessToken(row: AgentRow): string {
    return this.deps.sealer.open(row.tokenSealed);
  }

  async list(projectId: string): Promise<Agent[]> {
    const { agents } = this.t;
    const rows = await this.db
      .select()
      .from(agents)
      .where(eq(agents.projectId, projectId))
      .orderBy(desc(agents.isDefault), desc(agents.createdAt), desc(agents.id));
    return rows.map((r) => this.view(r, true));
  }

  private async insert(projectId: string, input: { name: string; identifier: string; mode: AgentMode; isDefault: boolean }): Promise<AgentRow> {
    const cred = issueCredential(this.deps.sealer, "agent");
    const now = creationTime();
    const row: AgentRow = {
      id: newId(),
      projectId,
      ...input,
      tokenHash: cred.tokenHash,
      tokenSealed: cred.tokenSealed,
      createdAt: now,
      updatedAt: now,
      lastSeenAt: null,
    };
    await this.deps.store.transaction(async () => {
      await this.db.insert(this.t.agents).values(row);
      await this.#audit(row, null, row);
    });
    this.deps.events.emit({ kind: "agent", projectId, agentId: row.id });
    return row;
  }

  async create(projectId: string, input: { name: string; identifier: string; mode: AgentMode }): Promise<AgentRow> {
    if (await this.findByIdentifier(projectId, input.identifier)) throw conflict("An agent with this identifier already exists");
    return this.insert(projectId, { ...input, isDefault: false });
  }

  /** The Default Agent of a new project: `{name:"Default Agent", identifier:"default", mode:"all"}`. */
  async createDefault(projectId: string): Promise<AgentRow> {
    const taken = await this.findByIdentifier(projectId, "default");
    const identifier = taken ? `default-${newId().slice(0, 8)}` : "default";
    return this.insert(projectId, { name: "Default Agent", identifier, mode: "all", isDefault: true });
  }

  /** Every agent with its organization: the gateway's token index is built from this. */
  async allWithOrganization(): Promise<(AgentRow & { organizationId: string })[]> {
    const { agents, projects } = this.t;
    const rows = await this.db.select({ agent: agents, organizationId: projects.organizationId }).from(agents).innerJoin(projects, eq(projects.id, agents.projectId));
    return rows.map((r) => ({ ...r.agent, organizationId: r.organizationId }));
  }

  /** One agent with its organization (a targeted refresh of the gateway's token index). */
  async withOrganization(agentId: string): Promise<(AgentRow & { organizationId: string }) | undefined> {
    const { agents, projects } = this.t;
    const [r] = await this.db
      .select({ agent: agents, organizationId: projects.organizationId })
      .from(agents)
      .innerJoin(projects, eq(projects.id, agents.projectId))
      .where(eq(agents.id, agentId))
      .limit(1);
    return r ? { ...r.agent, organizationId: r.organizationId } : undefined;
  }

  /** Records gateway activity times in one transaction per batch (not per request). */
  async touch(lastSeen: ReadonlyMap<string, string>): Promise<void> {
    if (lastSeen.size === 0) return;
    const { agents } = this.t;
    await this.deps.store.transaction(async () => {
      for (const [id, at] of lastSeen) await this.db.update(agents).set({ lastSeenAt: at }).where(eq(agents.id, id));
    });
  }

  async find(projectId: string, agentId: string): Promise<AgentRow | undefined> {
    const { agents } = this.t;
    const [row] = await this.db.select().from(agents).where(and(eq(agents.projectId, projectId), eq(agents.id, agentId))).limit(1);
    return row;
  }

  async get(projectId: string, agentId: string, shape: "flat" | "envelope" = "envelope"): Promise<AgentRow> {
    const row = await this.find(projectId, agentId);
    if (!row) throw shape === "flat" ? ApiError.flat(404, AGENT_NOT_FOUND) : notFound(AGENT_NOT_FOUND);
    return row;
  }

  async findByIdentifier(projectId: string, identifier: string): Promise<AgentRow | undefined> {
    const { agents } = this.t;
    const [row] = await this.db.select().from(agents).where(and(eq(agents.projectId, projectId), eq(agents.identifier, identifier))).limit(1);
    return row;
  }

  async findDefault(projectId: string): Promise<AgentRow | undefined> {
    const { agents } = this.t;
    const [row] = await this.db.select().from(agents).where(and(eq(agents.projectId, projectId), eq(agents.isDefault, true))).limit(1);
    return row;
  }

  async update(projectId: string, agentId: string, patch: { name?: string; mode?: AgentMode }): Promise<AgentRow> {
    const before = await this.get(projectId, agentId);
    const after = await this.deps.store.transaction(async () => {
      await this.db
        .update(this.t.agents)
        .set({ ...patch, updatedAt: nowIso() })
        .where(eq(this.t.agents.id, agentId));
      const row = await this.get(projectId, agentId);
      await this.#audit(row, before, row);
      return row;
    });
    this.deps.events.emit({ kind: "agent", projectId, agentId });
    return after;
  }

  async delete(projectId: string, agentId: string): Promise<void> {
    const row = await this.get(projectId, agentId);
    if (row.isDefault) throw badRequest("Cannot delete the default agent");
    await this.deps.store.transaction(async () => {
      await this.db.delete(this.t.agents).where(eq(this.t.agents.id, agentId));
      await this.#audit(row, row, null);
    });
    this.deps.events.emit({ kind: "agent", projectId, agentId });
  }

  async setDefault(projectId: string, agentId: string): Promise<void> {
    const row = await this.get(projectId, agentId);
    if (row.isDefault) throw badRequest("Agent is already the default");
    const { agents } = this.t;
    await this.deps.store.transaction(async () => {
      await this.db.update(agents).set({ isDefault: false }).where(eq(agents.projectId, projectId));
      await this.db.update(agents).set({ isDefault: true, updatedAt: nowIso() }).where(eq(agents.id, agentId));
      await this.#audit(row, { isDefault: false }, { isDefault: true });
    });
    this.deps.events.emit({ kind: "agent", projectId, agentId });
  }

  /** A new access token; the previous one is invalid from the next gateway request on. */
  async regenerateToken(projectId: string, agentId: string): Promise<string> {
    const row = await this.get(projectId, agentId);
    const cred = issueCredential(this.deps.sealer, "agent");
    await this.deps.store.transaction(async () => {
      await this.db.update(this.t.agents).set({ tokenHash: cred.tokenHash, tokenSealed: cred.tokenSealed, updatedAt: nowIso() }).where(eq(this.t.agents.id, agentId));
      await this.#audit(row, { tokenHash: row.tokenHash }, { tokenHash: cred.tokenHash });
    });
    this.deps.events.emit({ kind: "agent", projectId, agentId });
    return cred.token;
  }

  /** The agent's change in the current write's audit event (docs/operations.md#audit-log). */
  #audit(agent: AgentRow, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "agent", targetId: agent.id, projectId: agent.projectId, before, after });
  }
}
