// The pieces of the Node preload that `credgate run` loads (run/proxyEnv.ts, run/tunnel.ts): which requests go
// through the proxy, and what a refused CONNECT turns into. The preload itself is tested end to end under
// `credgate run` (test/e2e/agent-setup.test.ts, test/e2e/binary.test.ts).
import { describe, expect, test } from "bun:test";
import { createServer, type Server, type Socket } from "node:net";
import { bypassed, proxyFor } from "../../src/run/proxyEnv.ts";
import { authority, openTunnel } from "../../src/run/tunnel.ts";

describe("proxyFor", () => {
  const env = { HTTPS_PROXY: "http://x:tok@gw.local:10255", HTTP_PROXY: "http://x:tok@gw.local:10255", NO_PROXY: "localhost,127.0.0.1,::1" };

  test("picks HTTPS_PROXY or HTTP_PROXY by scheme, lowercase names first", () => {
    expect(proxyFor(true, "api.github.com", 443, env)?.href).toBe("http://x:tok@gw.local:10255/");
    expect(proxyFor(false, "example.com", 80, { HTTP_PROXY: "http://a:1", http_proxy: "http://b:2" })?.host).toBe("b:2");
    expect(proxyFor(true, "example.com", 443, { HTTP_PROXY: "http://a:1" })).toBeNull();
    expect(proxyFor(true, "example.com", 443, { HTTPS_PROXY: "gw:3128" })?.href).toBe("http://gw:3128/");
    expect(proxyFor(true, "example.com", 443, { HTTPS_PROXY: "::not a url" })).toBeNull();
  });

  test("NO_PROXY and the proxy itself are reached directly", () => {
    for (const host of ["localhost", "127.0.0.1", "[::1]", "::1"]) expect(proxyFor(true, host, 443, env)).toBeNull();
    expect(proxyFor(false, "gw.local", 10255, env)).toBeNull();
    expect(proxyFor(false, "gw.local", 8080, env)).not.toBeNull();
  });
});

describe("bypassed (NO_PROXY)", () => {
  test.each([
    ["example.com", 443, "example.com", true],
    ["api.example.com", 443, "example.com", true],
    ["api.example.com", 443, ".example.com", true],
    ["api.example.com", 443, "*.example.com", true],
    ["badexample.com", 443, "example.com", false],
    ["example.com", 443, "example.com:8443", false],
    ["example.com", 8443, "example.com:8443", true],
    ["anything.test", 80, "*", true],
    ["::1", 443, "[::1]:443", true],
    ["other.com", 443, " example.com , , other.com ", true],
    ["other.com", 443, "", false],
  ] as const)("%s:%d with NO_PROXY=%p → %p", (host, port, noProxy, expected) => {
    expect(bypassed(host, port, noProxy)).toBe(expected);
  });
});

/** A fake proxy answering every CONNECT with `answer` (after recording what it was sent). */
async function fakeProxy(answer: string): Promise<{ server: Server; port: number; received: () => string }> {
  let received = "";
  const server = createServer((socket: Socket) => {
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
      if (received.includes("\r\n\r\n")) socket.end(answer);
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)));
  return { server, port, received: () => received };
}

function tunnel(proxy: URL, host: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => openTunnel(proxy, host, port, (err, socket) => (err ? reject(err) : resolve(socket as Socket))));
}

describe("openTunnel", () => {
  test("sends CONNECT with Basic proxy auth from the URL; a 200 hands the socket over", async () => {
    const proxy = await fakeProxy("HTTP/1.1 200 Connection Established\r\n\r\n");
    try {
      const socket = await tunnel(new URL(`http://x:agt_token@127.0.0.1:${proxy.port}`), "api.example.com", 443);
      expect(proxy.received()).toBe(`CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\nProxy-Authorization: Basic ${btoa("x:agt_token")}\r\n\r\n`);
      socket.destroy();
    } finally {
      proxy.server.close();
    }
  });

  test("a refusal is an error naming the status and credgate's message", async () => {
    const body = JSON.stringify({ error: "proxy_authentication_required", message: "credgate requires a valid agent token" });
    const proxy = await fakeProxy(`HTTP/1.1 407 Proxy Authentication Required\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    try {
      await expect(tunnel(new URL(`http://x:bad@127.0.0.1:${proxy.port}`), "api.example.com", 443)).rejects.toThrow(
        "the proxy refused CONNECT api.example.com:443: HTTP/1.1 407 Proxy Authentication Required (credgate requires a valid agent token)",
      );
    } finally {
      proxy.server.close();
    }
  });

  test("an unreachable proxy is an error naming it", async () => {
    const closed = await fakeProxy("");
    const port = closed.port;
    closed.server.close();
    await expect(tunnel(new URL(`http://127.0.0.1:${port}`), "api.example.com", 443)).rejects.toThrow(`cannot reach the proxy 127.0.0.1:${port} for api.example.com:443`);
  });

  test("IPv6 targets are bracketed in the authority", () => {
    expect(authority("::1", 443)).toBe("[::1]:443");
    expect(authority("[::1]", 8443)).toBe("[::1]:8443");
    expect(authority("example.com", 80)).toBe("example.com:80");
  });
});
