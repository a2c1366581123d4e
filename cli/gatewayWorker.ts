// `credgate gateway-worker` (hidden): one of the gateway processes `serve --gateway-workers N` starts. Not for
// people: it needs its primary on the other end of its IPC channel.
import type { Command } from "commander";
import { loadConfig, type ConfigFlags } from "../src/runtime/config.ts";
import { runGatewayWorker } from "../src/workers/worker.ts";
import { fail } from "./fail.ts";

export function registerGatewayWorker(program: Command): void {
  program
    .command("gateway-worker", { hidden: true })
    .option("--index <n>", "which worker this is")
    .option("--data-dir <dir>")
    .option("--port <port>")
    .option("--gateway-port <port>")
    .option("--db-port <port>")
    .option("--host <address>")
    .option("--mode <mode>")
    .action(async (flags: ConfigFlags & { index?: string }) => {
      try {
        await runGatewayWorker(loadConfig({ ...flags, gatewayWorkers: 1 }), Number(flags.index ?? 1));
      } catch (err) {
        fail(err);
      }
    });
}
