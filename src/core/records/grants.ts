// Grants and what they let an agent use, its effective credentials (docs/injection.md#grants).
import { Type as T, type Static } from "@sinclair/typebox";
import { AgentMode } from "./agents.ts";
import { ConnectionScope } from "./apps.ts";
import { Enum, Nullable, Uuid } from "./common.ts";
import { SecretScope, SecretType } from "./secrets.ts";
import { McpServerGrant } from "./mcp.ts";

export const ConnectionAccess = Enum("full", "custom");
const Resources = Nullable(T.Record(T.String(), T.Array(T.String()), { description: "granular resource scope, e.g. {repositories:[…]}; null = unrestricted" }));

export const ConnectionGrant = T.Object(
  {
    connectionId: T.String(),
    provider: T.String(),
    label: Nullable(T.String()),
    scope: ConnectionScope,
    access: ConnectionAccess,
    allow: T.Array(T.String()),
    ask: T.Array(T.String()),
    resources: Resources,
  },
  { $id: "ConnectionGrant" },
);
export type ConnectionGrant = Static<typeof ConnectionGrant>;

export const SecretGrant = T.Object({ secretId: Uuid, name: T.String(), type: SecretType, scope: SecretScope }, { $id: "SecretGrant" });
export type SecretGrant = Static<typeof SecretGrant>;

export const GrantSet = T.Object(
  {
    agentId: Uuid,
    mode: AgentMode,
    connections: T.Array(ConnectionGrant),
    secrets: T.Array(SecretGrant),
    mcpServers: T.Array(McpServerGrant, { description: "the agent's MCP server grants (docs/mcp.md#tool-grants)" }),
  },
  { $id: "GrantSet" },
);
export type GrantSet = Static<typeof GrantSet>;

export const ConnectionGrants = T.Object(
  {
    connectionId: T.String(),
    agents: T.Array(T.Object({ agentId: Uuid, agentName: T.String(), access: ConnectionAccess, allow: T.Array(T.String()), ask: T.Array(T.String()) })),
  },
  { $id: "ConnectionGrants" },
);
export type ConnectionGrants = Static<typeof ConnectionGrants>;

export const AgentConnectionAssignments = T.Array(T.Object({ appConnectionId: T.String(), sessionPolicy: Resources }), { $id: "AgentConnectionAssignments" });

/** How usable a credential is for an agent: not granted, blocked by every rule, limited by some, or usable. */
export const CredentialStatus = Enum("not_granted", "blocked", "limited", "usable");
export type CredentialStatus = Static<typeof CredentialStatus>;

export const EffectiveCredentials = T.Object(
  {
    agentId: Uuid,
    mode: AgentMode,
    secrets: T.Array(T.Object({ id: Uuid, name: T.String(), type: SecretType, scope: SecretScope, hostPattern: T.String(), status: CredentialStatus })),
    connections: T.Array(
      T.Object({ id: T.String(), provider: T.String(), label: Nullable(T.String()), scope: ConnectionScope, status: CredentialStatus, access: Nullable(ConnectionAccess) }),
    ),
  },
  { $id: "EffectiveCredentials" },
);
export type EffectiveCredentials = Static<typeof EffectiveCredentials>;
