// `credgate audit verify [--data-dir D]` (docs/operations.md#audit-log): walks the audit chain from its first
// event and reports the first event whose `seq` or hash does not follow from its predecessor (edited, or one
// before it deleted), then holds the newest event against the checkpoint (docs/operations.md#the-checkpoint):
// events cut from the end, a chain rewritten without the master key, or an older database put back. Needs the
// master key, as the server does. Reads only; works while the server runs.
import { userInfo } from "node:os";
import type { Command } from "commander";
import { loadConfig } from "../src/runtime/config.ts";
import { dataDirHolds } from "../src/runtime/dataDir.ts";
import { chainCheckLine } from "../src/core/auditCheckpoint.ts";
import { masterKeyMismatch, readMasterKey } from "../src/crypto/masterKey.ts";
import { AuditService, type AuditScopeInit } from "../src/services/audit.ts";
import { auditAnchorOf } from "../src/services/auditCheckpoints.ts";
import { unlockStore } from "../src/services/masterKeyCheck.ts";
import { DB_FILE, openStore } from "../src/store/open.ts";
import { fail } from "./fail.ts";

/** The audit scope of a CLI command that writes: the actor is the operating-system user who ran it. */
export function cliAuditScope(command: string): AuditScopeInit {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = `uid ${process.getuid?.() ?? "?"}`;
  }
  return { actor: { kind: "cli", id: user, userId: null }, action: `credgate ${command}`, address: null, organizationId: null, projectId: null, partnerId: null };
}

export function registerAudit(program: Command): void {
  const audit = program.command("audit").description("the audit log of management writes");
  audit
    .command("verify")
    .description("check the audit log's hash chain and its checkpoint; exit 1 when an event was edited or deleted")
    .option("--data-dir <dir>", "data directory (CREDGATE_DATA_DIR, default ./credgate-data)")
    .action(async (flags: { dataDir?: string }) => {
      let result;
      try {
        const config = loadConfig({ dataDir: flags.dataDir });
        if (!config.databaseUrl && !dataDirHolds(config.dataDir, DB_FILE)) throw new Error(`no credgate data in ${config.dataDir}: pass the --data-dir the server uses`);
        const key = readMasterKey(config.dataDir, config.masterKey);
        const store = await openStore(config, true);
        try {
          const sealer = await unlockStore(store, { key, mismatch: () => masterKeyMismatch(config) });
          if (!sealer) throw new Error(`no credgate data in ${config.databaseUrl ? "the database" : config.dataDir}: start the server on it first`);
          result = await new AuditService(store, auditAnchorOf(sealer, config)).verify();
        } finally {
          await store.close();
        }
      } catch (err) {
        fail(err);
      }
      process.stdout.write(`${chainCheckLine(result)}\n`);
      if (!result.intact) process.exit(1);
    });
}
