// MCP servers (docs/mcp.md): remote MCP servers registered as apps, their tokens and the agents' tool grants.
// Part of the one table declaration (index.ts).
import { index, integer, json, table, text } from "./define.ts";

/**
 * A project's MCP servers (docs/mcp.md#registering). The credential (a static token or header, or the OAuth
 * tokens) is sealed JSON, and so is the OAuth client credgate logs in with (its secret); `version` is bumped by
 * every credential write so that refreshes compare-and-swap, as app connections do.
 */
export const mcpServers = table(
  "mcp_servers",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    projectId: text("project_id").notNull().references("projects.id", "cascade"),
    name: text("name").notNull(),
    url: text("url").notNull(),
    authKind: text("auth_kind").type("McpAuthKind").notNull(),
    status: text("status").type("McpServerStatus").notNull(),
    /** Sealed JSON of the credential (services/mcp/credential.ts McpCredential); null until an OAuth login ends. */
    credentialSealed: text("credential_sealed"),
    /** Sealed JSON of the OAuth client and the endpoints discovered for it (services/mcp/credential.ts McpOAuthClient). */
    oauthSealed: text("oauth_sealed"),
    version: integer("version").notNull(),
    refreshFailures: integer("refresh_failures").notNull().default(0),
    /** The tools its `tools/list` answered last: the server's permission catalog. */
    tools: json("tools").type("McpTool[]").notNull(),
    toolsRefreshedAt: text("tools_refreshed_at"),
    /** Why the last login, refresh or tool listing failed; null after a success. */
    lastError: text("last_error"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  { indexes: [index("mcp_servers_project", ["projectId"])] },
);

/** Tool grants (docs/mcp.md#tool-grants): which tools of which MCP server an agent may call, and with which arguments. */
export const agentMcpGrants = table(
  "agent_mcp_grants",
  {
    agentId: text("agent_id").notNull().references("agents.id", "cascade"),
    mcpServerId: text("mcp_server_id").notNull().references("mcpServers.id", "cascade"),
    access: text("access").type("ConnectionAccess").notNull(),
    allow: json("allow").type("string[]").notNull(),
    ask: json("ask").type("string[]").notNull(),
    /** Per tool, JSON pointer → glob its argument must match. */
    arguments: json("arguments").type("Record<string, Record<string, string>>").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  { primaryKey: ["agentId", "mcpServerId"], indexes: [index("agent_mcp_grants_server", ["mcpServerId"])] },
);
