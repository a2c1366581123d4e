// Agents (docs/api.md#agents-and-tokens).
import { Type as T, type Static } from "@sinclair/typebox";
import { Enum, Nullable, Timestamp, Uuid } from "./common.ts";

export const AgentMode = Enum("all", "grants");

export const Agent = T.Object(
  {
    id: Uuid,
    name: T.String(),
    identifier: T.String(),
    mode: AgentMode,
    isDefault: T.Boolean(),
    accessToken: T.Optional(T.String({ description: "agt_…; only in the list, /agents/default and token regeneration" })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    lastSeenAt: Nullable(Timestamp),
  },
  { $id: "Agent" },
);
export type Agent = Static<typeof Agent>;

export const AgentCreated = T.Object(
  { id: Uuid, name: T.String(), identifier: T.String(), mode: AgentMode, isDefault: T.Boolean(), createdAt: Timestamp },
  { $id: "AgentCreated" },
);
export type AgentCreated = Static<typeof AgentCreated>;

export const AccessToken = T.Object({ accessToken: T.String() }, { $id: "AccessToken" });
