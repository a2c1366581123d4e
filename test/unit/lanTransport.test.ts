// docs/operations.md#tls settings without a process: CREDGATE_TLS* parsing, the public URL's default, the plain-HTTP warning's
// rule, and the .curlrc `credgate run` gives curl for an https:// proxy.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, loadConfig } from "../../src/runtime/config.ts";
import { bindsLoopbackOnly, plainTransportWarnings } from "../../src/listen/plainTransport.ts";
import { curlrcWithProxyCa } from "../../src/run/environment.ts";
import { tempDir } from "../support/tmp.ts";

describe("CREDGATE_TLS, CREDGATE_TLS_CERT_FILE, CREDGATE_TLS_KEY_FILE", () => {
  test("unset: plain HTTP and an http:// public URL", () => {
    const c = loadConfig({ port: 7000 }, {});
    expect(c.apiTls).toEqual({ kind: "none" });
    expect(c.publicUrl).toBe("http://localhost:7000");
  });

  test("a pair or gateway-ca: HTTPS, and the public URL defaults to https://localhost:<port> (an explicit one wins)", () => {
    const files = loadConfig({ port: 7000 }, { CREDGATE_TLS_CERT_FILE: "/c.pem", CREDGATE_TLS_KEY_FILE: "/k.pem" });
    expect(files.apiTls).toEqual({ kind: "files", certFile: "/c.pem", keyFile: "/k.pem" });
    expect(files.publicUrl).toBe("https://localhost:7000");
    const ca = loadConfig({ port: 7000 }, { CREDGATE_TLS: "gateway-ca", CREDGATE_PUBLIC_URL: "https://credgate.lan:7000" });
    expect(ca.apiTls).toEqual({ kind: "gateway-ca" });
    expect(ca.publicUrl).toBe("https://credgate.lan:7000");
  });

  test("half a pair, both kinds, or another CREDGATE_TLS value: one message naming the variable", () => {
    const cases: [Record<string, string>, string][] = [
      [{ CREDGATE_TLS_KEY_FILE: "/k.pem" }, "CREDGATE_TLS_CERT_FILE must be set with CREDGATE_TLS_KEY_FILE"],
      [{ CREDGATE_TLS_CERT_FILE: "/c.pem" }, "CREDGATE_TLS_KEY_FILE must be set with CREDGATE_TLS_CERT_FILE"],
      [{ CREDGATE_TLS: "gateway-ca", CREDGATE_TLS_CERT_FILE: "/c.pem", CREDGATE_TLS_KEY_FILE: "/k.pem" }, "CREDGATE_TLS=gateway-ca and CREDGATE_TLS_CERT_FILE/CREDGATE_TLS_KEY_FILE are exclusive: set one of them"],
      [{ CREDGATE_TLS: "on" }, 'CREDGATE_TLS must be "gateway-ca", got "on"'],
    ];
    for (const [env, message] of cases) expect(() => loadConfig({}, env)).toThrow(new ConfigError(message));
  });
});

describe("the plain-HTTP warning (docs/operations.md#tls)", () => {
  test("loopback binds never warn", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]) expect(bindsLoopbackOnly(host)).toBe(true);
    for (const host of ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1"]) expect(bindsLoopbackOnly(host)).toBe(false);
    expect(plainTransportWarnings(loadConfig({ host: "127.0.0.1" }, {}))).toEqual([]);
  });

  test("one line per port advertised as http:// and bound beyond loopback", () => {
    const both = plainTransportWarnings(loadConfig({ host: "0.0.0.0" }, {}));
    expect(both.map((l) => l.split(" port ")[0])).toEqual(["credgate: the API", "credgate: the gateway"]);
    const gatewayOnly = plainTransportWarnings(loadConfig({ host: "0.0.0.0" }, { CREDGATE_TLS: "gateway-ca" }));
    expect(gatewayOnly).toEqual(["credgate: the gateway port accepts plain HTTP from the network: keys and agent tokens cross it in clear (set CREDGATE_GATEWAY_URL=https://… to use TLS)"]);
    // An API behind a TLS-terminating proxy says so with its https:// public URL.
    expect(plainTransportWarnings(loadConfig({ host: "0.0.0.0" }, { CREDGATE_PUBLIC_URL: "https://credgate.example.com", CREDGATE_GATEWAY_URL: "https://gw.lan:10255" }))).toEqual([]);
  });
});

describe("curl's .curlrc under credgate run", () => {
  test("the proxy CA is added after the user's own .curlrc lines, which stay", () => {
    const home = tempDir();
    expect(curlrcWithProxyCa({ HOME: home }, "/tmp/b.pem")).toBe('proxy-cacert = "/tmp/b.pem"\n');
    writeFileSync(join(home, ".curlrc"), "user-agent = mine\n\n");
    expect(curlrcWithProxyCa({ HOME: home }, "/tmp/b.pem")).toBe('user-agent = mine\nproxy-cacert = "/tmp/b.pem"\n');
    // CURL_HOME comes first, as curl reads it first.
    const curlHome = tempDir();
    writeFileSync(join(curlHome, ".curlrc"), "silent\n");
    expect(curlrcWithProxyCa({ HOME: home, CURL_HOME: curlHome }, "/tmp/b.pem")).toBe('silent\nproxy-cacert = "/tmp/b.pem"\n');
  });
});
