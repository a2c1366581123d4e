// The gateway benchmark's report (bench/gateway.ts): its targets, the shapes of its runs, and the table and
// rows printed for a person (the JSON document is written by the benchmark itself).
import type { LoadResult, SseResult } from "./load.ts";
import { DNS_HOST, HOST } from "./env.ts";
import type { placement } from "./placement.ts";
import { testEngine } from "../test/support/postgres.ts";
import { budgetCost, type BudgetRounds } from "./budgetRounds.ts";

/** The options the report states (bench/gateway.ts reads them from the command line). */
export interface ReportOptions {
  durationMs: number;
  warmupMs: number;
  connections: number;
  whatIf: string[];
  cpus: ReturnType<typeof placement>;
}

export const TARGETS = {
  throughputRatio: 0.3,
  peakRssMb: 150,
  rssAfterRatio: 1.2,
  addedP50Ms: 0.3,
  sseAddedMs: 5,
  /** Agent + project + organization budgets on metered requests: less than this share of their throughput. */
  budgetCost: 0.1,
};

/** direct: straight to the upstream. mitm: CONNECT bench.example.com (pinned with CREDGATE_RESOLVE), the
 * path the targets are about. mitmIp: CONNECT 127.0.0.1, so the gateway dials without a pin. */
export interface Runs<T> {
  direct: T;
  mitm: T;
  mitmIp: T;
}

export type Run = LoadResult & { upstream: { requests: number; connections: number } };
export type Checks = Record<"throughputRatio" | "addedP50Ms" | "sseFirstEventAddedMs", { value: number; target: string; pass: boolean }>;

export const LATENCY_ROUNDS = 3;

export function printTraced(r: Run & { spans: { exported: number; dropped: number }; exports: number; exportBytes: number }, many: Runs<Run>): void {
  console.log("Traces on (OTEL_EXPORTER_OTLP_ENDPOINT, every request sampled, docs/operations.md#traces): the MITM row's path on a second credgate");
  console.log(
    `  traced        ${fi(r.rps)} req/s   p50 ${f(r.latencyMs.p50)} ms   gateway ${f(cpuPerRequestUs(r), 0)} µs cpu/req (untraced ${f(cpuPerRequestUs(many.mitm), 0)})   ratio to direct ${f(r.rps / many.direct.rps)}` +
      ` (untraced ${f(many.mitm.rps / many.direct.rps)}): ${f((r.rps / many.mitm.rps) * 100, 1)}% of the untraced row`,
  );
  console.log(`  spans exported ${fi(r.spans.exported)}, dropped ${fi(r.spans.dropped)}, in ${fi(r.exports)} exports of ${f(r.exportBytes / Math.max(1, r.exports) / 1024, 1)} KiB on average`);
}

export function printPlaceholders(p: { header: Run; headerBaseline: Run; body: LoadResult; bodyBaseline: LoadResult; bodyBytes: number }, bodyPlaceholders: number): void {
  const mbps = (r: LoadResult) => (r.rps * p.bodyBytes) / 1048576;
  console.log(
    [
      "Placeholders (docs/injection.md#placeholders): the MITM path with substitution against the same requests with none",
      `  in a header     ${fi(p.header.rps).padStart(7)} req/s   p50 ${f(p.header.latencyMs.p50)} ms   gateway ${f(cpuPerRequestUs(p.header), 0)} µs cpu/req` +
        `   (none: ${fi(p.headerBaseline.rps)} req/s, ${f(cpuPerRequestUs(p.headerBaseline), 0)} µs cpu/req): ${f((p.header.rps / p.headerBaseline.rps) * 100, 1)}%`,
      `  1 MB JSON body, ${bodyPlaceholders} placeholders   ${fi(p.body.rps)} req/s = ${f(mbps(p.body), 1)} MB/s   p50 ${f(p.body.latencyMs.p50)} ms   gateway ${f(cpuPerRequestUs(p.body), 0)} µs cpu/req` +
        `   (none: ${fi(p.bodyBaseline.rps)} req/s = ${f(mbps(p.bodyBaseline), 1)} MB/s): ${f((p.body.rps / p.bodyBaseline.rps) * 100, 1)}%`,
      `  (${p.body.errors + p.bodyBaseline.errors + p.header.errors + p.headerBaseline.errors} errors)`,
    ].join("\n"),
  );
}

export function printLeakGuard(l: { secrets: number; on: LoadResult[]; off: LoadResult[] }): void {
  const mean = (rs: LoadResult[], fn: (r: LoadResult) => number) => rs.reduce((n, r) => n + fn(r), 0) / rs.length;
  const on = mean(l.on, (r) => r.rps);
  const off = mean(l.off, (r) => r.rps);
  const rounds = (rs: LoadResult[]) => rs.map((r) => fi(r.rps)).join(" / ");
  console.log(
    [
      `Credential leak guard (docs/guards.md#credential-leak-guard): the MITM row with ${l.secrets} more secrets in the project, guard on and off (two credgates, taking turns)`,
      `  on   ${fi(on).padStart(7)} req/s (rounds ${rounds(l.on)})   gateway ${f(mean(l.on, cpuPerRequestUs), 0)} µs cpu/req`,
      `  off  ${fi(off).padStart(7)} req/s (rounds ${rounds(l.off)})   gateway ${f(mean(l.off, cpuPerRequestUs), 0)} µs cpu/req   cost ${f((1 - on / off) * 100, 1)}% of the throughput (goal < 5%)`,
      "",
    ].join("\n"),
  );
}

const f = (n: number, digits = 3) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const fi = (n: number) => Math.round(n).toLocaleString("en-US");
const mark = (pass: boolean) => (pass ? "PASS" : "MISS");
const cpuText = (c: Record<string, number>) =>
  ["client", "gateway", "upstream", "other"]
    .filter((k) => c[k] !== undefined && Number.isFinite(c[k]!))
    .map((k) => `${k} ${Math.round(c[k]!)}%`)
    .join(", ");

export function printAllCores(all: { processes: number; direct: LoadResult; oneProcess: LoadResult; run: LoadResult }): void {
  console.log(`Not pinned: every process on any core (the client and upstream share the cores with the gateway), MITM, ${all.run.connections} connections`);
  console.log(`  direct          ${fi(all.direct.rps).padStart(7)} req/s   p50 ${f(all.direct.latencyMs.p50)} ms`);
  console.log(`  one process     ${fi(all.oneProcess.rps).padStart(7)} req/s   p50 ${f(all.oneProcess.latencyMs.p50)} ms   ratio to direct ${f(all.oneProcess.rps / all.direct.rps)}`);
  console.log(
    `  ${`${all.processes} processes`.padEnd(15)} ${fi(all.run.rps).padStart(7)} req/s   p50 ${f(all.run.latencyMs.p50)} ms   ratio to direct ${f(all.run.rps / all.direct.rps)} (--gateway-workers ${all.processes}, sharing the port)`,
  );
}

export function printCredentialCost(plain: Run, many: Runs<Run>): void {
  const cost = 1 - many.mitm.rps / plain.rps;
  console.log("What a credential costs (injection + echo guard, docs/guards.md#echo-guard): the MITM row against the same path with no secret for the host");
  console.log(
    `  no credential  ${fi(plain.rps)} req/s   gateway ${f(cpuPerRequestUs(plain), 0)} µs cpu/req   ratio to direct ${f(plain.rps / many.direct.rps)}` +
      ` (with one ${f(many.mitm.rps / many.direct.rps)}): ${f(cost * 100, 1)}% of the throughput`,
  );
}

export function printSigV4(run: Run, many: Runs<Run>): void {
  console.log("What re-signing costs (AWS Signature V4, docs/injection.md#aws-signature-v4): the agent's SigV4 request signed again with the real key, against the MITM row's header injection");
  console.log(
    `  SigV4         ${fi(run.rps)} req/s   p50 ${f(run.latencyMs.p50)} ms   gateway ${f(cpuPerRequestUs(run), 0)} µs cpu/req (header injection ${f(cpuPerRequestUs(many.mitm), 0)})` +
      `   ratio to direct ${f(run.rps / many.direct.rps)} (header injection ${f(many.mitm.rps / many.direct.rps)}): ${f((run.rps / many.mitm.rps) * 100, 1)}% of the header-injection row`,
  );
}

export function printDnsName(run: Run, many: Runs<Run>): void {
  console.log(`A name that is not pinned (${DNS_HOST}, CREDGATE_DNS_SERVERS, TTL 300 s, docs/operations.md#dns): the MITM row's path with the name resolved and cached`);
  console.log(
    `  DNS name      ${fi(run.rps)} req/s   gateway ${f(cpuPerRequestUs(run), 0)} µs cpu/req   ratio to direct ${f(run.rps / many.direct.rps)}` +
      ` (pinned ${f(many.mitm.rps / many.direct.rps)}): ${f((run.rps / many.mitm.rps) * 100, 1)}% of the pinned row`,
  );
}

/** CPU time the gateway process spent per request (all its threads). */
const cpuPerRequestUs = (r: LoadResult) => ((r.cpu.gateway ?? NaN) / 100) * (1e6 / r.rps);

const LABELS = { direct: "direct", mitm: "MITM", mitmIp: "MITM, IP" } as const;

export function printTable(many: Runs<Run>, one: Runs<Run>, stream: Runs<SseResult>, checks: Checks, ip: Record<keyof Checks, number>, errors: number, opts: ReportOptions): void {
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

export function printHttpsProxy(h: { many: Run; one: Run }, many: Runs<Run>, one: Runs<Run>, opts: ReportOptions): void {
  console.log(
    [
      "",
      "HTTPS proxy (TLS to the gateway port itself, then CONNECT and MITM inside it, docs/gateway.md#listener)",
      `  ${opts.connections} conns  ${fi(h.many.rps).padStart(7)} req/s   p50 ${f(h.many.latencyMs.p50)} ms   gateway ${f(cpuPerRequestUs(h.many), 0)} µs cpu/req   ratio to direct ${f(h.many.rps / many.direct.rps)} (plain proxy ${f(many.mitm.rps / many.direct.rps)})`,
      `  1 conn   p50 ${f(h.one.latencyMs.p50)} ms   added p50 ${f(h.one.latencyMs.p50 - one.direct.latencyMs.p50)} ms (plain proxy ${f(one.mitm.latencyMs.p50 - one.direct.latencyMs.p50)} ms; a single round)`,
    ].join("\n"),
  );
}

export function printMemory(m: { idleMb: number; peakMb: number; afterMb: number }, opts: ReportOptions): void {
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

export function printMetering(m: { sse: Record<"unmetered" | "metered", SseResult>; throughput: Record<"unmetered" | "metered", LoadResult> }): void {
  const rows = ["LLM metering (docs/budgets.md#metering): POST an Anthropic Messages request through the MITM path; /v1/messages is metered, /v1/unmetered is not"];
  for (const k of ["unmetered", "metered"] as const) {
    rows.push(`  ${k.padEnd(10)} SSE first event median ${f(m.sse[k].firstEventMs.p50)} ms   p90 ${f(m.sse[k].firstEventMs.p90)} ms   JSON ${fi(m.throughput[k].rps).padStart(7)} req/s   p50 ${f(m.throughput[k].latencyMs.p50)} ms   gateway ${f(cpuPerRequestUs(m.throughput[k]), 0)} µs cpu/req`);
  }
  rows.push(`  metering adds: ${f(m.sse.metered.firstEventMs.p50 - m.sse.unmetered.firstEventMs.p50)} ms to the first event; throughput ratio metered/unmetered ${f(m.throughput.metered.rps / m.throughput.unmetered.rps)}`);
  rows.push("");
  console.log(rows.join("\n"));
}

export function printBudgets(b: BudgetRounds): void {
  const cost = budgetCost(b);
  const row = (label: string, r: LoadResult) => `  ${label} ${fi(r.rps).padStart(7)} req/s   p50 ${f(r.latencyMs.p50)} ms   gateway ${f(cpuPerRequestUs(r), 0)} µs cpu/req   errors ${r.errors}`;
  console.log(
    [
      "LLM budgets (docs/budgets.md#budgets-for-every-scope, #leases): the same metered JSON requests without budgets and under an agent, a project and an organization budget, in alternating rounds",
      ...b.without.flatMap((w, i) => [row("no budgets", w), `${row("3 budgets ", b.under[i]!)}   spent ${b.spentCents[i]!.join("/")}¢`]),
      `  budgets cost ${f(cost * 100, 1)} % of throughput (mean of the rounds)   [${mark(cost < TARGETS.budgetCost)}] < ${TARGETS.budgetCost * 100} %   admissions from leases ${b.admissions.lease}, in the store ${b.admissions.store}`,
      "",
    ].join("\n"),
  );
}
