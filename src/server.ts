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
import { caRoutes, createApiApp, type ApiApp } from "./api/app.ts";
import { CertificateAuthority } from "./crypto/ca.ts";
import { Gateway } from "./gateway/index.ts";

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
  gateway: Gateway;
  gatewayPort: number;
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
  const ca = await CertificateAuthority.loadOrCreate(config.dataDir);
  const api = createApiApp(core.services, caRoutes(ca.certPem));
  let apiServer: Server<undefined>;
  try {
    // idleTimeout: long-polls (approvals) hold a request open for up to a minute.
    apiServer = Bun.serve({ hostname: config.host, port: config.port, reusePort: false, idleTimeout: 255, fetch: (req) => api.handle(req) });
  } catch (err) {
    core.db.$client.close();
    throw new Error(`cannot listen on ${config.host}:${config.port} (API): ${(err as Error).message}`);
  }
  const gateway = new Gateway(config, core.services, ca, api);
  let gatewayPort: number;
  try {
    gatewayPort = await gateway.listen(config.host, config.gatewayPort);
  } catch (err) {
    await apiServer.stop(true);
    await gateway.stop(async () => {});
    core.db.$client.close();
    throw new Error(`cannot listen on ${config.host}:${config.gatewayPort} (gateway): ${(err as Error).message}`);
  }
  core.services.requestLogs.start();
  core.services.approvals.cancelOrphans();
  let stopped = false;
  return {
    core,
    api,
    apiPort: apiServer.port!,
    gateway,
    gatewayPort,
    async stop() {
      if (stopped) return;
      stopped = true;
      // New connections are refused at once; in-flight requests share one drain period, then are cut.
      // Held approvals are released with 503 and long-polls answered at once, so they do not hold the drain.
      core.services.approvals.releaseAll();
      const deadline = Date.now() + DRAIN_MS;
      const untilDeadline = (work: Promise<unknown>) => drain(work, Math.max(0, deadline - Date.now()));
      await Promise.all([untilDeadline(apiServer.stop()), gateway.stop(untilDeadline)]);
      await apiServer.stop(true);
      core.services.requestLogs.stop();
      core.db.$client.close();
    },
  };
}
