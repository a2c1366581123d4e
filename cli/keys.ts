// `credgate keys`: reprint the bootstrap keys by reading the data dir (works while the server runs). Reads
// only: a missing or empty data dir is reported, never created, and no key is ever made.
import type { Command } from "commander";
import { loadConfig } from "../src/runtime/config.ts";
import { openCore } from "../src/server.ts";
import { fail } from "./fail.ts";

export function registerKeys(program: Command): void {
  program
    .command("keys")
    .description("print the bootstrap API keys and the default agent token")
    .option("--data-dir <dir>", "data directory (CREDGATE_DATA_DIR, default ./credgate-data)")
    .option("--json", "print one JSON object")
    .action(async (flags: { dataDir?: string; json?: boolean }) => {
      try {
        const core = await openCore(loadConfig({ dataDir: flags.dataDir }), { readOnly: true });
        const b = core.bootstrap;
        await core.close();
        if (flags.json) {
          const out = { projectApiKey: b.projectApiKey, orgApiKey: b.orgApiKey, projectId: b.projectId, organizationId: b.organizationId, defaultAgentToken: b.defaultAgentToken };
          process.stdout.write(JSON.stringify(out) + "\n");
          return;
        }
        process.stdout.write(
          [
            `Organization ID:       ${b.organizationId}`,
            `Project ID:            ${b.projectId}`,
            `Project API key:       ${b.projectApiKey}`,
            `Organization API key:  ${b.orgApiKey}`,
            `Default agent token:   ${b.defaultAgentToken}`,
            "",
          ].join("\n"),
        );
      } catch (err) {
        fail(err);
      }
    });
}
