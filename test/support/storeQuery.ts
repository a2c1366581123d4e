// Reads the store of a credgate process (running or stopped) directly, whatever the engine under test:
// the SQLite file of its data dir (read-only), or its PostgreSQL database.
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { SQL as BunSQL } from "bun";
import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { DB_FILE } from "../../src/store/sqlite.ts";

/** `write`: the statement changes the store (a fixture); otherwise the SQLite file is opened read-only. */
export async function queryStore<R = Record<string, unknown>>(c: { dataDir: string; env: Record<string, string> }, statement: SQL, write = false): Promise<R[]> {
  const url = c.env.CREDGATE_DATABASE_URL;
  if (url) {
    const q = new PgDialect().sqlToQuery(statement);
    const client = new BunSQL(url);
    try {
      return (await client.unsafe(q.sql, q.params as never[])) as R[];
    } finally {
      await client.close();
    }
  }
  const q = new SQLiteAsyncDialect().sqlToQuery(statement);
  const db = new Database(join(c.dataDir, DB_FILE), write ? { readwrite: true } : { readonly: true });
  db.run("PRAGMA busy_timeout = 5000");
  try {
    return db.query(q.sql).all(...(q.params as never[])) as R[];
  } finally {
    db.close();
  }
}
