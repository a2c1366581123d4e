// What-if experiments on the real credgate process without editing src/: loaded with
// `BUN_OPTIONS=--preload bench/anatomy/whatif.ts` and BENCH_WHATIF=<comma list>, it swaps one method of a
// service class for the candidate fix, so the benchmark can measure the gain before anyone changes the code.
//
//   pinned-session  Outbound.fetch: for a host pinned by CREDGATE_RESOLVE, one FetchSession per host with
//                   `tls: {ca, serverName}` on the session, instead of a per-request `tls` option
//   log-prepared    RequestLogService: the same batching (500 rows or the 5 s timer), written with one
//                   prepared single-row INSERT inside a transaction instead of drizzle multi-row inserts
//   no-log          RequestLogService.enqueue drops the row (an upper bound for the logging cost)
import { readFileSync } from "node:fs";
import * as net from "node:net";
import * as tls from "node:tls";
import { Outbound } from "../../src/services/outbound.ts";
import { RequestLogService, type RequestLogRow } from "../../src/services/requestLogs.ts";

const enabled = new Set((process.env.BENCH_WHATIF ?? "").split(",").map((s) => s.trim()).filter(Boolean));

if (enabled.has("pinned-session")) {
  const original = Outbound.prototype.fetch;
  const caFile = process.env.CREDGATE_UPSTREAM_CA_FILE;
  const ca = caFile ? [...tls.rootCertificates, readFileSync(caFile, "utf8")] : undefined;
  const sessions = new Map<string, Bun.FetchSession>();
  Outbound.prototype.fetch = function (this: Outbound, input: string | URL, init: BunFetchRequestInit = {}): Promise<Response> {
    const url = typeof input === "string" ? new URL(input) : input;
    const port = Number(url.port) || (url.protocol === "https:" ? 443 : 80);
    const target = this.dialTarget(url.hostname, port);
    if (target.address === target.host || url.protocol !== "https:") return original.call(this, input, init);
    const key = `${target.host}:${port}`;
    let session = sessions.get(key);
    if (!session) {
      session = new Bun.FetchSession({ proxy: false, tls: { ...(ca ? { ca } : {}), serverName: target.host } });
      sessions.set(key, session);
    }
    const pinned = new URL(url);
    pinned.hostname = net.isIPv6(target.address) ? `[${target.address}]` : target.address;
    const headers = new Headers(init.headers);
    if (!headers.has("host")) headers.set("host", url.host);
    return session.fetch(pinned, { ...init, headers });
  };
}

if (enabled.has("no-log")) {
  RequestLogService.prototype.enqueue = function () {};
}

if (enabled.has("log-prepared")) {
  type Internals = { deps: { db: { $client: import("bun:sqlite").Database } }; agents: { touch(seen: Map<string, string>): void } };
  const COLUMNS = ["id", "organization_id", "project_id", "agent_id", "method", "host", "path", "provider", "status", "latency_ms", "injection_count", "decision", "matched_rule_logical_id", "matched_rule_name", "approval_id", "cost_nanos", "created_at"] as const;
  const state = new WeakMap<RequestLogService, { queue: RequestLogRow[]; seen: Map<string, string>; write?: (rows: RequestLogRow[]) => void }>();
  const of = (svc: RequestLogService) => {
    let s = state.get(svc);
    if (!s) state.set(svc, (s = { queue: [], seen: new Map() }));
    return s;
  };
  const originalFlush = RequestLogService.prototype.flush;
  RequestLogService.prototype.enqueue = function (this: RequestLogService, row: RequestLogRow) {
    const s = of(this);
    s.queue.push(row);
    s.seen.set(row.agentId, row.createdAt);
    if (s.queue.length >= 500) this.flush();
  };
  RequestLogService.prototype.flush = function (this: RequestLogService) {
    originalFlush.call(this);
    const s = of(this);
    if (s.queue.length === 0 && s.seen.size === 0) return;
    const rows = s.queue;
    const seen = s.seen;
    s.queue = [];
    s.seen = new Map();
    const internals = this as unknown as Internals;
    if (!s.write) {
      const db = internals.deps.db.$client;
      const stmt = db.prepare(`INSERT INTO request_logs (${COLUMNS.join(",")}) VALUES (${COLUMNS.map(() => "?").join(",")})`);
      s.write = db.transaction((batch: RequestLogRow[]) => {
        for (const r of batch) {
          stmt.run(r.id, r.organizationId, r.projectId, r.agentId, r.method, r.host, r.path, r.provider, r.status, r.latencyMs, r.injectionCount, r.decision, r.matchedRuleLogicalId, r.matchedRuleName, r.approvalId, r.costNanos, r.createdAt);
        }
      });
    }
    s.write(rows);
    internals.agents.touch(seen);
  };
}

if (enabled.size > 0) process.stderr.write(`bench what-if active: ${[...enabled].join(", ")}\n`);
