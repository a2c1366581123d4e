// The process's Prometheus metrics (docs/operations.md#metrics, `GET /metrics` on the API port): one registry, and every
// metric defined here so the API, the services, the vault and the gateway increment the same objects.
// Imports nothing of ours, so any layer may import it. Label values are small fixed sets (decisions,
// statuses, route templates, providers, reason codes), never hosts; the one exception, LLM spend by project
// and model, caps how many distinct values it reports (the rest are `other`): cardinality stays bounded.
import Counter from "prom-client/lib/counter.js";
import Gauge from "prom-client/lib/gauge.js";
import Histogram from "prom-client/lib/histogram.js";
import Registry from "prom-client/lib/registry.js";

export const registry = new Registry();
const registers = [registry];

/** Latency buckets in seconds: the gateway adds sub-millisecond to tens of milliseconds; upstreams take longer. */
const ADDED_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const UPSTREAM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

let requestLogQueueLength: () => number = () => 0;

/** What the trace exporter has done so far (docs/operations.md#traces); null while tracing is off. */
export interface TraceExportCounts {
  exported: number;
  queueFull: number;
  exportFailed: number;
}
let traceExportCounts: (() => TraceExportCounts) | null = null;

/** Admissions under scope budgets so far, by where they were decided (docs/budgets.md#leases). */
export interface BudgetAdmissionCounts {
  lease: number;
  store: number;
}
let budgetAdmissionCounts: (() => BudgetAdmissionCounts) | null = null;

/** The ledger whose counts the budget-admission counter reports (read at scrape time, not per request). */
export function watchBudgetAdmissions(counts: () => BudgetAdmissionCounts): void {
  budgetAdmissionCounts = counts;
}

/** The trace exporter whose counts the span counters report (read at scrape time, not on every span). */
export function watchTraceExport(counts: () => TraceExportCounts): void {
  traceExportCounts = counts;
}

/** The request-log queue whose length the queue-depth gauge reports (the serving process has one). */
export function watchRequestLogQueue(length: () => number): void {
  requestLogQueueLength = length;
}

export const metrics = {
  // ── gateway (incremented by src/gateway) ──
  // Fed through gatewayTally (below), which hands them their counts before every read.
  gatewayRequests: new Counter({
    name: "credgate_gateway_requests_total",
    help: "Proxied requests, WebSocket upgrades and tunnels answered by the gateway, by request-log decision and HTTP status.",
    labelNames: ["decision", "status"] as const,
    registers,
    collect: () => gatewayTally.flush(),
  }),
  gatewayAddedLatency: new Histogram({
    name: "credgate_gateway_added_latency_seconds",
    help: "Time the gateway adds to a proxied request (until the upstream response headers, less the upstream's own time).",
    buckets: ADDED_BUCKETS,
    registers,
    collect: () => gatewayTally.flush(),
  }),
  gatewayUpstreamLatency: new Histogram({
    name: "credgate_gateway_upstream_latency_seconds",
    help: "Time from sending a request upstream to its response headers.",
    buckets: UPSTREAM_BUCKETS,
    registers,
    collect: () => gatewayTally.flush(),
  }),
  mcpCalls: new Counter({
    name: "credgate_mcp_calls_total",
    help: "MCP tools/call requests through the gateway, by server name, tool and request-log decision (tools beyond the first 1000 names counted as \"other\").",
    labelNames: ["server", "tool", "decision"] as const,
    registers,
  }),
  openTunnels: new Gauge({ name: "credgate_gateway_open_tunnels", help: "CONNECT tunnels open now (intercepted and passthrough).", registers }),
  openWebSockets: new Gauge({ name: "credgate_gateway_open_websockets", help: "WebSocket connections relayed now.", registers }),
  snapshotRebuilds: new Counter({ name: "credgate_gateway_snapshot_rebuilds_total", help: "Per-agent gateway snapshots rebuilt after a change.", registers }),
  budgetSpend: new Counter({
    name: "credgate_budget_spend_usd_total",
    help: "Metered LLM spend charged to secrets, in US dollars, by secret type.",
    labelNames: ["type"] as const,
    registers,
  }),

  budgetAdmissions: new Counter({
    name: "credgate_budget_admissions_total",
    help: "Metered requests admitted under scope budgets, by where it was decided: lease (in memory, from the process's credit) or store (in a transaction).",
    labelNames: ["decided"] as const,
    registers,
    collect() {
      if (budgetAdmissionCounts === null) return;
      const counts = budgetAdmissionCounts();
      this.reset();
      this.inc({ decided: "lease" }, counts.lease);
      this.inc({ decided: "store" }, counts.store);
    },
  }),

  // Fed through llmTally (below), like the gateway's counters.
  llmSpend: new Counter({
    name: "credgate_llm_spend_usd_total",
    help: "Metered LLM spend of admitted requests, in US dollars, by project id and the model the vendor reported (docs/budgets.md#spend-report).",
    labelNames: ["project", "model"] as const,
    registers,
    collect: () => llmTally.flush(),
  }),
  llmRequests: new Counter({
    name: "credgate_llm_requests_total",
    help: "Metered LLM requests that were admitted, by project id and the model the vendor reported.",
    labelNames: ["project", "model"] as const,
    registers,
    collect: () => llmTally.flush(),
  }),

  // ── services, vault, API (incremented outside the gateway) ──
  // ── database listener (docs/databases.md#request-logs-and-metrics) ──
  dbStatements: new Counter({
    name: "credgate_db_statements_total",
    help: "Statements judged on the database listener, by request-log decision.",
    labelNames: ["decision"] as const,
    registers,
    collect: () => dbStatementTally.flush(),
  }),
  dbConnections: new Gauge({ name: "credgate_db_connections", help: "Agent connections open on the database listener now.", registers }),
  heldApprovals: new Gauge({ name: "credgate_approvals_held", help: "Requests held in this process waiting for an approval decision.", registers }),
  // Read at scrape time (watchRequestLogQueue), not set on every request.
  requestLogQueueDepth: new Gauge({
    name: "credgate_request_log_queue_depth",
    help: "Request-log rows waiting to be written.",
    registers,
    collect() {
      this.set(requestLogQueueLength());
    },
  }),
  requestLogDrops: new Counter({ name: "credgate_request_log_dropped_total", help: "Request-log rows dropped because the store refused them too long.", registers }),
  oauthRefreshFailures: new Counter({
    name: "credgate_oauth_refresh_failures_total",
    help: "Failed OAuth token refreshes, by provider and outcome (revoked: the refresh token was rejected; retry: tried again later).",
    labelNames: ["provider", "outcome"] as const,
    registers,
  }),
  vaultErrors: new Counter({
    name: "credgate_vault_errors_total",
    help: "Failed external-vault lookups and secret-store reads, by reason code.",
    labelNames: ["reason"] as const,
    registers,
  }),
  apiRequests: new Counter({
    name: "credgate_api_requests_total",
    help: "Management API requests, by route template, method and HTTP status.",
    labelNames: ["route", "method", "status"] as const,
    registers,
  }),
  traceSpansExported: new Counter({
    name: "credgate_trace_spans_exported_total",
    help: "Spans the collector accepted (docs/operations.md#traces).",
    registers,
    collect() {
      if (traceExportCounts === null) return;
      this.reset();
      this.inc(traceExportCounts().exported);
    },
  }),
  traceSpansDropped: new Counter({
    name: "credgate_trace_spans_dropped_total",
    help: "Spans not exported, by reason: queue_full (the export queue was full), export_failed (the collector refused the batch, did not answer in time, or could not be reached).",
    labelNames: ["reason"] as const,
    registers,
    collect() {
      if (traceExportCounts === null) return;
      const counts = traceExportCounts();
      this.reset();
      this.inc({ reason: "queue_full" }, counts.queueFull);
      this.inc({ reason: "export_failed" }, counts.exportFailed);
    },
  }),
  apiLatency: new Histogram({
    name: "credgate_api_request_duration_seconds",
    help: "Time to answer a management API request (long-polls included).",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30, 60],
    registers,
  }),
};

/** Requests and latencies the gateway tallies before prom-client is told. */
const TALLY_BATCH = 1024;

/**
 * The gateway's per-request metrics, gathered as plain numbers and handed to prom-client in batches and before
 * every read. prom-client's labelled `inc` and its `observe` hash and check the labels and search the buckets
 * on every call: ~1 µs of the gateway's core per request, measured in place under load, against a few
 * nanoseconds here. A batch is at most TALLY_BATCH requests, so nothing grows while nobody scrapes.
 */
class GatewayTally {
  readonly #counts = new Map<string, Map<number, number>>();
  #counted = 0;
  readonly #upstream = new Float64Array(TALLY_BATCH);
  readonly #added = new Float64Array(TALLY_BATCH);
  #observed = 0;

  count(decision: string, status: number): void {
    let byStatus = this.#counts.get(decision);
    if (!byStatus) this.#counts.set(decision, (byStatus = new Map()));
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    if (++this.#counted >= TALLY_BATCH) this.flush();
  }

  observe(upstreamSeconds: number, addedSeconds: number): void {
    this.#upstream[this.#observed] = upstreamSeconds;
    this.#added[this.#observed] = addedSeconds;
    if (++this.#observed >= TALLY_BATCH) this.flush();
  }

  flush(): void {
    if (this.#counted > 0) {
      for (const [decision, byStatus] of this.#counts) {
        for (const [status, n] of byStatus) metrics.gatewayRequests.inc({ decision, status: String(status) }, n);
        byStatus.clear();
      }
      this.#counted = 0;
    }
    for (let i = 0; i < this.#observed; i++) {
      metrics.gatewayUpstreamLatency.observe(this.#upstream[i]!);
      metrics.gatewayAddedLatency.observe(this.#added[i]!);
    }
    this.#observed = 0;
  }
}

const gatewayTally = new GatewayTally();

/** One request the gateway answered, by its request-log decision and HTTP status. */
export function countGatewayRequest(decision: string, status: number): void {
  gatewayTally.count(decision, status);
}

/** Tool label sets seen so far: an agent naming endless made-up tools must not grow the registry without end. */
const mcpToolLabels = new Set<string>();
const MCP_TOOL_LABELS = 1000;

/** One MCP tools/call and its decision (docs/operations.md#metrics). */
export function countMcpCall(server: string, tool: string, decision: string): void {
  const key = `${server}\u0000${tool}`;
  if (!mcpToolLabels.has(key)) {
    if (mcpToolLabels.size >= MCP_TOOL_LABELS) tool = "other";
    else mcpToolLabels.add(key);
  }
  metrics.mcpCalls.inc({ server, tool, decision });
}

/** One proxied request's time upstream and the time the gateway added, in seconds. */
export function observeGatewayLatency(upstreamSeconds: number, addedSeconds: number): void {
  gatewayTally.observe(upstreamSeconds, addedSeconds);
}

/** Statements by decision, handed to prom-client in batches and before every read (as GatewayTally does). */
class DbStatementTally {
  readonly #counts = new Map<string, number>();
  #counted = 0;

  count(decision: string): void {
    this.#counts.set(decision, (this.#counts.get(decision) ?? 0) + 1);
    if (++this.#counted >= TALLY_BATCH) this.flush();
  }

  flush(): void {
    if (this.#counted === 0) return;
    for (const [decision, n] of this.#counts) if (n > 0) metrics.dbStatements.inc({ decision }, n);
    this.#counts.clear();
    this.#counted = 0;
  }
}

const dbStatementTally = new DbStatementTally();

/** One statement the database listener judged and answered, by its request-log decision. */
export function countDbStatement(decision: string): void {
  dbStatementTally.count(decision);
}

// Process facts every scrape wants, without prom-client's default collectors (see src/types/prom-client-parts.d.ts).
const startedAt = Date.now() / 1000;
new Gauge({
  name: "process_resident_memory_bytes",
  help: "Resident memory size in bytes.",
  registers,
  collect() {
    this.set(process.memoryUsage.rss());
  },
});
new Gauge({
  name: "process_start_time_seconds",
  help: "Start time of the process since the Unix epoch, in seconds.",
  // Merged over gateway workers: the oldest process's.
  aggregator: "min",
  registers,
  collect() {
    this.set(startedAt);
  },
});

/** The `Content-Type` of the exposition (Prometheus text format 0.0.4). */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** One process's metrics as prom-client reports them (getMetricsAsJSON). */
export type MetricsJson = Awaited<ReturnType<typeof registry.getMetricsAsJSON>>;

/** The metrics of the other gateway processes (workers), merged into this one's exposition. */
let peers: (() => Promise<MetricsJson[]>) | null = null;

export function mergePeerMetrics(fn: () => Promise<MetricsJson[]>): void {
  peers = fn;
}

export function metricsJson(): Promise<MetricsJson> {
  return registry.getMetricsAsJSON();
}

/** The exposition text of every metric, summed over this process and its gateway workers. */
export async function metricsText(): Promise<string> {
  if (!peers) return registry.metrics();
  return exposition([await registry.getMetricsAsJSON(), ...(await peers())]);
}

const escapeLabel = (v: unknown) => String(v).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

/** Prometheus text for several processes' metrics: same name and labels summed (or the minimum, for `min`). */
export function exposition(processes: MetricsJson[]): string {
  const byName = new Map<string, { help: string; type: string; aggregator: string; values: Map<string, number> }>();
  for (const list of processes) {
    for (const m of list) {
      let entry = byName.get(m.name);
      if (!entry) byName.set(m.name, (entry = { help: m.help, type: String(m.type), aggregator: m.aggregator, values: new Map() }));
      for (const v of m.values) {
        const labels = Object.entries(v.labels).map(([k, x]) => `${k}="${escapeLabel(x)}"`).join(",");
        const key = `${(v as { metricName?: string }).metricName ?? m.name}${labels ? `{${labels}}` : ""}`;
        const prev = entry.values.get(key);
        entry.values.set(key, prev === undefined ? v.value : entry.aggregator === "min" ? Math.min(prev, v.value) : prev + v.value);
      }
    }
  }
  let out = "";
  for (const [name, m] of byName) {
    out += `# HELP ${name} ${m.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n# TYPE ${name} ${m.type}\n`;
    for (const [key, value] of m.values) out += `${key} ${value}\n`;
  }
  return out;
}

/** Distinct label values the LLM spend counters report per process; later newcomers are counted as `other`. */
const PROJECT_LABELS_MAX = 1000;
const MODEL_LABELS_MAX = 100;

/** LLM spend per (project, model), handed to prom-client before every read (as GatewayTally, to keep labelled `inc` off the request path). */
class LlmTally {
  readonly #projects = new Set<string>();
  readonly #models = new Map<string, string>();
  readonly #counts = new Map<string, { project: string; model: string; requests: number; usd: number }>();

  count(projectId: string, model: string, costNanos: number): void {
    const project = this.#projects.has(projectId) || this.#projects.size < PROJECT_LABELS_MAX ? (this.#projects.add(projectId), projectId) : "other";
    let label = this.#models.get(model);
    if (label === undefined) {
      label = this.#models.size < MODEL_LABELS_MAX ? model.slice(0, 64).replace(/[^A-Za-z0-9._:/@-]/g, "_") : "other";
      if (this.#models.size < MODEL_LABELS_MAX) this.#models.set(model, label);
    }
    const key = `${project}\u0000${label}`;
    const c = this.#counts.get(key);
    if (c) {
      c.requests++;
      c.usd += costNanos / 1e9;
    } else this.#counts.set(key, { project, model: label, requests: 1, usd: costNanos / 1e9 });
    if (this.#counts.size >= TALLY_BATCH) this.flush();
  }

  flush(): void {
    for (const c of this.#counts.values()) {
      const labels = { project: c.project, model: c.model };
      metrics.llmRequests.inc(labels, c.requests);
      if (c.usd > 0) metrics.llmSpend.inc(labels, c.usd);
    }
    this.#counts.clear();
  }
}

const llmTally = new LlmTally();

/** One admitted metered request's spend, by project and model (a model name as reported, in a safe alphabet, at most 64 characters). */
export function countLlmSpend(projectId: string, model: string, costNanos: number): void {
  llmTally.count(projectId, model, costNanos);
}
