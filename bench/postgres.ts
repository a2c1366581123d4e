// The PostgreSQL broker's rows of `npm run bench` (bench/README.md, docs/databases.md): Debian's pgbench against the
// test PostgreSQL server (test/support/databaseServer.ts) directly and through credgate's database listener
// (one gateway process, CREDGATE_GATEWAY_WORKERS=1), in one run on one machine:
//   select-only (`pgbench -S`), 8 clients      goal: ≥ 0.6× of direct
//   TPC-B-like (`pgbench`), 8 clients          the database secret has `writes: allow`; goal the same
//   select-only, 1 client                      latency average: the latency credgate adds per statement
// Both hops are plain TCP on loopback (the agent side as `credgate run` sets it up on loopback, the upstream with
// `tls: off`), so that the figures are the relay's and the judge's, not TLS's. Placement as the HTTP rows
// (bench/placement.ts): credgate alone on CPU 0; pgbench on the other CPUs; the server beside pgbench through
// credgate and on credgate's idle CPU for direct runs. Each statement is judged and logged (a request-log row).
//
//   bun bench/postgres.ts [--duration s] [--scale n] [--rounds n] [--json] [--no-pin] [--profile dir] [--server-cpu idle|peers]
import { spawnSync } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startBroker, type Broker } from "../test/support/databaseBroker.ts";
import { startDatabaseServer, type DatabaseServer } from "../test/support/databaseServer.ts";
import { pgBinary } from "../test/support/postgres.ts";
import { flag, numberOption, pathOption } from "./options.ts";
import { onCpus, pinProcess, placement, type Placement } from "./placement.ts";

export const POSTGRES_TARGET = 0.6;
const SECRET = "bench_db";
const DATABASE = "bench";

export interface PgbenchRun {
  tps: number;
  latencyMs: number;
  transactions: number;
  /** credgate's CPU per statement over the run (µs), through credgate only. */
  gatewayCpuUsPerStatement: number | null;
}

export interface PostgresRows {
  clients: number;
  durationS: number;
  scale: number;
  serverCpu: "idle" | "peers";
  pinned: boolean;
  rounds: { selectOnly: { direct: PgbenchRun; credgate: PgbenchRun }; tpcb: { direct: PgbenchRun; credgate: PgbenchRun }; one: { direct: PgbenchRun; credgate: PgbenchRun } }[];
  /** Statements credgate counted in credgate_db_statements_total over the whole run (null: no such metric). */
  judgedStatements: number | null;
}

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime (fields 14 and 15)
}
const TICK_US = 1_000_000 / Number(spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim() || 100);

/** The server's postmaster and every process it forked (backends inherit the postmaster's CPUs). */
function pinServer(db: DatabaseServer, cpus: string): void {
  const pid = Number(readFileSync(join(db.dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  pinProcess(pid, cpus);
  const children = spawnSync(["ps", "-o", "pid=", "--ppid", String(pid)]).stdout.toString().trim().split(/\s+/).filter(Boolean);
  for (const child of children) {
    try {
      pinProcess(Number(child), cpus);
    } catch {
      // A backend that ended meanwhile.
    }
  }
}

async function pgbench(args: string[], env: Record<string, string>, cpus: string | undefined): Promise<{ tps: number; latencyMs: number; transactions: number }> {
  const proc = Bun.spawn([...onCpus(cpus), pgBinary("pgbench"), ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1];
  const latency = /latency average = ([\d.]+) ms/.exec(out)?.[1];
  const transactions = /number of transactions actually processed: (\d+)/.exec(out)?.[1];
  const failed = /number of failed transactions: (\d+)/.exec(out)?.[1];
  if (code !== 0 || !tps || !latency || (failed && Number(failed) > 0)) throw new Error(`pgbench ${args.join(" ")} failed (exit ${code}):\n${out}\n${err}`);
  return { tps: Number(tps), latencyMs: Number(latency), transactions: Number(transactions) };
}

export async function runPostgresRows(o: {
  cpus: Placement | null;
  durationS: number;
  scale: number;
  rounds: number;
  clients?: number;
  /** Run credgate under Bun's CPU profiler (.cpuprofile and .md written here when it stops). */
  profileDir?: string;
  /**
   * Where the server runs for direct runs: `idle` (default) on credgate's idle CPU, as the HTTP rows place their
   * upstream; `peers` beside pgbench in both kinds of run, so that the only difference is credgate's hop (on its
   * own CPU) between the same client and server.
   */
  serverCpu?: "idle" | "peers";
  log: (m: string) => void;
}): Promise<PostgresRows> {
  const clients = o.clients ?? 8;
  o.log(`PostgreSQL broker: a test server, pgbench -i -s ${o.scale}, credgate with one gateway process`);
  const db = await startDatabaseServer();
  let broker: Broker | null = null;
  try {
    await db.admin(`CREATE DATABASE ${DATABASE}`, "postgres");
    const init = spawnSync([pgBinary("pgbench"), "-i", "-q", "-s", String(o.scale), "-h", db.host, "-p", String(db.port), "-U", "postgres", DATABASE]);
    if (init.exitCode !== 0) throw new Error(`pgbench -i failed: ${init.stderr}`);
    await db.admin(`GRANT ALL ON ALL TABLES IN SCHEMA public TO scram_user`, DATABASE);
    await db.admin("VACUUM ANALYZE", DATABASE);
    const profiler: Record<string, string> = o.profileDir ? { BUN_OPTIONS: `--cpu-prof --cpu-prof-md --cpu-prof-dir=${o.profileDir}` } : {};
    broker = await startBroker({ db, env: { CREDGATE_GATEWAY_WORKERS: "1", ...profiler } });
    await broker.secret(SECRET, { user: "scram", tls: "off", writes: "allow" });
    const gatewayPid = broker.cg.proc.pid;
    if (o.cpus) pinProcess(gatewayPid, o.cpus.gateway);
    const peers = o.cpus?.peers;
    const directEnv = { PGPASSWORD: db.users.scram.password, PGSSLMODE: "disable" };
    const credgateEnv = { PGPASSWORD: broker.token, PGSSLMODE: "disable" };
    const target = (direct: boolean) => ["-h", "127.0.0.1", "-p", String(direct ? db.port : broker!.dbPort), "-U", direct ? "scram_user" : SECRET];
    // pgbench's -n: no VACUUM before the run (done once above; through credgate it would be a judged write).
    const run = async (direct: boolean, mode: string[], n: number, seconds: number): Promise<PgbenchRun> => {
      if (o.cpus) pinServer(db, direct && o.serverCpu !== "peers" ? o.cpus.gateway : o.cpus.peers);
      const before = cpuTicks(gatewayPid);
      const r = await pgbench([...target(direct), "-n", ...mode, "-c", String(n), "-j", String(Math.min(n, 2)), "-T", String(seconds), DATABASE], direct ? directEnv : credgateEnv, peers);
      const ticks = cpuTicks(gatewayPid) - before;
      // -S: one statement per transaction; TPC-B-like: seven (BEGIN, 3 UPDATE, SELECT, INSERT, END).
      const statements = r.transactions * (mode.includes("-S") ? 1 : 7);
      return { ...r, gatewayCpuUsPerStatement: direct ? null : (ticks * TICK_US) / Math.max(1, statements) };
    };
    // A warm-up through each path (connections, caches, the JIT), not counted.
    await run(true, ["-S"], clients, 2);
    await run(false, ["-S"], clients, 2);
    const rounds: PostgresRows["rounds"] = [];
    for (let i = 0; i < o.rounds; i++) {
      o.log(`PostgreSQL broker, round ${i + 1}/${o.rounds}: select-only and TPC-B-like with ${clients} clients, select-only with 1, ${o.durationS} s each (direct, credgate)`);
      const selectOnly = { direct: await run(true, ["-S"], clients, o.durationS), credgate: await run(false, ["-S"], clients, o.durationS) };
      const tpcb = { direct: await run(true, [], clients, o.durationS), credgate: await run(false, [], clients, o.durationS) };
      const one = { direct: await run(true, ["-S"], 1, o.durationS), credgate: await run(false, ["-S"], 1, o.durationS) };
      rounds.push({ selectOnly, tpcb, one });
    }
    // credgate's own count of the statements it judged (docs/databases.md#request-logs-and-metrics): proof each was judged.
    const metrics = await (await fetch(`${broker.cg.apiUrl}/metrics`)).text();
    const counted = [...metrics.matchAll(/^credgate_db_statements_total\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    const judgedStatements = metrics.includes("credgate_db_statements_total") ? counted : null;
    return { clients, durationS: o.durationS, scale: o.scale, serverCpu: o.serverCpu ?? "idle", pinned: o.cpus !== null, rounds, judgedStatements };
  } finally {
    await broker?.stop();
    db.stop();
  }
}

const f = (n: number | null, digits = 2) => (n === null || !Number.isFinite(n) ? "n/a" : n.toFixed(digits));
const fi = (n: number) => Math.round(n).toLocaleString("en-US");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function printPostgresRows(r: PostgresRows): void {
  const lines = [
    `PostgreSQL broker (docs/databases.md): pgbench (scale ${r.scale}, ${r.durationS} s per run) direct vs through credgate's database listener, one gateway process; plain TCP on loopback both hops; every statement judged and logged`,
    `  placement: ${!r.pinned ? "not pinned" : r.serverCpu === "peers" ? "credgate on CPU 0; pgbench and the server on the others in every run" : "credgate on CPU 0; pgbench on the others; the server beside pgbench through credgate, on CPU 0 for direct runs"}`,
  ];
  const ratios = { selectOnly: [] as number[], tpcb: [] as number[], added: [] as number[] };
  for (const [i, round] of r.rounds.entries()) {
    if (r.rounds.length > 1) lines.push(`  round ${i + 1}`);
    const row = (label: string, d: PgbenchRun, c: PgbenchRun, target: boolean) => {
      const ratio = c.tps / d.tps;
      lines.push(
        `  ${label.padEnd(30)} direct ${fi(d.tps).padStart(7)} tps   credgate ${fi(c.tps).padStart(7)} tps   ratio ${f(ratio)}${target ? `   [${ratio >= POSTGRES_TARGET ? "PASS" : "MISS"}] >= ${POSTGRES_TARGET}x` : ""}   gateway ${f(c.gatewayCpuUsPerStatement, 0)} µs cpu/statement`,
      );
      return ratio;
    };
    ratios.selectOnly.push(row(`select-only (-S), ${r.clients} clients`, round.selectOnly.direct, round.selectOnly.credgate, true));
    ratios.tpcb.push(row(`TPC-B-like, ${r.clients} clients`, round.tpcb.direct, round.tpcb.credgate, true));
    const added = round.one.credgate.latencyMs - round.one.direct.latencyMs;
    ratios.added.push(added);
    lines.push(`  ${"select-only, 1 client".padEnd(30)} direct ${f(round.one.direct.latencyMs, 3)} ms   credgate ${f(round.one.credgate.latencyMs, 3)} ms   added ${f(added, 3)} ms per statement`);
  }
  lines.push(`  statements judged (credgate_db_statements_total, warm-ups included): ${r.judgedStatements === null ? "no such metric" : fi(r.judgedStatements)}`);
  if (r.rounds.length > 1) lines.push(`  median of the rounds: select-only ${f(median(ratios.selectOnly))}x, TPC-B-like ${f(median(ratios.tpcb))}x, added ${f(median(ratios.added), 3)} ms`);
  lines.push("");
  console.log(lines.join("\n"));
}

function serverCpuOption(): "idle" | "peers" {
  const i = process.argv.indexOf("--server-cpu");
  const value = (i === -1 ? undefined : process.argv[i + 1]) ?? process.env.BENCH_PG_SERVER_CPU ?? "idle";
  if (value !== "idle" && value !== "peers") {
    console.error(`--server-cpu / BENCH_PG_SERVER_CPU must be idle or peers, got "${value}"`);
    process.exit(2);
  }
  return value;
}

if (import.meta.main) {
  const json = flag("--json", "BENCH_JSON");
  const log = (m: string) => {
    if (!json) process.stderr.write(`· ${m}\n`);
  };
  try {
    const rows = await runPostgresRows({
      cpus: placement(flag("--no-pin", "BENCH_NO_PIN")),
      durationS: numberOption("--duration", "BENCH_DURATION", 10),
      scale: Math.round(numberOption("--scale", "BENCH_PG_SCALE", 5)),
      rounds: Math.round(numberOption("--rounds", "BENCH_PG_ROUNDS", 1)),
      profileDir: pathOption("--profile", "BENCH_PROFILE"),
      serverCpu: serverCpuOption(),
      log,
    });
    if (json) console.log(JSON.stringify(rows, null, 2));
    else printPostgresRows(rows);
    process.exit(0);
  } catch (err) {
    console.error(`postgres bench failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  }
}
