// What every service is built from.
import type { Config } from "../config.ts";
import type { Sealer } from "../crypto/seal.ts";
import type { EventBus } from "../events.ts";
import type { Db } from "../store/open.ts";

export interface ServiceDeps {
  db: Db;
  sealer: Sealer;
  config: Config;
  events: EventBus;
}
