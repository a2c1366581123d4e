// Agents and their grants (docs/injection.md#grants).
// Part of the one table declaration (index.ts).
import { boolean, index, json, table, text, uniqueIndex } from "./define.ts";

export const agents = table(
  "agents",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull().references("projects.id", "cascade"),
    name: text("name").notNull(),
    identifier: text("identifier").notNull(),
    mode: text("mode").type("AgentMode").notNull(),
    isDefault: boolean("is_default").notNull().default(false),
    tokenHash: text("token_hash").notNull().unique(),
    tokenSealed: text("token_sealed").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    lastSeenAt: text("last_seen_at"),
  },
  { indexes: [uniqueIndex("agents_project_identifier", ["projectId", "identifier"])] },
);

/** Secret grants (docs/injection.md#grants): which secrets an agent in mode `grants` may inject. */
export const agentSecretGrants = table(
  "agent_secret_grants",
  {
    agentId: text("agent_id").notNull().references("agents.id", "cascade"),
    secretId: text("secret_id").notNull().references("secrets.id", "cascade"),
    createdAt: text("created_at").notNull(),
  },
  { primaryKey: ["agentId", "secretId"], indexes: [index("agent_secret_grants_secret", ["secretId"])] },
);

/** Connection grants (docs/injection.md#grants): which app connections an agent in mode `grants` may use, and how. */
export const agentConnectionGrants = table(
  "agent_connection_grants",
  {
    agentId: text("agent_id").notNull().references("agents.id", "cascade"),
    connectionId: text("connection_id").notNull().references("appConnections.id", "cascade"),
    access: text("access").type("ConnectionAccess").notNull(),
    allow: json("allow").type("string[]").notNull(),
    ask: json("ask").type("string[]").notNull(),
    resources: json("resources").type("Record<string, string[]>"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  { primaryKey: ["agentId", "connectionId"], indexes: [index("agent_connection_grants_connection", ["connectionId"])] },
);
