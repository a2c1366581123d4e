// Tool grants of MCP servers (docs/mcp.md#tool-grants): which tools of a server an agent may call (`full`, or
// `custom` with `allow`, `ask` and argument globs by JSON pointer), checked as connection grants are, against the
// tools the server listed. Writes take effect at once: the gateway listens.
import { and, asc, eq } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { creationTime } from "../core/ids.ts";
import type { ConnectionAccess } from "../core/model.ts";
import type { McpServerGrant, McpServerGrants } from "../core/records/mcp.ts";
import type { McpGrantRow, McpServerRow } from "../store/rows.ts";
import type { AgentMode } from "../core/model.ts";
import type { AgentService } from "./agents.ts";
import type { ServiceDeps } from "./deps.ts";
import type { McpServerService } from "./mcpServers.ts";

export type { McpGrantRow };

export interface McpGrantInput {
  access: ConnectionAccess;
  allow?: string[];
  ask?: string[];
  arguments?: Record<string, Record<string, string>>;
}

type GrantShape = Pick<McpGrantRow, "access" | "allow" | "ask" | "arguments">;
export type McpGrantShape = GrantShape;

/** A server of the agent's project, whether it can be used, and the agent's grant of it (null: none). */
export interface AgentMcpServer {
  server: McpServerRow;
  usable: boolean;
  grant: McpGrantShape | null;
}

export class McpGrantService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly agents: AgentService,
    private readonly servers: McpServerService,
  ) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  /** An agent's MCP grants, in grant order, with the server's name. */
  async ofAgent(agentId: string): Promise<McpServerGrant[]> {
    const { agentMcpGrants, mcpServers } = this.t;
    const rows = await this.db
      .select({ grant: agentMcpGrants, name: mcpServers.name })
      .from(agentMcpGrants)
      .innerJoin(mcpServers, eq(agentMcpGrants.mcpServerId, mcpServers.id))
      .where(eq(agentMcpGrants.agentId, agentId))
      .orderBy(asc(agentMcpGrants.createdAt), asc(agentMcpGrants.mcpServerId));
    return rows.map(({ grant: g, name }) => ({ mcpServerId: g.mcpServerId, name, ...shown(g) }));
  }

  /**
   * The project's servers as one agent may use them (docs/mcp.md#tool-grants): its stored grant, else `full` in
   * mode `all` on a server that can be used (connected, or error with its last token), else none. The one answer
   * the gateway snapshot and the agent setup share.
   */
  async forAgent(agent: { id: string; projectId: string; mode: AgentMode }): Promise<AgentMcpServer[]> {
    const rows = await this.servers.list(agent.projectId);
    if (rows.length === 0) return [];
    const grants = new Map((await this.rowsOfAgent(agent.id)).map((g) => [g.mcpServerId, g]));
    return rows.map((server) => {
      const usable = server.status === "connected" || server.status === "error";
      const stored = grants.get(server.id) ?? null;
      const grant: McpGrantShape | null = stored
        ? { access: stored.access, allow: stored.allow, ask: stored.ask, arguments: stored.arguments }
        : agent.mode === "all" && usable
          ? { access: "full", allow: [], ask: [], arguments: {} }
          : null;
      return { server, usable, grant };
    });
  }

  /** The stored rows of an agent, for the gateway snapshot. */
  rowsOfAgent(agentId: string): Promise<McpGrantRow[]> {
    return this.db.select().from(this.t.agentMcpGrants).where(eq(this.t.agentMcpGrants.agentId, agentId));
  }

  /**
   * PUT of a grant: the body's own rules are checked by the route; here the agent, the server (the project's),
   * the tool names against the server's listed tools, and that argument rules name granted tools only.
   */
  async grant(projectId: string, agentId: string, serverId: string, input: McpGrantInput): Promise<void> {
    await this.agents.get(projectId, agentId, "flat");
    const server = await this.servers.get(projectId, serverId, "flat");
    const custom = input.access === "custom";
    const allow = custom ? [...new Set(input.allow ?? [])] : [];
    const ask = custom ? [...new Set(input.ask ?? [])] : [];
    const args = custom ? (input.arguments ?? {}) : {};
    if (custom) {
      if (server.tools.length === 0) throw ApiError.flat(400, `Per-tool permissions need a permission catalog; "${server.name}" has none.`);
      const known = new Set(server.tools.map((t) => t.name));
      const unknown = [...allow, ...ask].filter((id) => !known.has(id));
      if (unknown.length > 0) throw ApiError.flat(400, `Unknown tool id(s) for "${server.name}": ${unknown.join(", ")}`);
      const granted = new Set([...allow, ...ask]);
      const stray = Object.keys(args).filter((tool) => !granted.has(tool));
      if (stray.length > 0) throw ApiError.flat(400, `arguments names tools that are not granted: ${stray.join(", ")}`);
    }
    const { agentMcpGrants } = this.t;
    const where = and(eq(agentMcpGrants.agentId, agentId), eq(agentMcpGrants.mcpServerId, serverId));
    const now = creationTime();
    await this.deps.store.transaction(async () => {
      const [existing] = await this.db.select().from(agentMcpGrants).where(where).limit(1);
      const after = { access: input.access, allow, ask, arguments: args };
      await this.db
        .insert(agentMcpGrants)
        .values({ agentId, mcpServerId: serverId, ...after, createdAt: now, updatedAt: now })
        .onConflictDoUpdate({ target: [agentMcpGrants.agentId, agentMcpGrants.mcpServerId], set: { ...after, updatedAt: now } });
      await this.#audit(projectId, agentId, serverId, existing ?? null, after);
    });
    this.changed(agentId);
  }

  /** Detach (idempotent; the server is not checked). */
  async revoke(projectId: string, agentId: string, serverId: string): Promise<void> {
    await this.agents.get(projectId, agentId, "flat");
    const { agentMcpGrants } = this.t;
    await this.deps.store.transaction(async () => {
      const gone = await this.db
        .delete(agentMcpGrants)
        .where(and(eq(agentMcpGrants.agentId, agentId), eq(agentMcpGrants.mcpServerId, serverId)))
        .returning();
      if (gone[0]) await this.#audit(projectId, agentId, serverId, gone[0], null);
    });
    this.changed(agentId);
  }

  /** `GET /mcp-servers/{id}/grants`: the agents of the project holding the server. */
  async ofServer(projectId: string, serverId: string): Promise<McpServerGrants> {
    await this.servers.get(projectId, serverId);
    const { agentMcpGrants, agents } = this.t;
    const rows = await this.db
      .select({ grant: agentMcpGrants, agentName: agents.name })
      .from(agentMcpGrants)
      .innerJoin(agents, eq(agentMcpGrants.agentId, agents.id))
      .where(and(eq(agentMcpGrants.mcpServerId, serverId), eq(agents.projectId, projectId)))
      .orderBy(asc(agentMcpGrants.createdAt), asc(agentMcpGrants.agentId));
    return { mcpServerId: serverId, agents: rows.map(({ grant: g, agentName }) => ({ agentId: g.agentId, agentName, ...shown(g) })) };
  }

  #audit(projectId: string, agentId: string, serverId: string, before: GrantShape | null, after: GrantShape | null): Promise<void> {
    const shape = (g: GrantShape | null) => (g ? shown(g) : null);
    return this.deps.audit.record({
      targetType: "agent",
      targetId: agentId,
      projectId,
      before: { mcpServerGrants: { [serverId]: shape(before) } },
      after: { mcpServerGrants: { [serverId]: shape(after) } },
    });
  }

  private changed(agentId: string): void {
    this.deps.events.emit({ kind: "grant", agentId });
  }
}

/** A grant as the API shows it: `full` lists no tools. */
function shown(g: GrantShape): Pick<McpServerGrant, "access" | "allow" | "ask" | "arguments"> {
  const full = g.access === "full";
  return { access: g.access, allow: full ? [] : g.allow, ask: full ? [] : g.ask, arguments: full ? {} : g.arguments };
}
