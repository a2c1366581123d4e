// `credgate migrate export`: move a self-hosted project's secrets and agents to the cloud. Reads the data dir
// directly (SQLite WAL lets it do so while the server runs) and runs the same export as
// `POST /v1/migrate/export`, so no API key of the local instance is needed.
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { loadConfig } from "../src/runtime/config.ts";
import { log } from "../src/observability/log.ts";
import { openCore, type Core } from "../src/server.ts";
import { CLOUD_URL_MESSAGE, cloudApiKeyError, parseCloudUrl, type ExportProgress, type MigrationResult } from "../src/services/migration.ts";
import { DB_FILE } from "../src/store/open.ts";
import { fail } from "./fail.ts";

interface ExportFlags {
  cloudUrl: string;
  cloudApiKey: string;
  dataDir?: string;
  project?: string;
  json?: boolean;
}

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function progressLine(p: ExportProgress): string {
  switch (p.step) {
    case "collected":
      return `Found ${count(p.secrets, "secret")} and ${count(p.agents, "agent")} to send${p.skipped ? `, ${count(p.skipped, "item")} left behind` : ""}.`;
    case "sending":
      return `Sending ${count(p.secrets, "secret")} and ${count(p.agents, "agent")}${p.batches > 1 ? ` (part ${p.batch} of ${p.batches})` : ""}…`;
    case "sent":
      return p.batches > 1 ? `Part ${p.batch} of ${p.batches} imported.` : "Imported by the cloud.";
  }
}

export function summary(result: MigrationResult): string {
  const i = result.imported;
  const lines = [
    "",
    `Imported: ${count(i.secrets, "secret")}, ${count(i.agents, "agent")}, ${count(i.agentSecrets, "agent secret")}, ${count(i.rules, "rule")}.`,
  ];
  if (result.skipped.length === 0) {
    lines.push("Skipped: nothing.");
  } else {
    lines.push(`Skipped (${result.skipped.length}):`);
    for (const s of result.skipped) lines.push(`  - ${s.type} "${s.name}": ${s.reason}`);
  }
  if (i.agents > 0) lines.push("", "Imported agents have new access tokens in the cloud: read them with GET /v1/agents there.");
  return lines.join("\n") + "\n";
}

async function projectOf(core: Core, wanted: string | undefined): Promise<{ projectId: string; organizationId: string; name: string }> {
  const id = wanted?.trim() || core.bootstrap.projectId;
  const project = await core.services.orgs.getProject(id);
  if (!project) throw new Error(`project ${id} does not exist in this data dir`);
  return { projectId: project.id, organizationId: project.organizationId, name: project.name };
}

export function registerMigrate(program: Command): void {
  const migrate = program.command("migrate").description("move this self-hosted instance's data to credgate cloud");
  migrate
    .command("export")
    .description("send the project's secrets (decrypted locally, sent over HTTPS) and agents to a cloud project")
    .requiredOption("--cloud-url <url>", "base URL of the cloud instance (https; http only for localhost)")
    .requiredOption("--cloud-api-key <key>", "project API key of the destination cloud project (svc_…)")
    .option("--data-dir <dir>", "data directory (CREDGATE_DATA_DIR, default ./credgate-data)")
    .option("--project <id>", "project to export (default: the Default Project)")
    .option("--json", "print only the migration result as one JSON object")
    .action(async (flags: ExportFlags) => {
      let core: Core | undefined;
      let partsSent = 0;
      try {
        const config = loadConfig({ dataDir: flags.dataDir });
        if (config.mode !== "self-hosted") throw new Error("migrate export runs on a self-hosted instance (CREDGATE_MODE is cloud)");
        const cloudApiKey = flags.cloudApiKey.trim();
        if (cloudApiKey === "") throw new Error("cloudApiKey is required");
        const keyError = cloudApiKeyError(cloudApiKey);
        if (keyError) throw new Error(keyError);
        if (parseCloudUrl(flags.cloudUrl) === null) throw new Error(`${CLOUD_URL_MESSAGE}, got "${flags.cloudUrl}"`);
        if (!config.databaseUrl && !existsSync(join(config.dataDir, DB_FILE))) {
          throw new Error(`no credgate data in ${config.dataDir}; pass --data-dir with the directory of your self-hosted instance`);
        }
        log.setQuiet(true);
        core = await openCore(config);
        const project = await projectOf(core, flags.project);
        const say = (line: string) => {
          if (!flags.json) process.stdout.write(line + "\n");
        };
        say(`Exporting project "${project.name}" (${project.projectId}) from ${config.dataDir} to ${flags.cloudUrl.trim()}`);
        const result = await core.services.migration.export(project, { cloudUrl: flags.cloudUrl, cloudApiKey }, (p) => {
          if (p.step === "sent") partsSent++;
          say(progressLine(p));
        });
        process.stdout.write(flags.json ? JSON.stringify(result) + "\n" : summary(result));
      } catch (err) {
        await core?.close();
        const hint = partsSent > 0 ? ` (${count(partsSent, "part")} already imported; re-running is safe: what exists is skipped)` : "";
        fail(err instanceof Error ? new Error(err.message + hint) : err);
      }
      await core.close();
    });
}
