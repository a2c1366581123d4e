// Process-wide state: settings and running instances.
// Part of the one table declaration (index.ts).
import { table, text } from "./define.ts";

/** Small process-wide facts, e.g. which organization/project/user the bootstrap created. */
export const settings = table("settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

/** Running credgate processes: each beats every few seconds; a held approval of a process that stopped beating is cancelled. */
export const instances = table("instances", {
  id: text("id").primaryKey(),
  startedAt: text("started_at").notNull(),
  heartbeatAt: text("heartbeat_at").notNull(),
});
