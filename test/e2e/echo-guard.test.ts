// The echo guard (docs/guards.md#echo-guard) through the real process: an upstream that reflects the request — in headers,
// in a JSON body, split across chunks, base64 or percent-encoded — hands the agent `credgate-redacted`, never the
// injected value; SSE events are not held back; uncredentialed responses pass untouched.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";
import { gatewayCa, openTlsTunnel, rawRequest, resolveEntries, startRawUpstream, type RawUpstream } from "../support/gateway.ts";

const ECHO = "echo.guard.test";
const RAW = "raw.guard.test";
const CLEAN = "clean.guard.test";
const SECRET = `sk-echo-${crypto.randomUUID()}`;
const PAIR = `svc-user:${crypto.randomUUID()}`;

let cg: RunningCredgate;
let up: TestUpstream;
let raw: RawUpstream;
let ca: { pem: string; file: string };
let token: string;

beforeAll(async () => {
  const pki = makePki([ECHO, RAW, CLEAN]);
  up = startUpstream(pki);
  raw = await startRawUpstream(pki);
  // Echoes what it received: the Authorization header in a header and in the body, also as base64 and %-encoded.
  up.handle((req) => {
    const auth = req.headers.get("authorization") ?? "";
    const value = auth.replace(/^Bearer /, "");
    return Response.json(
      { youSent: auth, b64: Buffer.from(value).toString("base64"), pct: encodeURIComponent(value), acceptEncoding: req.headers.get("accept-encoding") },
      { headers: { "x-echo": auth, "x-clean": "nothing to see" } },
    );
  });
  cg = await startCredgate({
    env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: `${resolveEntries([ECHO, CLEAN], up.port)},${resolveEntries([RAW], raw.port)}` },
  });
  ca = await gatewayCa(cg);
  token = cg.keys.defaultAgentToken;
  for (const [host, value] of [
    [ECHO, SECRET],
    [RAW, PAIR],
  ]) {
    const r = await cg.api("POST", "/v1/secrets", { body: { name: host, type: "generic", value, hostPattern: host, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } } });
    expect(r.status).toBe(201);
  }
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
  raw?.close();
});

async function viaGateway(host: string, port: number, path: string) {
  const t = await openTlsTunnel(cg.gatewayPort, `${host}:${port}`, token, ca.pem, host);
  t.tls.write(rawRequest("GET", path, `${host}:${port}`));
  const res = await t.reader.response();
  t.tls.destroy();
  return res;
}

describe("echo guard (docs/guards.md#echo-guard)", () => {
  test("a reflected credential is redacted in headers and body (raw, base64, percent-encoded); the request asked for identity", async () => {
    const res = await viaGateway(ECHO, up.port, "/echo");
    expect(res.status).toBe(200);
    const all = JSON.stringify(res.headers) + res.text;
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain(Buffer.from(SECRET).toString("base64"));
    expect(res.headers["x-echo"]).toBe("Bearer credgate-redacted");
    expect(res.headers["x-clean"]).toBe("nothing to see");
    // The upstream's length is not passed on; a body complete at once is announced with its redacted length.
    expect(res.headers["content-length"]).toBe(String(Buffer.byteLength(res.text)));
    const body = JSON.parse(res.text);
    expect(body).toEqual({ youSent: "Bearer credgate-redacted", b64: "credgate-redacted", pct: "credgate-redacted", acceptEncoding: "identity" });
    // The upstream really did receive the value.
    expect(up.seen.at(-1)!.headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  test("a value split across two chunks (and two TLS records, 50 ms apart) is still caught", async () => {
    raw.respond((head, sock) => {
      const sent = /authorization: Bearer (.*)/i.exec(head)![1]!.trim();
      const cut = Math.floor(sent.length / 2);
      sock.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n`);
      const part1 = `before ${sent.slice(0, cut)}`;
      sock.write(`${part1.length.toString(16)}\r\n${part1}\r\n`);
      setTimeout(() => {
        const part2 = `${sent.slice(cut)} after`;
        sock.end(`${part2.length.toString(16)}\r\n${part2}\r\n0\r\n\r\n`);
      }, 50);
    });
    const res = await viaGateway(RAW, raw.port, "/split");
    expect(res.status).toBe(200);
    expect(res.text).toBe("before credgate-redacted after");
  });

  test("SSE: an event without the value is delivered while the upstream still holds the next one", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    raw.respond((_head, sock) => {
      sock.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
      const first = "data: first\n\n";
      sock.write(`${first.length.toString(16)}\r\n${first}\r\n`);
      void released.then(() => {
        const second = `data: ${PAIR}\n\n`;
        sock.end(`${second.length.toString(16)}\r\n${second}\r\n0\r\n\r\n`);
      });
    });
    const t = await openTlsTunnel(cg.gatewayPort, `${RAW}:${raw.port}`, token, ca.pem, RAW);
    t.tls.write(rawRequest("GET", "/events", `${RAW}:${raw.port}`));
    let seen = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`first event not delivered; got ${JSON.stringify(seen)}`)), 3000);
      t.tls.on("data", (d: Buffer) => {
        seen += d.toString("latin1");
        if (seen.includes("data: first")) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    // Only now does the upstream send the event carrying the value.
    release();
    // The answer ends with the last chunk; the connection itself stays open (keep-alive).
    await new Promise<void>((resolve) => {
      const check = () => (seen.endsWith("\r\n0\r\n\r\n") ? resolve() : undefined);
      check();
      t.tls.on("data", check);
    });
    t.tls.destroy();
    expect(seen).toContain("data: credgate-redacted");
    expect(seen).not.toContain(PAIR);
  });

  test("uncredentialed responses pass untouched, Content-Length kept", async () => {
    const res = await viaGateway(CLEAN, up.port, "/clean");
    expect(res.status).toBe(200);
    expect(res.headers["content-length"]).toBe(String(Buffer.byteLength(res.text)));
    expect(JSON.parse(res.text).acceptEncoding).not.toBe("identity");
  });
});
