// What the primary process and its gateway workers say to each other over IPC (JSON): change events both
// ways (numbered towards a worker, so it can say it applied them), metrics for `GET /metrics`, and stop.
import type { ChangeEvent } from "../events/bus.ts";
import type { MetricsJson } from "../observability/metrics.ts";

export type ToWorker =
  | { type: "event"; seq: number; event: ChangeEvent }
  | { type: "metrics"; id: number }
  | { type: "stop" };

export type ToPrimary =
  | { type: "ready" }
  | { type: "event"; event: ChangeEvent }
  | { type: "applied"; seq: number }
  | { type: "metrics"; id: number; metrics: MetricsJson };
