// Placeholder substitution (docs/injection.md#placeholders), the wider echo guard (docs/guards.md#echo-guard) and
// the credential leak guard (docs/guards.md#credential-leak-guard) through the real process, with real clients
// (curl, Node undici, Python requests) and real TLS upstreams: every surface with a value that needs encoding (and,
// to a host the secret does not match, the placeholder forwarded as sent),
// 5 MB bodies with placeholders across 64 KiB boundaries compared by digest (with a Content-Length, and chunked),
// a body over 8 MiB forwarded chunked, a 100 MB upload with bounded memory, gzip bodies untouched, the echo forms
// (base64, hex, JSON, reason phrase, an encoded answer decoded), request logs showing the placeholder, and the leak
// guard on each carrier, a value deep in a large body included (the other upstream never receives it).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { formEncode, jsonEscape, percentEncode } from "../../src/core/valueForms.ts";
import { until, gatewayCa, openTlsTunnel, rawRequest, resolveEntries, run, startRawUpstream, type RawUpstream } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type SeenRequest, type TestUpstream } from "../support/upstream.ts";

const API = "api.ph.test";
const RAW = "raw.ph.test";
const LEAK_HOME = "api.leak.test";
const ELSEWHERE = "other.leak.test";
const WS_HOST = "ws.ph.test";
const HELD = "held.ph.test";
const WS_ELSEWHERE = "ws.leak.test";
const PH = `CG_PH_${crypto.randomUUID().slice(0, 8)}`;
// Printable ASCII that needs encoding everywhere: + / = & " \ and a space.
const VALUE = `pk a+b/c=d&e"q\\x-${crypto.randomUUID()}`;
const LEAK_VALUE = `sk-leak-${crypto.randomUUID()}`;

let cg: RunningCredgate;
let up: TestUpstream;
let raw: RawUpstream;
let ca: { pem: string; file: string };
let proxy: string;
let dir: string;
let upstreamCaFile: string;
/** A WebSocket upstream that records what it receives and echoes each message back. */
let wsUp: { port: number; received: { text: string; binary: boolean }[]; offers: (string | null)[]; stop(): void };

const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");

/** What the upstream of /stream saw: streamed into a hash, never held whole. */
interface Streamed {
  bytes: number;
  sha256: string;
  /** The watched value appeared in what arrived. */
  sawLeak: boolean;
  completed: boolean;
}
const streamed = new Map<string, Streamed>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "credgate-ph-"));
  const pki = makePki([API, RAW, LEAK_HOME, ELSEWHERE, WS_HOST, WS_ELSEWHERE, HELD]);
  upstreamCaFile = pki.caFile;
  up = startUpstream(pki);
  raw = await startRawUpstream(pki);
  up.handle((req, seen) => {
    const url = new URL(req.url);
    return url.pathname.startsWith("/stream/") ? streamIn(url, req, seen) : undefined;
  });
  async function streamIn(url: URL, req: Request, seen: SeenRequest): Promise<Response> {
    const record: Streamed = { bytes: 0, sha256: "", sawLeak: false, completed: false };
    streamed.set(url.pathname, record);
    const hash = createHash("sha256");
    let tail = "";
    try {
      for await (const chunk of req.body!) {
        record.bytes += chunk.byteLength;
        hash.update(chunk);
        const text = tail + Buffer.from(chunk).toString("latin1");
        if (text.includes(LEAK_VALUE)) record.sawLeak = true;
        tail = text.slice(-LEAK_VALUE.length);
      }
      record.completed = true;
    } catch {
      return new Response("aborted", { status: 499 });
    }
    record.sha256 = hash.digest("hex");
    return Response.json({ bytes: record.bytes, sha256: record.sha256, framing: seen.headers["transfer-encoding"] ?? `length ${seen.headers["content-length"]}` });
  }
  const received: { text: string; binary: boolean }[] = [];
  const offers: (string | null)[] = [];
  const wsServer = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
    fetch(req, srv) {
      offers.push(req.headers.get("sec-websocket-extensions"));
      return srv.upgrade(req, { data: undefined }) ? undefined : new Response("no", { status: 400 });
    },
    websocket: {
      perMessageDeflate: true,
      message(ws, message) {
        const binary = typeof message !== "string";
        const text = binary ? Buffer.from(message).toString() : message;
        received.push({ text, binary });
        ws.send(binary ? Buffer.from(`echo:${text}`) : `echo:${text}`);
      },
    },
  });
  wsUp = { port: wsServer.port!, received, offers, stop: () => wsServer.stop(true) };
  cg = await startCredgate({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: `${resolveEntries([API, LEAK_HOME, ELSEWHERE, HELD], up.port)},${resolveEntries([RAW], raw.port)},${resolveEntries([WS_HOST, WS_ELSEWHERE], wsServer.port!)}`,
    },
  });
  ca = await gatewayCa(cg);
  proxy = `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`;
  const created = [
    await cg.api("POST", "/v1/secrets", { body: { name: "ph secret", type: "generic", value: VALUE, hostPattern: "*.ph.test", injectionConfig: { placeholder: PH } } }),
    await cg.api("POST", "/v1/secrets", { body: { name: "leak key", type: "generic", value: LEAK_VALUE, hostPattern: LEAK_HOME, injectionConfig: { headerName: "x-api-key" } } }),
  ];
  for (const r of created) expect(r.status).toBe(201);
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
  raw?.close();
  wsUp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function curl(args: string[], timeoutMs = 30_000) {
  return run(["curl", "-sS", "--proxy", proxy, "--cacert", ca.file, ...args], { timeoutMs });
}

function seen(url: string) {
  const hits = up.seen.filter((s) => s.url === url);
  expect(hits.length).toBe(1);
  return hits[0]!;
}

/** `size` bytes of JSON whose string holds the placeholder across each 64 KiB boundary. */
function bigJson(size: number): string {
  const parts: string[] = ['{"data":"'];
  let length = parts[0]!.length;
  for (let boundary = 65536; boundary < size - 100; boundary += 65536) {
    const start = boundary - Math.floor(PH.length / 2);
    parts.push("a".repeat(start - length), PH);
    length = start + PH.length;
  }
  parts.push("a".repeat(size - length - 2), '"}');
  return parts.join("");
}

const withValue = (text: string, inserted: string) => text.split(PH).join(inserted);

describe("every surface, with a value that needs encoding", () => {
  test("curl: header, path, query and a JSON body; the upstream gets each encoding, curl sees none of them", async () => {
    const url = `/p/${PH}/x`;
    const body = JSON.stringify({ k: PH, note: `in ${PH} text` });
    const r = await curl(["-H", `X-Api-Key: ${PH}`, "-H", `Authorization: Bearer ${PH}.sig`, "-H", "content-type: application/json", "--data-binary", body, `https://${API}:${up.port}${url}?key=${PH}`]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const enc = percentEncode(VALUE);
    const s = seen(`/p/${enc}/x?key=${enc}`);
    expect(s.headers["x-api-key"]).toBe(VALUE);
    expect(s.headers.authorization).toBe(`Bearer ${VALUE}.sig`);
    const sent = withValue(body, jsonEscape(VALUE));
    expect(JSON.parse(sent)).toEqual({ k: VALUE, note: `in ${VALUE} text` });
    expect(s.bodySha256).toBe(sha256(sent));
    expect(s.headers["content-length"]).toBe(String(Buffer.byteLength(sent)));
    // The upstream echoed all of it back (headers, the URL): the echo guard hands curl none of the forms.
    for (const form of [VALUE, enc, jsonEscape(VALUE)]) expect(r.stdout).not.toContain(form);
    expect(r.stdout).toContain("credgate-redacted");
  });

  test("to a host the secret does not match: the placeholder goes as sent on every surface (it is not a secret), nothing injected", async () => {
    const marker = `/elsewhere/${PH}/${crypto.randomUUID()}`;
    const body = JSON.stringify({ k: PH, note: `in ${PH} text` });
    const r = await curl(["-H", `X-Api-Key: ${PH}`, "-H", "content-type: application/json", "--data-binary", body, `https://${ELSEWHERE}:${up.port}${marker}?key=${PH}`]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const s = seen(`${marker}?key=${PH}`);
    expect(s.headers["x-api-key"]).toBe(PH);
    expect(s.bodySha256).toBe(sha256(body));
    expect(s.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
    // Nothing was injected, so nothing is redacted: the upstream's echo comes back with the placeholder in it.
    expect(r.stdout).toContain(PH);
    expect(r.stdout).not.toContain("credgate-redacted");
    for (const form of [VALUE, percentEncode(VALUE), jsonEscape(VALUE)]) expect(r.stdout).not.toContain(form);
    const row = await until(async () => {
      const hit = (await cg.api("GET", "/v1/logs?limit=500")).body.data.find((l: any) => l.path === marker);
      if (!hit) throw new Error("not logged yet");
      return hit;
    }, 15_000);
    expect(row).toMatchObject({ host: `${ELSEWHERE}:${up.port}`, status: 200, injectionCount: 0, decision: "allowed" });
  });

  test("Python requests: a form body is form-encoded", async () => {
    const script = [
      "import os, requests",
      "r = requests.post(os.environ['TARGET'], data={'client_id': 'me', 'client_secret': os.environ['PH']}, proxies={'https': os.environ['PROXY']}, verify=os.environ['CA'], timeout=20)",
      "print(r.status_code)",
    ].join("\n");
    const r = await run(["/usr/bin/python3", "-c", script], { env: { TARGET: `https://${API}:${up.port}/py-form`, PH, PROXY: proxy, CA: ca.file } });
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("200");
    const s = seen("/py-form");
    const sent = `client_id=me&client_secret=${formEncode(VALUE)}`;
    expect(new URLSearchParams(sent).get("client_secret")).toBe(VALUE);
    expect(s.bodySha256).toBe(sha256(sent));
  });

  test("a gzip body passes untouched, placeholder and all", async () => {
    const gz = gzipSync(Buffer.from(`{"k":"${PH}"}`));
    const file = join(dir, "body.gz");
    writeFileSync(file, gz);
    const r = await curl(["-H", "content-type: application/json", "-H", "content-encoding: gzip", "--data-binary", `@${file}`, `https://${API}:${up.port}/gz`]);
    expect(r.code).toBe(0);
    expect(seen("/gz").bodySha256).toBe(sha256(gz));
  });
});

describe("large bodies, streamed", () => {
  const SIZE = 5 * 1024 * 1024;

  test("Node undici: 5 MB JSON with a placeholder across every 64 KiB boundary, with a Content-Length and chunked", async () => {
    const text = bigJson(SIZE);
    const file = join(dir, "big.json");
    writeFileSync(file, text);
    const expected = withValue(text, jsonEscape(VALUE));
    const script = `
      const { ProxyAgent, request } = require("undici");
      const fs = require("node:fs");
      const dispatcher = new ProxyAgent({ uri: process.env.PROXY, requestTls: { ca: fs.readFileSync(process.env.CA) } });
      (async () => {
        const out = [];
        for (const [path, body] of [["/stream/length", fs.readFileSync(process.env.FILE)], ["/stream/chunked", fs.createReadStream(process.env.FILE, { highWaterMark: 65536 })]]) {
          const r = await request(process.env.BASE + path, { method: "POST", dispatcher, body, headers: { "content-type": "application/json" } });
          out.push({ status: r.statusCode, body: await r.body.json() });
        }
        console.log(JSON.stringify(out));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const r = await run(["node", "-e", script], { env: { PROXY: proxy, CA: ca.file, FILE: file, BASE: `https://${API}:${up.port}` }, timeoutMs: 60_000 });
    expect(r.stderr).toBe("");
    const [length, chunked] = JSON.parse(r.stdout);
    const digest = sha256(expected);
    expect(length).toEqual({ status: 200, body: { bytes: Buffer.byteLength(expected), sha256: digest, framing: `length ${Buffer.byteLength(expected)}` } });
    expect(chunked).toEqual({ status: 200, body: { bytes: Buffer.byteLength(expected), sha256: digest, framing: "chunked" } });
  });

  test("curl: a body announced over 8 MiB is rewritten as it streams and forwarded chunked", async () => {
    const text = bigJson(9 * 1024 * 1024);
    const file = join(dir, "nine.json");
    writeFileSync(file, text);
    const expected = withValue(text, jsonEscape(VALUE));
    const r = await curl(["-H", "content-type: application/json", "--data-binary", `@${file}`, `https://${API}:${up.port}/stream/nine`], 60_000);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ bytes: Buffer.byteLength(expected), sha256: sha256(expected), framing: "chunked" });
  });

  test("a 100 MB upload with placeholders adds only a few MB to the gateway's memory", async () => {
    const block = Buffer.alloc(1024 * 1024, "x");
    block.write(PH, 1024 * 1024 - 5);
    const upload = (blocks: number) => {
      const file = join(dir, `upload-${blocks}.bin`);
      writeFileSync(file, Buffer.concat(Array.from({ length: blocks }, () => block)));
      return file;
    };
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${cg.proc.pid}/status`, "utf8"))![1]) * 1024;
    /** The gateway's RSS before and at its peak while `file` is uploaded through it. */
    const measured = async (file: string, path: string) => {
      const before = rss();
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20);
      const r = await curl(["-H", "content-type: application/octet-stream", "-T", file, `https://${API}:${up.port}${path}`], 120_000);
      clearInterval(sampler);
      expect(r.code).toBe(0);
      return { before, peak, out: JSON.parse(r.stdout) };
    };
    // The same path with a 20 MB upload first (TLS, pools, JIT, and the heap's own growth under allocation, which
    // depends on the collector, not on the body): a body held in memory would add its 80 MB more on top of that.
    const small = upload(20);
    const warm = await measured(small, "/stream/warm");
    rmSync(small);
    const file = upload(100);
    const big = await measured(file, "/stream/hundred");
    rmSync(file);
    const out = big.out;
    expect(out.framing).toBe("chunked");
    // Each block's placeholder straddled a 64 KiB-aligned boundary of the file; each was replaced raw.
    const oneBlock = Buffer.from(withValue(block.toString("latin1"), VALUE), "latin1");
    expect(out.bytes).toBe(oneBlock.length * 100);
    const hash = createHash("sha256");
    for (let i = 0; i < 100; i++) hash.update(oneBlock);
    expect(out.sha256).toBe(hash.digest("hex"));
    const mb = (n: number) => (n / 1048576).toFixed(1);
    console.log(`gateway RSS: 20 MB upload ${mb(warm.before)} → peak ${mb(warm.peak)} MB; 100 MB upload ${mb(big.before)} → peak ${mb(big.peak)} MB`);
    expect((big.peak - Math.max(warm.peak, big.before)) / 1048576).toBeLessThan(16);
  }, 180_000);
});

describe("echo guard, wider", () => {
  test("base64 (both alphabets, padded or not), hex (both cases) and JSON forms, the reason phrase and headers are redacted", async () => {
    const forms = [
      Buffer.from(VALUE).toString("base64"),
      Buffer.from(VALUE).toString("base64url"),
      Buffer.from(`user:${VALUE}`).toString("base64"),
      Buffer.from(VALUE).toString("hex"),
      Buffer.from(VALUE).toString("hex").toUpperCase(),
      JSON.stringify(VALUE).slice(1, -1).replace(/\//g, "\\/"),
      // Go's encoding/json, and .NET's System.Text.Json.
      JSON.stringify(VALUE).slice(1, -1).replace(/&/g, "\\u0026"),
      JSON.stringify(VALUE).slice(1, -1).replace(/\\"/g, "\\u0022").replace(/&/g, "\\u0026").replace(/\+/g, "\\u002B"),
    ];
    raw.respond((_head, sock) => {
      const body = forms.join("\n");
      sock.end(`HTTP/1.1 200 OK ${VALUE}\r\nContent-Type: text/plain\r\nX-Hex: ${forms[3]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
    const t = await openTlsTunnel(cg.gatewayPort, `${RAW}:${raw.port}`, cg.keys.defaultAgentToken, ca.pem, RAW);
    t.tls.write(rawRequest("GET", "/echo", `${RAW}:${raw.port}`, [`X-Key: ${PH}`]));
    const res = await t.reader.response();
    t.tls.destroy();
    expect(raw.heads.at(-1)).toContain(`X-Key: ${VALUE}`);
    expect(res.status).toBe(200);
    expect(res.statusLine).toBe("HTTP/1.1 200 OK credgate-redacted");
    expect(res.headers["x-hex"]).toBe("credgate-redacted");
    const echoed = res.text.split("\n");
    expect(echoed.length).toBe(forms.length);
    // The Basic pair keeps the bits that mix with "user:"; every character that is the value's alone is gone.
    for (const e of echoed) expect(e).toMatch(/credgate-redacted/);
    for (const f of forms) expect(res.text).not.toContain(f);
  });

  test("an answer gzip-encoded although identity was asked is decoded and scanned", async () => {
    raw.respond((head, sock) => {
      const asked = /accept-encoding: (.*)/i.exec(head)?.[1]?.trim();
      const gz = gzipSync(Buffer.from(`asked=${asked} value=${VALUE}`));
      sock.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nContent-Length: ${gz.length}\r\n\r\n`);
      sock.end(gz);
    });
    const t = await openTlsTunnel(cg.gatewayPort, `${RAW}:${raw.port}`, cg.keys.defaultAgentToken, ca.pem, RAW);
    t.tls.write(rawRequest("GET", `/gz?k=${PH}`, `${RAW}:${raw.port}`, ["Accept-Encoding: gzip"]));
    const res = await t.reader.response();
    t.tls.destroy();
    expect(res.headers["content-encoding"]).toBeUndefined();
    expect(res.text).toBe("asked=identity value=credgate-redacted");
  });
});

describe("request logs", () => {
  test("show the placeholder as the agent sent it, never the value, with the surfaces counted", async () => {
    const marker = `/logged/${PH}/${crypto.randomUUID()}`;
    const r = await curl(["-H", `X-Key: ${PH}`, "--data-binary", `v=${PH}`, `https://${API}:${up.port}${marker}?q=${PH}`]);
    expect(r.code).toBe(0);
    const row = await until(async () => {
      const logs = await cg.api("GET", "/v1/logs?limit=500");
      const hit = (logs.body.data ?? logs.body.items ?? logs.body).find?.((l: any) => l.path === marker);
      if (!hit) throw new Error("not logged yet");
      return hit;
    }, 15_000);
    expect(row.injectionCount).toBe(4);
    expect(JSON.stringify(row)).not.toContain(VALUE);
  });
});

describe("approval previews", () => {
  test("a held request shows the placeholder in its path, headers and body preview; approved, the upstream gets the value", async () => {
    const rule = await cg.api("POST", "/v1/policy/rules", { body: { name: "held placeholders", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HELD }] } });
    expect(rule.status).toBe(201);
    expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
    const marker = `/held/${crypto.randomUUID()}`;
    const body = JSON.stringify({ k: PH });
    const done = curl(["-H", `X-Key: ${PH}`, "-H", "content-type: application/json", "--data-binary", body, `https://${HELD}:${up.port}${marker}?q=${PH}`], 60_000);
    const held = await until(async () => {
      const pending = (await cg.api("GET", "/v1/approvals/pending")).body;
      const found = pending.requests.find((r: any) => r.path.startsWith(marker));
      if (!found) throw new Error(`not held yet: ${JSON.stringify(pending).slice(0, 600)}`);
      return found;
    }, 20_000);
    const shown = JSON.stringify(held);
    expect(held.headers["x-key"]).toBe(PH);
    expect(held.bodyPreview).toContain(body);
    expect(shown).toContain(`q=${PH}`);
    for (const form of [VALUE, percentEncode(VALUE), jsonEscape(VALUE)]) expect(shown).not.toContain(form);
    expect((await cg.api("POST", `/v1/approvals/${held.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
    const r = await done;
    expect(r.code).toBe(0);
    const s = seen(`${marker}?q=${percentEncode(VALUE)}`);
    expect(s.headers["x-key"]).toBe(VALUE);
    expect(s.bodySha256).toBe(sha256(withValue(body, jsonEscape(VALUE))));
  });
});

describe("credential leak guard", () => {
  const refusal = (host: string) => ({
    error: "credential_leak_blocked",
    message: `This request carries the value of the credgate secret "leak key", which is not for ${host}. credgate does not send a credential to another host.`,
    host,
    secret_name: "leak key",
  });

  const carriers: [string, string[], string][] = [
    ["a raw header", ["-H", `X-Token: ${LEAK_VALUE}`], "/leak/h"],
    ["a Basic pair in base64", ["-u", `me:${LEAK_VALUE}`], "/leak/b"],
    ["the query, base64url", [], `/leak/q?t=${Buffer.from(LEAK_VALUE).toString("base64url")}`],
    ["the path, percent-encoded", [], `/leak/${encodeURIComponent(`x/${LEAK_VALUE}`)}`],
    ["a JSON body", ["-H", "content-type: application/json", "--data-binary", JSON.stringify({ k: LEAK_VALUE })], "/leak/j"],
  ];
  for (const [name, args, path] of carriers) {
    test(`${name} to another host: 403 credential_leak_blocked, the upstream never gets it`, async () => {
      const before = up.seen.length;
      const r = await curl(["-i", ...args, `https://${ELSEWHERE}:${up.port}${path}`]);
      expect(r.code).toBe(0);
      const body = r.stdout.slice(r.stdout.lastIndexOf("\r\n\r\n") + 4);
      expect(r.stdout).toMatch(/HTTP\/(1\.1|2) 403/);
      expect(JSON.parse(body)).toEqual(refusal(ELSEWHERE));
      expect(up.seen.slice(before).some((s) => JSON.stringify(s).includes(LEAK_VALUE))).toBe(false);
      if (!path.startsWith("/leak/j")) expect(up.seen.slice(before).length).toBe(0);
    });
  }

  test("the value deep in a 5 MB body: the upstream connection is aborted before the chunk holding it, the agent gets the 403", async () => {
    const size = 5 * 1024 * 1024;
    const text = Buffer.alloc(size, "z");
    text.write(LEAK_VALUE, 4 * 1024 * 1024 + 7);
    const file = join(dir, "deep.bin");
    writeFileSync(file, text);
    const r = await curl(["-i", "--data-binary", `@${file}`, `https://${ELSEWHERE}:${up.port}/stream/deep`], 60_000);
    expect(r.stdout).toMatch(/HTTP\/(1\.1|2) 403/);
    expect(JSON.parse(r.stdout.slice(r.stdout.lastIndexOf("\r\n\r\n") + 4))).toEqual(refusal(ELSEWHERE));
    const got = streamed.get("/stream/deep");
    // The upstream may have started reading the body; it never completed, and never saw the value.
    if (got) {
      expect(got.completed).toBe(false);
      expect(got.sawLeak).toBe(false);
      expect(got.bytes).toBeLessThan(4 * 1024 * 1024 + 7 + LEAK_VALUE.length);
    }
  });

  test("CREDGATE_LEAK_GUARD=off: the same request goes out", async () => {
    const off = await startCredgate({ env: { CREDGATE_LEAK_GUARD: "off", CREDGATE_UPSTREAM_CA_FILE: upstreamCaFile, CREDGATE_RESOLVE: resolveEntries([ELSEWHERE], up.port) } });
    try {
      expect((await off.api("POST", "/v1/secrets", { body: { name: "leak key", type: "generic", value: LEAK_VALUE, hostPattern: LEAK_HOME, injectionConfig: { headerName: "x-api-key" } } })).status).toBe(201);
      const offCa = await gatewayCa(off);
      const path = `/off/${crypto.randomUUID()}`;
      const r = await run(["curl", "-sS", "--proxy", `http://x:${off.keys.defaultAgentToken}@127.0.0.1:${off.gatewayPort}`, "--cacert", offCa.file, "-H", `X-Token: ${LEAK_VALUE}`, `https://${ELSEWHERE}:${up.port}${path}`]);
      expect(r.code).toBe(0);
      expect(seen(path).headers["x-token"]).toBe(LEAK_VALUE);
    } finally {
      await off.stop();
    }
  });

  test("to the host of the secret holding it, the value goes; the refusal is logged blocked with the value redacted from the path", async () => {
    const ok = await curl(["-H", `X-Token: ${LEAK_VALUE}`, `https://${LEAK_HOME}:${up.port}/home`]);
    expect(ok.code).toBe(0);
    expect(seen("/home").headers["x-token"]).toBe(LEAK_VALUE);
    const marker = crypto.randomUUID();
    await curl([`https://${ELSEWHERE}:${up.port}/logged-leak/${marker}/${LEAK_VALUE}`]);
    const row = await until(async () => {
      const logs = await cg.api("GET", "/v1/logs?limit=500");
      const list: any[] = logs.body.data ?? logs.body.items ?? logs.body;
      const hit = list.find((l) => typeof l.path === "string" && l.path.includes(marker));
      if (!hit) throw new Error("not logged yet");
      return hit;
    }, 15_000);
    expect(row.decision).toBe("blocked");
    expect(row.status).toBe(403);
    expect(row.path).toBe(`/logged-leak/${marker}/credgate-redacted`);
  });
});

describe("WebSocket (the ws client)", () => {
  /** Runs a Node script with the ws package and https-proxy-agent through the gateway; its JSON output. */
  async function wsClient(body: string): Promise<any> {
    const script = `
      const WebSocket = require("ws");
      const { HttpsProxyAgent } = require("https-proxy-agent");
      const agent = new HttpsProxyAgent(process.env.PROXY);
      const open = (url) => new Promise((resolve, reject) => {
        const ws = new WebSocket(url, { agent, perMessageDeflate: true });
        const inbox = [];
        const waiters = [];
        ws.on("message", (data, isBinary) => { const m = { text: data.toString(), binary: isBinary }; const w = waiters.shift(); w ? w(m) : inbox.push(m); });
        ws.next = () => new Promise((r) => { const m = inbox.shift(); m ? r(m) : waiters.push(r); });
        ws.closed = new Promise((r) => ws.on("close", (code, reason) => r({ code, reason: reason.toString() })));
        ws.on("open", () => resolve(ws));
        ws.on("error", reject);
      });
      (async () => { ${body} })().catch((e) => { console.error(e); process.exit(1); });`;
    const r = await run(["node", "-e", script], { env: { PROXY: proxy, NODE_EXTRA_CA_CERTS: ca.file, PH, BASE: `wss://${WS_HOST}:${wsUp.port}`, ELSEWHERE: `wss://${WS_ELSEWHERE}:${wsUp.port}`, LEAK: LEAK_VALUE } });
    expect(r.stderr).toBe("");
    return JSON.parse(r.stdout);
  }

  test("text, binary and fragmented messages: placeholders replaced upstream, the value redacted on the way back, no compression", async () => {
    wsUp.received.length = 0;
    const out = await wsClient(`
      const ws = await open(process.env.BASE + "/ws?k=" + process.env.PH);
      const PH = process.env.PH;
      const got = { extensions: ws.extensions };
      ws.send("text " + PH);
      got.text = await ws.next();
      ws.send(Buffer.from("bin " + PH + " " + PH), { binary: true });
      got.binary = await ws.next();
      ws.send("frag " + PH.slice(0, 4), { fin: false });
      ws.send(PH.slice(4) + " end", { fin: true });
      got.fragmented = await ws.next();
      const big = "y".repeat(300000) + PH + "y".repeat(1000);
      ws.send(big);
      const echoed = await ws.next();
      got.big = { length: echoed.text.length, redacted: echoed.text.includes("credgate-redacted") };
      ws.close();
      console.log(JSON.stringify(got));`);
    expect(out.extensions).toBe("");
    expect(wsUp.offers.at(-1) ?? "").not.toContain("permessage-deflate");
    expect(wsUp.received.slice(0, 3)).toEqual([
      { text: `text ${VALUE}`, binary: false },
      { text: `bin ${VALUE} ${VALUE}`, binary: true },
      { text: `frag ${VALUE} end`, binary: false },
    ]);
    expect(wsUp.received[3]!.text).toBe(`${"y".repeat(300000)}${VALUE}${"y".repeat(1000)}`);
    expect(out.text).toEqual({ text: "echo:text credgate-redacted", binary: false });
    expect(out.binary).toEqual({ text: "echo:bin credgate-redacted credgate-redacted", binary: true });
    expect(out.fragmented).toEqual({ text: "echo:frag credgate-redacted end", binary: false });
    expect(out.big).toEqual({ length: 5 + 300000 + "credgate-redacted".length + 1000, redacted: true });
  });

  test("a credential value for another host in a client message: the connection closes with 1008, the upstream never gets it", async () => {
    wsUp.received.length = 0;
    const out = await wsClient(`
      const ws = await open(process.env.ELSEWHERE + "/ws");
      ws.send("fine");
      const first = await ws.next();
      ws.send("key=" + process.env.LEAK);
      const closed = await ws.closed;
      console.log(JSON.stringify({ first, closed }));`);
    expect(out.first).toEqual({ text: "echo:fine", binary: false });
    expect(out.closed).toEqual({ code: 1008, reason: "credential_leak_blocked" });
    expect(wsUp.received.map((m) => m.text)).toEqual(["fine"]);
  });
});
