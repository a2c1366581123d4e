// Memory per tunnel (`npm run bench:tunnels`): 20,000 CONNECT tunnels through the real gateway, each used for
// one request and closed, 16 at a time. The gateway's RSS is read after a warm-up of 1,000 tunnels, right after
// the 20,000, and after 30 s idle; the last must be within 25% of the post-warm-up value (what a tunnel leaves
// behind once closed must be freed). Options: --count, --idle (seconds), or BENCH_TUNNELS, BENCH_TUNNELS_IDLE.
import { startBenchEnv } from "./env.ts";
import type { TunnelsResult } from "./load.ts";
import { numberOption } from "./options.ts";
import { killAll, reapAll, runClient } from "./procs.ts";
import { RssWatch } from "./rss.ts";

const COUNT = numberOption("--count", "BENCH_TUNNELS", 20_000);
const IDLE_S = numberOption("--idle", "BENCH_TUNNELS_IDLE", 30);
const WARMUP = 1000;
const CONCURRENCY = 16;
const TOLERANCE = 0.25;

async function main(): Promise<void> {
  const log = (msg: string) => process.stderr.write(`· ${msg}\n`);
  const env = await startBenchEnv({ log });
  const rss = new RssWatch(env.credgate.proc.pid);
  const start = rss.now();
  const tunnels = (count: number) => runClient<TunnelsResult>({ task: "tunnels", count, concurrency: CONCURRENCY, path: "/", ...env.mitm });
  log(`warm-up: ${WARMUP} tunnels`);
  await tunnels(WARMUP);
  await Bun.sleep(2000);
  const warm = rss.now();
  log(`${COUNT} tunnels, ${CONCURRENCY} at a time, one request each`);
  rss.start();
  const run = await tunnels(COUNT);
  rss.stop();
  const after = rss.now();
  log(`${IDLE_S} s idle`);
  await Bun.sleep(IDLE_S * 1000);
  const idle = rss.now();
  await env.credgate.stop();

  const within = idle <= warm * (1 + TOLERANCE);
  console.log(`Memory per tunnel: ${COUNT} tunnels through the MITM path, one request each (${Math.round(COUNT / (run.ms / 1000))} tunnels/s, ${run.errors} errors)`);
  console.log(`  RSS  at start ${start.toFixed(1)} MB   after ${WARMUP} warm-up tunnels ${warm.toFixed(1)} MB   peak ${rss.peak.toFixed(1)} MB   right after ${after.toFixed(1)} MB   after ${IDLE_S} s idle ${idle.toFixed(1)} MB`);
  console.log(`  per tunnel left after the idle: ${(((idle - warm) * 1024 * 1024) / COUNT).toFixed(0)} bytes`);
  console.log(`  [${within ? "PASS" : "MISS"}] after the idle within ${TOLERANCE * 100}% of the post-warm-up value (≤ ${(warm * (1 + TOLERANCE)).toFixed(1)} MB)`);
}

try {
  await main();
} finally {
  killAll();
  await reapAll();
}
