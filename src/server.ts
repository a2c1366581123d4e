// Composition root: open the store, build the services, bootstrap, start the listeners; stop them cleanly.
import type { Config } from "./runtime/config.ts";
import { createMasterKey, masterKeyMismatch, readMasterKey } from "./crypto/masterKey.ts";
import { dataDirHolds, prepareDataDir, restrictDataDir } from "./runtime/dataDir.ts";
import { loadInstanceId } from "./runtime/instanceId.ts";
import { EventBus } from "./events/bus.ts";
import { DB_FILE, openStore, type Store } from "./store/open.ts";
import { attachNotifyTransport } from "./events/notifyTransport.ts";
import { createServices, type Services } from "./services/index.ts";
import { bootstrap, readBootstrap, type BootstrapInfo } from "./services/bootstrap.ts";
import { unlockStore } from "./services/masterKeyCheck.ts";
import { loadGatewayCa } from "./services/gatewayCa.ts";
import { caRoutes, createApiApp, type ApiApp } from "./api/app.ts";
import { Gateway } from "./gateway/index.ts";
import { EgressGuard } from "./gateway/egressGuard.ts";
import { setClockOffset } from "./runtime/clock.ts";
import { ApiCertificate, readPair } from "./listen/apiCertificate.ts";
import { ApiListener } from "./listen/apiListener.ts";
import { selfNames } from "./listen/selfNames.ts";
import { mergePeerMetrics } from "./observability/metrics.ts";
import { startTracing, type Tracer } from "./observability/tracing.ts";
import { VERSION } from "./runtime/version.ts";
import { GatewayWorkers } from "./workers/hub.ts";
import { workerCommand } from "./workers/command.ts";

export interface Core {
  config: Config;
  store: Store;
  services: Services;
  bootstrap: BootstrapInfo;
  /** Stops the change-event transport and closes the store. */
  close(): Promise<void>;
}

/** A read-only open of a data dir (or database) that holds nothing yet. */
export class NoDataError extends Error {}

/**
 * Everything but the listeners: used by `serve`, by CLI commands that read the data dir, and by API tests.
 * `readOnly` (`keys`, `run`): nothing is created or written, and a data dir without data is a NoDataError.
 * `instance`: a gateway worker's name, added to the instance id.
 * A master key that does not open the stored data is refused before anything is written.
 */
export async function openCore(config: Config, opts: { readOnly?: boolean; instance?: string } = {}): Promise<Core> {
  const readOnly = opts.readOnly === true;
  const noData = () => new NoDataError(`no credgate data in ${config.databaseUrl ? "the database" : config.dataDir}: start the server on it first, or pass the --data-dir the server uses`);
  if (!readOnly) prepareDataDir(config.dataDir);
  else if (!config.databaseUrl && !dataDirHolds(config.dataDir, DB_FILE)) throw noData();
  const key = readMasterKey(config.dataDir, config.masterKey);
  const store = await openStore(config, readOnly);
  const events = new EventBus((fn) => store.afterCommit(fn));
  try {
    const sealer = await unlockStore(store, {
      key,
      create: readOnly ? undefined : () => createMasterKey(config.dataDir),
      mismatch: () => masterKeyMismatch(config),
    });
    if (!sealer) throw noData();
    if (!readOnly) restrictDataDir(config.dataDir);
    // Commands that only read are no instance of their own (and must not write the id file).
    // A gateway worker is an instance of its own (its held approvals are its own), named after its primary.
    const instanceId = readOnly ? crypto.randomUUID() : `${loadInstanceId(config.dataDir)}${opts.instance ? `:${opts.instance}` : ""}`;
    setClockOffset(config.testNowOffsetSeconds);
    const services = createServices({ store, instanceId, sealer, config, events }, { egress: (outbound) => new EgressGuard(config, outbound) });
    // Before the first write can append an event (docs/operations.md#the-checkpoint).
    if (!readOnly) await services.deps.audit.anchorAtStart();
    const info = readOnly ? await readBootstrap(services) : await bootstrap(services);
    if (!info) throw noData();
    return {
      config,
      store,
      services,
      bootstrap: info,
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
  /** The database listener's port; 0 when it is off (CREDGATE_DB_PORT=0). */
  dbPort: number;
  stop(): Promise<void>;
}

export const DRAIN_MS = 9000;
/** How long a stopping process gives the trace exporter to send what is queued. */
export const TRACE_FLUSH_MS = 2000;

/** The process's tracer (docs/operations.md#traces): its spans go out through the process's outbound fetch. */
export function processTracer(core: Core): Tracer | null {
  const { config, instanceId } = core.services.deps;
  return startTracing(config.tracing, { instanceId, version: VERSION }, (url, init) => core.services.outbound.fetch(url, init));
}

/** Waits for `work`, but no longer than `ms`. */
export async function drain(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: Timer | undefined;
  await Promise.race([work, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

export async function startServer(config: Config): Promise<RunningServer> {
  // A bad TLS pair stops the start before anything is created or written.
  if (config.apiTls.kind === "files") readPair(config.apiTls.certFile, config.apiTls.keyFile);
  const core = await openCore(config);
  // Several instances on one database: every write's change event reaches the others' snapshots and polls.
  if (core.store.notifier) await attachNotifyTransport(core.services.deps.events, core.store.notifier, core.services.deps.instanceId);
  let apiServer: ApiListener | null = null;
  let apiCertificate: ApiCertificate | null = null;
  let gateway: Gateway | null = null;
  let workers: GatewayWorkers | null = null;
  try {
    const ca = await loadGatewayCa(core.services.deps);
    const tracer = processTracer(core);
    const api = createApiApp(core.services, caRoutes(ca.certPem), tracer);
    apiCertificate = await ApiCertificate.open(config.apiTls, ca, selfNames(config));
    try {
      apiServer = ApiListener.listen(config.host, config.port, (req, srv) => api.handle(req, srv.requestIP(req) ?? undefined), apiCertificate?.pair ?? null);
    } catch (err) {
      throw new Error(`cannot listen on ${config.host}:${config.port} (API): ${(err as Error).message}`);
    }
    const listener = apiServer;
    apiCertificate?.onChange((pair) => listener.useCertificate(pair));
    gateway = await Gateway.create(config, core.services, ca, api, tracer);
    // Before the first request: what this process held in its previous life is dropped (on SQLite, every
    // approval still pending: this process and its workers, started below, are the only ones on the file).
    await core.services.budgetLedger.start();
    await core.services.approvals.start(core.store.engine === "sqlite" ? "all" : "mine");
    let gatewayPort: number;
    try {
      gatewayPort = await gateway.listen(config.host, config.gatewayPort, config.gatewayWorkers > 1 ? "first" : "alone");
    } catch (err) {
      throw new Error(`cannot listen on ${config.host}:${config.gatewayPort} (gateway): ${(err as Error).message}`);
    }
    // The database listener stays in this process, whatever the gateway workers (docs/databases.md#the-listener).
    let dbPort = 0;
    if (config.dbPort !== 0) {
      try {
        dbPort = await gateway.listenDatabase(config.host, config.dbPort);
      } catch (err) {
        throw new Error(`cannot listen on ${config.host}:${config.dbPort} (database): ${(err as Error).message}`);
      }
    }
    if (config.gatewayWorkers > 1) {
      const ports = { port: apiServer.port, gatewayPort };
      workers = await GatewayWorkers.start(config.gatewayWorkers - 1, (index) => workerCommand(config, ports, index), core.services.deps.events, core.services.caches);
      const hub = workers;
      mergePeerMetrics(() => hub.metrics());
    }
    core.services.requestLogs.start();
    core.services.spend.start();
    // This process sends the instance's notifications (its gateway workers only queue them).
    core.services.notifications.start();
    const running = { core, api, apiPort: apiServer.port, gateway, gatewayPort, dbPort };
    let stopped = false;
    const server = apiServer;
    const certificate = apiCertificate;
    const gw = gateway;
    const hub = workers;
    return {
      ...running,
      async stop() {
        if (stopped) return;
        stopped = true;
        certificate?.stop();
        // New connections are refused at once; in-flight requests share one drain period, then are cut.
        // Held approvals are released with 503 and long-polls answered at once, so they do not hold the drain.
        await core.services.approvals.releaseAll();
        const notificationsStopped = core.services.notifications.stop();
        const deadline = Date.now() + DRAIN_MS;
        const untilDeadline = (work: Promise<unknown>) => drain(work, Math.max(0, deadline - Date.now()));
        await Promise.all([untilDeadline(server.stop()), gw.stop(untilDeadline), hub?.stop(untilDeadline)]);
        await server.stop(true);
        await untilDeadline(notificationsStopped);
        await tracer?.stop(TRACE_FLUSH_MS);
        await core.services.requestLogs.stop();
        await core.services.budgetLedger.stop();
        await core.services.spend.stop();
        await core.services.partnerBudgets.flush().catch(() => {});
        // Secret stores stop their renewals and revoke their leases (docs/injection.md#secret-stores).
        await untilDeadline(core.services.stores.close());
        await core.close();
      },
    };
  } catch (err) {
    apiCertificate?.stop();
    await workers?.stop(async () => {});
    await apiServer?.stop(true);
    await gateway?.stop(async () => {});
    await core.close();
    throw err;
  }
}
