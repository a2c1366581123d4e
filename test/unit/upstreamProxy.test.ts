// The upstream proxy's rules and handshakes (docs/operations.md#upstream-proxy) as pure logic: the proxy URL,
// NO_PROXY matching, and the client side of HTTP CONNECT and SOCKS5 byte for byte (RFC 1928, RFC 1929); then the
// node:net driver against a real tinyproxy and microsocks: a server that speaks first is not cut short, and a
// proxy that is down or refuses gives a reason a person can read.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import { bypassesProxy, parseNoProxy, parseUpstreamProxy, proxyHandshake, type NoProxyRules, type UpstreamProxy } from "../../src/core/upstreamProxy.ts";
import { tunnelOnNodeSocket } from "../../src/services/proxyTunnel.ts";
import { freePort } from "../support/ports.ts";
import { startMicrosocks, startTinyproxy, type TestProxy } from "../support/upstreamProxies.ts";

const proxy = (raw: string) => parseUpstreamProxy(raw) as UpstreamProxy;
const rules = (raw: string) => parseNoProxy(raw) as NoProxyRules;
const bytes = (...b: number[]) => Uint8Array.from(b);

describe("CREDGATE_UPSTREAM_PROXY", () => {
  test("http:// and socks5:// with optional percent-encoded credentials; the shown form has none", () => {
    expect(proxy("http://proxy.internal:3128")).toEqual({ kind: "http", host: "proxy.internal", port: 3128, user: null, password: null, shown: "http://proxy.internal:3128" });
    expect(proxy("socks5://us%40er:p%3Ass@10.0.0.1:1080")).toEqual({ kind: "socks5", host: "10.0.0.1", port: 1080, user: "us@er", password: "p:ss", shown: "socks5://10.0.0.1:1080" });
    expect(proxy("http://[fd00::1]:3128/").host).toBe("fd00::1");
    expect(proxy("http://user@p:1").password).toBe("");
  });
  test("what it refuses, with a reason", () => {
    expect(parseUpstreamProxy("https://p:443")).toContain("must be http:// or socks5://");
    expect(parseUpstreamProxy("socks5h://p:1080")).toContain("must be http:// or socks5://");
    expect(parseUpstreamProxy("http://p")).toContain("must name the proxy's port");
    expect(parseUpstreamProxy("http://p:1/path")).toContain("must not have a path");
    expect(parseUpstreamProxy("not a url")).toContain("is not a URL");
    // A URL that does not parse is not echoed with its credentials.
    expect(parseUpstreamProxy("http://user:secret@:bad")).not.toContain("secret");
  });
});

describe("CREDGATE_UPSTREAM_NO_PROXY", () => {
  test("names match themselves and their subdomains, whatever the leading . or *.", () => {
    const r = rules("example.com, .corp.test,*.internal.test");
    for (const host of ["example.com", "api.example.com", "corp.test", "a.b.corp.test", "internal.test", "x.internal.test"]) expect(bypassesProxy(r, host, "203.0.113.1")).toBe(true);
    for (const host of ["notexample.com", "example.com.evil.test", "test"]) expect(bypassesProxy(r, host, "203.0.113.1")).toBe(false);
  });
  test("addresses and CIDR ranges match the literal host or the resolved address; * matches all", () => {
    const r = rules("10.0.0.0/8,::1,192.168.1.5");
    expect(bypassesProxy(r, "db.internal", "10.2.3.4")).toBe(true);
    expect(bypassesProxy(r, "::1", "::1")).toBe(true);
    expect(bypassesProxy(r, "192.168.1.5", "192.168.1.5")).toBe(true);
    expect(bypassesProxy(r, "api.example.com", "203.0.113.1")).toBe(false);
    expect(bypassesProxy(rules("*"), "anything", "1.2.3.4")).toBe(true);
    expect(bypassesProxy(rules(""), "localhost", "127.0.0.1")).toBe(false);
  });
  test("an entry that is neither is refused", () => {
    expect(parseNoProxy("example.com:8080")).toBe('"example.com:8080" is not a host name, IP address or CIDR range');
    expect(parseNoProxy("10.0.0.0/40")).toContain("is not a host name");
  });
});

describe("HTTP CONNECT handshake", () => {
  test("asks for the address (IPv6 in brackets) with Basic credentials; a 2xx opens the tunnel, the bytes after it are handed on", () => {
    const h = proxyHandshake(proxy("http://u:p%3Aw@proxy:3128"), "2001:db8::7", 443);
    expect(Buffer.from(h.start()).toString("latin1")).toBe(`CONNECT [2001:db8::7]:443 HTTP/1.1\r\nHost: [2001:db8::7]:443\r\nProxy-Authorization: Basic ${btoa("u:p:w")}\r\n\r\n`);
    expect(h.feed(Buffer.from("HTTP/1.0 200 Conn"))).toEqual({ send: null, done: false });
    const step = h.feed(Buffer.from("ection established\r\nProxy-agent: x\r\n\r\nSSH-2.0"));
    expect(step).toMatchObject({ done: true });
    expect(Buffer.from((step as { rest: Uint8Array }).rest).toString()).toBe("SSH-2.0");
  });
  test("a refusal names the status, and says whether credentials were missing or refused", () => {
    const without = proxyHandshake(proxy("http://proxy:3128"), "203.0.113.7", 443);
    without.start();
    expect(without.feed(Buffer.from("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n"))).toEqual({
      failed: "the upstream proxy refused the tunnel: 407 Proxy Authentication Required (the proxy wants credentials: put them in CREDGATE_UPSTREAM_PROXY)",
    });
    const refused = proxyHandshake(proxy("http://u:bad@proxy:3128"), "203.0.113.7", 443);
    expect(refused.feed(Buffer.from("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n"))).toEqual({
      failed: "the upstream proxy refused the tunnel: 407 Proxy Authentication Required (the proxy refused the credentials of CREDGATE_UPSTREAM_PROXY)",
    });
    expect(proxyHandshake(proxy("http://proxy:1"), "1.2.3.4", 1).feed(Buffer.from("HTTP/1.1 403 Forbidden\r\n\r\n"))).toEqual({ failed: "the upstream proxy refused the tunnel: 403 Forbidden" });
    expect(proxyHandshake(proxy("http://proxy:1"), "1.2.3.4", 1).feed(Buffer.from("SSH-2.0-OpenSSH\r\n\r\n"))).toEqual({ failed: "the upstream proxy did not answer CONNECT with HTTP" });
  });
});

describe("SOCKS5 handshake", () => {
  test("user/password (RFC 1929), then CONNECT to an IPv4 address", () => {
    const h = proxyHandshake(proxy("socks5://user:pw@proxy:1080"), "203.0.113.7", 8443);
    expect(h.start()).toEqual(bytes(5, 2, 0, 2));
    expect(h.feed(bytes(5, 2))).toEqual({ send: Buffer.concat([bytes(1, 4), Buffer.from("user"), bytes(2), Buffer.from("pw")]), done: false });
    expect(h.feed(bytes(1, 0))).toEqual({ send: Buffer.from(bytes(5, 1, 0, 1, 203, 0, 113, 7, 0x20, 0xfb)), done: false });
    // The reply arrives in two pieces; what follows it is the destination's.
    expect(h.feed(bytes(5, 0, 0, 1, 127))).toEqual({ send: null, done: false });
    const step = h.feed(bytes(0, 0, 1, 0x04, 0x38, 42));
    expect(step).toMatchObject({ done: true });
    expect((step as { rest: Uint8Array }).rest).toEqual(Buffer.from(bytes(42)));
  });
  test("no credentials: method 0; an IPv6 address is sent as 16 bytes", () => {
    const h = proxyHandshake(proxy("socks5://proxy:1080"), "2001:db8::1", 443);
    expect(h.start()).toEqual(bytes(5, 1, 0));
    const step = h.feed(bytes(5, 0)) as { send: Uint8Array };
    expect([...step.send]).toEqual([5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, ...Array(11).fill(0), 1, 1, 187]);
  });
  test("refusals: credentials wanted, credentials refused, the connection refused by the proxy", () => {
    expect(proxyHandshake(proxy("socks5://proxy:1080"), "1.2.3.4", 1).feed(bytes(5, 0xff))).toEqual({ failed: "the upstream proxy wants credentials: put them in CREDGATE_UPSTREAM_PROXY" });
    const wrong = proxyHandshake(proxy("socks5://u:bad@proxy:1080"), "1.2.3.4", 1);
    wrong.feed(bytes(5, 2));
    expect(wrong.feed(bytes(1, 1))).toEqual({ failed: "the upstream proxy refused the user name or password of CREDGATE_UPSTREAM_PROXY" });
    const refused = proxyHandshake(proxy("socks5://proxy:1080"), "1.2.3.4", 1);
    refused.feed(bytes(5, 0));
    expect(refused.feed(bytes(5, 5, 0, 1, 0, 0, 0, 0, 0, 0))).toEqual({ failed: "the upstream proxy could not connect: connection refused" });
  });
});

describe("tunnels on node:net sockets through real proxies", () => {
  let tiny: TestProxy;
  let socks: TestProxy;
  let banner: net.Server;
  let bannerPort: number;

  beforeAll(async () => {
    // A server that speaks first (like SSH or SMTP): its banner may come with the proxy's answer.
    banner = net.createServer((s) => s.end("HELLO-FROM-SERVER\r\n"));
    await new Promise<void>((resolve) => banner.listen(0, "127.0.0.1", () => resolve()));
    bannerPort = (banner.address() as net.AddressInfo).port;
    [tiny, socks] = await Promise.all([startTinyproxy({ user: "tu", password: "tp", connectPorts: [bannerPort] }), startMicrosocks({ user: "su", password: "sp" })]);
  });
  afterAll(async () => {
    banner.close();
    await tiny?.stop();
    await socks?.stop();
  });

  const readAll = (s: net.Socket) =>
    new Promise<string>((resolve) => {
      let out = "";
      s.on("data", (d: Buffer) => (out += d.toString()));
      s.on("end", () => resolve(out));
      s.on("close", () => resolve(out));
    });

  for (const kind of ["http", "socks5"] as const) {
    test(`${kind}: the server's first bytes reach the caller's first data listener`, async () => {
      const p = kind === "http" ? proxy(`http://tu:tp@127.0.0.1:${tiny.port}`) : proxy(`socks5://su:sp@127.0.0.1:${socks.port}`);
      const sock = await tunnelOnNodeSocket(p, "127.0.0.1", "127.0.0.1", bannerPort, 5_000);
      // Attached a turn later, as a caller after an await would.
      await Bun.sleep(50);
      expect(await readAll(sock)).toBe("HELLO-FROM-SERVER\r\n");
      expect((kind === "http" ? tiny : socks).targets()).toContain(`127.0.0.1:${bannerPort}`);
    });
  }

  test("refusals reject with the reason", async () => {
    await expect(tunnelOnNodeSocket(proxy(`http://tu:wrong@127.0.0.1:${tiny.port}`), "127.0.0.1", "127.0.0.1", bannerPort, 5_000)).rejects.toThrow(
      "the upstream proxy refused the tunnel: 401 Unauthorized (the proxy refused the credentials of CREDGATE_UPSTREAM_PROXY)",
    );
    await expect(tunnelOnNodeSocket(proxy(`socks5://su:wrong@127.0.0.1:${socks.port}`), "127.0.0.1", "127.0.0.1", bannerPort, 5_000)).rejects.toThrow(
      "the upstream proxy refused the user name or password of CREDGATE_UPSTREAM_PROXY",
    );
    const nobody = await freePort();
    await expect(tunnelOnNodeSocket(proxy(`http://127.0.0.1:${nobody}`), "127.0.0.1", "127.0.0.1", bannerPort, 5_000)).rejects.toThrow("the upstream proxy could not be reached (ECONNREFUSED)");
  });
});
