// `credgate rotate-master-key [--data-dir D]` (docs/operations.md#rotating-the-master-key): re-encrypts every sealed value under a new master
// key in one transaction (src/services/masterKeyRotation.ts). The new key is CREDGATE_NEW_MASTER_KEY or a
// generated one. A key kept in `<data dir>/master.key` is replaced there (the old one kept as master.key.old,
// 0600); a key that came from CREDGATE_MASTER_KEY is printed once, for the operator to set. Run it with the
// server stopped (SQLite), or on one instance (PostgreSQL; the others need the new key at their restart).
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { loadConfig } from "../src/runtime/config.ts";
import { Sealer } from "../src/crypto/seal.ts";
import { rotateSealedValues } from "../src/services/masterKeyRotation.ts";
import { DB_FILE, openStore } from "../src/store/open.ts";
import { AuditService } from "../src/services/audit.ts";
import { auditAnchorOf, CHECKPOINT_KEY_PURPOSE } from "../src/services/auditCheckpoints.ts";
import { cliAuditScope } from "./audit.ts";
import { fail } from "./fail.ts";

const KEY_FILE = "master.key";
const MASTER_KEY_TARGET = { targetType: "master_key", targetId: null };

function decodeKey(name: string, value: string): Buffer {
  const key = Buffer.from(value.trim(), "base64");
  if (key.length !== 32) throw new Error(`${name} must be the base64 encoding of 32 bytes`);
  return key;
}

export function registerRotateMasterKey(program: Command): void {
  program
    .command("rotate-master-key")
    .description("re-encrypt every stored secret under a new master key (CREDGATE_NEW_MASTER_KEY or a generated one)")
    .option("--data-dir <dir>", "data directory (CREDGATE_DATA_DIR, default ./credgate-data)")
    .action(async (flags: { dataDir?: string }) => {
      try {
        const config = loadConfig({ dataDir: flags.dataDir });
        const keyFile = join(config.dataDir, KEY_FILE);
        if (!config.databaseUrl && !existsSync(join(config.dataDir, DB_FILE))) throw new Error(`no credgate data in ${config.dataDir}`);
        const fromEnv = config.masterKey !== null;
        if (!fromEnv && !existsSync(keyFile)) throw new Error(`${keyFile} does not exist and CREDGATE_MASTER_KEY is not set: there is no key to rotate`);
        const oldKey = fromEnv ? decodeKey("CREDGATE_MASTER_KEY", config.masterKey!) : decodeKey(keyFile, readFileSync(keyFile, "utf8"));
        const given = process.env.CREDGATE_NEW_MASTER_KEY?.trim() || null;
        const newKey = given ? decodeKey("CREDGATE_NEW_MASTER_KEY", given) : randomBytes(32);
        if (newKey.equals(oldKey)) throw new Error("CREDGATE_NEW_MASTER_KEY is the current master key");
        const encoded = newKey.toString("base64");

        // The new key is on disk before the values sealed under it are committed, so a crash in between
        // leaves both keys at hand (master.key.new), never values that no stored key opens.
        const pending = `${keyFile}.new`;
        if (!fromEnv) writeFileSync(pending, encoded + "\n", { mode: 0o600 });
        const store = await openStore(config);
        let rotated;
        try {
          // One audit event, in the rotation's transaction (docs/operations.md#audit-log); the checkpoint it
          // moves is MACed again under the new key in the same transaction (docs/operations.md#the-checkpoint).
          const audit = new AuditService(store, auditAnchorOf(new Sealer(oldKey), config));
          rotated = await audit.write(cliAuditScope("rotate-master-key"), () => MASTER_KEY_TARGET, () =>
            store.transaction(async () => {
              const done = await rotateSealedValues(store, new Sealer(oldKey), new Sealer(newKey));
              await audit.record({ ...MASTER_KEY_TARGET, before: { masterKey: "old" }, after: { masterKey: "new" } });
              await audit.rekey(new Sealer(newKey).deriveKey(CHECKPOINT_KEY_PURPOSE));
              return done;
            }),
          );
        } catch (err) {
          if (!fromEnv) rmSync(pending, { force: true });
          throw err;
        } finally {
          await store.close();
        }
        const count = rotated.reduce((n, r) => n + r.values, 0);
        const where = rotated.map((r) => `${r.table}.${r.column} ${r.values}`).join(", ") || "none stored yet";
        process.stdout.write(`credgate: re-encrypted ${count} sealed values under the new master key (${where})\n`);
        if (fromEnv) {
          process.stdout.write(
            given
              ? "Set CREDGATE_MASTER_KEY to the value of CREDGATE_NEW_MASTER_KEY before starting credgate again.\n"
              : `Set CREDGATE_MASTER_KEY to this new key before starting credgate again (it is shown only now):\n${encoded}\n`,
          );
          return;
        }
        const old = `${keyFile}.old`;
        renameSync(keyFile, old);
        chmodSync(old, 0o600);
        renameSync(pending, keyFile);
        chmodSync(keyFile, 0o600);
        process.stdout.write(`The new key is in ${keyFile}; the previous one was kept in ${old} (delete it once you no longer need old backups).\n`);
      } catch (err) {
        fail(err);
      }
    });
}
