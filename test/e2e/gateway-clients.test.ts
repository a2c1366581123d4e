// Real clients through the real MITM gateway (docs/gateway.md#listener, docs/gateway.md#proxy-authentication, docs/gateway.md#tunnels, docs/injection.md#injection-variants): curl, a Node
// client (undici ProxyAgent) and Python urllib each get the secret injected at the upstream while nothing
// they receive contains it; proxy authentication answers 407 before any egress; absolute-form requests
// (http:// and https://) and plain CONNECT tunnels are injected too.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";
import { PROXY_AUTH_BODY, ResponseReader, basic, eventually, gatewayCa, openConnect, rawRequest, resolveEntries, run, startPlainUpstream } from "../support/gateway.ts";
import * as net from "node:net";

const HOST = "api.clients.test";
const PLAIN_HOST = "plain.clients.test";
const SECRET = `S3CR3T-clients-${crypto.randomUUID()}`;
const PLAIN_SECRET = `PLAIN-clients-${crypto.randomUUID()}`;

let cg: RunningCredgate;
let up: TestUpstream;
let plain: TestUpstream;
let ca: { pem: string; file: string };
let token: string;
let proxy: string;

beforeAll(async () => {
  const pki = makePki([HOST]);
  up = startUpstream(pki);
  plain = startPlainUpstream();
  // Answers never echo what the upstream saw, so any secret in a client's output came from the gateway.
  up.handle((req) => Response.json({ ok: true, path: new URL(req.url).pathname }, { headers: { "x-upstream": "yes" } }));
  cg = await startCredgate({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: `${resolveEntries([HOST], up.port)},${resolveEntries([PLAIN_HOST], plain.port)}`,
    },
  });
  ca = await gatewayCa(cg);
  token = cg.keys.defaultAgentToken;
  proxy = `http://x:${token}@127.0.0.1:${cg.gatewayPort}`;
  for (const [host, value] of [
    [HOST, SECRET],
    [PLAIN_HOST, PLAIN_SECRET],
  ]) {
    const r = await cg.api("POST", "/v1/secrets", {
      body: { name: `bearer ${host}`, type: "generic", value, hostPattern: host, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
    });
    expect(r.status).toBe(201);
  }
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
  await plain?.stop();
});

/** The upstream requests whose path+query is exactly `url`. */
function seenAt(u: TestUpstream, url: string) {
  return u.seen.filter((s) => s.url === url);
}

function expectInjected(u: TestUpstream, url: string, value: string) {
  const hits = seenAt(u, url);
  expect(hits.length).toBe(1);
  const h = hits[0]!.headers;
  expect(h.authorization).toBe(`Bearer ${value}`);
  expect(h["proxy-authorization"]).toBeUndefined();
  // The agent token never goes upstream, in any header.
  expect(JSON.stringify(h)).not.toContain(token);
}

describe("curl through CONNECT + MITM", () => {
  test("the secret is injected upstream; curl's output never contains it", async () => {
    const url = `/curl/${crypto.randomUUID()}`;
    const r = await run([
      "curl", "-sS", "-i", "--proxy", proxy, "--cacert", ca.file,
      "-H", "Authorization: Bearer credgate-managed",
      `https://${HOST}:${up.port}${url}`,
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    // curl chooses h2 inside the tunnel when offered (docs/gateway.md#http2-and-grpc).
    expect(r.stdout).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/2 200 /);
    expect(r.stdout).toContain("x-upstream: yes");
    expect(r.stdout).toContain(`"path":"${url}"`);
    expect(r.stdout).not.toContain(SECRET);
    expectInjected(up, url, SECRET);
  });

  test("the certificate curl verifies is credgate's leaf for the CONNECT host", async () => {
    const r = await run(["curl", "-sS", "-o", "/dev/null", "-w", "%{ssl_verify_result} %{http_code}", "-v", "--proxy", proxy, "--cacert", ca.file, `https://${HOST}:${up.port}/cert`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("0 200");
    expect(r.stderr).toContain("issuer: CN=credgate Gateway CA");
    expect(r.stderr).toContain(`subjectAltName: host "${HOST}" matched cert's "${HOST}"`);
  });

  test("without the gateway CA curl refuses the MITM certificate and nothing reaches the upstream", async () => {
    const url = `/untrusted/${crypto.randomUUID()}`;
    const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", "/dev/null", `https://${HOST}:${up.port}${url}`]);
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBe(56);
    expect(seenAt(up, url).length).toBe(0);
  });

  test("a client that rejects the gateway's certificate gives one warning per (agent, host), with the hint", async () => {
    const host = "untrusting.clients.test";
    const warnings = () => cg.output().split("\n").filter((l) => l.includes("did not complete the TLS handshake") && l.includes(host));
    for (let i = 0; i < 2; i++) {
      // Node through a CONNECT tunnel it opens by hand, without the gateway CA: it aborts the handshake.
      const script = `
        const net = require("node:net"), tls = require("node:tls");
        const s = net.connect(${cg.gatewayPort}, "127.0.0.1", () => s.write("CONNECT ${host}:443 HTTP/1.1\\r\\nHost: ${host}:443\\r\\nProxy-Authorization: Basic ${btoa(`x:${token}`)}\\r\\n\\r\\n"));
        s.once("data", () => { const t = tls.connect({ socket: s, servername: "${host}" }); t.on("error", (e) => { console.log(e.code); process.exit(0); }); });`;
      const r = await run(["node", "-e", script]);
      expect(r.stdout.trim()).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|UNABLE_TO_GET_ISSUER_CERT/);
    }
    const lines = (await eventually(() => (warnings().length > 0 ? warnings() : null), 5000))!;
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({ level: "warn", host, agent: "default" });
    expect(line.hint).toContain("/v1/gateway/ca");
  });

  test("token as the username only (http://<token>@gateway) is accepted", async () => {
    const url = `/username-only/${crypto.randomUUID()}`;
    const r = await run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", `http://${token}@127.0.0.1:${cg.gatewayPort}`, "--cacert", ca.file, `https://${HOST}:${up.port}${url}`]);
    expect(r.stdout).toBe("200");
    expectInjected(up, url, SECRET);
  });

  test("token as username with an empty password (http://<token>:@gateway) is accepted", async () => {
    const url = `/username-colon/${crypto.randomUUID()}`;
    const r = await run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", `http://${token}:@127.0.0.1:${cg.gatewayPort}`, "--cacert", ca.file, `https://${HOST}:${up.port}${url}`]);
    expect(r.stdout).toBe("200");
    expectInjected(up, url, SECRET);
  });
});

describe("Node (undici ProxyAgent) and Python urllib", () => {
  test("Node 20 with undici ProxyAgent: injected upstream, never visible to the client", async () => {
    const url = `/node/${crypto.randomUUID()}`;
    const script = `
      const { ProxyAgent, request } = require("undici");
      const fs = require("fs");
      (async () => {
        const dispatcher = new ProxyAgent({ uri: process.env.PROXY_URL, requestTls: { ca: fs.readFileSync(process.env.CA_FILE, "utf8") } });
        const r = await request(process.env.TARGET, { dispatcher, headers: { authorization: "Bearer credgate-managed" } });
        const body = await r.body.text();
        console.log(JSON.stringify({ status: r.statusCode, headers: r.headers, body }));
        await dispatcher.close();
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const r = await run(["node", "-e", script], { env: { PROXY_URL: proxy, CA_FILE: ca.file, TARGET: `https://${HOST}:${up.port}${url}` } });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.status).toBe(200);
    expect(out.headers["x-upstream"]).toBe("yes");
    expect(JSON.parse(out.body)).toEqual({ ok: true, path: url });
    expect(r.stdout).not.toContain(SECRET);
    expectInjected(up, url, SECRET);
  });

  test("Node 20 https module over a CONNECT tunnel with NODE_EXTRA_CA_CERTS", async () => {
    // The classic pattern without any proxy library: http.request CONNECT, then https over the socket.
    const url = `/node-https/${crypto.randomUUID()}`;
    const script = `
      const http = require("http"), https = require("https");
      const u = new URL(process.env.TARGET);
      const auth = "Basic " + Buffer.from("x:" + process.env.TOKEN).toString("base64");
      const c = http.request({ host: "127.0.0.1", port: Number(process.env.GW_PORT), method: "CONNECT", path: u.host, headers: { "proxy-authorization": auth } });
      c.on("connect", (res, socket) => {
        if (res.statusCode !== 200) { console.error("CONNECT " + res.statusCode); process.exit(1); }
        https.get({ host: u.hostname, port: u.port, path: u.pathname, socket, agent: false, servername: u.hostname }, (r) => {
          let body = ""; r.on("data", (d) => body += d); r.on("end", () => { console.log(JSON.stringify({ status: r.statusCode, body })); socket.destroy(); });
        }).on("error", (e) => { console.error(e.message); process.exit(1); });
      });
      c.on("error", (e) => { console.error(e.message); process.exit(1); });
      c.end();`;
    const r = await run(["node", "-e", script], { env: { TOKEN: token, GW_PORT: String(cg.gatewayPort), NODE_EXTRA_CA_CERTS: ca.file, TARGET: `https://${HOST}:${up.port}${url}` } });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ status: 200, body: JSON.stringify({ ok: true, path: url }) });
    expectInjected(up, url, SECRET);
  });

  test("Python urllib with https_proxy and SSL_CERT_FILE", async () => {
    const url = `/python/${crypto.randomUUID()}`;
    const script = [
      "import json, os, urllib.request",
      "req = urllib.request.Request(os.environ['TARGET'], headers={'Authorization': 'Bearer credgate-managed'})",
      "r = urllib.request.urlopen(req, timeout=20)",
      "print(json.dumps({'status': r.status, 'headers': dict(r.headers), 'body': r.read().decode()}))",
    ].join("\n");
    const r = await run(["python3", "-c", script], {
      env: { https_proxy: proxy, HTTPS_PROXY: proxy, SSL_CERT_FILE: ca.file, TARGET: `https://${HOST}:${up.port}${url}` },
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.status).toBe(200);
    expect(out.headers["x-upstream"]).toBe("yes");
    expect(JSON.parse(out.body)).toEqual({ ok: true, path: url });
    expect(r.stdout).not.toContain(SECRET);
    expectInjected(up, url, SECRET);
  });
});

describe("407 before egress (docs/gateway.md#proxy-authentication)", () => {
  const authority = () => `${HOST}:${up.port}`;

  for (const [name, header] of [
    ["no Proxy-Authorization", null],
    ["an unknown token", basic(`agt_${"0".repeat(64)}`)],
    ["a non-Basic scheme", () => `Bearer ${token}`],
    ["Basic with an empty user and password", basic("", "")],
    ["garbage instead of base64", "Basic !!!notbase64!!!"],
  ] as const) {
    test(`CONNECT with ${name} → 407, exact body and Proxy-Authenticate, connection closed`, async () => {
      const before = up.seen.length;
      const h = typeof header === "function" ? header() : header;
      const t = await openConnect(cg.gatewayPort, authority(), h);
      expect(t.connect.statusLine).toBe("HTTP/1.1 407 Proxy Authentication Required");
      expect(t.connect.headers["proxy-authenticate"]).toBe('Basic realm="credgate"');
      expect(t.connect.headers["content-type"]).toBe("application/json");
      expect(t.body).toBe(PROXY_AUTH_BODY);
      expect(await t.closed()).toBe(true);
      expect(up.seen.length).toBe(before);
    });
  }

  test("curl with no token and with a wrong token: CONNECT fails with 407, upstream sees nothing", async () => {
    const before = up.seen.length;
    for (const p of [`http://127.0.0.1:${cg.gatewayPort}`, `http://x:agt_${"f".repeat(64)}@127.0.0.1:${cg.gatewayPort}`]) {
      const r = await run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_connect}", "--proxy", p, "--cacert", ca.file, `https://${HOST}:${up.port}/nope`]);
      expect(r.code).toBe(56);
      expect(r.stdout).toBe("407");
    }
    expect(up.seen.length).toBe(before);
  });

  test("the scheme is case-insensitive and a token without a colon is the whole string", async () => {
    for (const h of [`basic ${Buffer.from(`x:${token}`).toString("base64")}`, `BASIC ${Buffer.from(`x:${token}`).toString("base64")}`, `Basic ${Buffer.from(token).toString("base64")}`]) {
      const t = await openConnect(cg.gatewayPort, authority(), h);
      expect(t.connect.statusLine).toBe("HTTP/1.1 200 Connection Established");
      t.socket.destroy();
    }
  });

  test("absolute-form without a token → 407 with the exact body; nothing is forwarded", async () => {
    const before = plain.seen.length;
    const sock = net.connect({ host: "127.0.0.1", port: cg.gatewayPort });
    const reader = new ResponseReader(sock);
    sock.write(rawRequest("GET", `http://${PLAIN_HOST}:${plain.port}/abs-noauth`, `${PLAIN_HOST}:${plain.port}`));
    const res = await reader.response();
    expect(res.status).toBe(407);
    expect(res.headers["proxy-authenticate"]).toBe('Basic realm="credgate"');
    expect(res.headers["content-type"]).toBe("application/json");
    expect(res.text).toBe(PROXY_AUTH_BODY);
    sock.destroy();
    // curl's view of the same refusal.
    const r = await run(["curl", "-sS", "-i", "--proxy", `http://x:agt_${"1".repeat(64)}@127.0.0.1:${cg.gatewayPort}`, `http://${PLAIN_HOST}:${plain.port}/abs-badauth`]);
    expect(r.stdout).toMatch(/^HTTP\/1\.1 407 /);
    expect(r.stdout.toLowerCase()).toContain('proxy-authenticate: basic realm="credgate"');
    expect(r.stdout.endsWith(PROXY_AUTH_BODY)).toBe(true);
    expect(plain.seen.length).toBe(before);
  });
});

describe("absolute-form and plain tunnels (docs/gateway.md#listener, docs/gateway.md#tunnels)", () => {
  test("curl --proxy http://… (absolute-form, no CONNECT): injected, Proxy-Authorization not forwarded", async () => {
    const url = `/abs/${crypto.randomUUID()}?q=1`;
    const r = await run(["curl", "-sS", "-i", "--proxy", proxy, "-H", "Authorization: Bearer credgate-managed", `http://${PLAIN_HOST}:${plain.port}${url}`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^HTTP\/1\.1 200 /);
    expect(r.stdout).not.toContain(PLAIN_SECRET);
    expectInjected(plain, url, PLAIN_SECRET);
    expect(seenAt(plain, url)[0]!.host).toBe(`${PLAIN_HOST}:${plain.port}`);
  });

  test("curl -p (CONNECT) to an http:// URL: a plain tunnel, still injected", async () => {
    const url = `/plain-tunnel/${crypto.randomUUID()}`;
    const r = await run(["curl", "-sS", "-i", "-p", "--proxy", proxy, `http://${PLAIN_HOST}:${plain.port}${url}`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 /);
    expectInjected(plain, url, PLAIN_SECRET);
  });

  // The internal server rebuilds request.url from Host; the front keeps the absolute-form target instead.
  test("absolute-form https:// (the gateway dials TLS itself): injected", async () => {
    const url = `/abs-https/${crypto.randomUUID()}`;
    const sock = net.connect({ host: "127.0.0.1", port: cg.gatewayPort });
    const reader = new ResponseReader(sock);
    sock.write(rawRequest("GET", `https://${HOST}:${up.port}${url}`, `${HOST}:${up.port}`, [`Proxy-Authorization: ${basic(token)}`, "Authorization: Bearer credgate-managed"]));
    const res = await reader.response();
    sock.destroy();
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ ok: true, path: url });
    expect(res.text).not.toContain(SECRET);
    expectInjected(up, url, SECRET);
  });

  test("absolute-form: the request-target's authority wins over a different Host header (RFC 9112 §3.2.2)", async () => {
    const url = `/abs-host/${crypto.randomUUID()}`;
    const sock = net.connect({ host: "127.0.0.1", port: cg.gatewayPort });
    const reader = new ResponseReader(sock);
    sock.write(rawRequest("GET", `http://${PLAIN_HOST}:${plain.port}${url}`, "elsewhere.invalid:1", [`Proxy-Authorization: ${basic(token)}`]));
    const res = await reader.response();
    sock.destroy();
    expect(res.status).toBe(200);
    expectInjected(plain, url, PLAIN_SECRET);
    expect(seenAt(plain, url)[0]!.host).toBe(`${PLAIN_HOST}:${plain.port}`);
  });

  test("absolute-form: the connection is kept alive and every request is authenticated on its own; one without a token → 407", async () => {
    const u1 = `/abs-keepalive/${crypto.randomUUID()}`;
    const u2 = `/abs-keepalive/${crypto.randomUUID()}`;
    const u3 = `/abs-keepalive/${crypto.randomUUID()}`;
    const sock = net.connect({ host: "127.0.0.1", port: cg.gatewayPort });
    const reader = new ResponseReader(sock);
    const authority = `${PLAIN_HOST}:${plain.port}`;
    sock.write(rawRequest("GET", `http://${authority}${u1}`, authority, [`Proxy-Authorization: ${basic(token)}`]));
    const first = await reader.response();
    expect(first.status).toBe(200);
    expect(first.headers.connection).toBeUndefined();
    // Same connection, its own token again.
    sock.write(rawRequest("GET", `http://${authority}${u2}`, authority, [`Proxy-Authorization: ${basic(token)}`]));
    const second = await reader.response();
    expect(second.status).toBe(200);
    // Same connection, no token: the token of the earlier requests is not remembered.
    sock.write(rawRequest("GET", `http://${authority}${u3}`, authority));
    const third = await reader.response();
    sock.destroy();
    expect(third.status).toBe(407);
    expect(third.text).toBe(PROXY_AUTH_BODY);
    expectInjected(plain, u1, PLAIN_SECRET);
    expectInjected(plain, u2, PLAIN_SECRET);
    expect(seenAt(plain, u3).length).toBe(0);
  });
});
