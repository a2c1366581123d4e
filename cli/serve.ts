// `credgate [serve]`: start the API and the gateway on one data dir; print the keys on first start.
import type { Command } from "commander";
import { loadConfig, type ConfigFlags } from "../src/runtime/config.ts";
import { log } from "../src/observability/log.ts";
import { startServer } from "../src/server.ts";
import { plainTransportWarnings } from "../src/listen/plainTransport.ts";
import { takeUnprintedKeys, type BootstrapInfo } from "../src/services/bootstrap.ts";
import type { Config } from "../src/runtime/config.ts";
import { VERSION } from "../src/runtime/version.ts";
import { fail } from "./fail.ts";

export function firstStartBanner(config: Config, info: BootstrapInfo): string {
  const gateway = new URL(config.gatewayUrl);
  // Nothing trusts the CA before it is fetched: so over plain HTTP, which the same port also speaks (docs/operations.md#tls).
  const caUrl = `http://${gateway.hostname}:${gateway.port || (gateway.protocol === "https:" ? 443 : 80)}/v1/gateway/ca`;
  return [
    "",
    `credgate ${VERSION} — first start: created "Default Organization", "Default Project" and the Default Agent.`,
    "These keys are shown once; reprint them with: credgate keys --data-dir " + config.dataDir,
    "",
    `  Project API key:       ${info.projectApiKey}`,
    `  Organization API key:  ${info.orgApiKey}`,
    `  Default agent token:   ${info.defaultAgentToken}`,
    "",
    `Dashboard: ${config.publicUrl}/  (sign in with the organization API key)`,
    "",
    "Send an agent through the gateway:",
    `  curl -s ${caUrl} -o credgate-ca.pem`,
    `  export HTTPS_PROXY=${gateway.protocol}//x:${info.defaultAgentToken}@${gateway.host}`,
    "  export NODE_EXTRA_CA_CERTS=$PWD/credgate-ca.pem SSL_CERT_FILE=$PWD/credgate-ca.pem",
    `Manage secrets and agents: ${config.publicUrl}/v1 with "Authorization: Bearer <project API key>"`,
    "",
  ].join("\n");
}

export function registerServe(program: Command): void {
  program
    .command("serve", { isDefault: true })
    .description("run the API (default port 10254) and the gateway (default port 10255)")
    .option("--data-dir <dir>", "data directory (CREDGATE_DATA_DIR, default ./credgate-data)")
    .option("--port <port>", "API port (CREDGATE_PORT, default 10254)")
    .option("--gateway-port <port>", "gateway port (CREDGATE_GATEWAY_PORT, default 10255)")
    .option("--db-port <port>", "PostgreSQL broker port (CREDGATE_DB_PORT, default 10256; 0 turns it off)")
    .option("--host <address>", "bind address (CREDGATE_HOST, default 0.0.0.0)")
    .option("--mode <mode>", "self-hosted or cloud (CREDGATE_MODE)")
    .option("--gateway-workers <n>", "gateway processes sharing the gateway port (CREDGATE_GATEWAY_WORKERS, default: the number of cores)")
    .action(async (flags: ConfigFlags) => {
      let server: Awaited<ReturnType<typeof startServer>> | null = null;
      // Listening before the start is over (the API answers while gateway workers start): a signal that comes
      // then is kept, and acted on once there is something to stop.
      let signalled: string | null = null;
      let stopping = false;
      const shutdown = async (signal: string) => {
        if (stopping) return;
        if (!server) {
          signalled ??= signal;
          return;
        }
        stopping = true;
        log.info("credgate stopping", { signal });
        await server.stop();
        process.exit(0);
      };
      process.on("SIGTERM", () => void shutdown("SIGTERM"));
      process.on("SIGINT", () => void shutdown("SIGINT"));
      try {
        const config = loadConfig(flags);
        server = await startServer(config);
        // Printed by the first start that serves, however many starts before it failed (port taken, …).
        if (await takeUnprintedKeys(server.core.services)) process.stdout.write(firstStartBanner(config, server.core.bootstrap) + "\n");
        for (const line of plainTransportWarnings(config)) process.stderr.write(line + "\n");
        log.info("credgate started", { version: VERSION, mode: config.mode, apiPort: server.apiPort, gatewayPort: server.gatewayPort, dbPort: server.dbPort, dataDir: config.dataDir });
      } catch (err) {
        fail(err);
      }
      if (signalled) await shutdown(signalled);
    });
}
