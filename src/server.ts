// Composition root: open the store, build the services, bootstrap, start the listeners; stop them cleanly.
import { chmodSync, mkdirSync } from "node:fs";
import type { Server } from "bun";
import type { Config } from "./config.ts";
import { loadMasterKey } from "./crypto/masterKey.ts";
import { loadInstanceId } from "./instanceId.ts";
import { Sealer } from "./crypto/seal.ts";
import { EventBus } from "./events.ts";
import { openStore, type Store } from "./store/open.ts";
import { attachNotifyTransport } from "./store/notifyTransport.ts";
import { createServices, type Services } from "./services/index.ts";
import { bootstrap, type BootstrapInfo } from "./services/bootstrap.ts";
import { loadGatewayCa } from "./services/gatewayCa.ts";
import { caRoutes, createApiApp, type ApiApp } from "./api/app.ts";
import { Gateway } from "./gateway/index.ts";

export interface Core {
  config: Config;
  store: Store;
  services: Services;
  bootstrap: BootstrapInfo;
  /** Stops the change-event transport and closes the store. */
  close(): Promise<void>;
}

/** Everything but the listeners: used by `serve`, by CLI commands that read the data dir, and by API tests. */
export async function openCore(config: Config): Promise<Core> {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(config.dataDir, 0o700);
  const instanceId = loadInstanceId(config.dataDir);
  const sealer = new Sealer(loadMasterKey(config.dataDir, config.masterKey));
  const store = await openStore(config);
  const events = new EventBus((fn) => store.afterCommit(fn));
  try {
    const services = createServices({ store, instanceId, sealer, config, events });
    return {
      config,
      store,
      services,
      bootstrap: await bootstrap(services),
      async close() {
        await events.stop();
        await store.close();
      },
    };
  } catch (err) {
    await events.stop();
    await store.close();
    throw err;
  }
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
  const core = await openCore(config);
  // Several instances on one database: every write's change event reaches the others' snapshots and polls.
  if (core.store.notifier) await attachNotifyTransport(core.services.deps.events, core.store.notifier, core.services.deps.instanceId);
  let apiServer: Server<undefined> | null = null;
  let gateway: Gateway | null = null;
  try {
    const ca = await loadGatewayCa(core.services.deps);
    const api = createApiApp(core.services, caRoutes(ca.certPem));
    try {
      // idleTimeout: long-polls (approvals) hold a request open for up to a minute.
      apiServer = Bun.serve({ hostname: config.host, port: config.port, reusePort: false, idleTimeout: 255, fetch: (req, srv) => api.handle(req, srv.requestIP(req) ?? undefined) });
    } catch (err) {
      throw new Error(`cannot listen on ${config.host}:${config.port} (API): ${(err as Error).message}`);
    }
    gateway = await Gateway.create(config, core.services, ca, api);
    let gatewayPort: number;
    try {
      gatewayPort = await gateway.listen(config.host, config.gatewayPort);
    } catch (err) {
      throw new Error(`cannot listen on ${config.host}:${config.gatewayPort} (gateway): ${(err as Error).message}`);
    }
    core.services.requestLogs.start();
    await core.services.approvals.start();
    const running = { core, api, apiPort: apiServer.port!, gateway, gatewayPort };
    let stopped = false;
    const server = apiServer;
    const gw = gateway;
    return {
      ...running,
      async stop() {
        if (stopped) return;
        stopped = true;
        // New connections are refused at once; in-flight requests share one drain period, then are cut.
        // Held approvals are released with 503 and long-polls answered at once, so they do not hold the drain.
        await core.services.approvals.releaseAll();
        const deadline = Date.now() + DRAIN_MS;
        const untilDeadline = (work: Promise<unknown>) => drain(work, Math.max(0, deadline - Date.now()));
        await Promise.all([untilDeadline(server.stop()), gw.stop(untilDeadline)]);
        await server.stop(true);
        await core.services.requestLogs.stop();
        await core.services.budgets.flush().catch(() => {});
        await core.close();
      },
    };
  } catch (err) {
    await apiServer?.stop(true);
    await gateway?.stop(async () => {});
    await core.close();
    throw err;
  }
}
