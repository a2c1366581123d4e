// The soak benchmark (`npm run bench:soak`, not in CI; bench/README.md#soak): N minutes of mixed traffic
// through the built binary (dist/credgate, `npm run build` first) while the gateway process's resident memory,
// open file descriptors and responsiveness are sampled, to show that nothing grows with time. Traffic, each a
// loop of its own: HTTP/1.1 requests with an injected header; h2 streams on short-lived connections (every
// answer checked to be its own stream's); WebSocket round trips; placeholders in headers and bodies; requests
// held for approval and approved by a loop through the API; metered LLM calls under an agent budget; slow
// readers of 2 MB bodies; and resets (h2 RST_STREAM, HTTP/1.1 connections dropped mid-body).
// Every `--every` seconds: VmRSS (/proc/<pid>/status), open fds (/proc/<pid>/fd), the latency of
// `GET /healthz` on the gateway port (median of five: the event loop's delay as an agent sees it) and of an
// API call, and the operations (and errors) of the interval. Prints a table, writes a CSV, and judges each
// curve flat or not by comparing its last quarter with its second quarter.
//   bun bench/soak.ts [--minutes 20] [--every 5] [--csv path]
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startCredgate, type RunningCredgate } from "../test/support/process.ts";
import { gatewayCa, openTlsTunnel, rawRequest, readWsText, resolveEntries, wsFrame } from "../test/support/gateway.ts";
import { FRAME, frame, RawH2, startH2Origin } from "../test/support/h2.ts";
import { startFakeVendors } from "../test/support/llm/fakeVendors.ts";
import { makePki, startUpstream } from "../test/support/upstream.ts";
import { onCleanup } from "./procs.ts";

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const MINUTES = Number(flag("minutes", process.env.SOAK_MINUTES ?? "20"));
const EVERY_S = Number(flag("every", "5"));
const CSV = flag("csv", `/tmp/credgate-soak-${new Date().toISOString().replace(/[:.]/g, "-")}.csv`);
const BINARY = join(import.meta.dir, "../dist/credgate");

const H1 = "h1.soak.test";
const H2 = "h2.soak.test";
const PH = "ph.soak.test";
const HELD = "held.soak.test";
const LLM = "llm.soak.test";
const SECRET = `soak-secret-${crypto.randomUUID()}`;
const PH_VALUE = `soak-ph-value-${crypto.randomUUID()}`;
const PLACEHOLDER = "CG_SOAK_PLACEHOLDER";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ── what happened in the current interval ──────────────────────────────────────────────────────────────────
const ops = new Map<string, number>();
const errors = new Map<string, number>();
const allErrors = new Map<string, number>();
let stopping = false;

async function loop(name: string, pause: number, op: () => Promise<void>): Promise<void> {
  while (!stopping) {
    try {
      await op();
      ops.set(name, (ops.get(name) ?? 0) + 1);
    } catch (err) {
      if (stopping) break;
      errors.set(name, (errors.get(name) ?? 0) + 1);
      const key = `${name}: ${(err as Error).message.slice(0, 120)}`;
      allErrors.set(key, (allErrors.get(key) ?? 0) + 1);
      await sleep(200);
    }
    await sleep(pause);
  }
}

function must(cond: boolean, what: string): void {
  if (!cond) throw new Error(what);
}

async function main(): Promise<void> {
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run npm run build first`);
  process.env.CREDGATE_TEST_BINARY = BINARY;
  const pki = makePki([H1, H2, PH, HELD, LLM]);
  const up = startUpstream(pki);
  const h2o = await startH2Origin(pki);
  const fake = startFakeVendors(pki);
  const cg: RunningCredgate = await startCredgate({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: [resolveEntries([H1, PH, HELD], up.port), resolveEntries([H2], h2o.port), resolveEntries([LLM], fake.port)].join(","),
      CREDGATE_LOG_LEVEL: "warn",
    },
  });
  onCleanup(() => cg.proc.kill("SIGTERM"));
  const pid = cg.proc.pid;
  const ca = await gatewayCa(cg);
  const token = cg.keys.defaultAgentToken;
  const created = async (path: string, body: unknown) => {
    const r = await cg.api("POST", path, { body });
    if (r.status !== 201 && r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
    return r.body;
  };
  await created("/v1/secrets", { name: "soak h1", type: "generic", value: SECRET, hostPattern: H1, injectionConfig: { headerName: "x-api-key" } });
  await created("/v1/secrets", { name: "soak h2", type: "generic", value: SECRET, hostPattern: H2, injectionConfig: { headerName: "x-api-key" } });
  await created("/v1/secrets", { name: "soak held", type: "generic", value: SECRET, hostPattern: HELD, injectionConfig: { headerName: "x-api-key" } });
  await created("/v1/secrets", { name: "soak ph", type: "generic", value: PH_VALUE, hostPattern: PH, injectionConfig: { placeholder: PLACEHOLDER } });
  await created("/v1/secrets", { name: "soak llm", type: "llm_a", value: "sk-ant-api03-soak-key", hostPattern: LLM });
  await created("/v1/policy/rules", { name: "soak held", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HELD, pathPattern: "/held*" }] });
  await created("/v1/policy/publish", {});
  const agentId = (await cg.api("GET", "/v1/agents")).body.find((a: { accessToken: string }) => a.accessToken === token).id;
  const budget = await created("/v1/budgets", { scope: "agent", agentId, limitCents: 100_000_000, period: "day" });

  // ── the traffic ──
  let n = 0;
  /** One HTTP/1.1 tunnel kept for `uses` requests, then a new one (tunnels come and go too). */
  async function h1Requests(host: string, port: number, uses: number, each: (t: Awaited<ReturnType<typeof openTlsTunnel>>, i: number) => Promise<void>): Promise<void> {
    const t = await openTlsTunnel(cg.gatewayPort, `${host}:${port}`, token, ca.pem, host);
    try {
      for (let i = 0; i < uses && !stopping; i++) await each(t, i);
    } finally {
      t.tls.destroy();
    }
  }

  const h1 = () =>
    h1Requests(H1, up.port, 20, async (t) => {
      const id = ++n;
      t.tls.write(rawRequest("GET", `/h1/${id}`, `${H1}:${up.port}`));
      const r = await t.reader.response();
      must(r.status === 200 && r.text.includes(`/h1/${id}`), `h1 answered ${r.status}`);
      must(!r.text.includes(SECRET), "the secret reached the agent");
    });

  const placeholders = () =>
    h1Requests(PH, up.port, 10, async (t) => {
      const body = JSON.stringify({ token: PLACEHOLDER, note: "x".repeat(2000) });
      t.tls.write(rawRequest("POST", `/ph/${++n}`, `${PH}:${up.port}`, [`Authorization: Bearer ${PLACEHOLDER}`, "Content-Type: application/json"], body));
      const r = await t.reader.response();
      must(r.status === 200, `placeholder request answered ${r.status}`);
    });

  const held = () =>
    h1Requests(HELD, up.port, 1, async (t) => {
      t.tls.write(rawRequest("POST", `/held/${++n}`, `${HELD}:${up.port}`, ["Content-Type: application/json"], '{"pay":1}'));
      const r = await t.reader.response({ timeoutMs: 60_000 });
      must(r.status === 200, `held request answered ${r.status} ${r.text.slice(0, 100)}`);
    });

  const approver = async () => {
    const list = await cg.api("GET", "/v1/approvals/pending");
    for (const p of list.body.requests ?? []) {
      const d = await cg.api("POST", `/v1/approvals/${p.id}/decision`, { body: { decision: "approve" } });
      must(d.status === 200, `approval decision answered ${d.status}`);
    }
  };

  const llm = () =>
    h1Requests(LLM, fake.port, 10, async (t) => {
      const body = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 64, messages: [{ role: "user", content: "hello" }] });
      t.tls.write(rawRequest("POST", "/v1/messages", `${LLM}:${fake.port}`, ["Content-Type: application/json", "x-api-key: credgate-managed", "anthropic-version: 2023-06-01"], body));
      const r = await t.reader.response();
      must(r.status === 200, `metered call answered ${r.status} ${r.text.slice(0, 100)}`);
    });

  const websocket = () =>
    h1Requests(H1, up.port, 1, async (t) => {
      t.tls.write(rawRequest("GET", "/ws", `${H1}:${up.port}`, ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]));
      const head = await t.reader.head();
      must(head.status === 101, `WebSocket upgrade answered ${head.status}`);
      for (let i = 0; i < 5; i++) {
        t.tls.write(wsFrame(`soak ${i}`));
        const echo = await readWsText(t.reader);
        must(echo === `echo:soak ${i}`, `WebSocket echo ${echo}`);
      }
    });

  /** 20 streams on one h2 connection, each answered with its own path; a fresh connection each time. */
  const h2 = async () => {
    const raw = await RawH2.open(cg.gatewayPort, `${H2}:${h2o.port}`, token, ca.pem, H2);
    try {
      const ids: [number, string][] = [];
      for (let i = 0; i < 20; i++) {
        const id = 1 + 2 * i;
        const path = `/h2/${++n}`;
        if (i % 5 === 4) {
          raw.request(id, `${H2}:${h2o.port}`, path, { method: "POST", endStream: false, extra: [["content-type", "text/plain"]] });
          raw.write(frame(FRAME.DATA, 1, id, Buffer.from(`body with ${PLACEHOLDER} in it`)));
        } else raw.request(id, `${H2}:${h2o.port}`, path);
        ids.push([id, path]);
      }
      const deadline = Date.now() + 20_000;
      while (!ids.every(([id]) => raw.body(id).ended)) {
        must(Date.now() < deadline && !raw.closed, "h2 streams did not all end");
        await raw.waitFor(() => false, 100);
      }
      for (const [id, path] of ids) must(raw.body(id).text.includes(`"path":"${path}"`), `h2 stream ${id} got another answer: ${raw.body(id).text.slice(0, 80)}`);
    } finally {
      raw.close();
    }
  };

  /** h2 resets: 10 slow streams, half reset by the agent at once. */
  const h2Resets = async () => {
    const raw = await RawH2.open(cg.gatewayPort, `${H2}:${h2o.port}`, token, ca.pem, H2);
    try {
      for (let i = 0; i < 10; i++) {
        const id = 1 + 2 * i;
        raw.request(id, `${H2}:${h2o.port}`, `/slow?ms=300&r=${++n}`);
        if (i % 2 === 0) raw.write(frame(FRAME.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8])));
      }
      const deadline = Date.now() + 20_000;
      while (![1, 3, 5, 7, 9].every((k) => raw.body(2 * k + 1).ended)) {
        must(Date.now() < deadline && !raw.closed, "the streams not reset did not end");
        await raw.waitFor(() => false, 100);
      }
    } finally {
      raw.close();
    }
  };

  /** HTTP/1.1: a 2 MB body dropped after its first bytes. */
  const h1Drop = async () => {
    const t = await openTlsTunnel(cg.gatewayPort, `${H2}:${h2o.port}`, token, ca.pem, H2);
    t.tls.write(rawRequest("GET", `/big?bytes=${2 * 1024 * 1024}`, `${H2}:${h2o.port}`));
    await t.reader.head();
    t.tls.destroy();
  };

  /** A slow reader: a 2 MB body read in sips (the socket paused 250 ms, then read 20 ms). */
  const slowReader = async () => {
    const t = await openTlsTunnel(cg.gatewayPort, `${H2}:${h2o.port}`, token, ca.pem, H2);
    try {
      t.tls.write(rawRequest("GET", `/big?bytes=${2 * 1024 * 1024}`, `${H2}:${h2o.port}`));
      let done = false;
      const answer = t.reader.response({ timeoutMs: 120_000 }).finally(() => (done = true));
      while (!done) {
        t.tls.pause();
        await sleep(250);
        t.tls.resume();
        await sleep(20);
      }
      const r = await answer;
      must(r.status === 200 && r.body.length === 2 * 1024 * 1024, `slow reader got ${r.status}, ${r.body.length} bytes`);
    } finally {
      t.tls.destroy();
    }
  };

  // ── the samples ──
  interface Sample {
    t: number;
    rssMb: number;
    fds: number;
    healthMs: number;
    apiMs: number;
    ops: number;
    errors: number;
  }
  const samples: Sample[] = [];
  const health = async (): Promise<number> => {
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const start = performance.now();
      const r = await fetch(`http://127.0.0.1:${cg.gatewayPort}/healthz`);
      await r.text();
      times.push(performance.now() - start);
    }
    return times.sort((a, b) => a - b)[2]!;
  };
  const apiLatency = async (): Promise<number> => {
    const start = performance.now();
    await cg.api("GET", "/v1/agents");
    return performance.now() - start;
  };
  const rss = () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
  const fds = () => readdirSync(`/proc/${pid}/fd`).length;

  const started = performance.now();
  // Steady, not saturating: the machine's cores are shared with the gateway, and latency is part of what is watched.
  const loops = [
    loop("h1", 50, h1),
    loop("h1", 50, h1),
    loop("h2", 100, h2),
    loop("h2", 100, h2),
    loop("ws", 200, websocket),
    loop("placeholder", 50, placeholders),
    loop("held", 100, held),
    loop("approver", 200, approver),
    loop("llm", 50, llm),
    loop("slow", 200, slowReader),
    loop("reset-h2", 300, h2Resets),
    loop("reset-h1", 300, h1Drop),
  ];
  const endAt = started + MINUTES * 60_000;
  console.error(`soak: ${MINUTES} min, a sample every ${EVERY_S} s; gateway pid ${pid}; CSV ${CSV}`);
  console.log("   t(s)   rss(MB)   fds   healthz(ms)   api(ms)   ops   errors");
  while (performance.now() < endAt) {
    await sleep(EVERY_S * 1000);
    // The origins' own records would grow the bench's memory, not the gateway's: they are emptied.
    up.seen.length = 0;
    h2o.seen.length = 0;
    fake.seen.length = 0;
    let opCount = 0;
    let errCount = 0;
    for (const v of ops.values()) opCount += v;
    for (const v of errors.values()) errCount += v;
    ops.clear();
    errors.clear();
    const s: Sample = { t: Math.round((performance.now() - started) / 1000), rssMb: rss(), fds: fds(), healthMs: await health(), apiMs: await apiLatency(), ops: opCount, errors: errCount };
    samples.push(s);
    console.log(`${String(s.t).padStart(7)} ${s.rssMb.toFixed(1).padStart(9)} ${String(s.fds).padStart(5)} ${s.healthMs.toFixed(2).padStart(13)} ${s.apiMs.toFixed(2).padStart(9)} ${String(s.ops).padStart(5)} ${String(s.errors).padStart(8)}`);
    writeFileSync(CSV, ["t_s,rss_mb,fds,healthz_ms,api_ms,ops,errors", ...samples.map((x) => [x.t, x.rssMb.toFixed(1), x.fds, x.healthMs.toFixed(2), x.apiMs.toFixed(2), x.ops, x.errors].join(","))].join("\n") + "\n");
  }
  stopping = true;
  await Promise.race([Promise.all(loops), sleep(30_000)]);

  // ── the verdict: the last quarter against the second ──
  const q = Math.floor(samples.length / 4);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const second = samples.slice(q, 2 * q);
  const last = samples.slice(samples.length - q);
  const judge = (name: string, of: (s: Sample) => number, avg: (xs: number[]) => number, flat: (a: number, b: number) => boolean, unit: string) => {
    const a = avg(second.map(of));
    const b = avg(last.map(of));
    const ok = flat(a, b);
    console.log(`${name.padEnd(22)} second quarter ${a.toFixed(2)} ${unit}, last quarter ${b.toFixed(2)} ${unit}: ${ok ? "FLAT" : "GROWING"}`);
    return ok;
  };
  console.log("");
  const verdicts = [
    // Memory: within 10 % or 16 MB (the allocator's own steps) of where it stood.
    judge("rss (mean)", (s) => s.rssMb, mean, (a, b) => b <= Math.max(a * 1.1, a + 16), "MB"),
    judge("open fds (mean)", (s) => s.fds, mean, (a, b) => b <= Math.max(a * 1.1, a + 8), ""),
    // Latency is noisy on a shared machine: the median, within 2× or 25 ms.
    judge("healthz (median)", (s) => s.healthMs, median, (a, b) => b <= Math.max(a * 2, a + 25), "ms"),
    judge("api (median)", (s) => s.apiMs, median, (a, b) => b <= Math.max(a * 2, a + 25), "ms"),
  ];
  const totalOps = samples.reduce((a, s) => a + s.ops, 0);
  const totalErrors = samples.reduce((a, s) => a + s.errors, 0);
  const spent = (await cg.api("GET", "/v1/budgets")).body.find((b: { id: string }) => b.id === budget.id);
  console.log(`operations ${totalOps}, errors ${totalErrors}; the agent budget counted ${spent?.spentCents ?? "?"} cents`);
  for (const [k, v] of [...allErrors.entries()].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`  ${v} × ${k}`);
  console.log(`verdict: ${verdicts.every(Boolean) ? "FLAT" : "NOT FLAT"} (CSV: ${CSV})`);
  await cg.stop();
  await up.stop();
  await h2o.stop();
  await fake.stop();
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
