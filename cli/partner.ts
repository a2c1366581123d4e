// `credgate partner create --name X --owner-email E` (cloud, docs/configuration.md#commands): a partner, printed with its partner
// key and its owner's invite URL (where the owner sets a password). Run on the server's data dir or database;
// it works while the server runs.
import type { Command } from "commander";
import { loadConfig } from "../src/runtime/config.ts";
import { openCore } from "../src/server.ts";
import { cliAuditScope } from "./audit.ts";
import { fail } from "./fail.ts";

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function registerPartner(program: Command): void {
  const partner = program.command("partner").description("partners: companies that set up organizations for their customers (cloud)");
  partner
    .command("create")
    .description("create a partner; prints its partner key and the owner's invite URL")
    .requiredOption("--name <name>", "the partner's name")
    .requiredOption("--owner-email <email>", "the partner owner's email (their account is made if missing)")
    .option("--data-dir <dir>", "data directory (CREDGATE_DATA_DIR, default ./credgate-data)")
    .option("--json", "print one JSON object")
    .action(async (flags: { name: string; ownerEmail: string; dataDir?: string; json?: boolean }) => {
      try {
        const config = loadConfig({ dataDir: flags.dataDir });
        if (config.mode !== "cloud") throw new Error("partners exist only in cloud mode: set CREDGATE_MODE=cloud");
        const name = flags.name.trim();
        if (name.length < 1 || name.length > 255) throw new Error("--name must be 1-255 characters");
        if (!EMAIL.test(flags.ownerEmail.trim())) throw new Error("--owner-email must be a valid email address");
        const core = await openCore(config);
        let made;
        try {
          made = await core.services.deps.audit.write(
            cliAuditScope("partner create"),
            (m) => ({ targetType: "partner", targetId: m.partnerId }),
            () => core.services.partners.create(name, flags.ownerEmail.trim()),
          );
        } finally {
          await core.close();
        }
        if (flags.json) {
          process.stdout.write(JSON.stringify(made) + "\n");
          return;
        }
        process.stdout.write(
          [
            `Partner "${name}" created (id ${made.partnerId}). The partner key is shown once:`,
            "",
            `  Partner API key:  ${made.partnerKey}`,
            made.inviteUrl ? `  Owner invite:     ${made.inviteUrl}  (valid 7 days; the owner sets a password there)` : `  Owner:            ${flags.ownerEmail.trim()} (already has a password)`,
            "",
          ].join("\n"),
        );
      } catch (err) {
        fail(err);
      }
    });
}
