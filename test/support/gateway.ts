// Client-side helpers for gateway e2e tests: the gateway CA on disk, async child processes (curl, node,
// python — never spawnSync, the upstream lives in the test process), and a raw HTTP/1.1 client over a
// CONNECT tunnel, for the cases real clients hide (exact CONNECT authority, several requests on one
// tunnel, WebSocket frames).
import { spawn } from "bun";
import * as net from "node:net";
import * as tls from "node:tls";
import type { Duplex } from "node:stream";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RunningCredgate } from "./process.ts";
import type { SeenRequest, TestPki, TestUpstream, UpstreamHandler } from "./upstream.ts";
import { tempDir } from "./tmp.ts";

export const ROOT = join(import.meta.dir, "../..");

/** Downloads the gateway CA (from the gateway port) and writes it to a temp file for clients. */
export async function gatewayCa(cg: RunningCredgate): Promise<{ pem: string; file: string }> {
  const res = await fetch(`${cg.gatewayUrl}/v1/gateway/ca`);
  if (res.status !== 200) throw new Error(`gateway CA: ${res.status}`);
  const pem = await res.text();
  const file = join(tempDir(), "credgate-ca.pem");
  writeFileSync(file, pem);
  return { pem, file };
}

/** `host:port:127.0.0.1` entries for CREDGATE_RESOLVE. */
export function resolveEntries(hosts: string[], port: number): string {
  return hosts.map((h) => `${h}:${port}:127.0.0.1`).join(",");
}

export function basic(token: string, user = "x"): string {
  return `Basic ${Buffer.from(`${user}:${token}`).toString("base64")}`;
}

export interface RunResult {
  code: number;
  stdout: string;
  stdoutBytes: Uint8Array;
  stderr: string;
}

/** Runs a client asynchronously (the test process keeps serving the upstream meanwhile). */
export async function run(cmd: string[], opts: { env?: Record<string, string | undefined>; stdin?: Uint8Array; timeoutMs?: number; cwd?: string } = {}): Promise<RunResult> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, ...opts.env })) if (v !== undefined) env[k] = v;
  // The test runner's own proxy settings must not leak into clients.
  for (const k of ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"]) {
    if (!(opts.env && k in opts.env)) delete env[k];
  }
  const proc = spawn(cmd, { env, cwd: opts.cwd ?? ROOT, stdin: opts.stdin ?? "ignore", stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), opts.timeoutMs ?? 30_000);
  const [out, stderr, code] = await Promise.all([new Response(proc.stdout).arrayBuffer(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  const stdoutBytes = new Uint8Array(out);
  return { code, stdout: new TextDecoder().decode(stdoutBytes), stdoutBytes, stderr };
}

export interface RawResponse {
  status: number;
  statusLine: string;
  /** Header lines in order, names as sent. */
  rawHeaders: [string, string][];
  /** Lowercased names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
  text: string;
}

/** Parses a response head (status line and header lines, without the final CRLFCRLF). */
export function parseHead(bytes: Buffer): Omit<RawResponse, "body" | "text"> {
  const lines = bytes.toString("latin1").split("\r\n");
  const statusLine = lines[0]!;
  // curl says "HTTP/2 200" when it chose h2 inside a tunnel (docs/gateway.md#http2-and-grpc).
  const m = /^HTTP\/(?:1\.[01]|2) (\d{3})/.exec(statusLine);
  if (!m) throw new Error(`not an HTTP response: ${statusLine}`);
  const rawHeaders: [string, string][] = [];
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const c = line.indexOf(":");
    const name = line.slice(0, c).trim();
    const value = line.slice(c + 1).trim();
    rawHeaders.push([name, value]);
    const k = name.toLowerCase();
    headers[k] = headers[k] === undefined ? value : `${headers[k]}, ${value}`;
  }
  return { status: Number(m[1]), statusLine, rawHeaders, headers };
}

/**
 * Reads HTTP/1.1 responses one after another from a stream: Content-Length, chunked, or (with
 * `untilClose`) close-delimited bodies.
 */
export class ResponseReader {
  #buf = Buffer.alloc(0);
  #ended = false;
  #wake: (() => void) | null = null;

  constructor(readonly stream: Duplex) {
    stream.on("data", (chunk: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, chunk]);
      this.#notify();
    });
    const end = () => {
      this.#ended = true;
      this.#notify();
    };
    stream.on("end", end);
    stream.on("close", end);
    stream.on("error", end);
    stream.resume();
  }

  get ended(): boolean {
    return this.#ended;
  }

  #notify(): void {
    const w = this.#wake;
    this.#wake = null;
    w?.();
  }

  async #more(deadline: number): Promise<boolean> {
    if (this.#ended) return false;
    const left = deadline - Date.now();
    if (left <= 0) throw new Error("timed out waiting for data");
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, left);
      this.#wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
    return true;
  }

  /** Waits until `n` bytes are buffered (or the stream ends), and takes them. */
  async take(n: number, timeoutMs = 10_000): Promise<Buffer> {
    const deadline = Date.now() + timeoutMs;
    while (this.#buf.length < n) if (!(await this.#more(deadline))) break;
    const out = this.#buf.subarray(0, n);
    this.#buf = this.#buf.subarray(out.length);
    return out;
  }

  /** Resolves once the peer closed the stream; false if it is still open after `timeoutMs`. */
  async closed(timeoutMs = 5_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    try {
      while (!this.#ended) await this.#more(deadline);
    } catch {
      return false;
    }
    return true;
  }

  async head(timeoutMs = 10_000): Promise<Omit<RawResponse, "body" | "text">> {
    const deadline = Date.now() + timeoutMs;
    let end: number;
    while ((end = this.#buf.indexOf("\r\n\r\n")) === -1) {
      if (!(await this.#more(deadline))) throw new Error(`stream ended before a response head (got ${JSON.stringify(this.#buf.toString("latin1"))})`);
    }
    const parsed = parseHead(this.#buf.subarray(0, end));
    this.#buf = this.#buf.subarray(end + 4);
    return parsed;
  }

  /** One full response. `noBody` for HEAD requests and 1xx/204/304. */
  async response(opts: { timeoutMs?: number; noBody?: boolean } = {}): Promise<RawResponse> {
    const timeoutMs = opts.timeoutMs ?? 10_000;
    const deadline = Date.now() + timeoutMs;
    const h = await this.head(timeoutMs);
    let body: Buffer;
    if (opts.noBody || h.status === 204 || h.status === 304 || (h.status >= 100 && h.status < 200)) {
      body = Buffer.alloc(0);
    } else if (h.headers["transfer-encoding"]?.toLowerCase().includes("chunked")) {
      const parts: Buffer[] = [];
      for (;;) {
        let eol: number;
        while ((eol = this.#buf.indexOf("\r\n")) === -1) if (!(await this.#more(deadline))) throw new Error("stream ended inside a chunk size");
        const size = parseInt(this.#buf.subarray(0, eol).toString("latin1"), 16);
        this.#buf = this.#buf.subarray(eol + 2);
        while (this.#buf.length < size + 2) if (!(await this.#more(deadline))) throw new Error("stream ended inside a chunk");
        if (size === 0) {
          // No trailers expected: the terminating CRLF.
          this.#buf = this.#buf.subarray(2);
          break;
        }
        parts.push(this.#buf.subarray(0, size));
        this.#buf = this.#buf.subarray(size + 2);
      }
      body = Buffer.concat(parts);
    } else if (h.headers["content-length"] !== undefined) {
      body = await this.take(Number(h.headers["content-length"]), Math.max(1, deadline - Date.now()));
    } else {
      while (await this.#more(deadline)) {}
      body = this.#buf;
      this.#buf = Buffer.alloc(0);
    }
    return { ...h, body, text: body.toString("utf8") };
  }
}

export interface Tunnel {
  /** The CONNECT answer. */
  connect: Omit<RawResponse, "body" | "text">;
  socket: net.Socket;
}

/** Opens a TCP connection to the gateway and sends `CONNECT <authority>` with the given Proxy-Authorization. */
export async function openConnect(
  gatewayPort: number,
  authority: string,
  proxyAuthorization: string | null,
  extraHeaders: string[] = [],
): Promise<Tunnel & { body: string; closed: (ms?: number) => Promise<boolean> }> {
  const socket = net.connect({ host: "127.0.0.1", port: gatewayPort });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return connectOver(socket, authority, proxyAuthorization, extraHeaders);
}

/** Sends `CONNECT <authority>` on a connection to the proxy (plain, or TLS to the proxy itself) and reads the answer. */
export async function connectOver<S extends net.Socket>(
  socket: S,
  authority: string,
  proxyAuthorization: string | null,
  extraHeaders: string[] = [],
): Promise<{ connect: Tunnel["connect"]; socket: S; body: string; closed: (ms?: number) => Promise<boolean> }> {
  const lines = [`CONNECT ${authority} HTTP/1.1`, `Host: ${authority}`, ...(proxyAuthorization === null ? [] : [`Proxy-Authorization: ${proxyAuthorization}`]), ...extraHeaders];
  socket.write(`${lines.join("\r\n")}\r\n\r\n`);
  // Read the CONNECT answer byte-exactly, leaving the socket's later bytes (the TLS handshake) untouched.
  let buf = Buffer.alloc(0);
  const head = await new Promise<Buffer>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf("\r\n\r\n");
      if (end === -1) return;
      socket.off("data", onData);
      socket.pause();
      const rest = buf.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve(buf.subarray(0, end + 4));
    };
    socket.on("data", onData);
    socket.once("error", reject);
    socket.once("close", () => reject(new Error(`closed before the CONNECT answer: ${JSON.stringify(buf.toString("latin1"))}`)));
  });
  socket.removeAllListeners("close");
  socket.removeAllListeners("error");
  socket.on("error", () => {});
  const connect = parseHead(head.subarray(0, head.length - 4));
  if (connect.status === 200) return { connect, socket, body: "", closed: async () => false };
  // A refusal: read its body and whether the gateway then closes the connection.
  const reader = new ResponseReader(socket);
  const body = (await reader.take(Number(connect.headers["content-length"] ?? 0))).toString("utf8");
  return { connect, socket, body, closed: (ms?: number) => reader.closed(ms) };
}

/** CONNECT, then TLS to the gateway's leaf for `servername`, trusting `ca`. */
export async function openTlsTunnel(gatewayPort: number, authority: string, token: string, ca: string, servername: string): Promise<{ tls: tls.TLSSocket; reader: ResponseReader; cert: tls.PeerCertificate }> {
  const t = await openConnect(gatewayPort, authority, basic(token));
  if (t.connect.status !== 200) throw new Error(`CONNECT ${authority} answered ${t.connect.statusLine}`);
  const secure = tls.connect({ socket: t.socket, ca, servername, ALPNProtocols: ["http/1.1"] });
  await new Promise<void>((resolve, reject) => {
    secure.once("secureConnect", resolve);
    secure.once("error", reject);
  });
  secure.on("error", () => {});
  return { tls: secure, reader: new ResponseReader(secure), cert: secure.getPeerCertificate() };
}

/** A raw request head (+ body) for `path` on `host`. */
export function rawRequest(method: string, path: string, host: string, headers: string[] = [], body?: string | Buffer): Buffer {
  const len = body === undefined ? [] : [`Content-Length: ${Buffer.byteLength(body)}`];
  const head = `${[`${method} ${path} HTTP/1.1`, `Host: ${host}`, ...headers, ...len].join("\r\n")}\r\n\r\n`;
  return body === undefined ? Buffer.from(head, "latin1") : Buffer.concat([Buffer.from(head, "latin1"), Buffer.from(body)]);
}

/** Polls `check` until it returns a truthy value or `ms` pass. */
export async function eventually<T>(check: () => T | Promise<T>, ms = 7_000, every = 100): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v || Date.now() > deadline) return v;
    await Bun.sleep(every);
  }
}

/** Retries `check` until it stops throwing, for up to `ms`; then its last error is thrown. */
export async function until<T>(check: () => T | Promise<T>, ms = 7_000, every = 50): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await Bun.sleep(every);
  }
}

/** Waits until `condition` holds (`until` retries only on a throw: a false result would end it at once). */
export async function untilTrue(condition: () => boolean | Promise<boolean>, ms = 7_000): Promise<void> {
  await until(async () => {
    if (!(await condition())) throw new Error(`condition not met within ${ms} ms`);
  }, ms);
}

export const PROXY_AUTH_BODY = '{"error":"proxy_authentication_required","message":"credgate requires a valid agent token: set the proxy URL to http://x:<agent token>@<gateway>."}';

/**
 * A plain-HTTP upstream (absolute-form `http://` and plain CONNECT tunnels), recording requests like the
 * TLS one; by default it answers `{ok:true}` without echoing anything back.
 */
export function startPlainUpstream(): TestUpstream {
  const seen: SeenRequest[] = [];
  let custom: UpstreamHandler | null = null;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const record: SeenRequest = { method: req.method, host: req.headers.get("host") ?? "", url: url.pathname + url.search, headers: Object.fromEntries(req.headers), bodyBytes: 0, bodySha256: "" };
      seen.push(record);
      const answer = custom ? await custom(req, record) : undefined;
      if (answer) return answer;
      const body = new Uint8Array(await req.arrayBuffer());
      record.bodyBytes = body.byteLength;
      record.bodySha256 = new Bun.CryptoHasher("sha256").update(body).digest("hex");
      return Response.json({ ok: true, url: record.url });
    },
  });
  return {
    server,
    port: server.port!,
    seen,
    handle(fn) {
      custom = fn;
    },
    stop: async () => {
      await server.stop(true);
    },
  };
}

/** A TLS upstream that answers every request with bytes the test writes itself (no HTTP server in between). */
export interface RawUpstream {
  port: number;
  heads: string[];
  respond(fn: (head: string, sock: tls.TLSSocket) => void): void;
  close(): void;
}

export function startRawUpstream(p: TestPki): Promise<RawUpstream> {
  const heads: string[] = [];
  let handler: (head: string, sock: tls.TLSSocket) => void = (_h, s) => s.end("HTTP/1.1 204 No Content\r\n\r\n");
  const server = tls.createServer({ cert: readFileSync(p.certFile), key: readFileSync(p.keyFile), ALPNProtocols: ["http/1.1"] }, (sock) => {
    let buf = "";
    sock.on("error", () => {});
    const onData = (d: Buffer) => {
      buf += d.toString("latin1");
      const end = buf.indexOf("\r\n\r\n");
      if (end === -1) return;
      sock.off("data", onData);
      heads.push(buf.slice(0, end));
      handler(buf.slice(0, end), sock);
    };
    sock.on("data", onData);
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      resolve({
        port: (server.address() as { port: number }).port,
        heads,
        respond(fn) {
          handler = fn;
        },
        close: () => server.close(),
      });
    });
  });
}

/** A masked WebSocket text frame (client to server), payload ≤ 125 bytes. */
export function wsFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  if (payload.length > 125) throw new Error("short frames only");
  const mask = crypto.getRandomValues(new Uint8Array(4));
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}

/** One unmasked text frame from the server (payload ≤ 125 bytes). */
export async function readWsText(reader: ResponseReader): Promise<string> {
  const [b0, b1] = await reader.take(2);
  if ((b0! & 0x0f) !== 1) throw new Error(`not a text frame: opcode ${b0! & 0x0f}`);
  if ((b1! & 0x80) !== 0) throw new Error("a server frame must not be masked");
  const len = b1! & 0x7f;
  if (len > 125) throw new Error("short frames only");
  return (await reader.take(len)).toString("utf8");
}
