// Opens the store the configuration names: PostgreSQL when CREDGATE_DATABASE_URL is set, else the embedded
// SQLite file in the data dir. Either way the embedded migrations are applied before anything else runs.
import { join } from "node:path";
import { DB_FILE, SqliteStore } from "./sqlite.ts";
import type { Store } from "./store.ts";

export { DB_FILE };
export type { Db, Store, Tables } from "./store.ts";

/**
 * `existing`: the SQLite file must exist already and is neither created nor migrated (commands that only read).
 * The PostgreSQL store (its client, schema and drizzle dialect) is loaded only when it is used: on SQLite it
 * would only add to the heap, and JSC sizes the young generation from the heap (the gateway's peak RSS).
 */
export async function openStore(where: { dataDir: string; databaseUrl: string | null }, existing = false): Promise<Store> {
  if (where.databaseUrl) return (await import("./postgres.ts")).PostgresStore.open(where.databaseUrl);
  const file = join(where.dataDir, DB_FILE);
  return existing ? SqliteStore.openExisting(file) : SqliteStore.open(file);
}
