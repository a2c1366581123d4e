// Where the gateway's time goes: the same load against stand-ins for each layer of the MITM path
// (bench/anatomy/server.ts) and against the real credgate, with the CPU each proxy process spends per
// request. Not part of `npm run bench`; run it when the gateway benchmark misses a target:
//
//   bun bench/anatomy.ts [--duration s] [--warmup s] [--connections n] [--json] [--only layers|whatif]
//
// "layers" measures stand-ins for each layer of the path; "whatif" measures the real credgate as is and with
// candidate fixes swapped in at run time (bench/anatomy/whatif.ts).
import type { RunningCredgate } from "../test/support/process.ts";
import { HOST, startGateway, startUpstreamEnv } from "./env.ts";
import type { LoadResult, Target } from "./load.ts";
import { flag, numberOption } from "./options.ts";
import { killAll, reapAll, runClient, startServer } from "./procs.ts";

const opts = {
  json: flag("--json", "BENCH_JSON"),
  durationMs: numberOption("--duration", "BENCH_DURATION", 3) * 1000,
  warmupMs: numberOption("--warmup", "BENCH_WARMUP", 1) * 1000,
  connections: Math.round(numberOption("--connections", "BENCH_CONNECTIONS", 32)),
  only: process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : undefined,
};

const LAYERS: { mode: string; label: string; connect: boolean }[] = [
  { mode: "tls-static", label: "front + node:tls termination, static answer", connect: true },
  { mode: "tls-pipe-static", label: "… + loopback pipe into internal Bun.serve, static answer", connect: true },
  { mode: "tls-pipe-fetch", label: "… + Bun fetch to the upstream (credgate's shape, no pipeline)", connect: true },
  { mode: "tls-pipe-fetch-signal", label: "… + forward.ts's abort signal and header timer per request", connect: true },
  { mode: "tls-pipe-fetch-pertls", label: "… tls-pipe-fetch + per-request tls {ca: roots+1, serverName} (pinned)", connect: true },
  { mode: "raw-pipe-tls-static", label: "front, raw pipe into a TLS Bun.serve, static answer", connect: true },
  { mode: "raw-pipe-tls-fetch", label: "… + Bun fetch to the upstream", connect: true },
  { mode: "bun-tls-fetch", label: "TLS Bun.serve + fetch, no CONNECT, no hop (floor)", connect: false },
];

interface Row {
  label: string;
  many: LoadResult;
  one: LoadResult;
}

const WHAT_IFS: { whatIf: string[]; label: string }[] = [
  { whatIf: [], label: "credgate as is" },
  { whatIf: ["log-time-ids"], label: "credgate + what-if log-time-ids" },
  { whatIf: ["no-log"], label: "credgate + no-log (bound)" },
];

const gateways: RunningCredgate[] = [];

async function main(): Promise<void> {
  const log = (msg: string) => {
    if (!opts.json) process.stderr.write(`· ${msg}\n`);
  };
  const up = await startUpstreamEnv(log);
  const { pki, upstream } = up;
  const measure = async (t: Target, pid: number): Promise<{ many: LoadResult; one: LoadResult }> => {
    const base = { task: "load" as const, warmupMs: opts.warmupMs, durationMs: opts.durationMs, path: "/", watch: { proxy: pid, upstream: upstream.proc.pid }, ...t };
    return { many: await runClient<LoadResult>({ ...base, connections: opts.connections }), one: await runClient<LoadResult>({ ...base, connections: 1 }) };
  };

  const rows: Row[] = [];
  log("direct");
  rows.push({ label: "direct to the upstream (no proxy)", ...(await measure(up.direct, 0)) });
  for (const layer of opts.only === "whatif" ? [] : LAYERS) {
    log(layer.mode);
    const srv = await startServer("anatomy/server.ts", [layer.mode, pki.certFile, pki.keyFile, pki.caFile, String(upstream.port)]);
    // The stand-ins present the upstream's own leaf, so the client trusts the upstream CA.
    const t: Target = layer.connect
      ? { host: HOST, port: upstream.port, caFile: pki.caFile, proxy: { host: "127.0.0.1", port: srv.port, token: "unused" } }
      : { host: HOST, port: srv.port, caFile: pki.caFile };
    rows.push({ label: `${layer.mode}: ${layer.label}`, ...(await measure(t, srv.proc.pid!)) });
    await srv.stop();
  }
  for (const w of opts.only === "layers" ? [] : WHAT_IFS) {
    const gw = await startGateway(up, { whatIf: w.whatIf, log });
    gateways.push(gw.credgate);
    const pid = gw.credgate.proc.pid;
    rows.push({ label: `${w.label}, CONNECT 127.0.0.1 (unpinned)`, ...(await measure(gw.mitmIp, pid)) });
    rows.push({ label: `${w.label}, CONNECT ${HOST} (pinned)`, ...(await measure(gw.mitm, pid)) });
    await gw.credgate.stop();
  }

  if (opts.json) {
    console.log(JSON.stringify({ options: opts, rows }, null, 2));
    return;
  }
  const f = (n: number, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : "-");
  const perReq = (r: LoadResult) => ((r.cpu.proxy ?? NaN) / 100) * (1e6 / r.rps);
  const direct = rows[0]!;
  console.log(`\nGET / through each layer — ${navigator.hardwareConcurrency} CPUs, ${opts.durationMs / 1000} s per run; proxy cpu = CPU time of the proxy process per request (all threads)\n`);
  console.log(`${"".padEnd(78)} ${`${opts.connections} conns`.padStart(9)} ${"proxy cpu".padStart(10)} ${"1 conn".padStart(8)} ${"p50".padStart(7)} ${"added".padStart(7)} ${"proxy cpu".padStart(10)}`);
  for (const r of rows) {
    console.log(
      `${r.label.slice(0, 78).padEnd(78)} ${f(r.many.rps).padStart(9)} ${`${f(perReq(r.many))} µs`.padStart(10)} ${f(r.one.rps).padStart(8)} ${f(r.one.latencyMs.p50, 3).padStart(7)} ${f(r.one.latencyMs.p50 - direct.one.latencyMs.p50, 3).padStart(7)} ${`${f(perReq(r.one))} µs`.padStart(10)}`,
    );
  }
  console.log("");
}

try {
  await main();
} catch (err) {
  console.error(`anatomy failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  killAll();
  for (const gw of gateways) await gw.stop();
  await reapAll();
}
