// The benchmark's load client, run as its own process. Raw TLS sockets with hand-written HTTP/1.1
// keep-alive requests, one request in flight per connection (closed loop). Through the gateway, each
// connection is one CONNECT tunnel (Proxy-Authorization on the CONNECT) with TLS inside, reused for every
// request; directly, each connection is one TLS connection to the upstream.
// Usage: bun bench/load.ts '<LoadConfig JSON>'; prints one JSON result line on stdout.
import * as net from "node:net";
import * as tls from "node:tls";
import { readFileSync } from "node:fs";
import { ResponseParser } from "./http1.ts";

export interface Target {
  /** Name the client asks for: the CONNECT authority host, the Host header and the TLS server name. */
  host: string;
  /** Upstream port (part of the CONNECT authority and Host header). */
  port: number;
  /** PEM file of the CA the client trusts for `host` (the gateway CA via the tunnel, else the upstream CA). */
  caFile: string;
  /** Through the gateway: its address and the agent token; absent means direct to 127.0.0.1:port. */
  proxy?: { host: string; port: number; token: string; tls?: boolean };
  /** Extra request header lines (direct runs send the header the gateway would inject). */
  headers?: Record<string, string>;
  /** A POST with this JSON body instead of a GET. */
  body?: string;
  /** The same, read from this file (a body too large for the command line). */
  bodyFile?: string;
}

export type LoadConfig =
  | ({ task: "load"; connections: number; warmupMs: number; durationMs: number; path: string; watch?: Record<string, number> } & Target)
  | ({ task: "sse"; runs: number; warmupRuns: number; path: string } & Target)
  | ({ task: "tunnels"; count: number; concurrency: number; path: string } & Target);

export interface LoadResult {
  task: "load";
  connections: number;
  durationMs: number;
  requests: number;
  rps: number;
  latencyMs: Stats;
  /** Time to open one connection (TCP [+ CONNECT] + TLS handshake), median over the connections. */
  connectMs: number;
  errors: number;
  statuses: Record<string, number>;
  /** Handshakes that failed and were retried (up to 3 attempts per connection). */
  connectFailures: string[];
  /** CPU use over the measured window, in % of one core: the machine, this client, each watched process, other. */
  cpu: Record<string, number>;
}

export interface SseResult {
  task: "sse";
  runs: number;
  /** Request write → bytes of the first complete event. */
  firstEventMs: Stats;
  /** Request write → response head. */
  headMs: Stats;
  /** Request write → end of the stream. */
  totalMs: Stats;
  events: number;
}

export interface TunnelsResult {
  task: "tunnels";
  /** Tunnels opened, each used for one request and then closed by the client. */
  count: number;
  errors: number;
  ms: number;
}

export interface Stats {
  p50: number;
  p90: number;
  p99: number;
  min: number;
  max: number;
  mean: number;
  n: number;
}

export function stats(samples: ArrayLike<number>): Stats {
  const a = Float64Array.from(samples).sort();
  const q = (p: number) => (a.length ? a[Math.min(a.length - 1, Math.floor(p * a.length))]! : NaN);
  let sum = 0;
  for (const v of a) sum += v;
  return { p50: q(0.5), p90: q(0.9), p99: q(0.99), min: a[0] ?? NaN, max: a[a.length - 1] ?? NaN, mean: a.length ? sum / a.length : NaN, n: a.length };
}

function requestBytes(t: Target, path: string): Buffer {
  let head = `${t.body === undefined ? "GET" : "POST"} ${path} HTTP/1.1\r\nHost: ${t.host}:${t.port}\r\nUser-Agent: credgate-bench\r\nAccept: */*\r\n`;
  for (const [k, v] of Object.entries(t.headers ?? {})) head += `${k}: ${v}\r\n`;
  if (t.body !== undefined) head += `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(t.body)}\r\n`;
  return Buffer.from(head + "\r\n" + (t.body ?? ""), "latin1");
}

/** Opens one connection: TLS straight to the upstream, or CONNECT through the gateway then TLS inside. */
async function open(t: Target, ca: string): Promise<tls.TLSSocket> {
  let socket: net.Socket | undefined;
  if (t.proxy) {
    const p = t.proxy;
    // An https:// proxy (docs/operations.md#tls): TLS to the gateway port itself, the gateway CA verifying it as localhost.
    const raw: net.Socket = p.tls
      ? tls.connect({ host: p.host, port: p.port, ca, servername: "localhost", ALPNProtocols: ["http/1.1"] })
      : net.connect({ host: p.host, port: p.port, noDelay: true });
    if (p.tls) raw.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      raw.once("error", reject);
      raw.once(p.tls ? "secureConnect" : "connect", () => {
        const auth = Buffer.from(`x:${p.token}`).toString("base64");
        raw.write(`CONNECT ${t.host}:${t.port} HTTP/1.1\r\nHost: ${t.host}:${t.port}\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`);
      });
      let buf = Buffer.alloc(0);
      const onData = (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        const end = buf.indexOf("\r\n\r\n");
        if (end === -1) return;
        raw.off("data", onData);
        raw.off("error", reject);
        raw.pause();
        const status = buf.toString("latin1", 0, end).split("\r\n")[0]!;
        if (!/^HTTP\/1\.[01] 200/.test(status)) return reject(new Error(`CONNECT refused: ${status}`));
        if (end + 4 !== buf.length) return reject(new Error("unexpected bytes after the CONNECT answer"));
        resolve();
      };
      raw.on("data", onData);
    });
    socket = raw;
  }
  const secure = tls.connect({
    ...(socket ? { socket } : { port: t.port }),
    // The connection goes to 127.0.0.1; the certificate is checked against the name (or IP) asked for.
    host: socket ? t.host : "127.0.0.1",
    ...(net.isIP(t.host) ? { checkServerIdentity: (_: string, cert: tls.PeerCertificate) => tls.checkServerIdentity(t.host, cert) } : { servername: t.host }),
    ca,
    ALPNProtocols: ["http/1.1"],
  });
  await new Promise<void>((resolve, reject) => {
    secure.once("secureConnect", () => {
      secure.off("error", reject);
      resolve();
    });
    secure.once("error", reject);
  });
  secure.setNoDelay(true);
  return secure;
}

/** CPU time (ms) a process has used so far, from /proc (Linux); NaN elsewhere. */
export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Fields 14 and 15 of stat (utime, stime), in clock ticks (USER_HZ = 100 on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** Busy CPU time (ms) of the whole machine, all cores together, from /proc/stat; NaN elsewhere. */
function machineBusyMs(): number {
  try {
    const line = readFileSync("/proc/stat", "latin1").split("\n", 1)[0]!;
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    return (user! + nice! + system! + irq! + softirq! + steal!) * 10;
  } catch {
    return NaN;
  }
}

function cpuSnapshot(watch: Record<string, number>): Record<string, number> {
  const u = process.cpuUsage();
  const out: Record<string, number> = { machine: machineBusyMs(), client: (u.user + u.system) / 1000 };
  for (const [name, pid] of Object.entries(watch)) out[name] = cpuMsOf(pid);
  return out;
}

/** One request on a fresh connection: status and body text (used to verify injection). */
export async function requestOnce(t: Target, path: string): Promise<{ status: number; body: string }> {
  const sock = await open(t, readFileSync(t.caFile, "utf8"));
  try {
    return await new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      const parser = new ResponseParser({
        head() {},
        body: (b) => chunks.push(Buffer.from(b)),
        end: () => resolve({ status: parser.status, body: Buffer.concat(chunks).toString("utf8") }),
      });
      sock.on("data", (c: Buffer) => parser.feed(c));
      sock.on("error", reject);
      sock.on("close", () => reject(new Error("connection closed before the response")));
      sock.write(requestBytes(t, path));
    });
  } finally {
    sock.destroy();
  }
}

async function runLoad(cfg: Extract<LoadConfig, { task: "load" }>): Promise<LoadResult> {
  const ca = readFileSync(cfg.caFile, "utf8");
  const req = requestBytes(cfg, cfg.path);
  const connectTimes: number[] = [];
  const connectFailures: string[] = [];
  const sockets = await Promise.all(
    Array.from({ length: cfg.connections }, async () => {
      for (let attempt = 1; ; attempt++) {
        const t0 = performance.now();
        try {
          const s = await open(cfg, ca);
          connectTimes.push(performance.now() - t0);
          return s;
        } catch (err) {
          connectFailures.push(`${(err as Error).message} after ${(performance.now() - t0).toFixed(1)} ms`);
          if (attempt === 3) throw err;
        }
      }
    }),
  );

  const start = performance.now();
  const measureFrom = start + cfg.warmupMs;
  const stopAt = measureFrom + cfg.durationMs;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let completed = 0;
  let errors = 0;
  let open_ = sockets.length;
  const watch = cfg.watch ?? {};
  let cpuStart: Record<string, number> = {};
  const cpu: Record<string, number> = {};
  setTimeout(() => (cpuStart = cpuSnapshot(watch)), Math.max(0, measureFrom - performance.now()));
  let cpuDone = false;
  const cpuEnd = () => {
    if (cpuDone) return;
    cpuDone = true;
    const end = cpuSnapshot(watch);
    const window = performance.now() - measureFrom;
    for (const k of Object.keys(end)) cpu[k] = (100 * (end[k]! - cpuStart[k]!)) / window;
    // Everything else on the machine (other processes, the kernel's softirq work not billed to ours).
    cpu.other = Math.max(0, cpu.machine! - Object.keys(end).filter((k) => k !== "machine").reduce((sum, k) => sum + cpu[k]!, 0));
  };
  const cpuTimer = setTimeout(cpuEnd, Math.max(0, stopAt - performance.now()));

  return await new Promise<LoadResult>((resolve) => {
    const finish = () => {
      clearTimeout(watchdog);
      clearTimeout(cpuTimer);
      cpuEnd();
      for (const s of sockets) s.destroy();
      resolve({
        task: "load",
        connections: cfg.connections,
        durationMs: cfg.durationMs,
        requests: completed,
        rps: completed / (cfg.durationMs / 1000),
        latencyMs: stats(latencies),
        connectMs: stats(connectTimes).p50,
        errors,
        statuses,
        cpu,
        connectFailures,
      });
    };
    const done = () => {
      open_ -= 1;
      if (open_ === 0) finish();
    };
    // A connection that stalls past the end does not hold the result hostage.
    const watchdog = setTimeout(finish, cfg.warmupMs + cfg.durationMs + 5000);

    for (const sock of sockets) {
      let sentAt = 0;
      let finished = false;
      const stop = () => {
        if (finished) return;
        finished = true;
        done();
      };
      const parser = new ResponseParser({
        head() {},
        body() {},
        end() {
          const now = performance.now();
          const status = parser.status;
          if (now >= measureFrom && now <= stopAt) {
            completed += 1;
            statuses[status] = (statuses[status] ?? 0) + 1;
            if (status !== 200) errors += 1;
            if (sentAt >= measureFrom) latencies.push(now - sentAt);
          }
          if (now >= stopAt || parser.close) return stop();
          sentAt = performance.now();
          sock.write(req);
        },
      });
      sock.on("data", (chunk: Buffer) => {
        try {
          parser.feed(chunk);
        } catch {
          errors += 1;
          sock.destroy();
        }
      });
      sock.on("error", () => {
        errors += 1;
      });
      sock.on("close", stop);
      sentAt = performance.now();
      sock.write(req);
    }
  });
}

async function runSse(cfg: Extract<LoadConfig, { task: "sse" }>): Promise<SseResult> {
  const ca = readFileSync(cfg.caFile, "utf8");
  const req = requestBytes(cfg, cfg.path);
  const sock = await open(cfg, ca);
  const first: number[] = [];
  const head: number[] = [];
  const total: number[] = [];
  let events = 0;
  let current: { sentAt: number; text: string; sawFirst: boolean; head: number; resolve: () => void } | null = null;
  const decoder = new TextDecoder();
  const parser = new ResponseParser({
    head() {
      if (current) current.head = performance.now() - current.sentAt;
    },
    body(bytes) {
      const c = current!;
      const now = performance.now();
      c.text += decoder.decode(bytes, { stream: true });
      if (!c.sawFirst && c.text.includes("\n\n")) {
        c.sawFirst = true;
        first.push(now - c.sentAt);
      }
    },
    end() {
      const c = current!;
      total.push(performance.now() - c.sentAt);
      events += c.text.split("\n\n").length - 1;
      current = null;
      c.resolve();
    },
  });
  sock.on("data", (chunk: Buffer) => parser.feed(chunk));
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("SSE run timed out")), 10_000);
      current = {
        sentAt: performance.now(),
        text: "",
        sawFirst: false,
        head: NaN,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      sock.write(req);
    });
  for (let i = 0; i < cfg.warmupRuns; i++) await one();
  first.length = head.length = total.length = 0;
  events = 0;
  for (let i = 0; i < cfg.runs; i++) {
    let h = NaN;
    const p = one();
    const c = current!;
    await p;
    h = c.head;
    head.push(h);
    // A short gap so each run starts from an idle connection, like an agent's next turn.
    await Bun.sleep(5);
  }
  sock.destroy();
  return { task: "sse", runs: cfg.runs, firstEventMs: stats(first), headMs: stats(head), totalMs: stats(total), events };
}

/** `count` tunnels, `concurrency` at a time: each opened, used for one request, then closed by the client. */
async function runTunnels(cfg: Extract<LoadConfig, { task: "tunnels" }>): Promise<TunnelsResult> {
  let next = 0;
  let errors = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < cfg.count) {
      next++;
      try {
        const r = await requestOnce(cfg, cfg.path);
        if (r.status !== 200) errors++;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: cfg.concurrency }, worker));
  return { task: "tunnels", count: cfg.count, errors, ms: performance.now() - t0 };
}

if (import.meta.main) {
  const cfg = JSON.parse(process.argv[2] ?? "{}") as LoadConfig;
  if (cfg.bodyFile !== undefined) cfg.body = await Bun.file(cfg.bodyFile).text();
  const result = cfg.task === "sse" ? await runSse(cfg) : cfg.task === "tunnels" ? await runTunnels(cfg) : await runLoad(cfg);
  process.stdout.write(JSON.stringify(result) + "\n");
  process.exit(0);
}
