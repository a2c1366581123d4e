// `credgate audit verify [--data-dir D]` (docs/operations.md#audit-log): walks the audit chain from its first
// event and reports the first event whose hash does not follow from its predecessor (edited, or one before it
// deleted). Reads only; works while the server runs.
import { userInfo } from "node:os";
import type { Command } from "commander";
import { loadConfig } from "../src/runtime/config.ts";
import { dataDirHolds } from "../src/runtime/dataDir.ts";
import { AuditService, type AuditScopeInit } from "../src/services/audit.ts";
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
    .description("check the audit log's hash chain; exit 1 when an event was edited or deleted")
    .option("--data-dir <dir>", "data directory (CREDGATE_DATA_DIR, default ./credgate-data)")
    .action(async (flags: { dataDir?: string }) => {
      let result;
      try {
        const config = loadConfig({ dataDir: flags.dataDir });
        if (!config.databaseUrl && !dataDirHolds(config.dataDir, DB_FILE)) throw new Error(`no credgate data in ${config.dataDir}: pass the --data-dir the server uses`);
        const store = await openStore(config, true);
        try {
          result = await new AuditService(store).verify();
        } finally {
          await store.close();
        }
      } catch (err) {
        fail(err);
      }
      if (result.intact) {
        process.stdout.write(`audit chain intact: ${result.events} events\n`);
        return;
      }
      process.stdout.write(`audit chain broken at ${result.brokenAt}\n`);
      process.exit(1);
    });
}
