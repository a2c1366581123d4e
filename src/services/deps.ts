// What every service is built from.
import type { Config } from "../runtime/config.ts";
import type { Sealer } from "../crypto/seal.ts";
import type { EventBus } from "../events/bus.ts";
import type { Store } from "../store/store.ts";
import type { AuditService } from "./audit.ts";

export interface ServiceDeps {
  store: Store;
  /** This process among the instances sharing the store; kept in the data dir, so a restart is the same instance. */
  instanceId: string;
  sealer: Sealer;
  config: Config;
  events: EventBus;
  /** Services that write record the change here, inside the transaction that writes it (services/audit.ts). */
  audit: AuditService;
}
