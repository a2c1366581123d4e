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
import { loadSshCa } from "../services/sshCa.ts";
import { ExecJudge } from "./ssh/judge.ts";
import { SshInterception } from "./ssh/session.ts";
import { recheck } from "./postgres/agentAuth.ts";
import { DatabaseListener } from "./postgres/listener.ts";
import { hashicorpStoreOf } from "../vault/stores/hashicorp.ts";
import type { VaultLeases } from "../vault/stores/vaultLeases.ts";
import { statementJudgeOf } from "./postgres/judge.ts";
import { logStatement } from "./postgres/statementLog.ts";
import { forwardCancel, type UpstreamDeps } from "./postgres/upstream.ts";

/** What the stages share, over these services: the egress guard and the upstream pool are one each; the values kept outside credgate are the services' (one resolver per process). */
export function pipelineDeps(config: Config, services: Services, snapshot: GatewaySnapshot): PipelineDeps {
  return {
    config,
    services,
    snapshot,
    upstreams: new UpstreamPool(services.outbound),
    egress: new EgressGuard(config, services.outbound),
    vault: services.stores,
  };
}

/**
 * The HashiCorp Vault store's leases, revoked when their secret is deleted or points elsewhere: a lease's secret is
 * tracked by services.storeRefChanges, which follows the change events of this instance and, through the store's
 * notifications, of the others — a delete anywhere ends the lease here. Only the process running the broker holds any.
 */
function databaseLeases(config: Config, services: Services): VaultLeases | null {
  const leases = hashicorpStoreOf(config)?.leases ?? null;
  if (leases === null) return null;
  leases.onLease = (secretId, ref, password) => {
    // The leak guard knows a lease's password as it knows a value read from a store (docs/databases.md#the-leak-guard).
    services.stores.known.add(ref, password);
    services.storeRefChanges.track(secretId, ref);
  };
  services.storeRefChanges.onReleased((secretId) => leases.release(secretId, "the secret was deleted or its storeRef changed"));
  return leases;
}

export class Gateway {
  readonly #listener: GatewayListener;
  /** The database listener (docs/databases.md#the-listener): built with the gateway, listening only in the primary. */
  readonly #database: DatabaseListener;
  #databaseListening = false;
  /** Vault's database leases the broker holds (docs/vault.md#database-leases); null without HashiCorp Vault. */
  readonly #leases: VaultLeases | null;
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
        vault: deps.vault,
        snapshot,
      }),
    });
    const upstream: UpstreamDeps = { egress: deps.egress, outbound: services.outbound, config };
    const requestLogs = services.requestLogs;
    this.#leases = databaseLeases(config, services);
    this.#database = new DatabaseListener({
      auth: { snapshot, vault: deps.vault, upstream, leases: this.#leases },
      session: {
        judge: statementJudgeOf(services, snapshot, config),
        recheck: (db, token) => recheck(snapshot, db, token),
        logStatement: (db, row) => logStatement(requestLogs, db, row),
        forwardCancel: (db, key) => forwardCancel(db.credential, key, upstream),
      },
      selfLeaf: new SelfLeaf(ca, selfNames(config)),
    });
  }

  async listen(host: string, port: number, sharing: GatewaySharing = "alone"): Promise<number> {
    this.port = await this.#listener.listen(host, port, sharing);
    return this.port;
  }

  /**
   * The database listener on `port` (the primary process only: a CancelRequest must reach the process holding
   * its session, so gateway workers do not share this port).
   */
  async listenDatabase(host: string, port: number): Promise<number> {
    const bound = await this.#database.listen(host, port);
    this.#databaseListening = true;
    return bound;
  }

  /** Refuses new connections, lets in-flight answers finish (up to the drain), then cuts everything. */
  async stop(drain: (work: Promise<unknown>) => Promise<void>): Promise<void> {
    this.#listener.close();
    if (this.#databaseListening) this.#database.close();
    await drain(Promise.all([this.#listener.settled(), this.#database.settled()]));
    this.#listener.destroyAll();
    this.#database.destroyAll();
    // The sessions on them are gone: the leases end now rather than at their TTL.
    await this.#leases?.close();
    this.#upstreams.close();
    this.#memory.stop();
  }
}
