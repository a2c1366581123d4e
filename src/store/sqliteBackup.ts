// Backups of the embedded store (docs/operations.md#backups). A backup is a consistent copy of the SQLite file
// made while the server runs: `VACUUM INTO` reads one snapshot (WAL readers never wait for the writer) and writes
// a new, compact database. A restore checks that a file is a credgate database this build can serve (its
// migrations journal is not ahead of the embedded migrations), that no process holds the data dir's database
// (switching it out of WAL mode needs every other connection closed), and then puts the file in its place.
import { Database } from "bun:sqlite";
import { closeSync, existsSync, fsyncSync, openSync, readSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { sqliteMigrations } from "../../migrations/sqlite/index.ts";
import type { EmbeddedMigration } from "../../migrations/types.ts";
import { DB_FILE } from "./sqlite.ts";

export class BackupError extends Error {}

const SQLITE_MAGIC = "SQLite format 3\u0000";
/** Tables every credgate database has had since its first migration. */
const CREDGATE_TABLES = ["__drizzle_migrations", "organizations", "projects", "api_keys", "settings"];

/** The previous database, kept by a restore until the next one. */
export const BEFORE_RESTORE = `${DB_FILE}.before-restore`;

function fsyncPath(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a consistent copy of `dbFile` to `to` (mode 0600), replacing `to` only once the copy is complete and on
 * disk: the copy is made beside it and renamed. Returns the copy's size in bytes.
 */
export function backupDatabase(dbFile: string, to: string): number {
  if (!existsSync(dbFile)) throw new BackupError(`no credgate database at ${dbFile}: pass the --data-dir the server uses`);
  const partial = join(dirname(to), `.${basename(to)}.partial-${process.pid}`);
  // VACUUM INTO accepts an empty file: made first, so the copy is created 0600 (it holds sealed secrets).
  try {
    writeFileSync(partial, "", { mode: 0o600, flag: "wx" });
  } catch (err) {
    throw new BackupError(`cannot write ${to}: ${(err as Error).message}`);
  }
  const db = new Database(dbFile, { create: false, readwrite: true });
  try {
    db.run("PRAGMA busy_timeout = 5000");
    db.run("VACUUM INTO ?", [partial]);
    // SQLite does not sync the file VACUUM INTO writes.
    fsyncPath(partial);
    renameSync(partial, to);
    fsyncPath(dirname(to));
  } catch (err) {
    rmSync(partial, { force: true });
    throw err instanceof BackupError ? err : new BackupError(`backup of ${dbFile} failed: ${(err as Error).message}`);
  } finally {
    db.close();
  }
  return statSync(to).size;
}

function hasSqliteHeader(file: string): boolean {
  const fd = openSync(file, "r");
  try {
    const head = Buffer.alloc(SQLITE_MAGIC.length);
    return readSync(fd, head, 0, head.length, 0) === head.length && head.toString("latin1") === SQLITE_MAGIC;
  } finally {
    closeSync(fd);
  }
}

export interface BackupFacts {
  /** `created_at` of the newest migration the file records. */
  newestMigration: number;
  /** The sealed master-key check value, or null when the file holds none (a database from before it). */
  masterKeyCheck: string | null;
  /** One sealed API-key copy: what proves the key on a database from before the check value. */
  sealedProof: string | null;
  /** The audit chain's checkpoint as the file stores it (docs/operations.md#the-checkpoint), or null. */
  auditCheckpoint: string | null;
}

/**
 * What a restore needs to know about `file`, read without changing it; refused with one line when it is no
 * credgate database, is damaged, or was written by a newer credgate than this build.
 */
export function inspectBackup(file: string, migrations: EmbeddedMigration[] = sqliteMigrations): BackupFacts {
  if (!existsSync(file)) throw new BackupError(`${file} does not exist`);
  if (!statSync(file).isFile()) throw new BackupError(`${file} is not a file`);
  if (!hasSqliteHeader(file)) throw new BackupError(`${file} is not a credgate backup (not an SQLite database)`);
  let db: Database;
  try {
    db = new Database(file, { readonly: true });
  } catch (err) {
    throw new BackupError(`${file} cannot be opened: ${(err as Error).message}`);
  }
  try {
    const tables = new Set((db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name));
    const missing = CREDGATE_TABLES.filter((t) => !tables.has(t));
    if (missing.length > 0) throw new BackupError(`${file} is not a credgate backup (it has no ${missing.join(", ")} table${missing.length > 1 ? "s" : ""})`);
    const check = db.query("PRAGMA integrity_check").all() as { integrity_check: string }[];
    if (check.length !== 1 || check[0]!.integrity_check !== "ok") {
      throw new BackupError(`${file} is damaged (integrity check: ${check.map((r) => r.integrity_check).slice(0, 3).join("; ")})`);
    }
    const applied = (db.query('SELECT created_at AS at FROM "__drizzle_migrations"').all() as { at: number | string }[]).map((r) => Number(r.at));
    if (applied.length === 0) throw new BackupError(`${file} is not a credgate backup (its migrations journal is empty)`);
    const known = new Set(migrations.map((m) => m.when));
    const newestKnown = migrations[migrations.length - 1]?.when ?? 0;
    const unknown = applied.filter((at) => !known.has(at));
    if (unknown.length > 0) {
      const newest = Math.max(...applied);
      throw new BackupError(
        `${file} was written by a newer credgate (schema of ${new Date(newest).toISOString()}, this build knows schemas up to ${new Date(newestKnown).toISOString()}): restore it with that version or a newer one`,
      );
    }
    const setting = db.query("SELECT value FROM settings WHERE key = 'master_key_check'").get() as { value: string } | null;
    const proof = db.query("SELECT token_sealed AS value FROM api_keys LIMIT 1").get() as { value: string } | null;
    const checkpoint = db.query("SELECT value FROM settings WHERE key = 'audit_checkpoint'").get() as { value: string } | null;
    return { newestMigration: Math.max(...applied), masterKeyCheck: setting?.value ?? null, sealedProof: proof?.value ?? null, auditCheckpoint: checkpoint?.value ?? null };
  } finally {
    db.close();
  }
}

/**
 * Puts `from` in place of the data dir's database. The current database (if any) is first switched out of WAL
 * mode under an exclusive lock — which SQLite grants only when no other connection has the file open, so a
 * running server (or any credgate command reading it) is detected — and kept as `credgate.db.before-restore`.
 * Returns the path the previous database was kept at, or null when there was none.
 */
export function replaceDatabase(dataDir: string, from: string): string | null {
  const target = join(dataDir, DB_FILE);
  const incoming = join(dataDir, `.${DB_FILE}.restoring-${process.pid}`);
  let current: Database | null = null;
  let kept: string | null = null;
  try {
    if (existsSync(target)) {
      current = new Database(target, { create: false, readwrite: true });
      current.run("PRAGMA busy_timeout = 0");
      current.run("PRAGMA locking_mode = EXCLUSIVE");
      try {
        // Folds the WAL into the file and removes it: the kept copy is then one self-contained file.
        current.query("PRAGMA journal_mode = DELETE").get();
        current.run("BEGIN EXCLUSIVE");
        current.run("COMMIT");
      } catch (err) {
        if (/locked|busy/i.test((err as Error).message)) {
          throw new BackupError(`${target} is in use by a running credgate: stop the server (and any credgate command on ${dataDir}), then restore`);
        }
        throw new BackupError(`${target} cannot be replaced: ${(err as Error).message}`);
      }
    }
    writeFileSync(incoming, "", { mode: 0o600, flag: "wx" });
    const source = new Database(from, { readonly: true });
    try {
      // A copy of the file's pages (not a byte copy): whatever journal state the file is in, the copy is whole.
      source.run("VACUUM INTO ?", [incoming]);
    } finally {
      source.close();
    }
    fsyncPath(incoming);
    if (current) {
      kept = join(dataDir, BEFORE_RESTORE);
      renameSync(target, kept);
    }
    for (const stale of [`${target}-wal`, `${target}-shm`, `${target}-journal`]) rmSync(stale, { force: true });
    renameSync(incoming, target);
    fsyncPath(dataDir);
    return kept;
  } catch (err) {
    rmSync(incoming, { force: true });
    throw err instanceof BackupError ? err : new BackupError(`restore into ${dataDir} failed: ${(err as Error).message}`);
  } finally {
    current?.close();
  }
}
