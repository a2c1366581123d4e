// What the pipeline stages share: services, the snapshot, the upstream connection pool, the vault resolver.
import type { Config } from "../runtime/config.ts";
import type { Services } from "../services/index.ts";
import type { EgressGuard } from "./egressGuard.ts";
import type { GatewaySnapshot } from "./snapshot.ts";
import type { UpstreamPool } from "./upstream/pool.ts";
import type { VaultResolver } from "../vault/resolver.ts";

export interface GatewayContext {
  config: Config;
  services: Services;
  snapshot: GatewaySnapshot;
  upstreams: UpstreamPool;
  egress: EgressGuard;
  /** External vault values (1Password Connect), cached per reference. */
  vault: VaultResolver;
}
