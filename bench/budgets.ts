// The budgets row of `npm run bench` on its own, with more rounds (bench/budgetRounds.ts): the same metered
// JSON requests at 32 connections without budgets and under an agent, a project and an organization budget,
// alternating. Run: `bun bench/budgets.ts [--rounds 3]` (and bench/gateway.ts's --duration, --warmup,
// --connections, --profile dir, --no-pin).
import { budgetCost, budgetRounds } from "./budgetRounds.ts";
import { startBenchEnv } from "./env.ts";
import type { LoadResult } from "./load.ts";
import { flag, numberOption, pathOption } from "./options.ts";
import { pinProcess, placement } from "./placement.ts";
import { killAll, reapAll, runClient } from "./procs.ts";

const opts = {
  rounds: Math.round(numberOption("--rounds", "BENCH_ROUNDS", 3)),
  durationMs: numberOption("--duration", "BENCH_DURATION", 5) * 1000,
  warmupMs: numberOption("--warmup", "BENCH_WARMUP", 1) * 1000,
  connections: Math.round(numberOption("--connections", "BENCH_CONNECTIONS", 32)),
  profileDir: pathOption("--profile", "BENCH_PROFILE"),
  cpus: placement(flag("--no-pin", "BENCH_NO_PIN")),
};

const json1 = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
const cpuPerRequestUs = (r: LoadResult) => ((r.cpu.gateway ?? NaN) / 100) * (1e6 / r.rps);

const env = await startBenchEnv({ profileDir: opts.profileDir, log: (m) => process.stderr.write(`· ${m}\n`) });
try {
  if (opts.cpus) {
    pinProcess(env.credgate.proc.pid, opts.cpus.gateway);
    pinProcess(env.upstream.proc.pid, opts.cpus.peers);
  }
  const watch = { gateway: env.credgate.proc.pid, upstream: env.upstream.proc.pid };
  const run = () => runClient<LoadResult>({ task: "load", connections: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs, path: "/v1/messages", watch, ...env.llm, body: json1 }, opts.cpus?.peers);
  const r = await budgetRounds(env.credgate, run, opts.rounds);
  const line = (label: string, x: LoadResult) =>
    `  ${label.padEnd(11)} ${Math.round(x.rps).toLocaleString("en-US").padStart(7)} req/s   p50 ${x.latencyMs.p50.toFixed(3)} ms   gateway ${cpuPerRequestUs(x).toFixed(0)} µs cpu/req   errors ${x.errors}`;
  for (let i = 0; i < opts.rounds; i++) console.log(`${line("no budgets", r.without[i]!)}\n${line("3 budgets", r.under[i]!)}   spent ${r.spentCents[i]!.join("/")}¢`);
  console.log(`budgets cost ${(budgetCost(r) * 100).toFixed(1)} % of throughput (mean of ${opts.rounds} rounds); admissions from leases ${r.admissions.lease}, in the store ${r.admissions.store}`);
} finally {
  killAll();
  await env.credgate.stop();
  await reapAll();
}
