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
import { addWatchedSecrets, DNS_HOST, HOST, PLACEHOLDER, startBenchEnv, startGateway } from "./env.ts";
import { RssWatch } from "./rss.ts";
import type { LoadResult, SseResult, Target } from "./load.ts";
import { flag, numberOption, pathOption, whatIfOption } from "./options.ts";
import { killAll, reapAll, runClient } from "./procs.ts";
import { pinProcess, placement } from "./placement.ts";
import { printH2Rows, runH2Rows } from "./h2.ts";
import { printSshClone, runSshClone } from "./sshClone.ts";
import { printPostgresRows, runPostgresRows } from "./postgres.ts";
import { testEngine } from "../test/support/postgres.ts";
import { tempDir } from "../test/support/tmp.ts";
import { budgetCost, budgetRounds, type BudgetRounds } from "./budgetRounds.ts";
import { printStoreValue, storeTarget, storeValueRounds } from "./storeValue.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { LATENCY_ROUNDS, printAllCores, printBudgets, printCredentialCost, printDnsName, printHttpsProxy, printLeakGuard, printMemory, printMetering, printPlaceholders, printSigV4, printTable, printTraced, TARGETS, type Checks, type Run, type Runs } from "./gatewayReport.ts";

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

/** The round whose p50 is the median, with every round's p50 alongside. */
function medianRound(runs: Run[]): Run & { roundP50s: number[] } {
  const sorted = [...runs].sort((a, b) => a.latencyMs.p50 - b.latencyMs.p50);
  return { ...sorted[Math.floor(sorted.length / 2)]!, roundP50s: runs.map((r) => r.latencyMs.p50) };
}

async function main(): Promise<void> {
  const env = await startBenchEnv({ profileDir: opts.profileDir, whatIf: opts.whatIf, log: progress });
  credgate = env.credgate;
  const { direct, mitm, mitmIp, mitmDns, llm, uncredentialed, placeholder, upstream, upstreamStats } = env;
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
  const load = async (t: Target, connections: number, durationMs = opts.durationMs, watching = watch): Promise<Run> => {
    placeUpstream(t);
    const before = await upstreamStats();
    const r = await runClient<LoadResult>({ task: "load", connections, warmupMs: opts.warmupMs, durationMs, path: "/", watch: watching, ...t }, peerCpus);
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
  // The same MITM path on a second credgate with traces on (docs/operations.md#traces): every request sampled, its
  // spans exported over OTLP/HTTP (protobuf, the default batching) to a sink on loopback. The MITM row above is
  // the same code with tracing off.
  progress(`traces on: ${opts.connections} connections, ${secs} s`);
  const traced = await tracedRow(env, (t, pid) => load(t, opts.connections, opts.durationMs, { ...watch, gateway: pid }));
  // The same MITM path without a credential: what injection and the echo guard (docs/guards.md#echo-guard) cost together.
  progress(`no credential: ${opts.connections} connections, ${secs} s`);
  const uncredentialedRun = await load(uncredentialed, opts.connections);
  // The same MITM path with an AWS secret: every request signed again with the real key (docs/injection.md#aws-signature-v4).
  progress(`SigV4 re-signing: ${opts.connections} connections, ${secs} s`);
  const sigv4Run = await load(env.sigv4, opts.connections);
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

  // Budgets for every scope (docs/budgets.md#budgets-for-every-scope): the same metered requests without budgets and
  // under an agent, a project and an organization budget (large enough never to refuse), in alternating rounds.
  progress(`LLM budgets: ${opts.connections}-connection throughput, metered, without and with agent + project + organization budgets, 2 rounds`);
  const meteredRun = () => runClient<LoadResult>({ task: "load", connections: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs, path: "/v1/messages", watch, ...llm, body: json1 }, peerCpus);
  const budgets = await budgetRounds(env.credgate, meteredRun, 2);
  // Placeholders (docs/injection.md#placeholders): one in a header against the same request with no secret for
  // the host; a 1 MB JSON body with placeholders against the same body where nothing is substituted.
  if (cpus) pinProcess(upstream.proc.pid, cpus.peers);
  progress(`placeholders: in a header, and a 1 MB JSON body with ${BODY_PLACEHOLDERS} of them, ${opts.connections} connections, ${secs} s each`);
  const megabyte = jsonWithPlaceholders(1024 * 1024);
  const bodyFile = join(tempDir("credgate-bench-"), "placeholders.json");
  writeFileSync(bodyFile, megabyte);
  const bodyRun = (t: Target) => runClient<LoadResult>({ task: "load", connections: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs, path: "/body", watch, ...t, bodyFile }, peerCpus);
  const placeholders = {
    header: await load(placeholder, opts.connections),
    headerBaseline: await load(uncredentialed, opts.connections),
    body: await bodyRun(placeholder),
    bodyBaseline: await bodyRun(uncredentialed),
    bodyBytes: Buffer.byteLength(megabyte),
  };
  // A value read from a secret store (bench/storeValue.ts, docs/injection.md#secret-stores): cached, against the inline secret.
  progress(`store value: cmd:// (cached) vs inline header secret, ${opts.connections} connections, 3 rounds each, ${secs} s each`);
  const storeRun = (t: Target) => runClient<LoadResult>({ task: "load", connections: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs, path: "/", watch, ...t }, peerCpus);
  const storeValue = await storeValueRounds(storeRun, mitm, await storeTarget(env));
  // HTTP/2 and gRPC on one connection (bench/h2.ts): after the HTTP/1.1 rows, so those are measured as before.
  const http2 = await runH2Rows(env, { cpus, streams: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs, log: progress });
  // The credential leak guard (docs/guards.md#credential-leak-guard) on the MITM row: with WATCHED more secrets in
  // the project (each value's forms watched on every request), this credgate against a second one with
  // CREDGATE_LEAK_GUARD=off and the same secrets, taking turns. Last, so that no other row runs with them.
  progress(`leak guard: MITM with ${WATCHED} more secrets, guard on and off (a second credgate), 2 rounds each, ${secs} s each`);
  await addWatchedSecrets(env.credgate, WATCHED);
  const off = await startGateway(env, { env: { CREDGATE_LEAK_GUARD: "off" }, whatIf: opts.whatIf, log: progress });
  await addWatchedSecrets(off.credgate, WATCHED);
  if (cpus) {
    pinProcess(off.credgate.proc.pid, cpus.gateway);
    pinProcess(upstream.proc.pid, cpus.peers);
  }
  const guardRun = (t: Target, pid: number) => runClient<LoadResult>({ task: "load", connections: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs, path: "/", watch: { gateway: pid, upstream: upstream.proc.pid }, ...t }, peerCpus);
  const on: LoadResult[] = [];
  const offRuns: LoadResult[] = [];
  for (let i = 0; i < 2; i++) {
    on.push(await guardRun(mitm, env.credgate.proc.pid));
    offRuns.push(await guardRun(off.mitm, off.credgate.proc.pid));
  }
  await off.credgate.stop();
  const leakGuard = { secrets: WATCHED, on, off: offRuns };
  // The PostgreSQL broker (bench/postgres.ts, docs/databases.md): pgbench direct and through a credgate of its own.
  // A machine without Debian's PostgreSQL and pgbench still gets the HTTP rows: the reason is printed instead.
  const postgres = await runPostgresRows({ cpus, durationS: secs, scale: 5, rounds: 1, log: progress }).catch((err: Error) => ({ error: err.message }));
  // git clone over SSH (bench/sshClone.ts, docs/ssh.md#the-ssh-implementation): its own sshd and credgate.
  progress("ssh clone: a 30 MB repository over SSH, direct and through credgate, 3 rounds each");
  const sshClone = await runSshClone(progress);

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
    sigv4: sigv4Run,
    dnsName: dnsNameRun,
    traced,
    allCores,
    checks,
    unpinned: ip,
    metering,
    budgets,
    placeholders,
    storeValue,
    leakGuard,
    http2,
    sshClone,
    postgres,
    errors,
  };

  if (opts.json) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    printTable(many, one, stream, checks, ip, errors, opts);
    printMemory(memory, opts);
    printHttpsProxy(httpsProxy, many, one, opts);
    printCredentialCost(uncredentialedRun, many);
    printSigV4(sigv4Run, many);
    printDnsName(dnsNameRun, many);
    printTraced(traced, many);
    printAllCores(allCores);
    printMetering(metering);
    printBudgets(budgets);
    printPlaceholders(placeholders, BODY_PLACEHOLDERS);
    printStoreValue(storeValue);
    printLeakGuard(leakGuard);
    printH2Rows(http2, TARGETS.throughputRatio);
    if ("error" in postgres) console.log(`PostgreSQL broker rows not measured: ${postgres.error}\n`);
    else printPostgresRows(postgres);
    printSshClone(sshClone);
  }
}

/**
 * The traced row: a credgate exporting to an OTLP/HTTP sink that reads every body and answers 200 (a collector
 * that keeps up), pinned where the first one is; the spans it exported and dropped are read from its /metrics.
 */
async function tracedRow(env: Awaited<ReturnType<typeof startBenchEnv>>, run: (t: Target, pid: number) => Promise<Run>) {
  let exports = 0;
  let bytes = 0;
  const sink = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      bytes += (await req.arrayBuffer()).byteLength;
      exports++;
      return new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } });
    },
  });
  const gw = await startGateway(env, { whatIf: opts.whatIf, log: progress, env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.port}` } });
  if (opts.cpus) pinProcess(gw.credgate.proc.pid, opts.cpus.gateway);
  const r = await run(gw.mitm, gw.credgate.proc.pid);
  await Bun.sleep(6000); // the last batch leaves after the 5 s schedule delay
  const text = await (await fetch(`${gw.credgate.apiUrl}/metrics`)).text();
  const count = (re: RegExp) => [...text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
  const spans = { exported: count(/^credgate_trace_spans_exported_total (\d+)/gm), dropped: count(/^credgate_trace_spans_dropped_total\{[^}]*\} (\d+)/gm) };
  await gw.credgate.stop();
  sink.stop(true);
  return { ...r, spans, exports, exportBytes: bytes };
}


const BODY_PLACEHOLDERS = 16;
const WATCHED = 50;

/** A JSON document of `size` bytes whose one string holds the placeholder BODY_PLACEHOLDERS times, spread out. */
function jsonWithPlaceholders(size: number): string {
  const inner = size - '{"data":""}'.length;
  const gap = Math.floor((inner - BODY_PLACEHOLDERS * PLACEHOLDER.length) / BODY_PLACEHOLDERS);
  const piece = "a".repeat(gap) + PLACEHOLDER;
  const text = piece.repeat(BODY_PLACEHOLDERS);
  return `{"data":"${text}${"a".repeat(inner - text.length)}"}`;
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
