// What the gateway injects: secrets, app connections and configurations, minted tokens.
// Part of the one table declaration (index.ts).
import { bigint, boolean, index, integer, json, table, text, uniqueIndex } from "./define.ts";

export const secrets = table(
  "secrets",
  {
    id: text("id").primaryKey(),
    scope: text("scope").type("SecretScope").notNull(),
    organizationId: text("organization_id").references("organizations.id", "cascade"),
    projectId: text("project_id").references("projects.id", "cascade"),
    partnerId: text("partner_id").references("partners.id", "cascade"),
    name: text("name").notNull(),
    type: text("type").type("SecretType").notNull(),
    valueSource: text("value_source").type("ValueSource").notNull(),
    valueSealed: text("value_sealed"),
    opRef: text("op_ref"),
    /** A secret store reference (docs/injection.md#secret-stores) when valueSource is `vault`. */
    storeRef: text("store_ref"),
    hostPattern: text("host_pattern").notNull(),
    pathPattern: text("path_pattern"),
    injectionConfig: json("injection_config").type("InjectionConfig"),
    metadata: json("metadata").type("SecretMetadata"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  {
    indexes: [
      index("secrets_project", ["projectId"]),
      index("secrets_org", ["organizationId"]),
      index("secrets_partner", ["partnerId"]),
    ],
  },
);

/** App connections (docs/injection.md#app-connections): a project's or organization's OAuth tokens or API-key fields, sealed. */
export const appConnections = table(
  "app_connections",
  {
    id: text("id").primaryKey(),
    scope: text("scope").type("PolicyScope").notNull(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    /** Null for organization connections. */
    projectId: text("project_id").references("projects.id", "cascade"),
    provider: text("provider").notNull(),
    label: text("label"),
    status: text("status").type("ConnectionStatus").notNull(),
    scopes: json("scopes").type("string[]").notNull(),
    metadata: json("metadata").type("Record<string, unknown>"),
    /** Sealed JSON of the credential (see services/connections.ts ConnectionCredential). */
    credentialSealed: text("credential_sealed").notNull(),
    /** Bumped on every credential write: refreshes write with compare-and-swap on it. */
    version: integer("version").notNull(),
    refreshFailures: integer("refresh_failures").notNull().default(0),
    connectedAt: text("connected_at").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  { indexes: [index("app_connections_owner", ["organizationId", "projectId", "provider"])] },
);

/** Bring-your-own-credentials app configuration (docs/api.md#records) of a project or organization. */
export const appConfigs = table(
  "app_configs",
  {
    id: text("id").primaryKey(),
    scope: text("scope").type("PolicyScope").notNull(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    projectId: text("project_id").references("projects.id", "cascade"),
    provider: text("provider").notNull(),
    /** Non-secret fields, shown back as `settings`. */
    settings: json("settings").type("Record<string, string>").notNull(),
    /** Sealed JSON of the secret fields. */
    secretsSealed: text("secrets_sealed"),
    enabled: boolean("enabled").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  {
    indexes: [
      uniqueIndex("app_configs_project", ["projectId", "provider"], "scope = 'project'"),
      uniqueIndex("app_configs_org", ["organizationId", "provider"], "scope = 'organization'"),
    ],
  },
);

/**
 * Minted credentials (docs/injection.md#github-app): one row per token source (`github-app:<appId>:<installationId>`),
 * shared by every process and instance on the database. The token is sealed. A process that mints holds the lease
 * (`leaseUntil`, epoch ms, taken by a conditional write) so that one mint happens at a time for all instances.
 * OAuth refreshes (`oauth-refresh:<connectionId>`, `mcp-refresh:<serverId>`) use rows that hold only a lease,
 * deleted when it is let go (docs/operations.md#gateway-workers-and-caches).
 */
export const mintedTokens = table("minted_tokens", {
  key: text("key").primaryKey(),
  tokenSealed: text("token_sealed"),
  /** Epoch ms at which the token stops being valid, as the issuer said. */
  expiresAt: bigint("expires_at"),
  leaseOwner: text("lease_owner"),
  leaseUntil: bigint("lease_until"),
  updatedAt: text("updated_at").notNull(),
});
