// What the primary process and its gateway workers say to each other over IPC (JSON): change events both
// ways (numbered towards a worker, so it can say it applied them), metrics for `GET /metrics`, stop, and the
// shared caches (a worker asks, the primary answers with the entry and its expiry; values such as vault secrets
// travel only over this pipe, never through a file or a log).
import type { Fresh } from "../core/sharedCache.ts";
import type { ChangeEvent } from "../events/bus.ts";
import type { MetricsJson } from "../observability/metrics.ts";

export type ToWorker =
  | { type: "event"; seq: number; event: ChangeEvent }
  | { type: "metrics"; id: number }
  | { type: "stop" }
  /** The answer to `cache-get`: null when the primary has no such cache. */
  | { type: "cache-value"; id: number; entry: Fresh<unknown> | null }
  /** A value the instance read from a vault or a secret store, for this worker's leak guard (docs/guards.md#credential-leak-guard). */
  | { type: "known-value"; ref: string; value: string };

export type ToPrimary =
  | { type: "ready" }
  | { type: "event"; event: ChangeEvent }
  | { type: "applied"; seq: number }
  | { type: "metrics"; id: number; metrics: MetricsJson }
  | { type: "cache-get"; id: number; cache: string; key: string };
