// Name resolution for outbound connections (docs/operations.md#dns) against a real DNS server on loopback
// (test/support/dnsServer.ts): TTLs clamped to 1-300 s, IPv4 preferred, AAAA when there is no A, negative and
// failed answers kept briefly, /etc/hosts read first and re-read when it changes; and through Outbound's cache:
// 100 lookups within the TTL are one query, 20 concurrent ones share one, a changed answer is seen after expiry.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { clampTtlMs, parseHosts, pickAddress } from "../../src/core/dnsRules.ts";
import { FAILURE_TTL_MS, FIXED_TTL_MS, NameResolver, NEGATIVE_TTL_MS } from "../../src/services/dns.ts";
import { Outbound } from "../../src/services/outbound.ts";
import { EgressGuard } from "../../src/gateway/egressGuard.ts";
import { parseDnsServers } from "../../src/runtime/configOutbound.ts";
import { startDnsServer, type TestDnsServer } from "../support/dnsServer.ts";
import { until } from "../support/gateway.ts";
import { tempDir } from "../support/tmp.ts";

let dns: TestDnsServer;
let hostsFile: string;

beforeAll(async () => {
  dns = await startDnsServer({
    "v4.dns.test": { addresses: ["127.0.0.21", "::21"], ttl: 60 },
    "v6only.dns.test": { addresses: ["::22"], ttl: 60 },
    "zero.dns.test": { addresses: ["127.0.0.23"], ttl: 0 },
    "long.dns.test": { addresses: ["127.0.0.24"], ttl: 86_400 },
    "nodata.dns.test": { addresses: [], ttl: 60 },
    "hosts.dns.test": { addresses: ["127.0.0.99"], ttl: 60 },
  });
  hostsFile = join(tempDir(), "hosts");
  writeFileSync(hostsFile, "127.0.0.1 localhost\n# comment\n127.0.0.25 hosts.dns.test Alias.DNS.test  # trailing\n::26 hosts.dns.test\n");
});
afterAll(() => dns.stop());

describe("pure rules", () => {
  test("TTLs are clamped to 1-300 s; the smallest record counts", () => {
    expect(clampTtlMs([0])).toBe(1_000);
    expect(clampTtlMs([60, 30])).toBe(30_000);
    expect(clampTtlMs([86_400])).toBe(300_000);
    expect(clampTtlMs([])).toBe(1_000);
  });
  test("hosts files: comments, aliases, case, several addresses per name", () => {
    const hosts = parseHosts("127.0.0.1 localhost\n# x\n10.0.0.1 a.test B.test. # c\n::1 a.test\n\n");
    expect(hosts.get("a.test")).toEqual(["10.0.0.1", "::1"]);
    expect(hosts.get("b.test")).toEqual(["10.0.0.1"]);
    expect(pickAddress(["::1", "10.0.0.1"])).toBe("10.0.0.1");
    expect(pickAddress(["::1"])).toBe("::1");
  });
  test("CREDGATE_DNS_SERVERS: addresses with optional ports, names refused", () => {
    expect(parseDnsServers("10.0.0.2, 127.0.0.1:5353,[fd00::53]:53, ::1")).toEqual(["10.0.0.2:53", "127.0.0.1:5353", "[fd00::53]:53", "[::1]:53"]);
    expect(parseDnsServers("")).toBeNull();
    expect(() => parseDnsServers("dns.example.com")).toThrow('CREDGATE_DNS_SERVERS: "dns.example.com" is not an IP address');
    expect(() => parseDnsServers("10.0.0.2:99999")).toThrow("is not an IP address");
  });
});

describe("NameResolver (CREDGATE_DNS_SERVERS)", () => {
  const resolver = () => new NameResolver([dns.address], hostsFile);

  test("an A record: its address, for its TTL; an AAAA is not asked for", async () => {
    const before = dns.count("v4.dns.test", "AAAA");
    expect(await resolver().load("v4.dns.test")).toEqual({ value: { address: "127.0.0.21" }, ttlMs: 60_000 });
    expect(dns.count("v4.dns.test", "AAAA")).toBe(before);
  });
  test("no A record: the AAAA one", async () => {
    expect(await resolver().load("v6only.dns.test")).toEqual({ value: { address: "::22" }, ttlMs: 60_000 });
  });
  test("TTL 0 is kept 1 s, a day 300 s", async () => {
    expect((await resolver().load("zero.dns.test")).ttlMs).toBe(1_000);
    expect((await resolver().load("long.dns.test")).ttlMs).toBe(300_000);
  });
  test("a name that does not exist, or has no address: ENOTFOUND, kept briefly", async () => {
    expect(await resolver().load("missing.dns.test")).toEqual({ value: { address: null, reason: "ENOTFOUND" }, ttlMs: NEGATIVE_TTL_MS });
    expect(await resolver().load("nodata.dns.test")).toEqual({ value: { address: null, reason: "ENOTFOUND" }, ttlMs: NEGATIVE_TTL_MS });
  });
  test("/etc/hosts is read first (with aliases), and read again when it changes", async () => {
    const r = resolver();
    const queries = dns.count("hosts.dns.test");
    expect(await r.load("hosts.dns.test")).toEqual({ value: { address: "127.0.0.25" }, ttlMs: FIXED_TTL_MS });
    expect(await r.load("alias.dns.test")).toEqual({ value: { address: "127.0.0.25" }, ttlMs: FIXED_TTL_MS });
    expect(dns.count("hosts.dns.test")).toBe(queries);
    writeFileSync(hostsFile, "127.0.0.27 hosts.dns.test\n");
    utimesSync(hostsFile, new Date(), new Date(Date.now() + 5_000));
    // Read again at the next check of the file (at most once a second).
    await until(async () => expect((await r.load("hosts.dns.test")).value).toEqual({ address: "127.0.0.27" }), 5000);
    expect((await r.load("alias.dns.test")).value).toEqual({ address: null, reason: "ENOTFOUND" });
  });
  test("a server that does not answer: the resolver's code, kept 1 s", async () => {
    const silent = await startDnsServer();
    await silent.stop();
    const r = new NameResolver([silent.address], hostsFile);
    const answer = await r.load("v4.dns.test");
    expect(answer.value.address).toBeNull();
    expect(answer.ttlMs).toBe(FAILURE_TTL_MS);
    expect(["ECONNREFUSED", "ETIMEOUT"]).toContain((answer.value as { reason: string }).reason);
  }, 15_000);
});

describe("Outbound's cache of answers", () => {
  const outbound = () => new Outbound({ resolve: new Map(), upstreamCaFile: null, dnsServers: [dns.address] });

  test("100 lookups within the TTL: one query; the cached answer comes synchronously", async () => {
    dns.set("count.dns.test", { addresses: ["127.0.0.31"], ttl: 60 });
    const out = outbound();
    const first = await out.resolveName("count.dns.test");
    expect(first.value).toEqual({ address: "127.0.0.31" });
    for (let i = 0; i < 99; i++) {
      const hit = out.resolveName("count.dns.test");
      expect(hit instanceof Promise).toBe(false);
      expect(hit).toBe(first);
    }
    expect(dns.count("count.dns.test")).toBe(1);
  });

  test("20 concurrent lookups of an uncached name share one query", async () => {
    dns.set("flight.dns.test", { addresses: ["127.0.0.32"], ttl: 60 });
    dns.delayMs = 100;
    try {
      const out = outbound();
      const answers = await Promise.all([...Array(20)].map(() => out.resolveName("flight.dns.test")));
      expect(answers.every((a) => a.value.address === "127.0.0.32")).toBe(true);
    } finally {
      dns.delayMs = 0;
    }
    expect(dns.count("flight.dns.test")).toBe(1);
  });

  test("after the TTL a new query is made, and a changed answer is used", async () => {
    dns.set("expiry.dns.test", { addresses: ["127.0.0.33"], ttl: 1 });
    const out = outbound();
    expect((await out.resolveName("expiry.dns.test")).value).toEqual({ address: "127.0.0.33" });
    dns.set("expiry.dns.test", { addresses: ["127.0.0.34"], ttl: 1 });
    expect((await out.resolveName("expiry.dns.test")).value).toEqual({ address: "127.0.0.33" });
    expect(dns.count("expiry.dns.test")).toBe(1);
    // A fixed wait: it waits out the answer's real TTL (1 s, the shortest DNS carries) on the resolver's clock.
    await Bun.sleep(1_100);
    expect((await out.resolveName("expiry.dns.test")).value).toEqual({ address: "127.0.0.34" });
    expect(dns.count("expiry.dns.test")).toBe(2);
  });

  test("fetch() dials the resolved address and keeps the name in Host", async () => {
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => new Response(req.headers.get("host")) });
    try {
      dns.set("fetch.dns.test", { addresses: ["127.0.0.1"], ttl: 60 });
      const res = await outbound().fetch(`http://fetch.dns.test:${server.port}/`);
      expect(await res.text()).toBe(`fetch.dns.test:${server.port}`);
      await expect(outbound().fetch(`http://missing.dns.test:${server.port}/`)).rejects.toMatchObject({ code: "ENOTFOUND" });
    } finally {
      server.stop(true);
    }
  });
});

describe("the egress guard on names (docs/guards.md#egress-guard)", () => {
  const guard = () => {
    const outbound = new Outbound({ resolve: new Map(), upstreamCaFile: null, dnsServers: [dns.address] });
    return new EgressGuard({ mode: "self-hosted", egressAllow: [], egressDeny: [], port: 1, gatewayPort: 2 }, outbound);
  };

  test("a cached answer's verdict comes synchronously, the same object every time, until the answer expires", async () => {
    dns.set("guard.dns.test", { addresses: ["203.0.113.9"], ttl: 1 });
    const g = guard();
    const first = g.check("guard.dns.test", 443);
    expect(first instanceof Promise).toBe(true);
    const verdict = await first;
    expect(verdict).toEqual({ kind: "dial", target: { address: "203.0.113.9", port: 443, host: "guard.dns.test" } });
    for (let i = 0; i < 10; i++) expect(g.check("guard.dns.test", 443)).toBe(verdict);
    // The name now points at the metadata address: once the 1-s answer expired it is judged again, and refused.
    dns.set("guard.dns.test", { addresses: ["169.254.169.254"], ttl: 1 });
    // A fixed wait: the verdict must stay cached until the TTL ends, so only the clock can end it.
    await Bun.sleep(1_100);
    const again = g.check("guard.dns.test", 443);
    expect(again instanceof Promise).toBe(true);
    expect(await again).toEqual({ kind: "denied", address: "169.254.169.254", reason: "internal or reserved address" });
  });

  test("a name that does not resolve: unresolved with the resolver's code, kept briefly too", async () => {
    const g = guard();
    const verdict = await g.check("nowhere.dns.test", 443);
    expect(verdict).toEqual({ kind: "unresolved", reason: "ENOTFOUND" });
    expect(g.check("nowhere.dns.test", 443)).toBe(verdict);
  });
});
