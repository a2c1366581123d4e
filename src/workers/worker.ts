// A gateway worker (started by the primary, `credgate gateway-worker`): this executable's gateway on the
// shared gateway port, with its own snapshot, request-log queue and held approvals, on the same store, and the
// primary's shared caches (DNS, external vault, OAuth refreshes). Change events come from the primary over IPC
// (each one acknowledged once applied) and its own go back there. It stops when asked, on SIGTERM, or when the
// primary is gone.
import type { Config } from "../runtime/config.ts";
import { caRoutes, createApiApp } from "../api/app.ts";
import { Gateway } from "../gateway/index.ts";
import { log } from "../observability/log.ts";
import { metricsJson } from "../observability/metrics.ts";
import { DRAIN_MS, drain, openCore, processTracer, TRACE_FLUSH_MS } from "../server.ts";
import { loadGatewayCa } from "../services/gatewayCa.ts";
import { PrimaryCaches } from "./cacheLink.ts";
import type { ToPrimary, ToWorker } from "./messages.ts";

function tell(message: ToPrimary): void {
  process.send?.(message);
}

export async function runGatewayWorker(config: Config, index: number): Promise<void> {
  if (!process.send) throw new Error("gateway-worker is started by `credgate serve --gateway-workers N`, not by hand");
  const core = await openCore(config, { instance: `worker-${index}` });
  const { services } = core;
  services.deps.events.attach({ publish: (event) => tell({ type: "event", event }), stop: async () => {} });
  // DNS answers, vault values and OAuth refreshes come from the primary's caches (one set per instance).
  const primaryCaches = new PrimaryCaches(tell);
  services.caches.attach(primaryCaches);
  const ca = await loadGatewayCa(services.deps);
  // Each gateway process exports its own spans (docs/operations.md#traces).
  const tracer = processTracer(core);
  const gateway = await Gateway.create(config, services, ca, createApiApp(services, caRoutes(ca.certPem), tracer), tracer);

  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    log.info("gateway worker stopping", { worker: index, why });
    await services.approvals.releaseAll();
    const deadline = Date.now() + DRAIN_MS;
    await gateway.stop((work) => drain(work, Math.max(0, deadline - Date.now())));
    await tracer?.stop(TRACE_FLUSH_MS);
    await services.requestLogs.stop();
    await services.budgetLedger.stop();
    await services.spend.stop();
    await services.partnerBudgets.flush().catch(() => {});
    await services.stores.close();
    await core.close();
    process.exit(0);
  };
  process.on("message", (message: ToWorker) => {
    switch (message.type) {
      case "event":
        services.deps.events.deliver(message.event);
        tell({ type: "applied", seq: message.seq });
        return;
      case "metrics":
        void metricsJson().then((metrics) => tell({ type: "metrics", id: message.id, metrics }));
        return;
      case "cache-value":
        primaryCaches.answered(message.id, message.entry);
        return;
      case "stop":
        void stop("asked by the primary");
    }
  });
  process.on("disconnect", () => void stop("the primary is gone"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));

  // Before the first request: what this worker held in its previous life is dropped (only its own: the
  // primary and the other workers hold requests meanwhile).
  await services.budgetLedger.start();
  await services.approvals.start("mine");
  await gateway.listen(config.host, config.gatewayPort, "joining");
  services.requestLogs.start();
  tell({ type: "ready" });
  log.info("gateway worker started", { worker: index, gatewayPort: config.gatewayPort });
}
