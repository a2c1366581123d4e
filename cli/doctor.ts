// `credgate doctor`: one line per check of the installation (src/doctor/checks.ts); exit 1 when one fails.
import type { Command } from "commander";
import { ConfigError, loadConfig, type ConfigFlags } from "../src/runtime/config.ts";
import { runChecks, type CheckResult } from "../src/doctor/checks.ts";

function line(r: CheckResult): string {
  return `${!r.ok ? "FAIL" : r.warning ? "warn" : "ok  "}  ${r.name}: ${r.detail}\n`;
}

export function registerDoctor(program: Command): void {
  program
    .command("doctor")
    .description("check the data dir, the gateway CA, the database, the ports, TLS and upstream TLS; exit 1 on a failure")
    .option("--data-dir <dir>", "data directory (CREDGATE_DATA_DIR, default ./credgate-data)")
    .option("--port <port>", "API port to check (CREDGATE_PORT, default 10254)")
    .option("--gateway-port <port>", "gateway port to check (CREDGATE_GATEWAY_PORT, default 10255)")
    .option("--db-port <port>", "database listener port to check (CREDGATE_DB_PORT, default 10256; 0: off)")
    .option("--host <address>", "bind address to check (CREDGATE_HOST, default 0.0.0.0)")
    .option("--check-host <host[:port]>", "an upstream to reach over TLS (repeatable; default: the CREDGATE_RESOLVE hosts)", (v: string, acc: string[]) => [...acc, v], [] as string[])
    .action(async (flags: ConfigFlags & { checkHost: string[] }) => {
      let results: CheckResult[];
      try {
        results = await runChecks(loadConfig(flags), { checkHosts: flags.checkHost });
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        results = [{ name: "configuration", ok: false, detail: err.message }];
      }
      for (const r of results) process.stdout.write(line(r));
      process.exit(results.every((r) => r.ok) ? 0 : 1);
    });
}
