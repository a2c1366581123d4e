// Name resolution in the gateway (docs/operations.md#dns) through the real process with two gateway processes and
// CREDGATE_DNS_SERVERS pointing at a DNS server of the test's own on loopback (test/support/dnsServer.ts), which
// counts queries: 100 requests over both processes are one query within the TTL (one cache for the instance,
// docs/operations.md#gateway-workers-and-caches), 20 concurrent first requests share one query, a new query is
// made once the TTL expired and a changed answer is then dialled, and a name that does not exist is a 502
// remembered briefly. (A name resolving to the metadata address is refused in test/e2e/egress-guard.test.ts.)
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gatewayCa } from "../support/gateway.ts";
import { startDnsServer, type TestDnsServer } from "../support/dnsServer.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { openProcessTunnel, tunnelsOnEveryProcess } from "../support/processTunnels.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const NAMES = ["api.dns.test", "burst.dns.test", "short.dns.test", "missing.dns.test"];

let pki: TestPki;
let up: TestUpstream;
let dns: TestDnsServer;
let cg: RunningCredgate;
let ca: string;
/** A second upstream on another loopback address, for a name whose answer changes. */
let moved: ReturnType<typeof Bun.serve>;
const movedSeen: { path: string; authorization: string | null }[] = [];

beforeAll(async () => {
  pki = makePki(NAMES);
  up = startUpstream(pki);
  moved = Bun.serve({
    port: up.port,
    hostname: "127.0.0.2",
    tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
    fetch(req) {
      movedSeen.push({ path: new URL(req.url).pathname, authorization: req.headers.get("authorization") });
      return Response.json({ moved: true });
    },
  });
  dns = await startDnsServer({
    "api.dns.test": { addresses: ["127.0.0.1"], ttl: 300 },
    "burst.dns.test": { addresses: ["127.0.0.1"], ttl: 300 },
    "short.dns.test": { addresses: ["127.0.0.1"], ttl: 1 },
  });
  cg = await startCredgate({ env: { CREDGATE_GATEWAY_WORKERS: "2", CREDGATE_DNS_SERVERS: dns.address, CREDGATE_UPSTREAM_CA_FILE: pki.caFile } });
  ca = (await gatewayCa(cg)).pem;
  for (const host of NAMES) {
    const r = await cg.api("POST", "/v1/secrets", { body: { name: host, type: "generic", value: "dns-secret-value", hostPattern: host, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } } });
    if (r.status !== 201) throw new Error(`secret: ${r.status} ${r.text}`);
  }
}, 40_000);

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
  moved?.stop(true);
  await dns?.stop();
});

/** A CONNECT tunnel to `host` with TLS inside, and the process that holds it. */
const tunnel = (host: string) => openProcessTunnel(cg.gatewayPort, cg.keys.defaultAgentToken, ca, host, up.port);
/** Tunnels to `host` until both gateway processes hold at least `each`. */
const onBothProcesses = (host: string, each: number) => tunnelsOnEveryProcess(() => tunnel(host), 2, each);

describe("the DNS cache of an instance with two gateway processes", () => {
  test("100 requests over both processes within the TTL: one DNS query", async () => {
    const tunnels = await onBothProcesses("api.dns.test", 2);
    try {
      let n = 0;
      while (n < 100) {
        const batch = await Promise.all(tunnels.map(() => null).map((_, i) => tunnels[i]!.get(`/api/${++n}`)));
        expect(batch.every((r) => r.status === 200)).toBe(true);
      }
      expect(up.seen.filter((s) => s.url.startsWith("/api/")).length).toBeGreaterThanOrEqual(100);
      expect(up.seen.find((s) => s.url === "/api/1")!.headers.authorization).toBe("Bearer dns-secret-value");
      expect(dns.count("api.dns.test", "A")).toBe(1);
    } finally {
      for (const t of tunnels) t.close();
    }
  });

  test("20 concurrent first requests, over both processes, share one query", async () => {
    // Tunnels are opened first: a CONNECT's own check of the name is one of the concurrent lookups.
    dns.delayMs = 300;
    try {
      const tunnels = await Promise.all([...Array(20)].map(() => tunnel("burst.dns.test")));
      expect(new Set(tunnels.map((t) => t.pid)).size).toBe(2);
      try {
        const answers = await Promise.all(tunnels.map((t, i) => t.get(`/burst/${i}`)));
        expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
      } finally {
        for (const t of tunnels) t.close();
      }
    } finally {
      dns.delayMs = 0;
    }
    expect(dns.count("burst.dns.test", "A")).toBe(1);
  });

  test("after the TTL, a new query; a changed answer is dialled from then on", async () => {
    const tunnels = await onBothProcesses("short.dns.test", 1);
    try {
      for (const [i, t] of tunnels.entries()) expect((await t.get(`/short/before-${i}`)).status).toBe(200);
      expect(dns.count("short.dns.test", "A")).toBe(1);
      // The name moves to 127.0.0.2, where another server answers; once the 1-s answer expired, both processes follow.
      dns.set("short.dns.test", { addresses: ["127.0.0.2"], ttl: 1 });
      await Bun.sleep(1_100);
      for (const [i, t] of tunnels.entries()) {
        const r = await t.get(`/short/after-${i}`);
        expect(r.status).toBe(200);
        expect(r.body).toEqual({ moved: true });
      }
      const after = movedSeen.filter((s) => s.path.startsWith("/short/after-"));
      expect(after.length).toBe(tunnels.length);
      expect(after.every((s) => s.authorization === "Bearer dns-secret-value")).toBe(true);
      expect(up.seen.some((s) => s.url.startsWith("/short/after-"))).toBe(false);
      expect(dns.count("short.dns.test", "A")).toBe(2);
    } finally {
      for (const t of tunnels) t.close();
    }
  });

  test("a name that does not exist: 502 upstream_unreachable with ENOTFOUND, remembered (no second query at once)", async () => {
    const t = await tunnel("missing.dns.test");
    try {
      for (const i of [1, 2]) {
        const r = await t.get(`/missing/${i}`);
        expect(r.status).toBe(502);
        expect(r.body).toEqual({ error: "upstream_unreachable", message: `credgate could not connect to missing.dns.test:${up.port}: ENOTFOUND` });
      }
    } finally {
      t.close();
    }
    // A for the CONNECT's check, AAAA after it (no A record); the requests after it asked nothing.
    expect(dns.count("missing.dns.test", "A")).toBe(1);
  });
});
