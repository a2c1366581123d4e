// Encryption at rest (docs/operations.md#encryption-at-rest: AES-256-GCM, 12-byte IV, `v1:iv:tag:ct`), key hashing, the master key
// file, and configuration loading.
import { describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, loadConfig } from "../../src/runtime/config.ts";
import { parseResolve } from "../../src/runtime/configOutbound.ts";
import { tokenHash } from "../../src/crypto/hash.ts";
import { createMasterKey, readMasterKey } from "../../src/crypto/masterKey.ts";
import { Sealer } from "../../src/crypto/seal.ts";
import { tempDir } from "../support/tmp.ts";

const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

describe("Sealer", () => {
  const sealer = new Sealer(randomBytes(32));

  test("round trip, including unicode and empty strings", async () => {
    for (const s of ["S3CR3T", "", "ünïcødé ✓ 🔑", "x".repeat(10_000), '{"tokens":{"access_token":"a"}}']) {
      expect(sealer.open(sealer.seal(s))).toBe(s);
    }
  });

  test("format is v1:base64(iv):base64(tag):base64(ct) with a 12-byte IV and a 16-byte tag", async () => {
    const sealed = sealer.seal("hello world");
    const parts = sealed.split(":");
    expect(parts.length).toBe(4);
    expect(parts[0]).toBe("v1");
    for (const p of parts.slice(1)) expect(p).toMatch(B64);
    expect(Buffer.from(parts[1]!, "base64").length).toBe(12);
    expect(Buffer.from(parts[2]!, "base64").length).toBe(16);
    // GCM is a stream mode: ciphertext length equals plaintext length.
    expect(Buffer.from(parts[3]!, "base64").length).toBe("hello world".length);
    expect(sealed).not.toContain("hello");
  });

  test("the same plaintext seals differently each time", async () => {
    const a = sealer.seal("same");
    const b = sealer.seal("same");
    expect(a).not.toBe(b);
    expect(a.split(":")[1]).not.toBe(b.split(":")[1]);
    expect(sealer.open(a)).toBe("same");
    expect(sealer.open(b)).toBe("same");
  });

  test("tampering with ciphertext, tag or IV is detected", async () => {
    const sealed = sealer.seal("attack at dawn");
    const [v, iv, tag, ct] = sealed.split(":") as [string, string, string, string];
    const flip = (b64: string) => {
      const buf = Buffer.from(b64, "base64");
      buf[0] = buf[0]! ^ 0x01;
      return buf.toString("base64");
    };
    expect(() => sealer.open([v, iv, tag, flip(ct)].join(":"))).toThrow();
    expect(() => sealer.open([v, iv, flip(tag), ct].join(":"))).toThrow();
    expect(() => sealer.open([v, flip(iv), tag, ct].join(":"))).toThrow();
  });

  test("a value sealed under another key does not open", async () => {
    const other = new Sealer(randomBytes(32));
    expect(() => other.open(sealer.seal("x"))).toThrow();
  });

  test("unknown formats are rejected", async () => {
    const sealed = sealer.seal("x");
    expect(() => sealer.open(sealed.replace(/^v1/, "v2"))).toThrow();
    expect(() => sealer.open("plaintext")).toThrow();
    expect(() => sealer.open(sealed + ":extra")).toThrow();
  });

  test("the key must be 32 bytes", async () => {
    expect(() => new Sealer(randomBytes(16))).toThrow();
    expect(() => new Sealer(randomBytes(33))).toThrow();
  });
});

describe("tokenHash", () => {
  test("is the SHA-256 hex of the token, deterministic", async () => {
    const token = "svc_" + "ab".repeat(32);
    expect(tokenHash(token)).toBe(createHash("sha256").update(token).digest("hex"));
    expect(tokenHash(token)).toMatch(/^[0-9a-f]{64}$/);
    expect(tokenHash(token)).toBe(tokenHash(token));
    expect(tokenHash(token)).not.toBe(tokenHash(token + "0"));
    expect(tokenHash(token)).not.toContain(token);
  });
});

describe("readMasterKey and createMasterKey", () => {
  test("createMasterKey writes master.key with mode 0600; readMasterKey reads it back and writes nothing", async () => {
    const dir = tempDir();
    expect(readMasterKey(dir, null)).toBeNull();
    expect(readdirSync(dir)).toEqual([]);
    const key = createMasterKey(dir);
    expect(key.length).toBe(32);
    const file = join(dir, "master.key");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(file, "utf8").trim(), "base64").equals(key)).toBe(true);
    expect(readMasterKey(dir, null)!.equals(key)).toBe(true);
    // What one sealer wrote, the next process (same data dir) can read.
    const sealed = new Sealer(key).seal("persisted");
    expect(new Sealer(readMasterKey(dir, null)!).open(sealed)).toBe("persisted");
    // An existing key is never replaced.
    expect(() => createMasterKey(dir)).toThrow();
    expect(readMasterKey(dir, null)!.equals(key)).toBe(true);
  });

  test("CREDGATE_MASTER_KEY wins and writes no file", async () => {
    const dir = tempDir();
    const raw = randomBytes(32);
    const key = readMasterKey(dir, raw.toString("base64"))!;
    expect(key.equals(raw)).toBe(true);
    expect(() => statSync(join(dir, "master.key"))).toThrow();
  });

  test("a corrupt master.key is an error, not a silently new key", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "master.key"), "dG9vIHNob3J0\n", { mode: 0o600 });
    expect(() => readMasterKey(dir, null)).toThrow(`${join(dir, "master.key")} does not hold a base64 32-byte key`);
    expect(readFileSync(join(dir, "master.key"), "utf8")).toBe("dG9vIHNob3J0\n");
  });
});

describe("loadConfig", () => {
  const PROJECT_KEY = "svc_" + "0123456789abcdef".repeat(4);
  const ORG_KEY = "svc_org_" + "fedcba9876543210".repeat(4);

  test("defaults (docs/configuration.md)", async () => {
    const c = loadConfig({}, {});
    expect(c.mode).toBe("self-hosted");
    expect(c.port).toBe(10254);
    expect(c.gatewayPort).toBe(10255);
    expect(c.host).toBe("0.0.0.0");
    expect(c.publicUrl).toBe("http://localhost:10254");
    expect(c.gatewayUrl).toBe("http://localhost:10255");
    expect(c.containerGatewayHost).toBe("host.docker.internal:10255");
    expect(c.dataDir.endsWith("credgate-data")).toBe(true);
    expect(c.bootstrapApiKey).toBeNull();
    expect(c.opConnectHost).toBeNull();
    expect(c.upstreamHeaderTimeoutSeconds).toBe(300);
    expect(c.approvalPollSeconds).toBe(30);
    expect(c.approvalTimeoutSeconds).toBe(180);
    expect(c.logRetentionDays).toBe(30);
    expect(c.resolve.size).toBe(0);
  });

  test("flags win over the environment", async () => {
    const c = loadConfig({ port: "2000", mode: "cloud", host: "127.0.0.1" }, { CREDGATE_PORT: "1000", CREDGATE_MODE: "self-hosted", CREDGATE_HOST: "0.0.0.0" });
    expect(c.port).toBe(2000);
    expect(c.mode).toBe("cloud");
    expect(c.host).toBe("127.0.0.1");
    expect(c.publicUrl).toBe("http://localhost:2000");
  });

  test("well-formed bootstrap keys are accepted", async () => {
    const c = loadConfig({}, { CREDGATE_BOOTSTRAP_API_KEY: PROJECT_KEY, CREDGATE_BOOTSTRAP_ORG_API_KEY: ORG_KEY });
    expect(c.bootstrapApiKey).toBe(PROJECT_KEY);
    expect(c.bootstrapOrgApiKey).toBe(ORG_KEY);
  });

  test.each([
    ["CREDGATE_BOOTSTRAP_API_KEY", "svc_short"],
    ["CREDGATE_BOOTSTRAP_API_KEY", "svc_" + "0123456789ABCDEF".repeat(4)],
    ["CREDGATE_BOOTSTRAP_API_KEY", ORG_KEY],
    ["CREDGATE_BOOTSTRAP_API_KEY", "key_" + "0".repeat(64)],
    ["CREDGATE_BOOTSTRAP_API_KEY", PROJECT_KEY + "0"],
    ["CREDGATE_BOOTSTRAP_ORG_API_KEY", PROJECT_KEY],
    ["CREDGATE_BOOTSTRAP_ORG_API_KEY", "svc_org_" + "g".repeat(64)],
    ["CREDGATE_BOOTSTRAP_ORG_API_KEY", "svc_org_" + "0".repeat(63)],
  ])("malformed %s=%p → ConfigError", (name, value) => {
    expect(() => loadConfig({}, { [name]: value })).toThrow(ConfigError);
  });

  test.each([
    [{ CREDGATE_MODE: "enterprise" }],
    [{ CREDGATE_PORT: "70000" }],
    [{ CREDGATE_PORT: "abc" }],
    [{ CREDGATE_GATEWAY_PORT: "-1" }],
    [{ CREDGATE_MASTER_KEY: Buffer.alloc(16).toString("base64") }],
    [{ CREDGATE_PUBLIC_URL: "not a url" }],
    [{ CREDGATE_PUBLIC_URL: "ftp://x.example" }],
    [{ CREDGATE_UPSTREAM_HEADER_TIMEOUT: "0" }],
    [{ CREDGATE_APPROVAL_POLL_SECONDS: "soon" }],
  ])("invalid setting %j → ConfigError", (env) => {
    expect(() => loadConfig({}, env)).toThrow(ConfigError);
  });

  test("CREDGATE_RESOLVE: host:port:addr entries, comma or space separated, IPv6 brackets removed, host lowercased", async () => {
    const c = loadConfig({}, { CREDGATE_RESOLVE: "API.x.com:443:127.0.0.1, other.test:8443:10.0.0.2 [::1]:443:[::1]" });
    expect(c.resolve.get("api.x.com:443")).toBe("127.0.0.1");
    expect(c.resolve.get("other.test:8443")).toBe("10.0.0.2");
    expect(c.resolve.get("::1:443")).toBe("::1");
    expect(c.resolve.size).toBe(3);
  });

  test("CREDGATE_RESOLVE: an IPv6 target address", async () => {
    expect(parseResolve("v6.test:443:[2001:db8::1]").get("v6.test:443")).toBe("2001:db8::1");
  });

  test.each(["api.x.com", "api.x.com:443", "api.x.com:https:127.0.0.1", ":443:127.0.0.1"])("CREDGATE_RESOLVE entry %p is rejected", (entry) => {
    expect(() => loadConfig({}, { CREDGATE_RESOLVE: entry })).toThrow(ConfigError);
  });

  test("CREDGATE_CONNECT_TO: host:port:host2:port2 entries, comma or space separated, hosts lowercased", async () => {
    const c = loadConfig({}, { CREDGATE_CONNECT_TO: "GitHub.com:443:127.0.0.1:8443, api.github.com:443:localhost:9443 [::1]:443:[::1]:1443" });
    expect(c.connectTo.get("github.com:443")).toEqual({ host: "127.0.0.1", port: 8443 });
    expect(c.connectTo.get("api.github.com:443")).toEqual({ host: "localhost", port: 9443 });
    expect(c.connectTo.get("::1:443")).toEqual({ host: "::1", port: 1443 });
    expect(c.connectTo.size).toBe(3);
  });

  test.each(["github.com:443:127.0.0.1", "github.com:443:127.0.0.1:x", "github.com::127.0.0.1:1"])("CREDGATE_CONNECT_TO entry %p is rejected", (entry) => {
    expect(() => loadConfig({}, { CREDGATE_CONNECT_TO: entry })).toThrow(ConfigError);
  });

  test("CREDGATE_OP_CONNECT_HOST and blank values", async () => {
    expect(loadConfig({}, { CREDGATE_OP_CONNECT_HOST: "http://127.0.0.1:1" }).opConnectHost).toBe("http://127.0.0.1:1");
    expect(loadConfig({}, { CREDGATE_OP_CONNECT_HOST: "  " }).opConnectHost).toBeNull();
    expect(loadConfig({}, { CREDGATE_BOOTSTRAP_API_KEY: "" }).bootstrapApiKey).toBeNull();
  });
});
