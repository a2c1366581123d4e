// The HTTPS proxy on the gateway port (docs/gateway.md#listener): a connection whose first byte is a TLS handshake is
// TLS to the proxy itself, with a leaf of the gateway CA, and inside it the proxy behaves as over plain HTTP.
// Real clients (curl, Node undici, Python requests) inject through it; plain-HTTP proxy clients keep working
// on the same port at the same time; a relay between client and gateway sees neither token nor secret.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import * as tls from "node:tls";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";
import { startCaptureRelay } from "../support/relay.ts";
import { createHash } from "node:crypto";
import { PROXY_AUTH_BODY, ResponseReader, basic, connectOver, eventually, gatewayCa, rawRequest, readWsText, resolveEntries, run, startPlainUpstream, wsFrame } from "../support/gateway.ts";

const HOST = "api.tlsproxy.test";
const PLAIN_HOST = "plain.tlsproxy.test";
const SECRET = `S3CR3T-tlsproxy-${crypto.randomUUID()}`;

let cg: RunningCredgate;
let up: TestUpstream;
let plain: TestUpstream;
let ca: { pem: string; file: string };
let token: string;
const sseRelease = Promise.withResolvers<void>();

beforeAll(async () => {
  const pki = makePki([HOST]);
  up = startUpstream(pki);
  plain = startPlainUpstream();
  up.handle((req) => {
    const path = new URL(req.url).pathname;
    if (path !== "/sse") return Response.json({ ok: true, path });
    // The first event at once, the second only when the test says so: streaming must not wait for the end.
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode("data: first\n\n"));
        await sseRelease.promise;
        controller.enqueue(new TextEncoder().encode("data: second\n\n"));
        controller.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  });
  cg = await startCredgate({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: `${resolveEntries([HOST], up.port)},${resolveEntries([PLAIN_HOST], plain.port)}`,
    },
  });
  ca = await gatewayCa(cg);
  token = cg.keys.defaultAgentToken;
  for (const host of [HOST, PLAIN_HOST]) {
    const r = await cg.api("POST", "/v1/secrets", {
      body: { name: `bearer ${host}`, type: "generic", value: SECRET, hostPattern: host, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
    });
    expect(r.status).toBe(201);
  }
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
  await plain?.stop();
});

const httpsProxy = () => `https://x:${token}@127.0.0.1:${cg.gatewayPort}`;

function expectInjected(u: TestUpstream, url: string) {
  const hits = u.seen.filter((s) => s.url === url);
  expect(hits.length).toBe(1);
  expect(hits[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);
  expect(JSON.stringify(hits[0]!.headers)).not.toContain(token);
}

/** TLS to the gateway port itself, verified with the gateway CA for `name`. */
async function tlsToProxy(name: string, port = cg.gatewayPort): Promise<tls.TLSSocket> {
  const secure = tls.connect({ host: "127.0.0.1", port, ca: ca.pem, servername: net.isIP(name) ? undefined : name, checkServerIdentity: (_h, cert) => tls.checkServerIdentity(name, cert) });
  await new Promise<void>((resolve, reject) => {
    secure.once("secureConnect", resolve);
    secure.once("error", reject);
  });
  return secure;
}

describe("TLS to the proxy (docs/operations.md#tls)", () => {
  test("the proxy's certificate is a gateway-CA leaf for localhost, 127.0.0.1 and ::1, negotiated without SNI", async () => {
    for (const name of ["localhost", "127.0.0.1", "::1"]) {
      const secure = await tlsToProxy(name);
      expect(secure.authorized).toBe(true);
      expect(secure.alpnProtocol === false || secure.alpnProtocol === "http/1.1").toBe(true);
      secure.destroy();
    }
  });

  test("curl --proxy https://… : CONNECT and MITM inside TLS, the secret injected, curl never sees it", async () => {
    const url = `/curl-https-proxy/${crypto.randomUUID()}`;
    const r = await run(["curl", "-sS", "--proxy", httpsProxy(), "--proxy-cacert", ca.file, "--cacert", ca.file, `https://${HOST}:${up.port}${url}`]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ ok: true, path: url });
    expect(r.stdout).not.toContain(SECRET);
    expectInjected(up, url);
  });

  test("curl --proxy https://… to an http:// URL: absolute-form inside TLS, injected", async () => {
    const url = `/curl-https-proxy-abs/${crypto.randomUUID()}`;
    const r = await run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", httpsProxy(), "--proxy-cacert", ca.file, `http://${PLAIN_HOST}:${plain.port}${url}`]);
    expect(r.stdout).toBe("200");
    expectInjected(plain, url);
  });

  test("a bad token over TLS → 407 with the proxy-auth body; nothing reaches the upstream", async () => {
    const url = `/https-proxy-407/${crypto.randomUUID()}`;
    const r = await run(["curl", "-sS", "-i", "--proxy", `https://x:agt_wrong@127.0.0.1:${cg.gatewayPort}`, "--proxy-cacert", ca.file, `http://${PLAIN_HOST}:${plain.port}${url}`]);
    expect(r.stdout).toMatch(/^HTTP\/1\.1 407 /);
    expect(r.stdout).toContain(PROXY_AUTH_BODY);
    expect(plain.seen.filter((s) => s.url === url).length).toBe(0);
  });

  test("origin-form inside TLS: the gateway's control routes (/healthz, /v1/gateway/ca)", async () => {
    const secure = await tlsToProxy("localhost");
    const reader = new ResponseReader(secure);
    secure.write(rawRequest("GET", "/healthz", `localhost:${cg.gatewayPort}`));
    const health = await reader.response();
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text).status).toBe("ok");
    secure.write(rawRequest("GET", "/v1/gateway/ca", `localhost:${cg.gatewayPort}`));
    const caRes = await reader.response();
    secure.destroy();
    expect(caRes.status).toBe(200);
    expect(caRes.text.trim()).toBe(ca.pem.trim());
  });

  test("Node 20 undici ProxyAgent with an https: proxy URI", async () => {
    const url = `/node-https-proxy/${crypto.randomUUID()}`;
    const script = `
      const { ProxyAgent, fetch } = require("undici");
      const fs = require("node:fs");
      const ca = fs.readFileSync(process.env.CA_FILE, "utf8");
      const agent = new ProxyAgent({ uri: process.env.PROXY, proxyTls: { ca, servername: "localhost" }, requestTls: { ca } });
      fetch(process.env.TARGET, { dispatcher: agent }).then(async (r) => { console.log(r.status, await r.text()); process.exit(0); })
        .catch((e) => { console.error(e.cause ?? e); process.exit(1); });`;
    const r = await run(["node", "-e", script], { env: { CA_FILE: ca.file, PROXY: httpsProxy(), TARGET: `https://${HOST}:${up.port}${url}`, NODE_PATH: `${process.cwd()}/node_modules` } });
    expect(r.stderr).toBe("");
    expect(r.stdout).toStartWith("200 ");
    expect(r.stdout).not.toContain(SECRET);
    expectInjected(up, url);
  });

  test("Python requests with an https proxy (TLS in TLS)", async () => {
    const url = `/python-https-proxy/${crypto.randomUUID()}`;
    const script = [
      "import os, requests",
      "r = requests.get(os.environ['TARGET'], proxies={'https': os.environ['PROXY']}, verify=os.environ['CA_FILE'])",
      "print(r.status_code, r.text)",
    ].join("\n");
    const r = await run(["python3", "-c", script], { env: { CA_FILE: ca.file, PROXY: httpsProxy(), TARGET: `https://${HOST}:${up.port}${url}`, REQUESTS_CA_BUNDLE: ca.file } });
    expect(r.stderr).toBe("");
    expect(r.stdout).toStartWith("200 ");
    expectInjected(up, url);
  });

  test("a plain-HTTP proxy client on the same port at the same time", async () => {
    const urls = Array.from({ length: 6 }, (_, i) => `/mixed/${i}/${crypto.randomUUID()}`);
    const results = await Promise.all(
      urls.map((url, i) =>
        run([
          "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
          "--proxy", i % 2 === 0 ? httpsProxy() : `http://x:${token}@127.0.0.1:${cg.gatewayPort}`,
          "--proxy-cacert", ca.file, "--cacert", ca.file, `https://${HOST}:${up.port}${url}`,
        ]),
      ),
    );
    for (const r of results) expect(r.stdout).toBe("200");
    for (const url of urls) expectInjected(up, url);
  });

  test("a relay between the client and the gateway captures neither the agent token nor the secret", async () => {
    const relay = await startCaptureRelay(cg.gatewayPort);
    const relayPort = relay.port;
    try {
      const url = `/captured/${crypto.randomUUID()}`;
      const r = await run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", `https://x:${token}@127.0.0.1:${relayPort}`, "--proxy-cacert", ca.file, "--cacert", ca.file, `https://${HOST}:${up.port}${url}`]);
      expect(r.stdout).toBe("200");
      expectInjected(up, url);
      const all = relay.all();
      expect(all.length).toBeGreaterThan(0);
      // Not even the destination: the CONNECT line travels inside the TLS to the proxy.
      for (const needle of [token, SECRET, basic(token).split(" ")[1]!, HOST]) expect(all.includes(Buffer.from(needle))).toBe(false);
    } finally {
      relay.close();
    }
  });
});

describe("inside the TLS to the proxy, everything as over plain HTTP", () => {
  /** TLS to the proxy, CONNECT inside it, then TLS to the gateway's MITM leaf inside that. */
  async function mitmOverTls(authority: string, servername: string) {
    const outer = await tlsToProxy("127.0.0.1");
    const t = await connectOver(outer, authority, basic(token));
    expect(t.connect.status).toBe(200);
    const inner = tls.connect({ socket: t.socket, ca: ca.pem, servername, ALPNProtocols: ["http/1.1"] });
    await new Promise<void>((resolve, reject) => {
      inner.once("secureConnect", resolve);
      inner.once("error", reject);
    });
    inner.on("error", () => {});
    return { tls: inner, reader: new ResponseReader(inner) };
  }

  test("WebSocket: the upgrade is injected, frames echo both ways", async () => {
    const t = await mitmOverTls(`${HOST}:${up.port}`, HOST);
    try {
      const key = crypto.getRandomValues(new Uint8Array(16));
      const keyText = Buffer.from(key).toString("base64");
      const before = up.seen.length;
      t.tls.write(rawRequest("GET", "/ws", `${HOST}:${up.port}`, ["Upgrade: websocket", "Connection: Upgrade", `Sec-WebSocket-Key: ${keyText}`, "Sec-WebSocket-Version: 13"]));
      const head = await t.reader.head();
      expect(head.status).toBe(101);
      expect(head.headers["sec-websocket-accept"]).toBe(createHash("sha1").update(`${keyText}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64"));
      expect(up.seen.slice(before).find((s) => s.url === "/ws")!.headers.authorization).toBe(`Bearer ${SECRET}`);
      t.tls.write(wsFrame("over two TLS layers"));
      expect(await readWsText(t.reader)).toBe("echo:over two TLS layers");
    } finally {
      t.tls.destroy();
    }
  });

  test("streaming: the first SSE event reaches the agent while the upstream still holds the second", async () => {
    const t = await mitmOverTls(`${HOST}:${up.port}`, HOST);
    try {
      t.tls.write(rawRequest("GET", "/sse", `${HOST}:${up.port}`, ["Accept: text/event-stream"]));
      const head = await t.reader.head();
      expect(head.status).toBe(200);
      expect(head.headers["content-type"]).toBe("text/event-stream");
      expect(head.headers["transfer-encoding"]).toBe("chunked");
      // One chunk: its size line, the event, CRLF — while the upstream has not sent the second event yet.
      const event = "data: first\n\n";
      expect((await t.reader.take(`${event.length.toString(16)}\r\n${event}\r\n`.length)).toString()).toBe(`${event.length.toString(16)}\r\n${event}\r\n`);
      sseRelease.resolve();
      const second = "data: second\n\n";
      expect((await t.reader.take(`${second.length.toString(16)}\r\n${second}\r\n`.length)).toString()).toBe(`${second.length.toString(16)}\r\n${second}\r\n`);
    } finally {
      t.tls.destroy();
    }
  });

  test("approvals: a request held at the gateway completes once approved through the API", async () => {
    const rule = await cg.api("POST", "/v1/policy/rules", {
      body: { name: "hold over TLS", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HOST, pathPattern: "/held/*" }] },
    });
    expect(rule.status).toBe(201);
    expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
    const url = `/held/${crypto.randomUUID()}`;
    const curl = run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", httpsProxy(), "--proxy-cacert", ca.file, "--cacert", ca.file, `https://${HOST}:${up.port}${url}`], { timeoutMs: 30_000 });
    const pending = await eventually(async () => {
      const list = (await cg.api("GET", "/v1/approvals/pending")).body?.requests ?? [];
      return list.find((r: any) => r.path === url) ?? null;
    }, 15_000, 50);
    expect(up.seen.some((s) => s.url === url)).toBe(false);
    expect((await cg.api("POST", `/v1/approvals/${pending.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
    expect((await curl).stdout).toBe("200");
    expectInjected(up, url);
  });
});
