// The result of a migration import (docs/api.md#migration).
import { Type as T, type Static } from "@sinclair/typebox";

export const SkippedItem = T.Object({ type: T.String(), name: T.String(), reason: T.String() }, { $id: "SkippedItem" });
export type SkippedItem = Static<typeof SkippedItem>;

export const MigrationResult = T.Object(
  {
    imported: T.Object({ secrets: T.Integer(), agents: T.Integer(), agentSecrets: T.Integer(), rules: T.Integer() }),
    skipped: T.Array(SkippedItem),
  },
  { $id: "MigrationResult" },
);
export type MigrationResult = Static<typeof MigrationResult>;
