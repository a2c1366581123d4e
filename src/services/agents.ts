// Agents of a project: CRUD, the default agent, and access tokens (agt_…, hash + sealed copy).
import { and, desc, eq } from "drizzle-orm";
import { ApiError, badRequest, conflict, notFound } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import { agents, projects, type AgentMode } from "../store/schema.ts";
import { issueCredential } from "./credentials.ts";
import type { ServiceDeps } from "./deps.ts";

export type AgentRow = typeof agents.$inferSelect;

export interface AgentView {
  id: string;
  name: string;
  identifier: string;
  mode: AgentMode;
  isDefault: boolean;
  accessToken?: string;
  createdAt: string;
  updatedAt: string;
  lastSeenAt: string | null;
}

export const AGENT_NOT_FOUND = "Agent not found";

export class AgentService {
  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.db;
  }

  view(row: AgentRow, withToken: boolean): AgentView {
    const v: AgentView = {
      id: row.id,
      name: row.name,
      identifier: row.identifier,
      mode: row.mode,
      isDefault: row.isDefault,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      lastSeenAt: row.lastSeenAt,
    };
    if (withToken) v.accessToken = this.deps.sealer.open(row.tokenSealed);
    return v;
  }

  list(projectId: string): AgentView[] {
    return this.db
      .select()
      .from(agents)
      .where(eq(agents.projectId, projectId))
      .orderBy(desc(agents.isDefault), desc(agents.createdAt), desc(agents.id))
      .all()
      .map((r) => this.view(r, true));
  }

  private insert(projectId: string, input: { name: string; identifier: string; mode: AgentMode; isDefault: boolean }): AgentRow {
    const cred = issueCredential(this.deps.sealer, "agent");
    const now = nowIso();
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
    this.db.insert(agents).values(row).run();
    this.deps.events.emit({ kind: "agent", projectId, agentId: row.id });
    return row;
  }

  create(projectId: string, input: { name: string; identifier: string; mode: AgentMode }): AgentRow {
    if (this.db.select({ id: agents.id }).from(agents).where(and(eq(agents.projectId, projectId), eq(agents.identifier, input.identifier))).get()) {
      throw conflict("An agent with this identifier already exists");
    }
    return this.insert(projectId, { ...input, isDefault: false });
  }

  /** The Default Agent of a new project: `{name:"Default Agent", identifier:"default", mode:"all"}`. */
  createDefault(projectId: string): AgentRow {
    const taken = this.db.select({ id: agents.id }).from(agents).where(and(eq(agents.projectId, projectId), eq(agents.identifier, "default"))).get();
    const identifier = taken ? `default-${newId().slice(0, 8)}` : "default";
    return this.insert(projectId, { name: "Default Agent", identifier, mode: "all", isDefault: true });
  }

  /** Every agent with its organization: the gateway's token index is built from this. */
  allWithOrganization(): (AgentRow & { organizationId: string })[] {
    return this.db
      .select({ agent: agents, organizationId: projects.organizationId })
      .from(agents)
      .innerJoin(projects, eq(projects.id, agents.projectId))
      .all()
      .map((r) => ({ ...r.agent, organizationId: r.organizationId }));
  }

  /** Records gateway activity times in one statement per batch (not per request). */
  touch(lastSeen: Map<string, string>): void {
    if (lastSeen.size === 0) return;
    this.db.transaction((tx) => {
      for (const [id, at] of lastSeen) tx.update(agents).set({ lastSeenAt: at }).where(eq(agents.id, id)).run();
    });
  }

  find(projectId: string, agentId: string): AgentRow | undefined {
    return this.db.select().from(agents).where(and(eq(agents.projectId, projectId), eq(agents.id, agentId))).get();
  }

  get(projectId: string, agentId: string, shape: "flat" | "envelope" = "envelope"): AgentRow {
    const row = this.find(projectId, agentId);
    if (!row) throw shape === "flat" ? ApiError.flat(404, AGENT_NOT_FOUND) : notFound(AGENT_NOT_FOUND);
    return row;
  }

  findByIdentifier(projectId: string, identifier: string): AgentRow | undefined {
    return this.db.select().from(agents).where(and(eq(agents.projectId, projectId), eq(agents.identifier, identifier))).get();
  }

  findDefault(projectId: string): AgentRow | undefined {
    return this.db.select().from(agents).where(and(eq(agents.projectId, projectId), eq(agents.isDefault, true))).get();
  }

  update(projectId: string, agentId: string, patch: { name?: string; mode?: AgentMode }): AgentRow {
    this.get(projectId, agentId);
    this.db
      .update(agents)
      .set({ ...patch, updatedAt: nowIso() })
      .where(eq(agents.id, agentId))
      .run();
    this.deps.events.emit({ kind: "agent", projectId, agentId });
    return this.get(projectId, agentId);
  }

  delete(projectId: string, agentId: string): void {
    const row = this.get(projectId, agentId);
    if (row.isDefault) throw badRequest("Cannot delete the default agent");
    this.db.delete(agents).where(eq(agents.id, agentId)).run();
    this.deps.events.emit({ kind: "agent", projectId, agentId });
  }

  setDefault(projectId: string, agentId: string): void {
    const row = this.get(projectId, agentId);
    if (row.isDefault) throw badRequest("Agent is already the default");
    this.db.transaction((tx) => {
      tx.update(agents).set({ isDefault: false }).where(eq(agents.projectId, projectId)).run();
      tx.update(agents).set({ isDefault: true, updatedAt: nowIso() }).where(eq(agents.id, agentId)).run();
    });
    this.deps.events.emit({ kind: "agent", projectId, agentId });
  }

  /** A new access token; the previous one is invalid from the next gateway request on. */
  regenerateToken(projectId: string, agentId: string): string {
    this.get(projectId, agentId);
    const cred = issueCredential(this.deps.sealer, "agent");
    this.db.update(agents).set({ tokenHash: cred.tokenHash, tokenSealed: cred.tokenSealed, updatedAt: nowIso() }).where(eq(agents.id, agentId)).run();
    this.deps.events.emit({ kind: "agent", projectId, agentId });
    return cred.token;
  }
}
