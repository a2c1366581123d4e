// Outbound.fetch to hosts pinned by CREDGATE_RESOLVE: the pinned address is dialled, the Host header and the
// TLS server name stay the real host's, and the certificate is verified against that name with the extra CA.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Outbound } from "../../src/services/outbound.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

let pki: TestPki;
let upstream: TestUpstream;

beforeAll(async () => {
  pki = makePki(["pinned.test"]);
  upstream = startUpstream(pki);
});
afterAll(() => upstream.stop());

function outbound(pins: string[], withCa = true): Outbound {
  return new Outbound({
    resolve: new Map(pins.map((host) => [`${host}:${upstream.port}`, "127.0.0.1"])),
    upstreamCaFile: withCa ? pki.caFile : null,
  });
}

describe("Outbound.fetch to a pinned https host", () => {
  test("dials the pinned address with the real Host header, every time", async () => {
    const out = outbound(["pinned.test"]);
    for (let i = 0; i < 3; i++) {
      const res = await out.fetch(`https://pinned.test:${upstream.port}/path?i=${i}`, { headers: { "x-n": String(i) } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { host: string; url: string; headers: Record<string, string> };
      expect(body.host).toBe(`pinned.test:${upstream.port}`);
      expect(body.url).toBe(`/path?i=${i}`);
      expect(body.headers["x-n"]).toBe(String(i));
    }
  });

  test("verifies the certificate against the pinned host's name", async () => {
    const out = outbound(["pinned.test", "other.test"]);
    expect((await out.fetch(`https://pinned.test:${upstream.port}/`)).status).toBe(200);
    // Same address, but the leaf does not name other.test.
    await expect(out.fetch(`https://other.test:${upstream.port}/`)).rejects.toMatchObject({ code: "ERR_TLS_CERT_ALTNAME_INVALID" });
  });

  test("trusts the upstream CA only when CREDGATE_UPSTREAM_CA_FILE names it", async () => {
    await expect(outbound(["pinned.test"], false).fetch(`https://pinned.test:${upstream.port}/`)).rejects.toMatchObject({
      code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    });
  });

  test("ignores an env proxy", async () => {
    const saved = process.env.HTTPS_PROXY;
    process.env.HTTPS_PROXY = "http://127.0.0.1:1";
    try {
      expect((await outbound(["pinned.test"]).fetch(`https://pinned.test:${upstream.port}/`)).status).toBe(200);
    } finally {
      if (saved === undefined) delete process.env.HTTPS_PROXY;
      else process.env.HTTPS_PROXY = saved;
    }
  });
});

describe("Outbound under CREDGATE_CONNECT_TO", () => {
  test("fetch dials the other host and port; Host header and certificate name stay the real host's", async () => {
    const out = new Outbound({ resolve: new Map(), upstreamCaFile: pki.caFile, connectTo: new Map([["pinned.test:443", { host: "127.0.0.1", port: upstream.port }]]) });
    const res = await out.fetch("https://pinned.test/over?x=1");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { host: string; url: string };
    expect(body.host).toBe("pinned.test");
    expect(body.url).toBe("/over?x=1");
    expect(out.dialTarget("PINNED.test", 443)).toEqual({ address: "127.0.0.1", port: upstream.port, host: "pinned.test" });
    // Other ports of the host are not redirected.
    expect(out.dialTarget("pinned.test", 8443)).toEqual({ address: "pinned.test", port: 8443, host: "pinned.test" });
  });

  test("--resolve applies to the connect-to target, like curl", async () => {
    const out = new Outbound({
      resolve: new Map([[`upstream.internal:${upstream.port}`, "127.0.0.1"]]),
      upstreamCaFile: pki.caFile,
      connectTo: new Map([["pinned.test:443", { host: "upstream.internal", port: upstream.port }]]),
    });
    expect((await out.fetch("https://pinned.test/")).status).toBe(200);
  });

  test("raw connect dials the other port with TLS verified against the real name", async () => {
    const out = new Outbound({ resolve: new Map(), upstreamCaFile: pki.caFile, connectTo: new Map([["pinned.test:443", { host: "127.0.0.1", port: upstream.port }]]) });
    const sock = await out.connect("pinned.test", 443, { tls: true, timeoutMs: 5000 });
    expect(sock.remotePort).toBe(upstream.port);
    sock.destroy();
  });
});
