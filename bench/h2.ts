// The HTTP/2 and gRPC rows of `npm run bench` (bench/README.md, docs/gateway.md#http2-and-grpc): an h2-only
// origin and a gRPC origin in their own process (bench/h2upstream.ts), and node's own clients
// (bench/h2load.cjs) on one connection — straight to the origin, or through a CONNECT tunnel to the gateway
// (CONNECT 127.0.0.1: a secret is injected, h2 on both sides). Rows: 32 streams in flight on one connection
// against the same on a direct connection (goal ≥ 0.30×), one stream (added p50), and gRPC unary calls/s
// (32 in flight on one channel, the gateway reached with grpc_proxy=http://x:<token>@…).
import { spawn } from "bun";
import { join } from "node:path";
import type { BenchEnv } from "./env.ts";
import { onCpus, pinProcess, type Placement } from "./placement.ts";
import { BENCH_DIR, startServer } from "./procs.ts";

export interface H2Run {
  rps: number;
  p50: number;
  p99: number;
  count: number;
  errors: number;
}

export interface H2Rows {
  streams: number;
  many: { direct: H2Run; gateway: H2Run };
  one: { direct: H2Run; gateway: H2Run };
  grpc: { direct: H2Run; gateway: H2Run };
}

interface H2LoadConfig {
  kind: "h2" | "grpc";
  host: string;
  port: number;
  caFile: string;
  proxy: { host: string; port: number; token: string } | null;
  streams: number;
  warmupMs: number;
  durationMs: number;
}

async function runH2Client(cfg: H2LoadConfig, cpus: string | undefined, env: Record<string, string> = {}): Promise<H2Run> {
  const proc = spawn([...onCpus(cpus), "node", join(BENCH_DIR, "h2load.cjs"), JSON.stringify(cfg)], {
    env: { ...process.env, NODE_PATH: join(BENCH_DIR, "../node_modules"), ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`h2 load client failed (exit ${code}) for ${cfg.kind} ${cfg.proxy ? "through the gateway" : "direct"}:\n${err}${out}`);
  return JSON.parse(out.trim().split("\n").pop()!) as H2Run;
}

export async function runH2Rows(env: BenchEnv, o: { cpus: Placement | null; streams: number; warmupMs: number; durationMs: number; log: (m: string) => void }): Promise<H2Rows> {
  const origin = await startServer("h2upstream.ts", [env.pki.certFile, env.pki.keyFile]);
  try {
    const peers = o.cpus?.peers;
    const proxy = { host: "127.0.0.1", port: env.credgate.gatewayPort, token: env.credgate.keys.defaultAgentToken };
    // As the HTTP/1.1 rows: the origin beside the client through the gateway, on the gateway's idle CPU for direct runs.
    const place = (direct: boolean) => {
      if (o.cpus) pinProcess(origin.proc.pid, direct ? o.cpus.gateway : o.cpus.peers);
    };
    const h2 = async (direct: boolean, streams: number): Promise<H2Run> => {
      place(direct);
      const caFile = direct ? env.pki.caFile : env.gatewayCaFile;
      return runH2Client({ kind: "h2", host: "127.0.0.1", port: origin.port, caFile, proxy: direct ? null : proxy, streams, warmupMs: o.warmupMs, durationMs: o.durationMs }, peers);
    };
    const grpcRun = async (direct: boolean): Promise<H2Run> => {
      place(direct);
      const caFile = direct ? env.pki.caFile : env.gatewayCaFile;
      const cfg: H2LoadConfig = { kind: "grpc", host: "127.0.0.1", port: origin.info.grpcPort!, caFile, proxy: null, streams: o.streams, warmupMs: o.warmupMs, durationMs: o.durationMs };
      return runH2Client(cfg, peers, direct ? {} : { grpc_proxy: `http://x:${proxy.token}@${proxy.host}:${proxy.port}` });
    };
    o.log(`HTTP/2: one connection, ${o.streams} streams, then 1 stream (direct, gateway); gRPC unary, ${o.streams} calls in flight`);
    const many = { direct: await h2(true, o.streams), gateway: await h2(false, o.streams) };
    const one = { direct: await h2(true, 1), gateway: await h2(false, 1) };
    const grpc = { direct: await grpcRun(true), gateway: await grpcRun(false) };
    return { streams: o.streams, many, one, grpc };
  } finally {
    await origin.stop();
  }
}

const f = (n: number, digits = 3) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const fi = (n: number) => Math.round(n).toLocaleString("en-US");

export function printH2Rows(r: H2Rows, target: number): void {
  const row = (label: string, x: H2Run, unit = "req/s") => `  ${label.padEnd(9)} ${fi(x.rps).padStart(8)} ${unit}   p50 ${f(x.p50)} ms   p99 ${f(x.p99)} ms${x.errors ? `   (${x.errors} errors)` : ""}`;
  const ratio = r.many.gateway.rps / r.many.direct.rps;
  console.log(
    [
      `HTTP/2 (docs/gateway.md#http2-and-grpc): GET / on an h2-only origin, one connection (CONNECT 127.0.0.1 through the gateway: injected, h2 both sides)`,
      `  ${r.streams} streams`,
      row("direct", r.many.direct),
      row("gateway", r.many.gateway),
      `  ratio gateway/direct: ${f(ratio)}   [${ratio >= target ? "PASS" : "MISS"}] >= ${target}x`,
      "  1 stream",
      row("direct", r.one.direct),
      row("gateway", r.one.gateway),
      `  added p50: ${f(r.one.gateway.p50 - r.one.direct.p50)} ms`,
      `gRPC unary (@grpc/grpc-js, one channel, ${r.streams} calls in flight; grpc_proxy=http://x:<token>@gateway)`,
      row("direct", r.grpc.direct, "calls/s"),
      row("gateway", r.grpc.gateway, "calls/s"),
      `  ratio gateway/direct: ${f(r.grpc.gateway.rps / r.grpc.direct.rps)}`,
      "",
    ].join("\n"),
  );
}
