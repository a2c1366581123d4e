// What the pipeline stages share: services, the snapshot, the connection registry, the vault resolver.
import type { Config } from "../config.ts";
import type { Services } from "../services/index.ts";
import type { ConnectionRegistry } from "./connections.ts";
import type { Reachability } from "./reachability.ts";
import type { GatewaySnapshot } from "./snapshot.ts";
import type { VaultResolver } from "../vault/resolver.ts";

export interface GatewayContext {
  config: Config;
  services: Services;
  snapshot: GatewaySnapshot;
  registry: ConnectionRegistry;
  reachability: Reachability;
  /** External vault values (1Password Connect), cached per reference. */
  vault: VaultResolver;
}
