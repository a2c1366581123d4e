// Gateway benchmark: the real credgate process (MITM path, a secret injected) against the same HTTPS
// upstream reached directly. Three processes: the upstream (bench/upstream.ts), credgate (cli/main.ts)
// and the load client (bench/load.ts), so none shares an event loop with another.
//
//   npm run bench                         human-readable table (progress on stderr)
//   npm run -s bench -- --json            one JSON document on stdout
//   npm run bench -- --duration 10 --connections 64 --warmup 2 --sse-runs 50
//   BENCH_DURATION=10 BENCH_CONNECTIONS=64 BENCH_WARMUP=2 BENCH_SSE_RUNS=50 npm run bench
//   npm run bench -- --whatif log-time-ids      candidate changes swapped in at run time
//   CREDGATE_TEST_ENGINE=postgres npm run bench  credgate on a throwaway PostgreSQL server (test/support/postgres.ts)
//
// Targets are printed with pass/fail markers; a miss never changes the exit code (only a broken setup does).
// When one is missed, bench/anatomy.ts says where the time goes (bench/README.md).
import type { RunningCredgate } from "../test/support/process.ts";
import { DNS_HOST, HOST, startBenchEnv, startGateway } from "./env.ts";
import { RssWatch } from "./rss.ts";
import type { LoadResult, SseResult, Target } from "./load.ts";
import { flag, numberOption, pathOption, whatIfOption } from "./options.ts";
import { killAll, reapAll, runClient } from "./procs.ts";
import { pinProcess, placement } from "./placement.ts";
import { printH2Rows, runH2Rows } from "./h2.ts";
import { testEngine } from "../test/support/postgres.ts";

const TARGETS = {
  throughputRatio: 0.3,
  peakRssMb: 150,
  rssAfterRatio: 1.2,
  addedP50Ms: 0.3,
  sseAddedMs: 5,
};

// ---- options ----------------------------------------------------------------------------------------

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(`usage: npm run bench -- [--json] [--duration s] [--warmup s] [--connections n] [--sse-runs n]
  --duration     measured seconds per run (BENCH_DURATION, default 5)
  --warmup       warm-up seconds before each run (BENCH_WARMUP, default 1)
  --connections  keep-alive connections for the throughput runs (BENCH_CONNECTIONS, default 32)
  --sse-runs     SSE requests per path for time-to-first-event (BENCH_SSE_RUNS, default 20)
  --json         print one JSON document instead of the table
  --profile dir  run credgate under Bun's CPU profiler; writes .cpuprofile and .md profiles to dir on exit
                 (BENCH_PROFILE; the profiler slows the gateway, so the figures of such a run are not comparable)
  --whatif list  swap candidate changes into credgate at run time, comma list of no-log, log-time-ids
                 (BENCH_WHATIF; see bench/anatomy/whatif.ts); src/ is not touched
  --no-pin       let the scheduler place every process (BENCH_NO_PIN=1); by default credgate runs on CPU 0
                 and the load client and upstream on the others (taskset), as the ratio targets are one-core

Where the time goes, layer by layer and with the candidate fixes: bun bench/anatomy.ts (see bench/README.md).`);
  process.exit(0);
}

const opts = {
  json: flag("--json", "BENCH_JSON"),
  durationMs: numberOption("--duration", "BENCH_DURATION", 5) * 1000,
  warmupMs: numberOption("--warmup", "BENCH_WARMUP", 1) * 1000,
  connections: Math.round(numberOption("--connections", "BENCH_CONNECTIONS", 32)),
  sseRuns: Math.round(numberOption("--sse-runs", "BENCH_SSE_RUNS", 20)),
  profileDir: pathOption("--profile", "BENCH_PROFILE"),
  whatIf: whatIfOption("--whatif", "BENCH_WHATIF"),
  cpus: placement(flag("--no-pin", "BENCH_NO_PIN")),
};

const progress = (msg: string) => {
  if (!opts.json) process.stderr.write(`· ${msg}\n`);
};

let credgate: RunningCredgate | null = null;

// ---- the benchmark ------------------------------------------------------------------------------------

/** direct: straight to the upstream. mitm: CONNECT bench.example.com (pinned with CREDGATE_RESOLVE), the
 * path the targets are about. mitmIp: CONNECT 127.0.0.1, so the gateway dials without a pin. */
interface Runs<T> {
  direct: T;
  mitm: T;
  mitmIp: T;
}

type Run = LoadResult & { upstream: { requests: number; connections: number } };
type Checks = Record<"throughputRatio" | "addedP50Ms" | "sseFirstEventAddedMs", { value: number; target: string; pass: boolean }>;

const LATENCY_ROUNDS = 3;

/** The round whose p50 is the median, with every round's p50 alongside. */
function medianRound(runs: Run[]): Run & { roundP50s: number[] } {
  const sorted = [...runs].sort((a, b) => a.latencyMs.p50 - b.latencyMs.p50);
  return { ...sorted[Math.floor(sorted.length / 2)]!, roundP50s: runs.map((r) => r.latencyMs.p50) };
}

async function main(): Promise<void> {
  const env = await startBenchEnv({ profileDir: opts.profileDir, whatIf: opts.whatIf, log: progress });
  credgate = env.credgate;
  const { direct, mitm, mitmIp, mitmDns, llm, uncredentialed, upstream, upstreamStats } = env;
  const cpus = opts.cpus;
  if (cpus) {
    pinProcess(env.credgate.proc.pid, cpus.gateway);
    pinProcess(upstream.proc.pid, cpus.peers);
  }
  const peerCpus = cpus?.peers;

  const watch = { gateway: env.credgate.proc.pid, upstream: upstream.proc.pid };
  // Direct runs take the gateway's idle CPU for the upstream (the client stays where it is), as the peer
  // benchmark does: client and upstream never share a core in either kind of run.
  const placeUpstream = (t: Target) => {
    if (cpus) pinProcess(upstream.proc.pid, t === direct ? cpus.gateway : cpus.peers);
  };
  const load = async (t: Target, connections: number, durationMs = opts.durationMs): Promise<Run> => {
    placeUpstream(t);
    const before = await upstreamStats();
    const r = await runClient<LoadResult>({ task: "load", connections, warmupMs: opts.warmupMs, durationMs, path: "/", watch, ...t }, peerCpus);
    const after = await upstreamStats();
    // Minus the /stats request itself and its connection.
    return { ...r, upstream: { requests: after.requests - before.requests - 1, connections: after.connections - before.connections - 1 } };
  };
  const sse = (t: Target) => {
    placeUpstream(t);
    return runClient<SseResult>({ task: "sse", runs: opts.sseRuns, warmupRuns: 3, path: "/sse", ...t }, peerCpus);
  };

  const secs = opts.durationMs / 1000;
  progress(`throughput: ${opts.connections} connections, ${secs} s each (direct, MITM, MITM to the IP)`);
  const directRun = await load(direct, opts.connections);
  const rss = new RssWatch(env.credgate.proc.pid);
  const idleMb = rss.now();
  rss.start();
  const mitmRun = await load(mitm, opts.connections);
  const mitmIpRun = await load(mitmIp, opts.connections);
  rss.stop();
  await Bun.sleep(2000);
  // Read here, 2 s after the load as the table says (it was read after the later runs, under their load).
  const afterMb = rss.now();
  // The same MITM path to a name that is not pinned: resolved through DNS once, then from the cache (docs/operations.md#dns).
  progress(`DNS name: ${opts.connections} connections, ${secs} s`);
  const dnsNameRun = await load(mitmDns, opts.connections);
  // The same MITM path without a credential: what injection and the echo guard (docs/guards.md#echo-guard) cost together.
  progress(`no credential: ${opts.connections} connections, ${secs} s`);
  const uncredentialedRun = await load(uncredentialed, opts.connections);
  // The same MITM path with TLS to the proxy itself (docs/gateway.md#listener): what the extra TLS layer costs.
  const viaTls: Target = { ...mitm, proxy: { ...mitm.proxy!, tls: true } };
  progress(`HTTPS proxy: ${opts.connections} connections, ${secs} s, then 1 connection`);
  const httpsProxy = { many: await load(viaTls, opts.connections), one: await load(viaTls, 1, Math.max(1000, Math.round(opts.durationMs / LATENCY_ROUNDS))) };
  const memory = { idleMb, peakMb: rss.peak, afterMb };
  const many: Runs<Run> = { direct: directRun, mitm: mitmRun, mitmIp: mitmIpRun };
  // Single-connection latency depends on where the scheduler puts the processes (a wake-up on the same
  // core is far cheaper than one across cores, especially in a VM), and each load client is a new
  // process: so the three paths take turns over a few rounds, and the round with the median p50 counts.
  const roundMs = Math.max(1000, Math.round(opts.durationMs / LATENCY_ROUNDS));
  progress(`latency: 1 connection, ${LATENCY_ROUNDS} rounds of ${roundMs / 1000} s each (direct, MITM, MITM to the IP)`);
  const rounds: Runs<Run>[] = [];
  for (let i = 0; i < LATENCY_ROUNDS; i++) rounds.push({ direct: await load(direct, 1, roundMs), mitm: await load(mitm, 1, roundMs), mitmIp: await load(mitmIp, 1, roundMs) });
  const one: Runs<Run & { roundP50s: number[] }> = {
    direct: medianRound(rounds.map((r) => r.direct)),
    mitm: medianRound(rounds.map((r) => r.mitm)),
    mitmIp: medianRound(rounds.map((r) => r.mitmIp)),
  };
  progress(`SSE time to first event: ${opts.sseRuns} runs each (direct, MITM, MITM to the IP)`);
  const stream: Runs<SseResult> = { direct: await sse(direct), mitm: await sse(mitm), mitmIp: await sse(mitmIp) };

  // Not pinned, and all cores (docs/configuration.md#server-settings --gateway-workers): every process may use every core; direct, this credgate
  // (one gateway process) and a second one with one gateway process per core, on the same upstream.
  const cores = navigator.hardwareConcurrency;
  progress(`not pinned: direct, one gateway process, then a credgate with ${cores} gateway processes, ${opts.connections} connections, ${secs} s each`);
  if (cpus) {
    pinProcess(upstream.proc.pid, cpus.all);
    pinProcess(env.credgate.proc.pid, cpus.all);
  }
  const floating = (t: Target) => runClient<LoadResult>({ task: "load", connections: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs, path: "/", watch, ...t });
  const floatingDirect = await floating(direct);
  const floatingOne = await floating(mitm);
  const wide = await startGateway(env, { workers: cores, whatIf: opts.whatIf, log: progress });
  const allCores = { processes: cores, direct: floatingDirect, oneProcess: floatingOne, run: await floating(wide.mitm) };
  await wide.credgate.stop();
  if (cpus) pinProcess(env.credgate.proc.pid, cpus.gateway);
  placeUpstream(llm);

  // Metering (docs/budgets.md#metering): the same Anthropic answer through the MITM path, on the metered path and beside it.
  progress(`LLM metering: SSE first event and ${opts.connections}-connection throughput, metered vs unmetered`);
  const stream1 = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 64, stream: true, messages: [{ role: "user", content: "hi" }] });
  const json1 = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
  const metering = {
    sse: {
      unmetered: await runClient<SseResult>({ task: "sse", runs: opts.sseRuns, warmupRuns: 3, path: "/v1/unmetered", ...llm, body: stream1 }, peerCpus),
      metered: await runClient<SseResult>({ task: "sse", runs: opts.sseRuns, warmupRuns: 3, path: "/v1/messages", ...llm, body: stream1 }, peerCpus),
    },
    throughput: {
      unmetered: await runClient<LoadResult>({ task: "load", connections: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs, path: "/v1/unmetered", watch, ...llm, body: json1 }, peerCpus),
      metered: await runClient<LoadResult>({ task: "load", connections: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs, path: "/v1/messages", watch, ...llm, body: json1 }, peerCpus),
    },
  };

  // HTTP/2 and gRPC on one connection (bench/h2.ts): after the HTTP/1.1 rows, so those are measured as before.
  const http2 = await runH2Rows(env, { cpus, streams: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs, log: progress });

  const ratio = many.mitm.rps / many.direct.rps;
  const addedP50 = one.mitm.latencyMs.p50 - one.direct.latencyMs.p50;
  const sseAdded = stream.mitm.firstEventMs.p50 - stream.direct.firstEventMs.p50;
  const checks: Checks = {
    throughputRatio: { value: ratio, target: `>= ${TARGETS.throughputRatio}`, pass: ratio >= TARGETS.throughputRatio },
    addedP50Ms: { value: addedP50, target: `<= ${TARGETS.addedP50Ms}`, pass: addedP50 <= TARGETS.addedP50Ms },
    sseFirstEventAddedMs: { value: sseAdded, target: `<= ${TARGETS.sseAddedMs}`, pass: sseAdded <= TARGETS.sseAddedMs },
  };
  const ip = {
    throughputRatio: many.mitmIp.rps / many.direct.rps,
    addedP50Ms: one.mitmIp.latencyMs.p50 - one.direct.latencyMs.p50,
    sseFirstEventAddedMs: stream.mitmIp.firstEventMs.p50 - stream.direct.firstEventMs.p50,
  };
  const errors = [...Object.values(many), ...rounds.flatMap((r) => Object.values(r))].reduce((n, r) => n + r.errors, 0);

  const report = {
    machine: { cpus: navigator.hardwareConcurrency, bun: Bun.version, platform: process.platform },
    store: testEngine(),
    options: { durationMs: opts.durationMs, warmupMs: opts.warmupMs, connections: opts.connections, sseRuns: opts.sseRuns, latencyRounds: LATENCY_ROUNDS, whatIf: opts.whatIf, placement: opts.cpus },
    throughput: many,
    latency1: one,
    sse: stream,
    memory,
    httpsProxy,
    uncredentialed: uncredentialedRun,
    dnsName: dnsNameRun,
    allCores,
    checks,
    unpinned: ip,
    metering,
    http2,
    errors,
  };

  if (opts.json) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    printTable(many, one, stream, checks, ip, errors);
    printMemory(memory);
    printHttpsProxy(httpsProxy, many, one);
    printCredentialCost(uncredentialedRun, many);
    printDnsName(dnsNameRun, many);
    printAllCores(allCores);
    printMetering(metering);
    printH2Rows(http2, TARGETS.throughputRatio);
  }
}

// ---- output -------------------------------------------------------------------------------------------

const f = (n: number, digits = 3) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const fi = (n: number) => Math.round(n).toLocaleString("en-US");
const mark = (pass: boolean) => (pass ? "PASS" : "MISS");
const cpuText = (c: Record<string, number>) =>
  ["client", "gateway", "upstream", "other"]
    .filter((k) => c[k] !== undefined && Number.isFinite(c[k]!))
    .map((k) => `${k} ${Math.round(c[k]!)}%`)
    .join(", ");

function printAllCores(all: { processes: number; direct: LoadResult; oneProcess: LoadResult; run: LoadResult }): void {
  console.log(`Not pinned: every process on any core (the client and upstream share the cores with the gateway), MITM, ${all.run.connections} connections`);
  console.log(`  direct          ${fi(all.direct.rps).padStart(7)} req/s   p50 ${f(all.direct.latencyMs.p50)} ms`);
  console.log(`  one process     ${fi(all.oneProcess.rps).padStart(7)} req/s   p50 ${f(all.oneProcess.latencyMs.p50)} ms   ratio to direct ${f(all.oneProcess.rps / all.direct.rps)}`);
  console.log(
    `  ${`${all.processes} processes`.padEnd(15)} ${fi(all.run.rps).padStart(7)} req/s   p50 ${f(all.run.latencyMs.p50)} ms   ratio to direct ${f(all.run.rps / all.direct.rps)} (--gateway-workers ${all.processes}, sharing the port)`,
  );
}

function printCredentialCost(plain: Run, many: Runs<Run>): void {
  const cost = 1 - many.mitm.rps / plain.rps;
  console.log("What a credential costs (injection + echo guard, docs/guards.md#echo-guard): the MITM row against the same path with no secret for the host");
  console.log(
    `  no credential  ${fi(plain.rps)} req/s   gateway ${f(cpuPerRequestUs(plain), 0)} µs cpu/req   ratio to direct ${f(plain.rps / many.direct.rps)}` +
      ` (with one ${f(many.mitm.rps / many.direct.rps)}): ${f(cost * 100, 1)}% of the throughput`,
  );
}

function printDnsName(run: Run, many: Runs<Run>): void {
  console.log(`A name that is not pinned (${DNS_HOST}, CREDGATE_DNS_SERVERS, TTL 300 s, docs/operations.md#dns): the MITM row's path with the name resolved and cached`);
  console.log(
    `  DNS name      ${fi(run.rps)} req/s   gateway ${f(cpuPerRequestUs(run), 0)} µs cpu/req   ratio to direct ${f(run.rps / many.direct.rps)}` +
      ` (pinned ${f(many.mitm.rps / many.direct.rps)}): ${f((run.rps / many.mitm.rps) * 100, 1)}% of the pinned row`,
  );
}

/** CPU time the gateway process spent per request (all its threads). */
const cpuPerRequestUs = (r: LoadResult) => ((r.cpu.gateway ?? NaN) / 100) * (1e6 / r.rps);

const LABELS = { direct: "direct", mitm: "MITM", mitmIp: "MITM, IP" } as const;

function printTable(many: Runs<Run>, one: Runs<Run>, stream: Runs<SseResult>, checks: Checks, ip: Record<keyof Checks, number>, errors: number): void {
  const rows: string[] = [];
  const loadRows = (runs: Runs<Run>) => {
    for (const k of ["direct", "mitm", "mitmIp"] as const) {
      const r = runs[k];
      rows.push(
        `  ${LABELS[k].padEnd(9)} ${fi(r.rps).padStart(8)} req/s   p50 ${f(r.latencyMs.p50)} ms   p99 ${f(r.latencyMs.p99)} ms   ` +
          `connect ${f(r.connectMs, 1)} ms   upstream conns ${r.upstream.connections}   cpu: ${cpuText(r.cpu)}` +
          (k === "direct" ? "" : `   gateway ${f(cpuPerRequestUs(r), 0)} µs cpu/req`) +
          ("roundP50s" in r ? `   round p50s ${(r.roundP50s as number[]).map((v) => f(v)).join(" / ")}` : ""),
      );
    }
  };
  rows.push("");
  rows.push(`credgate gateway benchmark — ${navigator.hardwareConcurrency} CPUs, Bun ${Bun.version}, ${opts.durationMs / 1000} s measured after ${opts.warmupMs / 1000} s warm-up, store: ${testEngine()}`);
  if (opts.whatIf.length) rows.push(`WHAT-IF RUN: credgate with ${opts.whatIf.join(", ")} swapped in (bench/anatomy/whatif.ts), not the code as committed`);
  rows.push(`MITM = CONNECT ${HOST} (pinned with CREDGATE_RESOLVE); MITM, IP = CONNECT 127.0.0.1 (no pin: the gateway's plain fetch path)`);
  rows.push("cpu = % of one core over the measured window (client = load generator, other = everything else on the machine)");
  rows.push(
    opts.cpus
      ? `placement (taskset, as ../shared/peer-bench): credgate on CPU ${opts.cpus.gateway}, load client on CPU ${opts.cpus.peers}, upstream on CPU ${opts.cpus.peers} (direct runs: CPU ${opts.cpus.gateway})`
      : "placement: not pinned (--no-pin, one CPU or no taskset): the gateway shares its cores with the load",
  );
  rows.push("");
  rows.push(`GET / (small JSON), ${many.direct.connections} keep-alive connections`);
  loadRows(many);
  rows.push(`  ratio MITM/direct: ${f(checks.throughputRatio.value)}   (MITM, IP: ${f(ip.throughputRatio)})`);
  rows.push("");
  rows.push(`GET / (small JSON), 1 keep-alive connection (the median of ${LATENCY_ROUNDS} rounds by p50)`);
  loadRows(one);
  rows.push(`  added p50: ${f(checks.addedP50Ms.value)} ms   (MITM, IP: ${f(ip.addedP50Ms)} ms)`);
  rows.push("");
  rows.push(`GET /sse, request write → bytes of the first event (${stream.direct.runs} runs on a warm connection)`);
  for (const k of ["direct", "mitm", "mitmIp"] as const) {
    const r = stream[k];
    rows.push(`  ${LABELS[k].padEnd(9)} median ${f(r.firstEventMs.p50)} ms   p90 ${f(r.firstEventMs.p90)} ms   max ${f(r.firstEventMs.max)} ms   (whole stream ${f(r.totalMs.p50, 1)} ms)`);
  }
  rows.push(`  added: ${f(checks.sseFirstEventAddedMs.value)} ms   (MITM, IP: ${f(ip.sseFirstEventAddedMs)} ms)`);
  rows.push("");
  rows.push("Targets (MITM)");
  rows.push(`  [${mark(checks.throughputRatio.pass)}] throughput >= ${TARGETS.throughputRatio}x direct at ${many.direct.connections} connections: ${f(checks.throughputRatio.value)}x`);
  rows.push(`  [${mark(checks.addedP50Ms.pass)}] added p50 <= ${TARGETS.addedP50Ms} ms at 1 connection: ${f(checks.addedP50Ms.value)} ms`);
  rows.push(`  [${mark(checks.sseFirstEventAddedMs.pass)}] SSE first event added <= ${TARGETS.sseAddedMs} ms: ${f(checks.sseFirstEventAddedMs.value)} ms`);
  if (errors > 0) rows.push(`  (${errors} non-200 answers or socket errors during the runs)`);
  const busy = Math.max(...[...Object.values(many), ...Object.values(one)].map((r) => r.cpu.other ?? 0));
  if (busy > 20) rows.push(`  warning: other processes used up to ${Math.round(busy)}% of a core during a run; the figures are noisy`);
  rows.push("");
  console.log(rows.join("\n"));
}

function printHttpsProxy(h: { many: Run; one: Run }, many: Runs<Run>, one: Runs<Run>): void {
  console.log(
    [
      "",
      "HTTPS proxy (TLS to the gateway port itself, then CONNECT and MITM inside it, docs/gateway.md#listener)",
      `  ${opts.connections} conns  ${fi(h.many.rps).padStart(7)} req/s   p50 ${f(h.many.latencyMs.p50)} ms   gateway ${f(cpuPerRequestUs(h.many), 0)} µs cpu/req   ratio to direct ${f(h.many.rps / many.direct.rps)} (plain proxy ${f(many.mitm.rps / many.direct.rps)})`,
      `  1 conn   p50 ${f(h.one.latencyMs.p50)} ms   added p50 ${f(h.one.latencyMs.p50 - one.direct.latencyMs.p50)} ms (plain proxy ${f(one.mitm.latencyMs.p50 - one.direct.latencyMs.p50)} ms; a single round)`,
    ].join("\n"),
  );
}

function printMemory(m: { idleMb: number; peakMb: number; afterMb: number }): void {
  const peakOk = m.peakMb < TARGETS.peakRssMb;
  const afterOk = m.afterMb <= m.idleMb * TARGETS.rssAfterRatio;
  console.log(
    [
      "",
      `Gateway memory (RSS, sampled every 100 ms through both ${opts.connections}-connection MITM runs)`,
      `  idle ${f(m.idleMb, 1)} MB   peak ${f(m.peakMb, 1)} MB   2 s after the load ${f(m.afterMb, 1)} MB`,
      `  [${mark(peakOk)}] peak < ${TARGETS.peakRssMb} MB   [${mark(afterOk)}] after the load within ${Math.round((TARGETS.rssAfterRatio - 1) * 100)}% of idle`,
    ].join("\n"),
  );
}

/** Samples a process's resident set size (Linux /proc) to find its peak. */
function printMetering(m: { sse: Record<"unmetered" | "metered", SseResult>; throughput: Record<"unmetered" | "metered", LoadResult> }): void {
  const rows = ["LLM metering (docs/budgets.md#metering): POST an Anthropic Messages request through the MITM path; /v1/messages is metered, /v1/unmetered is not"];
  for (const k of ["unmetered", "metered"] as const) {
    rows.push(`  ${k.padEnd(10)} SSE first event median ${f(m.sse[k].firstEventMs.p50)} ms   p90 ${f(m.sse[k].firstEventMs.p90)} ms   JSON ${fi(m.throughput[k].rps).padStart(7)} req/s   p50 ${f(m.throughput[k].latencyMs.p50)} ms   gateway ${f(cpuPerRequestUs(m.throughput[k]), 0)} µs cpu/req`);
  }
  rows.push(`  metering adds: ${f(m.sse.metered.firstEventMs.p50 - m.sse.unmetered.firstEventMs.p50)} ms to the first event; throughput ratio metered/unmetered ${f(m.throughput.metered.rps / m.throughput.unmetered.rps)}`);
  rows.push("");
  console.log(rows.join("\n"));
}

try {
  await main();
} catch (err) {
  console.error(`bench failed: ${(err as Error).stack ?? err}`);
  const cg = credgate as RunningCredgate | null;
  if (cg) console.error(`credgate output:\n${cg.output().slice(-4000)}`);
  process.exitCode = 1;
} finally {
  killAll();
  await (credgate as RunningCredgate | null)?.stop();
  await reapAll();
}
