// Where the gateway's CPU goes per request, split into front, pipeline and upstream (`npm run bench:split`).
// One 32-connection MITM run with credgate under Bun's CPU profiler; every sample is charged to the part whose
// code it is in — native frames (socket writes, TLS) to their nearest caller in src/ — and the shares are scaled
// by that run's measured CPU per request. The profiler slows the gateway down: compare shares and the split
// between runs of this script, not its totals with `npm run bench`.
//
//   front     the agent's side: src/gateway/{listener,handler,tls}.ts, client/, http1/ (parsing, the reply writer)
//   pipeline  the stages and what they call: pipeline.ts, stages/, snapshot, core/, services/, store/, logs
//   upstream  src/gateway/upstream/ (pool, connection, exchange: the request out, the response in)
//   other     no credgate frame on the stack: timers, GC (the memory keeper's full collections, memory.ts,
//             included), the event loop itself
// writeBatch.ts writes for both sides at the end of a turn: its frames count for whichever side's socket it
// was writing (the caller above it).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../test/support/tmp.ts";
import { startBenchEnv } from "./env.ts";
import type { LoadResult } from "./load.ts";
import { killAll, reapAll, runClient } from "./procs.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

type Part = "front" | "pipeline" | "upstream" | "other";

function partOf(url: string): Part | null {
  const i = url.indexOf("/src/");
  if (i < 0) return null;
  const path = url.slice(i + 5);
  if (path === "gateway/writeBatch.ts") return null;
  if (path === "gateway/memory.ts") return "other";
  if (path.startsWith("gateway/upstream/")) return "upstream";
  if (/^gateway\/(client\/|http1\/|listener\.ts|handler\.ts|tls\.ts)/.test(path)) return "front";
  return "pipeline";
}

/** Samples per part: each sample goes to the innermost frame of its stack that belongs to credgate. */
export function splitProfile(profile: Profile): Record<Part, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const memo = new Map<number, Part>();
  const resolve = (id: number): Part => {
    const known = memo.get(id);
    if (known) return known;
    const own = partOf(byId.get(id)!.callFrame.url);
    const up = parent.get(id);
    const part = own ?? (up === undefined ? "other" : resolve(up));
    memo.set(id, part);
    return part;
  };
  const out: Record<Part, number> = { front: 0, pipeline: 0, upstream: 0, other: 0 };
  for (const id of profile.samples) out[resolve(id)]++;
  return out;
}

async function main(): Promise<void> {
  const dir = tempDir("credgate-split-");
  const log = (msg: string) => process.stderr.write(`· ${msg}\n`);
  const env = await startBenchEnv({ profileDir: dir, log });
  const watch = { gateway: env.credgate.proc.pid, upstream: env.upstream.proc.pid };
  log("32 connections, 5 s, MITM, credgate under the CPU profiler");
  const run = await runClient<LoadResult>({ task: "load", connections: 32, warmupMs: 1000, durationMs: 5000, path: "/", watch, ...env.mitm });
  await env.credgate.stop();
  const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile")).map((f) => join(dir, f));
  // The serving process wrote the largest profile (`credgate keys`, run at start, writes a small one).
  const file = files.sort((a, b) => statSync(b).size - statSync(a).size)[0];
  if (!file) throw new Error(`no CPU profile written to ${dir}`);
  const samples = splitProfile(JSON.parse(readFileSync(file, "utf8")) as Profile);
  const total = samples.front + samples.pipeline + samples.upstream + samples.other;
  const cpuPerRequestUs = ((run.cpu.gateway ?? NaN) / 100) * (1e6 / run.rps);
  console.log(`gateway CPU per request, profiled run: ${cpuPerRequestUs.toFixed(0)} µs at ${Math.round(run.rps)} req/s (the profiler's own cost included)`);
  for (const part of ["front", "pipeline", "upstream", "other"] as const) {
    const share = samples[part] / total;
    console.log(`  ${part.padEnd(9)} ${(share * 100).toFixed(1).padStart(5)} %   ${(share * cpuPerRequestUs).toFixed(1).padStart(6)} µs/req`);
  }
}

if (import.meta.main) {
  try {
    await main();
  } catch (err) {
    console.error(`bench:split failed: ${(err as Error).stack ?? err}`);
    process.exitCode = 1;
  } finally {
    killAll();
    await reapAll();
  }
}
