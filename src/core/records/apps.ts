// Apps, their configuration and connections, permission catalogs and blocklists (docs/injection.md#app-connections, docs/policy.md#app-blocklists).
import { Type as T, type Static } from "@sinclair/typebox";
import { AnyObject, Enum, Nullable, StringMap, Timestamp } from "./common.ts";

export const ConnectionStatus = Enum("connected", "expired", "error", "revoked");
export const ConnectionScope = Enum("project", "organization");

export const Connection = T.Object(
  {
    id: T.String(),
    provider: T.String(),
    label: Nullable(T.String()),
    status: ConnectionStatus,
    scopes: T.Array(T.String()),
    scope: ConnectionScope,
    metadata: Nullable(AnyObject),
    connectedAt: Timestamp,
  },
  { $id: "Connection" },
);
export type Connection = Static<typeof Connection>;

export const OrganizationConnection = T.Object(
  { id: T.String(), provider: T.String(), label: Nullable(T.String()), status: ConnectionStatus, scopes: T.Array(T.String()), scope: ConnectionScope, connectedAt: Timestamp },
  { $id: "OrganizationConnection" },
);
export type OrganizationConnection = Static<typeof OrganizationConnection>;

export const ConnectionRenamed = T.Object(
  { id: T.String(), provider: T.String(), status: ConnectionStatus, label: Nullable(T.String()) },
  { $id: "ConnectionRenamed" },
);

export const AppConfig = T.Object(
  { settings: StringMap, hasCredentials: T.Boolean(), enabled: T.Boolean(), source: T.Optional(T.Literal("organization")) },
  { $id: "AppConfig" },
);
export type AppConfig = Static<typeof AppConfig>;

export const AppItem = T.Object(
  {
    id: T.String(),
    name: T.String(),
    description: T.String(),
    available: T.Boolean(),
    connectionType: Enum("oauth", "api_key"),
    /** The credential fields a person types in: API-key fields, or the BYOC OAuth client fields. */
    fields: T.Array(T.Object({ name: T.String(), label: T.String(), secret: T.Boolean() })),
    configurable: T.Boolean(),
    config: Nullable(AppConfig),
    connections: T.Array(T.Object({ id: T.String(), label: Nullable(T.String()), status: ConnectionStatus, scopes: T.Array(T.String()), connectedAt: Timestamp })),
  },
  { $id: "AppItem" },
);
export type AppItem = Static<typeof AppItem>;

export const PermissionDefinition = T.Object(
  {
    provider: T.String(),
    groups: T.Array(T.Object({ category: Enum("read", "write"), tools: T.Array(T.Object({ id: T.String(), name: T.String(), description: T.String() })) })),
  },
  { $id: "PermissionDefinition" },
);
export type PermissionDefinition = Static<typeof PermissionDefinition>;

export const Connected = T.Object({ success: T.Literal(true), connection: T.Object({ id: T.String(), label: Nullable(T.String()) }) }, { $id: "Connected" });

export const BlocklistEntry = T.Object(
  {
    hostId: T.String(),
    ruleId: Nullable(T.String()),
    enabled: T.Boolean(),
    custom: T.Boolean(),
    name: T.String(),
    hostPattern: T.String(),
    scope: Nullable(Enum("project", "organization")),
  },
  { $id: "BlocklistEntry" },
);
export type BlocklistEntry = Static<typeof BlocklistEntry>;
