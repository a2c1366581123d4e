// MCP servers registered as apps (docs/mcp.md#registering): a project's remote MCP servers, their sealed
// credential (a static token or header, or the OAuth tokens of the login credgate runs), their status and the
// tools their `tools/list` answered, which are the server's permission catalog in grants. Credential writes bump
// `version`, so refreshes compare-and-swap as app connections do.
import { and, asc, eq } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import type { McpServerStatus } from "../core/model.ts";
import type { McpServer, McpTool } from "../core/records/mcp.ts";
import { log } from "../observability/log.ts";
import type { McpServerRow } from "../store/rows.ts";
import type { ServiceDeps } from "./deps.ts";
import { authHeaderOf, type McpCredential, type McpOAuthClient } from "./mcp/credential.ts";
import type { McpFetch } from "./mcp/egressFetch.ts";
import { listTools, McpAuthRequired } from "./mcp/toolList.ts";

export type { McpServerRow };

export const MCP_SERVER_NOT_FOUND = "MCP server not found";

/** `auth` of a registration: a static token, a static header, a given OAuth client, or nothing (credgate registers one). */
export type McpAuthInput = { bearer: string } | { header: string; value: string } | { clientId: string; clientSecret?: string } | undefined;

export interface McpOwner {
  projectId: string;
  organizationId: string;
}

export class McpServerService {
  constructor(
    private readonly deps: ServiceDeps,
    /** credgate's own requests to MCP servers (services/mcp/egressFetch.ts). */
    readonly fetch: McpFetch,
  ) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t.mcpServers;
  }

  view(row: McpServerRow): McpServer {
    return {
      id: row.id,
      name: row.name,
      url: row.url,
      authKind: row.authKind,
      status: row.status,
      tools: row.tools,
      toolsRefreshedAt: row.toolsRefreshedAt,
      error: row.lastError,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    };
  }

  credential(row: Pick<McpServerRow, "credentialSealed">): McpCredential | null {
    return row.credentialSealed ? (JSON.parse(this.deps.sealer.open(row.credentialSealed)) as McpCredential) : null;
  }

  oauthClient(row: Pick<McpServerRow, "oauthSealed">): McpOAuthClient | null {
    return row.oauthSealed ? (JSON.parse(this.deps.sealer.open(row.oauthSealed)) as McpOAuthClient) : null;
  }

  /** What the audit log keeps of a server: never its credential or client secret. */
  #audited(row: McpServerRow): object {
    return { name: row.name, url: row.url, authKind: row.authKind, status: row.status };
  }

  /**
   * Registers a server. A static credential is tried at once: its tools are listed and the server is `connected`
   * (or `error`, with the reason); without one it waits, `pending`, for the login.
   */
  async create(owner: McpOwner, input: { name: string; url: string; auth?: McpAuthInput }): Promise<McpServerRow> {
    const now = nowIso();
    const auth = input.auth;
    let credential: McpCredential | null = null;
    let client: McpOAuthClient | null = null;
    if (auth && "bearer" in auth) credential = { kind: "bearer", token: auth.bearer };
    else if (auth && "header" in auth) credential = { kind: "header", name: auth.header.toLowerCase(), value: auth.value };
    else if (auth && "clientId" in auth)
      client = { clientId: auth.clientId, clientSecret: auth.clientSecret ?? null, authMethod: auth.clientSecret ? "client_secret_post" : "none", configured: true, endpoints: null };
    const row: McpServerRow = {
      id: newId(),
      organizationId: owner.organizationId,
      projectId: owner.projectId,
      name: input.name,
      url: input.url,
      authKind: credential ? credential.kind === "bearer" ? "bearer" : "header" : "oauth",
      status: "pending",
      credentialSealed: credential ? this.deps.sealer.seal(JSON.stringify(credential)) : null,
      oauthSealed: client ? this.deps.sealer.seal(JSON.stringify(client)) : null,
      version: 1,
      refreshFailures: 0,
      tools: [],
      toolsRefreshedAt: null,
      lastError: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.store.transaction(async () => {
      await this.db.insert(this.t).values(row);
      await this.deps.audit.record({ targetType: "mcp_server", targetId: row.id, projectId: owner.projectId, before: null, after: this.#audited(row) });
    });
    this.changed(owner.organizationId);
    return credential ? this.discoverTools(row, credential) : row;
  }

  list(projectId: string): Promise<McpServerRow[]> {
    return this.db.select().from(this.t).where(eq(this.t.projectId, projectId)).orderBy(asc(this.t.createdAt), asc(this.t.id));
  }

  async byId(id: string): Promise<McpServerRow | null> {
    const [row] = await this.db.select().from(this.t).where(eq(this.t.id, id)).limit(1);
    return row ?? null;
  }

  /** A server of the project, or 404 in the given shape. */
  async get(projectId: string, id: string, shape: "flat" | "envelope" = "envelope"): Promise<McpServerRow> {
    const [row] = await this.db.select().from(this.t).where(and(eq(this.t.id, id), eq(this.t.projectId, projectId))).limit(1);
    if (!row) throw shape === "flat" ? ApiError.flat(404, MCP_SERVER_NOT_FOUND) : ApiError.envelope(404, MCP_SERVER_NOT_FOUND);
    return row;
  }

  async rename(row: McpServerRow, name: string): Promise<McpServerRow> {
    const [updated] = await this.deps.store.transaction(async () => {
      const out = await this.db.update(this.t).set({ name, updatedAt: nowIso() }).where(eq(this.t.id, row.id)).returning();
      await this.deps.audit.record({ targetType: "mcp_server", targetId: row.id, projectId: row.projectId, before: this.#audited(row), after: this.#audited({ ...row, name }) });
      return out;
    });
    if (!updated) throw ApiError.envelope(404, MCP_SERVER_NOT_FOUND);
    this.changed(row.organizationId);
    return updated;
  }

  /** Deletes the server and, with it, every agent's grant of it. */
  async delete(row: McpServerRow): Promise<void> {
    await this.deps.store.transaction(async () => {
      await this.db.delete(this.t).where(eq(this.t.id, row.id));
      await this.deps.audit.record({ targetType: "mcp_server", targetId: row.id, projectId: row.projectId, before: this.#audited(row), after: null });
    });
    this.changed(row.organizationId);
  }

  /**
   * Lists the server's tools with `credential` and stores them. A success makes a server `connected`; a 401
   * makes an OAuth server `revoked` (its token no longer works) and a static one `error`; any other failure
   * keeps the tools known before and records why, in `error`, without changing a connected status.
   */
  async discoverTools(row: McpServerRow, credential: McpCredential | null): Promise<McpServerRow> {
    let set: Partial<McpServerRow>;
    try {
      const tools: McpTool[] = await listTools(this.fetch, row.url, authHeaderOf(credential));
      set = { tools, toolsRefreshedAt: nowIso(), lastError: null, status: credential ? "connected" : row.status };
    } catch (err) {
      const message = err instanceof McpAuthRequired ? `The server refused credgate's credential: ${err.message}` : `Listing the tools failed: ${(err as Error).message}`;
      log.warn("mcp tools not listed", { mcpServerId: row.id, error: (err as Error).message });
      const refused = err instanceof McpAuthRequired && credential !== null;
      const status: McpServerStatus = refused ? (credential.kind === "oauth" ? "revoked" : "error") : row.status === "pending" && credential ? "error" : row.status;
      set = { lastError: message, status };
    }
    const [updated] = await this.db.update(this.t).set({ ...set, updatedAt: nowIso() }).where(eq(this.t.id, row.id)).returning();
    this.changed(row.organizationId);
    return updated ?? row;
  }

  /** Stores the OAuth client (and the endpoints found for it). */
  async saveClient(id: string, client: McpOAuthClient): Promise<void> {
    await this.db.update(this.t).set({ oauthSealed: this.deps.sealer.seal(JSON.stringify(client)), updatedAt: nowIso() }).where(eq(this.t.id, id));
  }

  /** The login's tokens: the server becomes `connected` (a new version, so a refresh in flight will not overwrite them). */
  async connect(row: McpServerRow, credential: McpCredential): Promise<McpServerRow> {
    const [updated] = await this.db
      .update(this.t)
      .set({
        credentialSealed: this.deps.sealer.seal(JSON.stringify(credential)),
        version: row.version + 1,
        status: "connected",
        refreshFailures: 0,
        lastError: null,
        updatedAt: nowIso(),
      })
      .where(eq(this.t.id, row.id))
      .returning();
    if (!updated) throw ApiError.envelope(404, MCP_SERVER_NOT_FOUND);
    this.changed(row.organizationId);
    return updated;
  }

  /**
   * Writes refreshed tokens only if nobody else wrote since `version` was read (compare-and-swap), so that two
   * instances refreshing at once never clobber each other. Returns the stored row either way.
   */
  async swapCredential(id: string, version: number, credential: McpCredential): Promise<{ swapped: boolean; row: McpServerRow | null }> {
    const [row] = await this.db
      .update(this.t)
      .set({ credentialSealed: this.deps.sealer.seal(JSON.stringify(credential)), version: version + 1, status: "connected", refreshFailures: 0, lastError: null, updatedAt: nowIso() })
      .where(and(eq(this.t.id, id), eq(this.t.version, version)))
      .returning();
    if (row) this.changed(row.organizationId);
    return row ? { swapped: true, row } : { swapped: false, row: await this.byId(id) };
  }

  /**
   * A refresh or login outcome that is not a new token: the status, the failure count and why. With `version`,
   * only if no credential was written since it was read (a refresh's failure must not mark a token someone else
   * just stored); true when written.
   */
  async setStatus(id: string, status: McpServerStatus, refreshFailures: number, lastError: string | null, version?: number): Promise<boolean> {
    const where = version === undefined ? eq(this.t.id, id) : and(eq(this.t.id, id), eq(this.t.version, version));
    const [row] = await this.db.update(this.t).set({ status, refreshFailures, lastError, updatedAt: nowIso() }).where(where).returning();
    if (row) this.changed(row.organizationId);
    return row !== undefined;
  }

  private changed(organizationId: string): void {
    // The gateway's snapshot holds the servers beside the app connections: the same event drops both.
    this.deps.events.emit({ kind: "app", organizationId });
  }
}
