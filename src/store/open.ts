// Opens the embedded SQLite store (WAL, foreign keys on) and applies the migrations embedded in the binary.
import { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { MigrationMeta } from "drizzle-orm/migrator";
import { sqliteMigrations } from "../../migrations/sqlite/index.ts";
import * as schema from "./schema.ts";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

export const DB_FILE = "credgate.db";

export function openStore(dataDir: string): Db {
  const sqlite = new Database(join(dataDir, DB_FILE), { create: true, strict: true });
  sqlite.run("PRAGMA journal_mode = WAL");
  sqlite.run("PRAGMA synchronous = NORMAL");
  sqlite.run("PRAGMA foreign_keys = ON");
  sqlite.run("PRAGMA busy_timeout = 5000");
  const db = drizzle({ client: sqlite, schema });
  applyMigrations(db);
  return db;
}

/** Applies the embedded migrations not yet applied (all of them, or the first ones given, for upgrade tests). */
export function applyMigrations(db: Db, migrations = sqliteMigrations): void {
  const metas: MigrationMeta[] = migrations.map((m) => ({
    sql: m.sql.split("--> statement-breakpoint"),
    bps: m.breakpoints,
    folderMillis: m.when,
    hash: createHash("sha256").update(m.sql).digest("hex"),
  }));
  // drizzle's own migrator, fed from embedded text instead of a folder on disk.
  (db as unknown as { dialect: { migrate(m: MigrationMeta[], s: unknown): void }; session: unknown }).dialect.migrate(
    metas,
    (db as unknown as { session: unknown }).session,
  );
}
