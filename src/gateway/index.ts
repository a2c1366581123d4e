// The gateway, assembled: CA and leaf cache, snapshot, upstream connection pool, the stages and their runner,
// the front listener on the gateway port, and the memory keeper.
import type { ApiApp } from "../api/app.ts";
import type { Config } from "../runtime/config.ts";
import type { CertificateAuthority } from "../crypto/ca.ts";
import type { Tracer } from "../observability/tracing.ts";
import type { Services } from "../services/index.ts";
import { EgressGuard } from "./egressGuard.ts";
import { GatewayListener, type GatewaySharing } from "./listener.ts";
import { MemoryKeeper } from "./memory.ts";
import { gatewayStages, Pipeline, type PipelineDeps } from "./pipeline.ts";
import { GatewaySnapshot } from "./snapshot.ts";
import { LeafCache, SelfLeaf } from "./tls.ts";
import { selfNames } from "../listen/selfNames.ts";
import { UpstreamPool } from "./upstream/pool.ts";
import { VaultResolver } from "../vault/resolver.ts";
import { loadSshCa } from "../services/sshCa.ts";
import { ExecJudge } from "./ssh/judge.ts";
import { SshInterception } from "./ssh/session.ts";

/** What the stages share, over these services: the egress guard, the vault cache and the upstream pool are one each. */
export function pipelineDeps(config: Config, services: Services, snapshot: GatewaySnapshot): PipelineDeps {
  return {
    config,
    services,
    snapshot,
    upstreams: new UpstreamPool(services.outbound),
    egress: new EgressGuard(config, services.outbound),
    vault: new VaultResolver({
      host: config.opConnectHost,
      token: config.opConnectToken,
      fetch: (url, init) => services.outbound.fetch(url, init),
      caches: services.caches,
    }),
  };
}

export class Gateway {
  readonly #listener: GatewayListener;
  readonly #upstreams: UpstreamPool;
  readonly #memory = new MemoryKeeper();
  port = 0;

  /** The gateway with its snapshot loaded, not yet listening; `tracer` when tracing is on (docs/operations.md#traces). */
  static async create(config: Config, services: Services, ca: CertificateAuthority, api: ApiApp, tracer: Tracer | null = null): Promise<Gateway> {
    return new Gateway(config, services, ca, api, await GatewaySnapshot.create(services), tracer);
  }

  private constructor(config: Config, services: Services, ca: CertificateAuthority, api: ApiApp, snapshot: GatewaySnapshot, tracer: Tracer | null) {
    const deps = pipelineDeps(config, services, snapshot);
    this.#upstreams = deps.upstreams;
    const pipeline = new Pipeline(gatewayStages(deps), tracer);
    this.#listener = new GatewayListener({
      pipeline,
      outbound: services.outbound,
      leaves: new LeafCache(ca),
      selfLeaf: new SelfLeaf(ca, selfNames(config)),
      api,
      memory: this.#memory,
      tunnelIdleSeconds: config.tunnelIdleSeconds,
      passthroughIdleSeconds: config.passthroughIdleSeconds,
      http2: config.gatewayHttp2,
      // SSH to port 22 of a host an `ssh` secret names (docs/ssh.md#how-it-works).
      ssh: new SshInterception({
        outbound: services.outbound,
        judge: new ExecJudge({ approvals: services.approvals, rateLimits: services.rateLimits, remembered: snapshot.remembered }),
        requestLogs: services.requestLogs,
        ca: () => loadSshCa(services.deps),
        snapshot,
      }),
    });
  }

  async listen(host: string, port: number, sharing: GatewaySharing = "alone"): Promise<number> {
    this.port = await this.#listener.listen(host, port, sharing);
    return this.port;
  }

  /** Refuses new connections, lets in-flight answers finish (up to the drain), then cuts everything. */
  async stop(drain: (work: Promise<unknown>) => Promise<void>): Promise<void> {
    this.#listener.close();
    await drain(this.#listener.settled());
    this.#listener.destroyAll();
    this.#upstreams.close();
    this.#memory.stop();
  }
}
