// MCP servers registered as apps, and the agents' grants of their tools (docs/mcp.md).
import { Type as T, type Static } from "@sinclair/typebox";
import { Enum, Nullable, Timestamp, Uuid } from "./common.ts";

export const McpTool = T.Object(
  {
    name: T.String({ description: "the tool's name: its id in grants" }),
    description: Nullable(T.String()),
    readOnlyHint: Nullable(T.Boolean({ description: "the server's own annotation; a hint, not a guarantee" })),
  },
  { $id: "McpTool" },
);
export type McpTool = Static<typeof McpTool>;

/** The same two accesses as connection grants. */
const ConnectionAccess = Enum("full", "custom");

export const McpAuthKind = Enum("bearer", "header", "oauth");
export const McpServerStatus = Enum("pending", "connected", "error", "revoked");

export const McpServer = T.Object(
  {
    id: Uuid,
    name: T.String(),
    url: T.String(),
    authKind: McpAuthKind,
    status: McpServerStatus,
    tools: T.Array(McpTool),
    toolsRefreshedAt: Nullable(Timestamp),
    error: Nullable(T.String({ description: "why the last login, token refresh or tool listing failed; null after a success" })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: "McpServer" },
);
export type McpServer = Static<typeof McpServer>;

/** Per tool, JSON pointer → glob the argument at that pointer must match. */
export const McpArgumentRules = T.Record(T.String(), T.Record(T.String(), T.String()));

export const McpServerGrant = T.Object(
  {
    mcpServerId: Uuid,
    name: T.String(),
    access: ConnectionAccess,
    allow: T.Array(T.String()),
    ask: T.Array(T.String()),
    arguments: McpArgumentRules,
  },
  { $id: "McpServerGrant" },
);
export type McpServerGrant = Static<typeof McpServerGrant>;

export const McpServerGrants = T.Object(
  {
    mcpServerId: Uuid,
    agents: T.Array(T.Object({ agentId: Uuid, agentName: T.String(), access: ConnectionAccess, allow: T.Array(T.String()), ask: T.Array(T.String()), arguments: McpArgumentRules })),
  },
  { $id: "McpServerGrants" },
);
export type McpServerGrants = Static<typeof McpServerGrants>;
