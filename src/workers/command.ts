// How the primary starts a gateway worker: this same executable (the compiled binary, or bun with the entry
// script when run from source), `gateway-worker`, with the settings the primary resolved (its actual ports, so
// port 0 works) and the environment it inherits.
import type { Config } from "../runtime/config.ts";

export function workerCommand(config: Config, ports: { port: number; gatewayPort: number }, index: number): string[] {
  // A compiled executable's entry lives in its embedded file system; from source, bun runs the entry script.
  const self = Bun.main.startsWith("/$bunfs/") ? [process.execPath] : [process.execPath, Bun.main];
  return [
    ...self,
    "gateway-worker",
    "--index", String(index),
    "--data-dir", config.dataDir,
    "--port", String(ports.port),
    "--gateway-port", String(ports.gatewayPort),
    "--db-port", String(config.dbPort),
    "--host", config.host,
    "--mode", config.mode,
  ];
}
