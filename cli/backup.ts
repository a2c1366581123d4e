// `credgate backup --to FILE` and `credgate restore --from FILE` (docs/operations.md#backups): a consistent copy
// of the embedded SQLite database while the server runs, and putting one back with the server stopped. The
// master key is never part of a backup. With PostgreSQL both commands point at pg_dump / pg_restore. A restore
// also puts the data dir's copy of the audit checkpoint in step with the database it restored
// (docs/operations.md#the-checkpoint): the copy of the database it replaced would name a later head.
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { readCheckpoint } from "../src/core/auditCheckpoint.ts";
import { MASTER_KEY_FILE, readMasterKey } from "../src/crypto/masterKey.ts";
import { auditCheckpointPath, removeCheckpointFile, writeCheckpointFile } from "../src/runtime/auditCheckpointFile.ts";
import { CHECKPOINT_KEY_PURPOSE } from "../src/services/auditCheckpoints.ts";
import { Sealer } from "../src/crypto/seal.ts";
import { loadConfig, type Config } from "../src/runtime/config.ts";
import { prepareDataDir } from "../src/runtime/dataDir.ts";
import { DB_FILE } from "../src/store/open.ts";
import { backupDatabase, BackupError, inspectBackup, replaceDatabase, type BackupFacts } from "../src/store/sqliteBackup.ts";
import { fail } from "./fail.ts";

function refusePostgres(config: Config, what: "backup" | "restore"): void {
  if (config.databaseUrl) {
    throw new BackupError(
      `${what} works on the embedded SQLite database; this installation uses PostgreSQL (CREDGATE_DATABASE_URL): back it up with pg_dump and restore it with pg_restore`,
    );
  }
}

/** Where the master key the data is sealed under lives, as the operator must keep it. */
function masterKeyPlace(config: Config): string {
  return config.masterKey !== null ? "CREDGATE_MASTER_KEY" : join(config.dataDir, MASTER_KEY_FILE);
}

function size(bytes: number): string {
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function opens(key: Buffer, sealed: string): boolean {
  try {
    new Sealer(key).open(sealed);
    return true;
  } catch {
    return false;
  }
}

/**
 * A restore into a data dir whose master key cannot open the backup would leave a server that refuses to start:
 * refused before anything changes. Without any key the restore goes ahead and says which key to put back.
 */
function checkMasterKey(config: Config, from: string, facts: BackupFacts): string | null {
  const key = readMasterKey(config.dataDir, config.masterKey);
  const proof = facts.masterKeyCheck ?? facts.sealedProof;
  if (key === null) return `put the master key this backup was made with in ${join(config.dataDir, MASTER_KEY_FILE)} (mode 0600) or CREDGATE_MASTER_KEY before starting credgate`;
  if (proof !== null && !opens(key, proof)) {
    throw new BackupError(`the master key in ${masterKeyPlace(config)} does not open ${from}: put the key the backup was made with there first`);
  }
  return null;
}

/**
 * The data dir's copy of the audit checkpoint, for the database just restored: its own checkpoint when the key
 * proves it; otherwise no copy (a backup from before the checkpoint, or no key here yet), which the next start
 * writes from the database.
 */
function matchCheckpointFile(config: Config, facts: BackupFacts): void {
  const file = auditCheckpointPath(config.dataDir);
  const key = readMasterKey(config.dataDir, config.masterKey);
  const text = facts.auditCheckpoint;
  if (key !== null && text !== null && readCheckpoint(new Sealer(key).deriveKey(CHECKPOINT_KEY_PURPOSE), text) !== null) writeCheckpointFile(file, text.trim());
  else removeCheckpointFile(file);
}

export function registerBackup(program: Command): void {
  program
    .command("backup")
    .description("write a consistent copy of the SQLite database (safe while the server runs); the master key is not in it")
    .requiredOption("--to <file>", "the backup file to write (replaced if it exists)")
    .option("--data-dir <dir>", "data directory (CREDGATE_DATA_DIR, default ./credgate-data)")
    .action((flags: { to: string; dataDir?: string }) => {
      try {
        const config = loadConfig({ dataDir: flags.dataDir });
        refusePostgres(config, "backup");
        const to = resolve(flags.to);
        const bytes = backupDatabase(join(config.dataDir, DB_FILE), to);
        process.stdout.write(`backup of ${join(config.dataDir, DB_FILE)} written to ${to} (${size(bytes)})\n`);
        process.stdout.write(`the master key is not in the backup: keep ${masterKeyPlace(config)} safely\n`);
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("restore")
    .description("put a backup in place of the SQLite database (the server must be stopped)")
    .requiredOption("--from <file>", "the backup file (written by credgate backup)")
    .option("--data-dir <dir>", "data directory (CREDGATE_DATA_DIR, default ./credgate-data)")
    .action((flags: { from: string; dataDir?: string }) => {
      try {
        const config = loadConfig({ dataDir: flags.dataDir });
        refusePostgres(config, "restore");
        const from = resolve(flags.from);
        const facts = inspectBackup(from);
        prepareDataDir(config.dataDir);
        const keyNote = checkMasterKey(config, from, facts);
        const kept = replaceDatabase(config.dataDir, from);
        matchCheckpointFile(config, facts);
        process.stdout.write(`restored ${from} into ${join(config.dataDir, DB_FILE)}\n`);
        if (kept) process.stdout.write(`the previous database was kept as ${kept}\n`);
        if (keyNote) process.stdout.write(`${keyNote}\n`);
      } catch (err) {
        fail(err);
      }
    });
}
