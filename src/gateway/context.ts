// What the pipeline stages share: services, the snapshot, the connection registry.
import type { Config } from "../config.ts";
import type { Services } from "../services/index.ts";
import type { ConnectionRegistry } from "./connections.ts";
import type { RateLimiter } from "./rateLimiter.ts";
import type { Reachability } from "./reachability.ts";
import type { GatewaySnapshot } from "./snapshot.ts";

export interface GatewayContext {
  config: Config;
  services: Services;
  snapshot: GatewaySnapshot;
  registry: ConnectionRegistry;
  reachability: Reachability;
  rateLimiter: RateLimiter;
}
