// The gateway snapshot's per-protocol views of one agent (snapshot.ts builds them with the rest): the database
// secrets the PostgreSQL broker may use, the SSH keys of the SSH interception, and the MCP servers with this
// agent's grants. HTTP credentials, app connections and policy stay in snapshot.ts.
import { compileHostPattern, type HostMatcher } from "../core/patterns.ts";
import { DEFAULT_DATABASE_PORT } from "../core/databaseRules.ts";
import { parseStoreRef } from "../core/storeRefs.ts";
import type { McpServerStatus } from "../core/model.ts";
import type { Services } from "../services/index.ts";
import { usableDatabaseSecrets, type AgentAccess } from "../services/access.ts";
import { mcpServerScope } from "../core/mcpServerUrl.ts";
import { authHeaderOf } from "../services/mcp/credential.ts";
import { usableValueRef } from "./storeRefTenancy.ts";

/**
 * A database secret this agent may use through the PostgreSQL broker (docs/databases.md#the-database-secret),
 * keyed in `AgentCredentials.databases` by its name: the startup `user` an agent connects with.
 */
export interface DatabaseCredential {
  secretId: string;
  name: string;
  scope: "project" | "organization";
  /** The secret's hostPattern: an exact host name or address (IPv6 without brackets). */
  host: string;
  port: number;
  /** The real database user ("" for a Vault lease: the lease names it). */
  user: string;
  /** Inline value; null when it lives in an external vault or a secret store (then `valueRef`). */
  password: string | null;
  /** The `op://` or store reference of the password (never a `vault-db://` one: see `lease`). */
  valueRef: string | null;
  /** A `vault-db://<mount>/<role>` reference: user and password come from a lease (docs/vault.md#database-leases); `valueRef` is null then. */
  lease: { ref: string; mount: string; role: string } | null;
  /** Allowed database names; null = any. */
  databases: string[] | null;
  tls: "verify-full" | "require" | "off";
  readOnly: boolean;
  writes: "allow" | "approve" | "block";
}

/**
 * An SSH key this agent may use through the gateway's SSH interception (docs/ssh.md#the-ssh-secret): the
 * first of `AgentCredentials.ssh` whose host pattern names a CONNECT host on port 22 is the one used.
 */
export interface SshCredential {
  secretId: string;
  name: string;
  hostMatch: HostMatcher;
  /** The private key (inline only: a key kept in a vault or a store is resolved by the interception, `valueRef`). */
  key: string | null;
  valueRef: string | null;
  user: string;
  knownHosts: string;
  commands: "git" | "any";
  push: "allow" | "approve" | "block";
}

/** An MCP server as the gateway sees it for one agent (docs/mcp.md#at-the-gateway). */
export interface CompiledMcpServer {
  id: string;
  name: string;
  /** The server's URL: origin and path prefix a request must be under (core/mcpServerUrl.ts). */
  origin: string;
  /** No trailing slash; "" for the whole origin. */
  pathPrefix: string;
  /** The origin's host (lowercase, no port, brackets or trailing dot): a body to it anywhere is judged (mcp.ts). */
  host: string;
  /**
   * How credgate authenticates to it: the header to set (replacing the agent's), or null while there is no usable
   * credential (pending, revoked). An OAuth token due for refresh (`expiresAt`) is replaced through
   * `services.mcpAuth.fresh(id)`, which refreshes once for every process; the snapshot entry is rebuilt after.
   */
  auth: { header: string; value: string } | null;
  /** Epoch ms at which an OAuth access token expires; null for static credentials or a token without expiry. */
  expiresAt: number | null;
  status: McpServerStatus;
  /**
   * This agent's grant: its stored grant, else `full` in mode `all` on a server that can be used (connected, or
   * error with its last token); null = no grant (every tools/call refused).
   */
  grant: McpGrant | null;
}

export type McpGrant =
  | { access: "full" }
  | { access: "custom"; allow: Set<string>; ask: Set<string>; arguments: Record<string, Record<string, string>> };

/** The `vault-db://` reference of a secret, parsed; null for any other value. */
function leaseOf(storeRef: string | null): DatabaseCredential["lease"] {
  if (storeRef === null) return null;
  const ref = parseStoreRef(storeRef);
  return typeof ref !== "string" && ref.kind === "vault-db" ? { ref: storeRef, mount: ref.mount, role: ref.role } : null;
}

/** The database credentials the agent may use (services/access.ts decides which), by name. */
export function databaseCredentials(services: Services, access: AgentAccess): Map<string, DatabaseCredential> {
  const out = new Map<string, DatabaseCredential>();
  for (const [name, row] of usableDatabaseSecrets(access.secrets)) {
    const db = row.injectionConfig!.database!;
    // A reference outside the organization's prefix (cloud mode) is no reference: the broker refuses the connection.
    const ref = usableValueRef(row, services.deps.config.mode);
    const lease = leaseOf(ref === row.storeRef ? ref : null);
    out.set(name, {
      secretId: row.id,
      name,
      scope: row.scope as "project" | "organization",
      // An IPv6 address may be stored as `[::1]`: the dial wants it bare.
      host: row.hostPattern.replace(/^\[|\]$/g, ""),
      port: db.port ?? DEFAULT_DATABASE_PORT,
      user: lease === null ? (db.user ?? "") : "",
      password: services.secrets.openValue(row),
      valueRef: lease === null ? ref : null,
      lease,
      databases: db.databases ?? null,
      tls: db.tls ?? "verify-full",
      readOnly: db.readOnly ?? false,
      writes: db.writes ?? "allow",
    });
  }
  return out;
}

/** The SSH keys the agent may use (mode and grants, as every secret), a project's before its organization's. */
export function sshCredentials(services: Services, access: AgentAccess): SshCredential[] {
  const out: SshCredential[] = [];
  for (const scope of ["project", "organization"] as const) {
    for (const { secret: row, injectable } of access.secrets) {
      const ssh = row.injectionConfig?.ssh;
      if (!injectable || row.scope !== scope || ssh === undefined) continue;
      out.push({
        secretId: row.id,
        name: row.name,
        hostMatch: compileHostPattern(row.hostPattern),
        key: services.secrets.openValue(row),
        valueRef: usableValueRef(row, services.deps.config.mode),
        user: ssh.user ?? "git",
        knownHosts: ssh.knownHosts,
        commands: ssh.commands ?? "git",
        push: ssh.push ?? "allow",
      });
    }
  }
  return out;
}

/** The project's MCP servers with this agent's grant of each (docs/mcp.md#at-the-gateway). */
export async function mcpServersFor(services: Services, agent: Parameters<Services["mcpGrants"]["forAgent"]>[0]): Promise<CompiledMcpServer[]> {
  // Which servers with which grant: services/mcpGrants.ts, the answer the agent setup gives too.
  return (await services.mcpGrants.forAgent(agent)).map(({ server, usable, grant: g }) => {
    const credential = usable ? services.mcpServers.credential(server) : null;
    const grant: McpGrant | null = !g
      ? null
      : g.access === "full"
        ? { access: "full" }
        : { access: "custom", allow: new Set(g.allow), ask: new Set(g.ask), arguments: g.arguments };
    return {
      id: server.id,
      name: server.name,
      ...mcpServerScope(server.url),
      auth: authHeaderOf(credential),
      expiresAt: credential?.kind === "oauth" ? credential.expiresAt : null,
      status: server.status,
      grant,
    };
  });
}
