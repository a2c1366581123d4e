// Tunnels through the real gateway process (docs/gateway.md#request-targets, docs/gateway.md#tunnels).
// Request targets: inside a tunnel only a path on the tunnel's own host may be requested — origin-form,
// `OPTIONS *`, absolute-form with the tunnel's authority; a CONNECT inside the tunnel, a target without a
// leading `/`, `//host/…`, `@host/…` or another authority is answered 400 bad_request, logged, and nothing
// reaches any upstream. Idle tunnels: with the idle times shortened for the test (CREDGATE_TUNNEL_IDLE_SECONDS,
// CREDGATE_PASSTHROUGH_IDLE_SECONDS), an intercepted tunnel without bytes and without a request in flight is
// closed, one answering a slow request is not, one that never speaks is closed too; a passthrough tunnel is
// closed once no bytes cross it either way. Clients: curl and Node (a child process) as agents run them, and a
// raw TLS client for the targets curl will not send.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import { ResponseReader, basic, gatewayCa, openConnect, openTlsTunnel, rawRequest, resolveEntries, run, startPlainUpstream, startRawUpstream, until, type RawUpstream } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.tunnel.test";
const EVIL = "evil.test";
const PLAIN = "plain.tunnel.test";
const SECRET = "tunnel-secret-0123456789";

let pki: TestPki;

beforeAll(() => {
  pki = makePki([HOST, EVIL]);
}, 30_000);

/** Every request target the contract refuses inside a tunnel, as raw request lines. */
const REFUSED = [
  ["CONNECT", `${EVIL}:443`],
  ["GET", "botPH/a"],
  ["GET", `//${EVIL}/x`],
  ["GET", `@${EVIL}/x`],
  ["GET", `https://${EVIL}/x`],
] as const;

describe("request targets inside a tunnel", () => {
  let cg: RunningCredgate;
  let up: RawUpstream;
  let evil: RawUpstream;
  let plain: TestUpstream;
  let ca: { pem: string; file: string };
  let authority: string;

  beforeAll(async () => {
    up = await startRawUpstream(pki);
    evil = await startRawUpstream(pki);
    plain = startPlainUpstream();
    up.respond((_h, sock) => sock.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    cg = await startCredgate({
      env: {
        CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
        CREDGATE_RESOLVE: `${resolveEntries([HOST], up.port)},${resolveEntries([PLAIN], plain.port)}`,
        CREDGATE_CONNECT_TO: `${EVIL}:443:127.0.0.1:${evil.port}`,
      },
    });
    ca = await gatewayCa(cg);
    authority = `${HOST}:${up.port}`;
    for (const host of [HOST, PLAIN]) {
      const r = await cg.api("POST", "/v1/secrets", { body: { name: host, type: "generic", value: SECRET, hostPattern: host, injectionConfig: { headerName: "x-api-key" } } });
      expect(r.status).toBe(201);
    }
  }, 30_000);

  afterAll(async () => {
    await cg?.stop();
    up?.close();
    evil?.close();
    await plain?.stop();
  });

  async function logsOf(host: string): Promise<{ method: string; path: string; status: number; decision: string }[]> {
    return (await cg.api("GET", `/v1/logs?host=${encodeURIComponent(host)}`)).body.data;
  }

  test("origin-form, OPTIONS * and absolute-form on the tunnel's own authority go to the tunnel's host, injected", async () => {
    const t = await openTlsTunnel(cg.gatewayPort, authority, cg.keys.defaultAgentToken, ca.pem, HOST);
    const before = up.heads.length;
    for (const [method, target] of [
      ["GET", "/origin?q=1"],
      ["OPTIONS", "*"],
      ["GET", `https://${authority}/absolute?q=2`],
    ]) {
      t.tls.write(rawRequest(method!, target!, authority));
      expect((await t.reader.response()).status).toBe(200);
    }
    const lines = up.heads.slice(before).map((h) => h.split("\r\n"));
    expect(lines.map((l) => l[0])).toEqual(["GET /origin?q=1 HTTP/1.1", "OPTIONS * HTTP/1.1", "GET /absolute?q=2 HTTP/1.1"]);
    for (const l of lines) expect(l).toContain(`x-api-key: ${SECRET}`);
    t.tls.destroy();
  });

  test("CONNECT inside the tunnel, botPH/a, //evil.test/x, @evil.test/x, another authority → 400 bad_request, nothing forwarded, logged", async () => {
    const t = await openTlsTunnel(cg.gatewayPort, authority, cg.keys.defaultAgentToken, ca.pem, HOST);
    const before = up.heads.length;
    for (const [method, target] of REFUSED) {
      t.tls.write(rawRequest(method, target, authority, ["X-Request-Id: refused-target"]));
      const res = await t.reader.response();
      expect(res.status).toBe(400);
      expect(res.headers["content-type"]).toBe("application/json");
      expect(res.headers["x-request-id"]).toBe("refused-target");
      expect(JSON.parse(res.text)).toEqual({
        error: "bad_request",
        message: `A request inside the tunnel to ${authority} must target a path on it ("/…", "*" for OPTIONS, or a URL on ${authority}); "${target}" is not one.`,
      });
    }
    // The tunnel stays usable for what it may carry.
    t.tls.write(rawRequest("GET", "/after", authority));
    expect((await t.reader.response()).status).toBe(200);
    t.tls.destroy();
    expect(up.heads.slice(before).map((h) => h.split("\r\n")[0])).toEqual(["GET /after HTTP/1.1"]);
    expect(evil.heads).toEqual([]);
    const rows = await until(async () => {
      const r = (await logsOf(authority)).filter((x) => x.status === 400);
      if (r.length < REFUSED.length) throw new Error(`${r.length} rows so far`);
      return r;
    });
    expect(rows.map((r) => [r.method, r.decision]).sort()).toEqual(REFUSED.map(([m]) => [m, "blocked"]).sort());
  });

  test("curl: --request-target //evil.test/x and botPH/a are refused, OPTIONS * goes through (TLS and plain tunnels)", async () => {
    const proxy = `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`;
    const curl = (url: string, extra: string[]) => run(["curl", "-sS", "-p", "--proxy", proxy, "--cacert", ca.file, "-o", "-", "-w", "\n%{http_code}", ...extra, url]);
    const before = up.heads.length;
    const plainBefore = plain.seen.length;
    for (const target of [`//${EVIL}/x`, "botPH/a"]) {
      for (const url of [`https://${authority}/`, `http://${PLAIN}:${plain.port}/`]) {
        const r = await curl(url, ["--request-target", target]);
        expect(r.stdout.split("\n").at(-1)).toBe("400");
        expect(JSON.parse(r.stdout.split("\n")[0]!).error).toBe("bad_request");
      }
    }
    expect(up.heads.length).toBe(before);
    expect(plain.seen.length).toBe(plainBefore);
    expect(evil.heads).toEqual([]);
    const options = await curl(`https://${authority}/`, ["-X", "OPTIONS", "--request-target", "*"]);
    expect(options.stdout.split("\n").at(-1)).toBe("200");
    expect(up.heads.at(-1)!.split("\r\n")[0]).toBe("OPTIONS * HTTP/1.1");
  });
});

describe("idle tunnels", () => {
  const IDLE_S = 2;
  const PASSTHROUGH_IDLE_S = 3;
  let cg: RunningCredgate;
  let up: TestUpstream;
  let echo: net.Server;
  let echoPort: number;
  let ca: { pem: string; file: string };

  beforeAll(async () => {
    up = startUpstream(pki);
    up.handle((req) => (new URL(req.url).pathname === "/slow" ? Bun.sleep((IDLE_S + 2) * 1000).then(() => new Response("slow but here")) : undefined));
    // The passthrough host: a TCP echo.
    echo = net.createServer((s) => {
      s.on("error", () => {});
      s.pipe(s);
    });
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
    echoPort = (echo.address() as net.AddressInfo).port;
    cg = await startCredgate({
      env: {
        CREDGATE_TUNNEL_IDLE_SECONDS: String(IDLE_S),
        CREDGATE_PASSTHROUGH_IDLE_SECONDS: String(PASSTHROUGH_IDLE_S),
        CREDGATE_PASSTHROUGH_HOSTS: "raw.tunnel.test",
        CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
        CREDGATE_RESOLVE: `${resolveEntries([HOST], up.port)},raw.tunnel.test:${echoPort}:127.0.0.1`,
      },
    });
    ca = await gatewayCa(cg);
  }, 30_000);

  afterAll(async () => {
    await cg?.stop();
    await up?.stop();
    echo?.close();
  });

  /**
   * A Node agent (a child process) that opens a tunnel, sends `requests` (path, then the pause before the next
   * one), and reports each status and how long after its last answer the gateway closed the tunnel.
   */
  async function nodeAgent(requests: [path: string, pauseMs: number][]): Promise<{ statuses: number[]; closedAfterMs: number }> {
    const script = `
      const http = require("node:http"), tls = require("node:tls");
      const [gw, token, authority, host, ca, plan] = process.argv.slice(1);
      const requests = JSON.parse(plan);
      const connect = http.request({ host: "127.0.0.1", port: Number(gw), method: "CONNECT", path: authority, headers: { "proxy-authorization": "Basic " + Buffer.from("x:" + token).toString("base64") } });
      connect.on("connect", (res, socket) => {
        if (res.statusCode !== 200) throw new Error("CONNECT " + res.statusCode);
        const s = tls.connect({ socket, servername: host, ca });
        const statuses = [];
        let buf = "", lastAnswer = Date.now();
        const send = (i) => s.write("GET " + requests[i][0] + " HTTP/1.1\\r\\nHost: " + host + "\\r\\n\\r\\n");
        s.on("secureConnect", () => send(0));
        s.on("data", (d) => {
          buf += d;
          const headEnd = buf.indexOf("\\r\\n\\r\\n");
          if (headEnd < 0) return;
          const head = buf.slice(0, headEnd);
          const end = headEnd + 4 + Number(/\\r\\ncontent-length: *(\\d+)/i.exec(head)[1]);
          if (buf.length < end) return;
          buf = buf.slice(end);
          statuses.push(Number(head.slice(9, 12)));
          lastAnswer = Date.now();
          const i = statuses.length;
          if (i < requests.length) setTimeout(() => send(i), requests[i - 1][1]);
        });
        s.on("close", () => console.log(JSON.stringify({ statuses, closedAfterMs: Date.now() - lastAnswer })));
      });
      connect.end();`;
    const r = await run(["node", "-e", script, String(cg.gatewayPort), cg.keys.defaultAgentToken, `${HOST}:${up.port}`, HOST, ca.pem, JSON.stringify(requests)], { timeoutMs: 30_000 });
    if (r.code !== 0 || !r.stdout.trim()) throw new Error(`node agent failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout);
  }

  test("an intercepted tunnel is closed once idle, not before: a request a second after the last still gets through", async () => {
    const r = await nodeAgent([
      ["/one", 1000],
      ["/two", 0],
    ]);
    expect(r.statuses).toEqual([200, 200]);
    // Closed by the gateway (the agent never closes), and not right after the last answer.
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(IDLE_S * 1000 - 500);
  }, 30_000);

  test("a request in flight longer than the idle time keeps its tunnel open; the answer arrives", async () => {
    const r = await nodeAgent([["/slow", 0]]);
    expect(r.statuses).toEqual([200]);
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(IDLE_S * 1000 - 500);
    expect(up.seen.filter((s) => s.url === "/slow")).toHaveLength(1);
  }, 30_000);

  test("a tunnel that never sends a byte after its 200 is closed too", async () => {
    const t = await openConnect(cg.gatewayPort, `${HOST}:${up.port}`, basic(cg.keys.defaultAgentToken));
    expect(t.connect.status).toBe(200);
    const reader = new ResponseReader(t.socket);
    expect(await reader.closed(15_000)).toBe(true);
  }, 30_000);

  describe("passthrough", () => {
    /** A raw tunnel to the echo host; `talk` sends a line every `everyMs` for `forMs`, each echoed back. */
    async function passthrough(everyMs: number, forMs: number): Promise<{ echoed: string; closedAfterQuietMs: number }> {
      const t = await openConnect(cg.gatewayPort, `raw.tunnel.test:${echoPort}`, basic(cg.keys.defaultAgentToken));
      expect(t.connect.status).toBe(200);
      let echoed = "";
      t.socket.on("data", (d: Buffer) => (echoed += d.toString()));
      t.socket.resume();
      const started = Date.now();
      let n = 0;
      while (Date.now() - started < forMs) {
        t.socket.write(`line ${n++}\n`);
        await Bun.sleep(everyMs);
      }
      const quiet = Date.now();
      const closed = await new Promise<number>((resolve) => {
        if (t.socket.destroyed) return resolve(0);
        t.socket.once("close", () => resolve(Date.now() - quiet));
      });
      await until(() => expect(echoed.split("\n").filter(Boolean)).toHaveLength(n));
      return { echoed, closedAfterQuietMs: closed };
    }

    test("bytes both ways keep it open past its idle time; quiet, it is closed", async () => {
      const r = await passthrough(700, (PASSTHROUGH_IDLE_S + 2) * 1000);
      expect(r.echoed.startsWith("line 0\nline 1\n")).toBe(true);
      expect(r.closedAfterQuietMs).toBeGreaterThanOrEqual(PASSTHROUGH_IDLE_S * 1000 - 1000);
    }, 30_000);
  });
});
