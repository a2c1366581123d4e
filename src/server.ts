// Composition root: open the store, build the services, bootstrap, start the listeners; stop them cleanly.
import { chmodSync, mkdirSync } from "node:fs";
import type { Server } from "bun";
import type { Config } from "./config.ts";
import { loadMasterKey } from "./crypto/masterKey.ts";
import { Sealer } from "./crypto/seal.ts";
import { EventBus } from "./events.ts";
import { openStore, type Db } from "./store/open.ts";
import { createServices, type Services } from "./services/index.ts";
import { bootstrap, type BootstrapInfo } from "./services/bootstrap.ts";
import { createApiApp, type ApiApp } from "./api/app.ts";

export interface Core {
  config: Config;
  db: Db;
  services: Services;
  bootstrap: BootstrapInfo;
}

/** Everything but the listeners: used by `serve`, by CLI commands that read the data dir, and by API tests. */
export function openCore(config: Config): Core {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(config.dataDir, 0o700);
  const sealer = new Sealer(loadMasterKey(config.dataDir, config.masterKey));
  const db = openStore(config.dataDir);
  const services = createServices({ db, sealer, config, events: new EventBus() });
  return { config, db, services, bootstrap: bootstrap(services) };
}

export interface RunningServer {
  core: Core;
  api: ApiApp;
  apiPort: number;
  stop(): Promise<void>;
}

export const DRAIN_MS = 9000;

/** Waits for `work`, but no longer than `ms`. */
export async function drain(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: Timer | undefined;
  await Promise.race([work, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

export async function startServer(config: Config): Promise<RunningServer> {
  const core = openCore(config);
  const api = createApiApp(core.services);
  let apiServer: Server<undefined>;
  try {
    apiServer = Bun.serve({ hostname: config.host, port: config.port, reusePort: false, fetch: (req) => api.handle(req) });
  } catch (err) {
    core.db.$client.close();
    throw new Error(`cannot listen on ${config.host}:${config.port} (API): ${(err as Error).message}`);
  }
  let stopped = false;
  return {
    core,
    api,
    apiPort: apiServer.port!,
    async stop() {
      if (stopped) return;
      stopped = true;
      // New connections are refused at once; in-flight requests get the drain time, then are cut.
      await drain(apiServer.stop(), DRAIN_MS);
      await apiServer.stop(true);
      core.db.$client.close();
    },
  };
}
