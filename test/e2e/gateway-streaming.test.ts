// Forwarding through the real gateway (docs/gateway.md#forwarding, docs/agent-errors.md#summary): SSE arrives chunk by chunk, large bodies
// stream intact both ways, redirects and compressed bodies go back untouched, hop-by-hop and x-credgate-*
// headers never cross, WebSockets work inside MITM tunnels (with the injected upgrade), and upstream
// failures give the exact agent-facing errors.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "bun";
import { createHash, randomBytes } from "node:crypto";
import * as tls from "node:tls";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../support/ports.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";
import * as net from "node:net";
import { ResponseReader, basic, eventually, gatewayCa, openTlsTunnel, rawRequest, resolveEntries, run, startPlainUpstream, startRawUpstream, readWsText, wsFrame, type RawUpstream } from "../support/gateway.ts";

const HOST = "api.stream.test";
const RAW_HOST = "raw.stream.test";
const DOWN_HOST = "down.stream.test";
const PLAIN_HOST = "plain.stream.test";
const SLOW_HOST = "slow.stream.test";
const WS_SECRET = "WS-S3CR3T-value";

let pki: TestPki;
let cg: RunningCredgate;
let up: TestUpstream;
let raw: RawUpstream;
let plain: TestUpstream;
let ca: { pem: string; file: string };
let proxy: string;
let downPort: number;
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const BIG = randomBytes(20 * 1024 * 1024);
const sseSecondSentAt: number[] = [];
/** When the upstream got the first chunk of a streamed upload, and how many bytes in total. */
let infiniteCancelled = 0;
const streamedUpload: { firstAt: number; firstText: string; total: number | null } = { firstAt: 0, firstText: "", total: null };

function upstreamAnswers(req: Request): Response | Promise<Response> | undefined {
  const path = new URL(req.url).pathname;
  if (path === "/sse") {
    const enc = new TextEncoder();
    const stream = new ReadableStream({
      async start(controller) {
        controller.enqueue(enc.encode("event: one\ndata: first\n\n"));
        await Bun.sleep(300);
        sseSecondSentAt.push(performance.now() + performance.timeOrigin);
        controller.enqueue(enc.encode("event: two\ndata: second\n\n"));
        controller.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
  }
  if (path === "/stream-up") {
    return (async () => {
      const reader = req.body!.getReader();
      const first = await reader.read();
      streamedUpload.firstAt = Date.now();
      streamedUpload.firstText = new TextDecoder().decode(first.value);
      let total = first.value?.byteLength ?? 0;
      for (let r = await reader.read(); !r.done; r = await reader.read()) total += r.value.byteLength;
      streamedUpload.total = total;
      return Response.json({ total });
    })();
  }
  if (path === "/infinite") {
    let timer: Timer | undefined;
    const body = new ReadableStream({
      start(c) {
        timer = setInterval(() => c.enqueue(new TextEncoder().encode("data: tick\n\n")), 50);
      },
      cancel() {
        clearInterval(timer);
        infiniteCancelled++;
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  }
  if (path === "/big") return new Response(BIG, { headers: { "content-type": "application/octet-stream" } });
  if (path === "/redirect") return new Response(null, { status: 302, headers: { location: "/elsewhere?x=1", "x-redirect": "kept" } });
  if (path === "/gzip") return new Response(Bun.gzipSync(new TextEncoder().encode("hello ".repeat(1000))), { headers: { "content-encoding": "gzip", "content-type": "text/plain" } });
  if (path === "/ws-reject") return new Response("no websockets here", { status: 403, headers: { "x-upstream-only": "1" } });
  return undefined;
}

beforeAll(async () => {
  pki = makePki([HOST, RAW_HOST, DOWN_HOST, SLOW_HOST]);
  up = startUpstream(pki);
  up.handle(upstreamAnswers);
  raw = await startRawUpstream(pki);
  plain = startPlainUpstream();
  downPort = await freePort();
  cg = await startCredgate({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: [resolveEntries([HOST], up.port), resolveEntries([RAW_HOST], raw.port), resolveEntries([DOWN_HOST], downPort), resolveEntries([PLAIN_HOST], plain.port)].join(","),
    },
  });
  ca = await gatewayCa(cg);
  proxy = `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`;
  const r = await cg.api("POST", "/v1/secrets", { body: { name: "ws", type: "generic", value: WS_SECRET, hostPattern: HOST, pathPattern: "/ws", injectionConfig: { headerName: "x-ws-key" } } });
  expect(r.status).toBe(201);
}, 30_000);

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
  await plain?.stop();
  raw?.close();
});

const curl = (args: string[], opts: Parameters<typeof run>[1] = {}) => run(["curl", "-sS", "--proxy", proxy, "--cacert", ca.file, ...args], opts);

describe("streaming", () => {
  test("SSE: the first event reaches the client before the upstream sends the second", async () => {
    const proc = spawn(["curl", "-sSN", "--proxy", proxy, "--cacert", ca.file, `https://${HOST}:${up.port}/sse`], { stdout: "pipe", stderr: "pipe" });
    let text = "";
    let firstAt = 0;
    const dec = new TextDecoder();
    for await (const chunk of proc.stdout) {
      text += dec.decode(chunk);
      if (!firstAt && text.includes("data: first")) firstAt = performance.now() + performance.timeOrigin;
    }
    expect(await proc.exited).toBe(0);
    expect(text).toBe("event: one\ndata: first\n\nevent: two\ndata: second\n\n");
    expect(firstAt).toBeGreaterThan(0);
    expect(sseSecondSentAt.length).toBe(1);
    // Received at least ~250 ms before the second event even existed.
    expect(sseSecondSentAt[0]! - firstAt).toBeGreaterThan(200);
  });

  test("a client that disconnects mid-stream cancels the upstream stream (no orphaned LLM streams)", async () => {
    const t = await openTlsTunnel(cg.gatewayPort, `${HOST}:${up.port}`, cg.keys.defaultAgentToken, ca.pem, HOST);
    t.tls.write(rawRequest("GET", "/infinite", `${HOST}:${up.port}`));
    expect((await t.reader.head()).status).toBe(200);
    expect((await t.reader.take(40)).toString()).toContain("data: tick");
    expect(infiniteCancelled).toBe(0);
    t.tls.destroy();
    expect(await eventually(() => infiniteCancelled === 1, 5000, 20)).toBe(true);
  });

  test("20 MB download arrives intact (sha256)", async () => {
    const r = await curl([`https://${HOST}:${up.port}/big`], { timeoutMs: 30_000 });
    expect(r.code).toBe(0);
    expect(r.stdoutBytes.byteLength).toBe(BIG.byteLength);
    expect(sha256(r.stdoutBytes)).toBe(sha256(BIG));
  });

  test("uploads stream too: the upstream gets the first chunk before the client has sent the rest", async () => {
    const t = await openTlsTunnel(cg.gatewayPort, `${HOST}:${up.port}`, cg.keys.defaultAgentToken, ca.pem, HOST);
    t.tls.write(rawRequest("POST", "/stream-up", `${HOST}:${up.port}`, ["Transfer-Encoding: chunked", "Content-Type: text/plain"]));
    t.tls.write("6\r\nfirst \r\n");
    const deadline = Date.now() + 3000;
    while (!streamedUpload.firstAt && Date.now() < deadline) await Bun.sleep(10);
    const restSentAt = Date.now();
    expect(streamedUpload.firstAt).toBeGreaterThan(0);
    expect(streamedUpload.firstText).toBe("first ");
    expect(streamedUpload.total).toBeNull();
    t.tls.write("6\r\nsecond\r\n0\r\n\r\n");
    const res = await t.reader.response();
    t.tls.destroy();
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ total: 12 });
    expect(streamedUpload.firstAt).toBeLessThanOrEqual(restSentAt);
  });

  describe("5 MB upload arrives intact", () => {
    const body = randomBytes(5 * 1024 * 1024);
    let file: string;
    beforeAll(async () => {
      file = join(tempDir(), "upload.bin");
      writeFileSync(file, body);
    });

    test("with Content-Length (kept upstream)", async () => {
      const url = `/upload-cl/${crypto.randomUUID()}`;
      const r = await curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/octet-stream", "--data-binary", `@${file}`, `https://${HOST}:${up.port}${url}`], { timeoutMs: 30_000 });
      expect(r.stdout).toBe("200");
      const seen = up.seen.find((s) => s.url === url)!;
      expect(seen.bodyBytes).toBe(body.byteLength);
      expect(seen.bodySha256).toBe(sha256(body));
      expect(seen.headers["content-length"]).toBe(String(body.byteLength));
    });

    test("chunked", async () => {
      const url = `/upload-chunked/${crypto.randomUUID()}`;
      const r = await curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", "Transfer-Encoding: chunked", "--data-binary", `@${file}`, `https://${HOST}:${up.port}${url}`], { timeoutMs: 30_000 });
      expect(r.stdout).toBe("200");
      const seen = up.seen.find((s) => s.url === url)!;
      expect(seen.bodyBytes).toBe(body.byteLength);
      expect(seen.bodySha256).toBe(sha256(body));
    });
  });

  test("redirects are not followed: 302 and Location go back to the client", async () => {
    const before = up.seen.length;
    const r = await curl(["-i", `https://${HOST}:${up.port}/redirect`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\r\nHTTP\/2 302 /);
    expect(r.stdout.toLowerCase()).toContain("\r\nlocation: /elsewhere?x=1\r\n");
    expect(r.stdout.toLowerCase()).toContain("\r\nx-redirect: kept\r\n");
    expect(up.seen.slice(before).map((s) => s.url)).toEqual(["/redirect"]);
  });

  test("gzip bodies and Content-Encoding pass untouched; Accept-Encoding reaches the upstream", async () => {
    const expected = Bun.gzipSync(new TextEncoder().encode("hello ".repeat(1000)));
    const dir = tempDir();
    const before = up.seen.length;
    const r = await curl(["-D", join(dir, "headers"), "-H", "Accept-Encoding: gzip", `https://${HOST}:${up.port}/gzip`]);
    expect(r.code).toBe(0);
    expect(sha256(r.stdoutBytes)).toBe(sha256(expected));
    const headers = readFileSync(join(dir, "headers"), "utf8").toLowerCase();
    expect(headers).toContain("\r\ncontent-encoding: gzip\r\n");
    expect(headers).toContain(`\r\ncontent-length: ${expected.byteLength}\r\n`);
    expect(up.seen[before]!.headers["accept-encoding"]).toBe("gzip");
  });
});

describe("upstream bodies that end early", () => {
  // The agent must see a broken transfer, never a clean end that looks like a complete body.
  for (const [name, reply] of [
    ["Content-Length body cut short", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + "a".repeat(50)],
    ["chunked body without its last chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"],
  ] as const) {
    test(`${name} → the client's transfer fails too`, async () => {
      raw.respond((_h, sock) => {
        sock.write(reply);
        setTimeout(() => sock.destroy(), 100);
      });
      const r = await curl(["--http1.1", `https://${RAW_HOST}:${raw.port}/truncated`]);
      expect(r.code).toBe(18);
      // curl names the shortfall: "… with N bytes remaining to read" (Content-Length) or "… outstanding read data" (chunked).
      expect(r.stderr).toMatch(/transfer closed with (\d+ bytes|outstanding read data) remaining/);
    });

    test(`${name} → an h2 agent's stream is reset (docs/gateway.md#http2-and-grpc)`, async () => {
      raw.respond((_h, sock) => {
        sock.write(reply);
        setTimeout(() => sock.destroy(), 100);
      });
      const r = await curl(["--http2", `https://${RAW_HOST}:${raw.port}/truncated`]);
      // 92: "HTTP/2 stream was not closed cleanly" (RST_STREAM INTERNAL_ERROR), never a clean end.
      expect(r.code).toBe(92);
      expect(r.stderr).toMatch(/INTERNAL_ERROR/);
    });
  }
});

describe("header hygiene (docs/gateway.md#forwarding)", () => {
  /** The raw upstream answers `lines` (CRLF-joined); the agent's request for `path` through a TLS tunnel gets what comes back. */
  async function relayRaw(path: string, lines: string[]) {
    raw.respond((_head, sock) => {
      sock.end(lines.join("\r\n"));
    });
    const t = await openTlsTunnel(cg.gatewayPort, `${RAW_HOST}:${raw.port}`, cg.keys.defaultAgentToken, ca.pem, RAW_HOST);
    t.tls.write(rawRequest("GET", path, `${RAW_HOST}:${raw.port}`));
    const res = await t.reader.response();
    t.tls.destroy();
    return res;
  }

  test("request: hop-by-hop headers, headers named in Connection, x-credgate-* are stripped; the rest arrives", async () => {
    const t = await openTlsTunnel(cg.gatewayPort, `${HOST}:${up.port}`, cg.keys.defaultAgentToken, ca.pem, HOST);
    const before = up.seen.length;
    t.tls.write(
      rawRequest("GET", "/hygiene", `${HOST}:${up.port}`, [
        "Connection: keep-alive, X-Drop-Me",
        "X-Drop-Me: 1",
        "Keep-Alive: timeout=5",
        "TE: trailers",
        "Trailer: x-t",
        "Proxy-Connection: keep-alive",
        "Proxy-Authorization: Basic eDp5",
        "X-Credgate-Connection-Id: 1234",
        "x-credgate-anything: 1",
        "X-Kept: yes",
        "Cookie: a=b",
        "Upgrade: h2c",
      ]),
    );
    const res = await t.reader.response();
    t.tls.destroy();
    expect(res.status).toBe(200);
    const h = up.seen.slice(before).find((s) => s.url === "/hygiene")!.headers;
    for (const name of ["x-drop-me", "keep-alive", "te", "trailer", "upgrade", "proxy-connection", "proxy-authorization", "x-credgate-connection-id", "x-credgate-anything"]) {
      expect(h[name]).toBeUndefined();
    }
    expect(h.connection ?? "").not.toContain("x-drop-me");
    expect(h["x-kept"]).toBe("yes");
    expect(h.cookie).toBe("a=b");
    expect(h.host).toBe(`${HOST}:${up.port}`);
  });

  test("response: hop-by-hop headers and headers named in Connection are stripped; the rest arrives", async () => {
    const res = await relayRaw("/resp-hygiene", [
      "HTTP/1.1 200 OK",
      "Content-Type: text/plain",
      "Connection: X-Resp-Drop",
      "X-Resp-Drop: 1",
      "Keep-Alive: timeout=99",
      'Proxy-Authenticate: Basic realm="upstream"',
      "Proxy-Connection: keep-alive",
      "Trailer: x-t",
      "X-Kept: 1",
      "Set-Cookie: a=1",
      "Set-Cookie: b=2",
      "Content-Length: 2",
      "",
      "ok",
    ]);
    expect(res.status).toBe(200);
    expect(res.text).toBe("ok");
    for (const name of ["x-resp-drop", "proxy-authenticate", "proxy-connection", "trailer"]) expect(res.headers[name]).toBeUndefined();
    expect(res.headers["keep-alive"] ?? "").not.toContain("timeout=99");
    expect((res.headers.connection ?? "").toLowerCase()).not.toContain("x-resp-drop");
    expect(res.headers["x-kept"]).toBe("1");
    expect(res.rawHeaders.filter(([n]) => n.toLowerCase() === "set-cookie").map(([, v]) => v)).toEqual(["a=1", "b=2"]);
  });

  test("response: header lines are relayed as the upstream sent them (names as spelled, a repeated field on its own lines, in order)", async () => {
    const res = await relayRaw("/resp-lines", ["HTTP/1.1 200 OK", "Vary: Origin", "X-Odd-CASE: 1", "Vary: Accept", "Content-Length: 2", "", "ok"]);
    expect(res.status).toBe(200);
    expect(res.text).toBe("ok");
    expect(res.rawHeaders.filter(([n]) => n !== "content-length" && n !== "Content-Length")).toEqual([
      ["Vary", "Origin"],
      ["X-Odd-CASE", "1"],
      ["Vary", "Accept"],
    ]);
  });

  // A bare LF is refused by the head parser; another control byte by the filter of the lines relayed.
  for (const [what, value] of [
    ["a bare LF (it could split the agent's response)", "a\nX-Injected: b"],
    ["a control byte other than HTAB", "a\x01b"],
  ] as const) {
    test(`response: a header value with ${what} → 502, nothing of it relayed`, async () => {
      const res = await relayRaw("/resp-split", ["HTTP/1.1 200 OK", `X-Split: ${value}`, "Content-Length: 2", "", "ok"]);
      expect(res.status).toBe(502);
      const body = JSON.parse(res.text);
      expect(body.error).toBe("upstream_unreachable");
      expect(body.message).toBe(`credgate could not connect to ${RAW_HOST}:${raw.port}: malformed response from upstream`);
      expect(res.headers["x-injected"]).toBeUndefined();
      expect(res.headers["x-split"]).toBeUndefined();
    });
  }
});

// ————— WebSocket (docs/gateway.md#websocket) —————

describe("WebSocket inside a MITM tunnel", () => {
  test("upgrade is injected, 101 carries only the WebSocket headers, frames echo both ways", async () => {
    const t = await openTlsTunnel(cg.gatewayPort, `${HOST}:${up.port}`, cg.keys.defaultAgentToken, ca.pem, HOST);
    const key = randomBytes(16).toString("base64");
    const before = up.seen.length;
    t.tls.write(rawRequest("GET", "/ws", `${HOST}:${up.port}`, ["Upgrade: websocket", "Connection: Upgrade", `Sec-WebSocket-Key: ${key}`, "Sec-WebSocket-Version: 13", "X-Credgate-Connection-Id: nope"]));
    const head = await t.reader.head();
    expect(head.status).toBe(101);
    const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
    expect(head.headers["sec-websocket-accept"]).toBe(accept);
    expect(head.headers.upgrade?.toLowerCase()).toBe("websocket");
    expect(head.headers["x-upstream-secret-header"]).toBeUndefined();
    const allowed = ["upgrade", "connection", "sec-websocket-accept", "sec-websocket-protocol", "sec-websocket-extensions"];
    expect(head.rawHeaders.map(([n]) => n.toLowerCase()).filter((n) => !allowed.includes(n))).toEqual([]);

    const seen = up.seen.slice(before).find((s) => s.url === "/ws")!;
    expect(seen.headers["x-ws-key"]).toBe(WS_SECRET);
    expect(seen.headers["sec-websocket-key"]).toBe(key);
    expect(seen.headers["x-credgate-connection-id"]).toBeUndefined();
    expect(seen.headers["proxy-authorization"]).toBeUndefined();

    t.tls.write(wsFrame("hello"));
    expect(await readWsText(t.reader)).toBe("echo:hello");
    t.tls.write(wsFrame("again"));
    expect(await readWsText(t.reader)).toBe("echo:again");
    // The WebSocket's own bytes never contain the secret.
    t.tls.destroy();
  });

  test("a non-101 answer → same status, text/plain `WebSocket upgrade rejected by upstream (<code>)`, no upstream headers", async () => {
    const t = await openTlsTunnel(cg.gatewayPort, `${HOST}:${up.port}`, cg.keys.defaultAgentToken, ca.pem, HOST);
    t.tls.write(rawRequest("GET", "/ws-reject", `${HOST}:${up.port}`, ["Upgrade: websocket", "Connection: keep-alive, Upgrade", `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`, "Sec-WebSocket-Version: 13"]));
    const res = await t.reader.response();
    t.tls.destroy();
    expect(res.status).toBe(403);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    expect(res.text).toBe("WebSocket upgrade rejected by upstream (403)");
    expect(res.headers["x-upstream-only"]).toBeUndefined();
  });

  test("the upgrade request upstream: one Host, the client's headers minus hop-by-hop; bytes after the 101 head reach the client", async () => {
    const before = raw.heads.length;
    raw.respond((_h, sock) => {
      // The 101 head and the first server bytes in one write: the gateway must not drop what follows the head.
      sock.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: abc\r\nSec-WebSocket-Protocol: chat\r\nX-Extra: dropped\r\nSet-Cookie: s=1\r\n\r\nSERVER-FIRST");
      sock.on("data", (d: Buffer) => sock.write(Buffer.concat([Buffer.from("got:"), d])));
    });
    const t = await openTlsTunnel(cg.gatewayPort, `${RAW_HOST}:${raw.port}`, cg.keys.defaultAgentToken, ca.pem, RAW_HOST);
    t.tls.write(
      rawRequest("GET", "/ws-raw?x=1", `${RAW_HOST}:${raw.port}`, [
        "Upgrade: websocket",
        "Connection: keep-alive, Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Protocol: chat",
        "Keep-Alive: 5",
        "Proxy-Authorization: Basic eDp5",
        "X-Credgate-Anything: 1",
        "Origin: https://app.example",
      ]),
    );
    const head = await t.reader.head();
    expect(head.status).toBe(101);
    expect(head.rawHeaders.map(([n]) => n.toLowerCase()).sort()).toEqual(["connection", "sec-websocket-accept", "sec-websocket-protocol", "upgrade"]);
    expect((await t.reader.take("SERVER-FIRST".length)).toString()).toBe("SERVER-FIRST");
    // Client frames are read by the leak guard (on by default): a real masked frame, which arrives as it was sent.
    const frame = wsFrame("ping");
    t.tls.write(frame);
    expect((await t.reader.take(4 + frame.length)).equals(Buffer.concat([Buffer.from("got:"), frame]))).toBe(true);
    t.tls.destroy();
    const lines = raw.heads[before]!.split("\r\n");
    expect(lines[0]).toBe("GET /ws-raw?x=1 HTTP/1.1");
    const names = lines.slice(1).map((l) => l.slice(0, l.indexOf(":")).toLowerCase());
    expect(names.filter((n) => n === "host").length).toBe(1);
    expect(lines).toContain(`Host: ${RAW_HOST}:${raw.port}`);
    expect(names.filter((n) => n === "upgrade").length).toBe(1);
    expect(names.filter((n) => n === "connection").length).toBe(1);
    for (const n of ["sec-websocket-key", "sec-websocket-version", "sec-websocket-protocol", "origin"]) expect(names).toContain(n);
    for (const n of ["keep-alive", "proxy-authorization", "x-credgate-anything"]) expect(names).not.toContain(n);
  });

  test("WebSocket upgrade to an unreachable upstream → 502 upstream_unreachable", async () => {
    const t = await openTlsTunnel(cg.gatewayPort, `${DOWN_HOST}:${downPort}`, cg.keys.defaultAgentToken, ca.pem, DOWN_HOST);
    t.tls.write(rawRequest("GET", "/ws", `${DOWN_HOST}:${downPort}`, ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]));
    const res = await t.reader.response();
    t.tls.destroy();
    expect(res.status).toBe(502);
    expect(JSON.parse(res.text).error).toBe("upstream_unreachable");
    expect(JSON.parse(res.text).message).toStartWith(`credgate could not connect to ${DOWN_HOST}:${downPort}: `);
  });

  test("absolute-form has no WebSocket support: Upgrade/Connection are stripped and it goes as plain HTTP", async () => {
    const sock = net.connect({ host: "127.0.0.1", port: cg.gatewayPort });
    const reader = new ResponseReader(sock);
    const before = plain.seen.length;
    sock.write(
      rawRequest("GET", `http://${PLAIN_HOST}:${plain.port}/abs-ws`, `${PLAIN_HOST}:${plain.port}`, [
        `Proxy-Authorization: ${basic(cg.keys.defaultAgentToken)}`,
        "Upgrade: websocket",
        "Connection: Upgrade",
        `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
        "Sec-WebSocket-Version: 13",
      ]),
    );
    const res = await reader.response();
    sock.destroy();
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ ok: true, url: "/abs-ws" });
    const seen = plain.seen.slice(before).find((s) => s.url === "/abs-ws")!;
    expect(seen.headers.upgrade).toBeUndefined();
    expect((seen.headers.connection ?? "").toLowerCase()).not.toContain("upgrade");
  });
});

// ————— upstream failures (docs/agent-errors.md#summary) —————

describe("upstream failures", () => {
  test("unreachable upstream → 502 upstream_unreachable", async () => {
    const t = await openTlsTunnel(cg.gatewayPort, `${DOWN_HOST}:${downPort}`, cg.keys.defaultAgentToken, ca.pem, DOWN_HOST);
    t.tls.write(rawRequest("GET", "/x", `${DOWN_HOST}:${downPort}`));
    const res = await t.reader.response();
    t.tls.destroy();
    expect(res.status).toBe(502);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    const body = JSON.parse(res.text);
    expect(Object.keys(body).sort()).toEqual(["error", "message"]);
    expect(body.error).toBe("upstream_unreachable");
    expect(body.message).toMatch(new RegExp(`^credgate could not connect to ${DOWN_HOST.replace(/\./g, "\\.")}:${downPort}: \\S.*$`));
  });

  test("CREDGATE_UPSTREAM_HEADER_TIMEOUT=1: no response headers within 1 s → 504 upstream_timeout", async () => {
    const slow = await startRawUpstream(pki);
    slow.respond(() => {}); // reads the request, never answers
    const cg2 = await startCredgate({
      env: { CREDGATE_UPSTREAM_HEADER_TIMEOUT: "1", CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([SLOW_HOST], slow.port) },
    });
    try {
      const ca2 = await gatewayCa(cg2);
      const t = await openTlsTunnel(cg2.gatewayPort, `${SLOW_HOST}:${slow.port}`, cg2.keys.defaultAgentToken, ca2.pem, SLOW_HOST);
      const started = Date.now();
      t.tls.write(rawRequest("GET", "/slow", `${SLOW_HOST}:${slow.port}`));
      const res = await t.reader.response();
      const took = Date.now() - started;
      t.tls.destroy();
      expect(res.status).toBe(504);
      expect(res.text).toBe(JSON.stringify({ error: "upstream_timeout", message: `${SLOW_HOST} did not send response headers within 1 seconds.` }));
      expect(slow.heads.length).toBe(1);
      expect(took).toBeGreaterThanOrEqual(900);
      expect(took).toBeLessThan(5000);
      // The same deadline applies to a WebSocket upgrade's response head.
      const w = await openTlsTunnel(cg2.gatewayPort, `${SLOW_HOST}:${slow.port}`, cg2.keys.defaultAgentToken, ca2.pem, SLOW_HOST);
      w.tls.write(rawRequest("GET", "/ws", `${SLOW_HOST}:${slow.port}`, ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]));
      const wres = await w.reader.response();
      w.tls.destroy();
      expect(wres.status).toBe(504);
      expect(wres.text).toBe(JSON.stringify({ error: "upstream_timeout", message: `${SLOW_HOST} did not send response headers within 1 seconds.` }));
    } finally {
      await cg2.stop();
      slow.close();
    }
  }, 20_000);
});
