// What writing one request-log row costs, on the real schema and pragmas (src/store/sqlite.ts), in batches of
// 500 like RequestLogService.flush: a drizzle multi-row insert, against the bun:sqlite prepared single-row
// insert SqliteStore.insertRequestLogs uses, each with random (uuid v4) and time-ordered ids.
//
//   bun bench/anatomy/request-logs.ts [rows, default 50000]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { requestLogs } from "../../src/store/schema.sqlite.ts";
import { DB_FILE, SqliteStore } from "../../src/store/sqlite.ts";
import { drizzle } from "drizzle-orm/bun-sqlite";

const TOTAL = Number(process.argv[2] ?? 50_000);
const BATCH = 500;

type Row = typeof requestLogs.$inferInsert;

let seq = 0;
function row(id: string): Row {
  return {
    id,
    organizationId: "org_aaaaaaaaaaaaaaaa",
    projectId: "prj_aaaaaaaaaaaaaaaa",
    agentId: "3f1d4a52-8c4b-4f0e-9d7e-0b6a1c2d3e4f",
    method: "GET",
    host: "bench.example.com:44321",
    path: "/v1/messages",
    provider: null,
    status: 200,
    latencyMs: 1,
    injectionCount: 1,
    decision: "allowed",
    matchedRuleLogicalId: null,
    matchedRuleName: null,
    approvalId: null,
    costNanos: null,
    createdAt: new Date(Date.UTC(2026, 0, 1) + seq++).toISOString(),
  };
}

const timeOrderedId = () => {
  // uuid v7 layout: 48-bit ms timestamp first, so consecutive ids land on the same index pages.
  const hex = Date.now().toString(16).padStart(12, "0") + crypto.randomUUID().replaceAll("-", "").slice(12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${hex.slice(13, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
};

type Db = ReturnType<typeof drizzle> & { $client: SqliteStore["client"] };

async function run(label: string, ids: () => string, write: (db: Db, rows: Row[]) => void): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "credgate-bench-logs-"));
  try {
    const store = await SqliteStore.open(join(dir, DB_FILE));
    const db = drizzle({ client: store.client }) as Db;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let done = 0; done < TOTAL; done += BATCH) {
      const rows = Array.from({ length: BATCH }, () => row(ids()));
      write(db, rows);
    }
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    console.log(`${label.padEnd(58)} ${((wall * 1000) / TOTAL).toFixed(1).padStart(6)} µs/row wall   ${(((cpu.user + cpu.system) / TOTAL)).toFixed(1).padStart(6)} µs/row cpu (${((cpu.system / (cpu.user + cpu.system)) * 100).toFixed(0)}% kernel)`);
    db.$client.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const drizzleBatch = (db: Db, rows: Row[]) =>
  db.transaction((tx) => {
    for (let i = 0; i < rows.length; i += 100) tx.insert(requestLogs).values(rows.slice(i, i + 100)).run();
  });

const COLUMNS = ["id", "organization_id", "project_id", "agent_id", "method", "host", "path", "provider", "status", "latency_ms", "injection_count", "decision", "matched_rule_logical_id", "matched_rule_name", "approval_id", "cost_nanos", "created_at"];
let prepared: { db: unknown; insert: (r: Row) => void; many: (rows: Row[]) => void } | null = null;
const preparedBatch = (db: Db, rows: Row[]) => {
  if (!prepared || prepared.db !== db) {
    const stmt = db.$client.prepare(`INSERT INTO request_logs (${COLUMNS.join(",")}) VALUES (${COLUMNS.map(() => "?").join(",")})`);
    const insert = (r: Row) =>
      stmt.run(r.id, r.organizationId, r.projectId, r.agentId, r.method, r.host, r.path, r.provider ?? null, r.status, r.latencyMs, r.injectionCount, r.decision, r.matchedRuleLogicalId ?? null, r.matchedRuleName ?? null, r.approvalId ?? null, r.costNanos ?? null, r.createdAt);
    prepared = { db, insert, many: db.$client.transaction((rs: Row[]) => rs.forEach(insert)) };
  }
  prepared.many(rows);
};

let drizzlePrepared: { db: unknown; many: (rows: Row[]) => void } | null = null;
const drizzlePreparedBatch = (db: Db, rows: Row[]) => {
  if (!drizzlePrepared || drizzlePrepared.db !== db) {
    const values = Object.fromEntries(Object.keys(requestLogs).filter((k) => k in row("x")).map((k) => [k, sql.placeholder(k)]));
    const stmt = db.insert(requestLogs).values(values as unknown as Row).prepare();
    drizzlePrepared = { db, many: db.$client.transaction((rs: Row[]) => rs.forEach((r) => stmt.run(r))) };
  }
  drizzlePrepared.many(rows);
};

console.log(`${TOTAL} request-log rows in batches of ${BATCH} (WAL, synchronous=NORMAL, real schema and indexes)`);
await run("drizzle 100-row inserts, uuid v4 ids", () => crypto.randomUUID(), drizzleBatch);
await run("drizzle 100-row inserts, time-ordered ids", timeOrderedId, drizzleBatch);
await run("prepared single-row insert (the store's), uuid v4 ids", () => crypto.randomUUID(), preparedBatch);
await run("prepared single-row insert, time-ordered ids", timeOrderedId, preparedBatch);
await run("drizzle .prepare() single-row insert, uuid v4 ids", () => crypto.randomUUID(), drizzlePreparedBatch);
await run("drizzle .prepare() single-row insert, time-ordered ids", timeOrderedId, drizzlePreparedBatch);
