// The MCP row (docs/gateway.md#mcp-servers), on its own: `bun bench/mcp.ts [--duration 5] [--clients 16]`.
// An HTTPS MCP server with 200 tools (bench/mcpServer.ts, its own process) registered in the real credgate with
// a bearer token; an agent granted 100 of them (`custom`: tools/list filtered, every tools/call judged).
//   tools/call  `clients` SDK clients (Streamable HTTP, one session each), each calling tool_0 in a loop for
//               `duration` seconds: round trips per second straight to the server (with its token) and through
//               credgate (the agent holds no token); goal ≥ 0.5× direct.
//   tools/list  one client listing the 200 tools again and again: direct, through credgate with `full` (nothing
//               read) and with `custom` (the list read and cut to 100): the filtering cost per list.
// Gateway CPU is pinned to one core when taskset and two CPUs are there (bench/placement.ts), as the other rows.
import { spawn } from "bun";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { readFileSync } from "node:fs";
import { gatewayCa, resolveEntries } from "../test/support/gateway.ts";
import { proxiedFetch } from "../test/support/mcp.ts";
import { startCredgate } from "../test/support/process.ts";
import { makePki } from "../test/support/upstream.ts";
import { cpuMsOf } from "./load.ts";
import { flag, numberOption } from "./options.ts";
import { pinProcess, placement } from "./placement.ts";

const HOST = "mcp.bench.example.com";
/** The same server under another name, not registered as an MCP server: a generic secret injects its token. */
const PLAIN_HOST = "plain.mcp.bench.example.com";
const TOKEN = "mcp-bench-token-0123456789";
const opts = {
  durationMs: numberOption("--duration", "BENCH_DURATION", 5) * 1000,
  warmupMs: numberOption("--warmup", "BENCH_WARMUP", 1) * 1000,
  clients: Math.round(numberOption("--clients", "BENCH_MCP_CLIENTS", 16)),
  lists: Math.round(numberOption("--lists", "BENCH_MCP_LISTS", 200)),
  cpus: placement(flag("--no-pin", "BENCH_NO_PIN")),
};
const log = (m: string) => process.stderr.write(`· ${m}\n`);

const pki = makePki([HOST, PLAIN_HOST]);
const serverProc = spawn([process.execPath, "bench/mcpServer.ts", JSON.stringify(pki), TOKEN, "200"], { stdout: "pipe", stderr: "inherit" });
const reader = serverProc.stdout.getReader();
const { port } = JSON.parse(new TextDecoder().decode((await reader.read()).value!)) as { port: number };
const cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([HOST, PLAIN_HOST], port) } });
try {
  if (opts.cpus) {
    pinProcess(cg.proc.pid, opts.cpus.gateway);
    pinProcess(serverProc.pid, opts.cpus.peers);
  }
  const ca = await gatewayCa(cg);
  const url = new URL(`https://${HOST}:${port}/mcp`);
  const created = await cg.api("POST", "/v1/mcp-servers", { body: { name: "bench", url: url.href, auth: { bearer: TOKEN } } });
  if (created.status !== 201) throw new Error(`register: ${created.status} ${created.text}`);
  const a = await cg.api("POST", "/v1/agents", { body: { name: "MCP bench", identifier: "mcp-bench", mode: "grants" } });
  const token = ((await cg.api("GET", "/v1/agents")).body as { id: string; accessToken: string }[]).find((x) => x.id === a.body.id)!.accessToken;
  const allow = Array.from({ length: 100 }, (_, i) => `tool_${i}`);
  const g = await cg.api("PUT", `/v1/agents/${a.body.id}/grants/mcp-servers/${created.body.id}`, { body: { access: "custom", allow, ask: [] } });
  if (g.status !== 200) throw new Error(`grant: ${g.status} ${g.text}`);

  const secret = await cg.api("POST", "/v1/secrets", { body: { name: "plain mcp", type: "generic", value: TOKEN, hostPattern: PLAIN_HOST, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } } });
  if (secret.status !== 201) throw new Error(`secret: ${secret.status} ${secret.text}`);
  const upstreamCa = readFileSync(pki.caFile, "utf8");
  // Direct: the server's resolved address with its name for TLS, and the token the gateway would inject.
  const direct: FetchLike = (u, init) => {
    const target = new URL(u);
    target.hostname = "127.0.0.1";
    const headers = new Headers(init?.headers);
    headers.set("authorization", `Bearer ${TOKEN}`);
    return fetch(target, { ...init, headers, tls: { ca: upstreamCa, serverName: HOST } } as RequestInit);
  };
  const paths: Record<string, FetchLike> = {
    direct,
    "credgate, custom": proxiedFetch(`http://x:${token}@127.0.0.1:${cg.gatewayPort}`, ca.pem),
    "credgate, full": proxiedFetch(`http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`, ca.pem),
  };
  const connect = async (f: FetchLike, to = url) => {
    const c = new Client({ name: "bench", version: "1.0.0" });
    await c.connect(new StreamableHTTPClientTransport(to, { fetch: f }));
    return c;
  };

  async function calls(f: FetchLike, to = url): Promise<{ rps: number; errors: number; gatewayUsPerCall: number }> {
    const clients = await Promise.all(Array.from({ length: opts.clients }, () => connect(f, to)));
    let done = 0;
    let errors = 0;
    let counting = false;
    const end = Date.now() + opts.warmupMs + opts.durationMs;
    setTimeout(() => (counting = true), opts.warmupMs);
    const started = performance.now() + opts.warmupMs;
    let cpuAtStart = NaN;
    setTimeout(() => (cpuAtStart = cpuMsOf(cg.proc.pid)), opts.warmupMs);
    await Promise.all(
      clients.map(async (c) => {
        while (Date.now() < end) {
          try {
            const r = await c.callTool({ name: "tool_0", arguments: { text: "ping" } });
            if (r.isError) errors++;
            if (counting) done++;
          } catch {
            errors++;
          }
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpuMs = cpuMsOf(cg.proc.pid) - cpuAtStart;
    await Promise.all(clients.map((c) => c.close()));
    return { rps: done / seconds, errors, gatewayUsPerCall: (cpuMs * 1000) / done };
  }

  /** Wall time per list, and the gateway's CPU per list (what reading and cutting it costs, beside relaying it). */
  async function lists(f: FetchLike): Promise<{ msPerList: number; tools: number; gatewayUsPerList: number }> {
    const c = await connect(f);
    let tools = 0;
    for (let i = 0; i < 20; i++) await c.listTools();
    const cpu0 = cpuMsOf(cg.proc.pid);
    const t0 = performance.now();
    for (let i = 0; i < opts.lists; i++) tools = (await c.listTools()).tools.length;
    const ms = (performance.now() - t0) / opts.lists;
    const cpuMs = cpuMsOf(cg.proc.pid) - cpu0;
    await c.close();
    return { msPerList: ms, tools, gatewayUsPerList: (cpuMs * 1000) / opts.lists };
  }

  log(`tools/call: ${opts.clients} clients, ${opts.durationMs / 1000} s each way`);
  const d = await calls(paths.direct!);
  const v = await calls(paths["credgate, custom"]!);
  // The same calls through credgate as plain HTTPS with a secret (the default agent, nothing MCP read): the baseline.
  const p = await calls(paths["credgate, full"]!, new URL(`https://${PLAIN_HOST}:${port}/mcp`));
  console.log(`MCP tools/call, ${opts.clients} clients   direct ${Math.round(d.rps)} calls/s   credgate (custom grant) ${Math.round(v.rps)} calls/s   ${(v.rps / d.rps).toFixed(2)}× direct (goal ≥ 0.5×)   gateway ${v.gatewayUsPerCall.toFixed(0)} µs cpu/call   errors ${d.errors}/${v.errors}`);
  console.log(`  the same through credgate as plain HTTPS (a secret, not an MCP server) ${Math.round(p.rps)} calls/s   ${(p.rps / d.rps).toFixed(2)}× direct   gateway ${p.gatewayUsPerCall.toFixed(0)} µs cpu/call: MCP reading costs ≈ ${(v.gatewayUsPerCall - p.gatewayUsPerCall).toFixed(0)} µs per call`);
  log(`tools/list: ${opts.lists} lists of 200 tools each way`);
  const ld = await lists(paths.direct!);
  const lf = await lists(paths["credgate, full"]!);
  const lc = await lists(paths["credgate, custom"]!);
  console.log(
    `MCP tools/list, 200 tools   direct ${ld.msPerList.toFixed(2)} ms (${ld.tools})   credgate full ${lf.msPerList.toFixed(2)} ms (${lf.tools}, gateway ${lf.gatewayUsPerList.toFixed(0)} µs cpu)   credgate custom ${lc.msPerList.toFixed(2)} ms (${lc.tools}, gateway ${lc.gatewayUsPerList.toFixed(0)} µs cpu)   filtering ≈ ${(lc.gatewayUsPerList - lf.gatewayUsPerList).toFixed(0)} µs gateway cpu per list`,
  );
} finally {
  await cg.stop();
  serverProc.kill("SIGTERM");
  await serverProc.exited;
}
