// The HTTPS proxy on the gateway port (CONTRACT §6.18): a connection whose first byte is a TLS handshake is
// TLS to the proxy itself, with a leaf of the gateway CA, and inside it the proxy behaves as over plain HTTP.
// Real clients (curl, Node undici, Python requests) inject through it; plain-HTTP proxy clients keep working
// on the same port at the same time; a relay between client and gateway sees neither token nor secret.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import * as tls from "node:tls";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";
import { startCaptureRelay } from "../support/relay.ts";
import { PROXY_AUTH_BODY, ResponseReader, basic, gatewayCa, rawRequest, resolveEntries, run, startPlainUpstream } from "../support/gateway.ts";

const HOST = "api.tlsproxy.test";
const PLAIN_HOST = "plain.tlsproxy.test";
const SECRET = `S3CR3T-tlsproxy-${crypto.randomUUID()}`;

let cg: RunningCredgate;
let up: TestUpstream;
let plain: TestUpstream;
let ca: { pem: string; file: string };
let token: string;

beforeAll(async () => {
  const pki = makePki([HOST]);
  up = startUpstream(pki);
  plain = startPlainUpstream();
  up.handle((req) => Response.json({ ok: true, path: new URL(req.url).pathname }));
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

describe("TLS to the proxy (§6.18)", () => {
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
