// `credgate doctor` (docs/operations.md#doctor) run as the real CLI against a data dir a real `credgate serve` made: a
// passing run, then each check failing for a real reason (permissions, an expired or mismatched CA, a
// corrupted database file, a port in use, an unreachable or untrusted upstream, an unreadable CA file, a bad
// configuration). And the start-up refusal of a CREDGATE_RESOLVE entry whose address is not an IP.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, cpSync, openSync, readdirSync, readFileSync, statSync, writeFileSync, writeSync, closeSync } from "node:fs";
import * as net from "node:net";
import { join } from "node:path";
import { CertificateAuthority } from "../../src/crypto/ca.ts";
import { freePort } from "../support/ports.ts";
import { runCli, startCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.doctor.test";
let pki: TestPki;
let up: TestUpstream;
let dataDir: string;
let ports: string[];
let env: Record<string, string>;

beforeAll(async () => {
  pki = makePki([HOST]);
  up = startUpstream(pki);
  const cg = await startCredgate({ env: { CREDGATE_DATABASE_URL: "" } });
  expect(await cg.stop()).toBe(0);
  dataDir = cg.dataDir;
  ports = ["--host", "127.0.0.1", "--port", String(await freePort()), "--gateway-port", String(await freePort()), "--db-port", String(await freePort())];
  env = { CREDGATE_DATABASE_URL: "", CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: `${HOST}:443:127.0.0.1`, CREDGATE_CONNECT_TO: "" };
});

afterAll(async () => {
  await up?.stop();
});

/** A copy of the good data dir, to break one thing in. */
function copyOfDataDir(): string {
  const dir = join(tempDir(), "data");
  cpSync(dataDir, dir, { recursive: true });
  chmodSync(dir, 0o700);
  return dir;
}

async function doctor(dir: string, extraEnv: Record<string, string> = {}, args: string[] = []) {
  const r = await runCli(["doctor", "--data-dir", dir, ...ports, ...args], { ...env, CREDGATE_RESOLVE: `${HOST}:${up.port}:127.0.0.1`, ...extraEnv });
  const lines = r.stdout.trimEnd().split("\n");
  return { ...r, lines, line: (name: string) => lines.find((l) => l.slice(6).startsWith(`${name}:`)) ?? `(no ${name} line)` };
}

test("a healthy installation: one ok line per check, exit 0; nothing in the data dir changes", async () => {
  const before = readdirSync(dataDir).map((f) => [f, statSync(join(dataDir, f)).mtimeMs]);
  const r = await doctor(dataDir);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(r.lines.map((l) => l.slice(0, 6) + l.slice(6).split(":")[0])).toEqual([
    "ok    data dir",
    "ok    gateway CA",
    "ok    database",
    "ok    ports",
    "ok    API TLS",
    "ok    transport",
    "ok    upstream CA file",
    `ok    upstream ${HOST}`,
  ]);
  expect(r.line("gateway CA")).toMatch(/"CN=credgate Gateway CA, O=credgate", valid until \d{4}-.*Z \(\d+ days\), key matches$/);
  expect(r.line(`upstream ${HOST}:${up.port}`)).toBe(`ok    upstream ${HOST}:${up.port}: TLS handshake ok via 127.0.0.1:${up.port}, certificate valid for ${HOST}`);
  expect(readdirSync(dataDir).map((f) => [f, statSync(join(dataDir, f)).mtimeMs])).toEqual(before);
});

test("--check-host names the upstreams instead of the CREDGATE_RESOLVE pins", async () => {
  const r = await doctor(dataDir, {}, ["--check-host", `${HOST}:${up.port}`, "--check-host", "not a host"]);
  expect(r.code).toBe(1);
  expect(r.line(`upstream ${HOST}:${up.port}`)).toStartWith("ok    ");
  expect(r.line("upstream not a host")).toBe("FAIL  upstream not a host: --check-host must be host or host:port");
});

describe("each failing check fails the run", () => {
  test("data dir open to other users", async () => {
    const dir = copyOfDataDir();
    chmodSync(dir, 0o755);
    const r = await doctor(dir);
    expect(r.code).toBe(1);
    expect(r.line("data dir")).toBe(`FAIL  data dir: ${dir} has mode 0755; other users can reach the keys in it (chmod 700 ${dir})`);
    expect(r.line("database")).toStartWith("ok    ");
  });

  test("a key file readable by others", async () => {
    const dir = copyOfDataDir();
    chmodSync(join(dir, "master.key"), 0o644);
    const r = await doctor(dir);
    expect(r.code).toBe(1);
    expect(r.line("data dir")).toBe(`FAIL  data dir: ${join(dir, "master.key")} has mode 0644 (chmod 600 ${join(dir, "master.key")})`);
  });

  async function writeCa(dir: string, notBefore: Date, notAfter: Date): Promise<void> {
    const ca = await CertificateAuthority.generate({ notBefore, notAfter });
    writeFileSync(join(dir, "ca.pem"), ca.certPem);
    writeFileSync(join(dir, "ca.key"), ca.keyPem, { mode: 0o600 });
  }
  const DAY = 24 * 3600 * 1000;

  test("an expired CA", async () => {
    const dir = copyOfDataDir();
    await writeCa(dir, new Date(Date.now() - 400 * DAY), new Date(Date.now() - DAY));
    const r = await doctor(dir);
    expect(r.code).toBe(1);
    expect(r.line("gateway CA")).toMatch(/^FAIL  gateway CA: expired on \d{4}-\d\d-\d\dT.*Z; agents reject every intercepted connection$/);
  });

  test("a CA that expires within 30 days", async () => {
    const dir = copyOfDataDir();
    await writeCa(dir, new Date(Date.now() - DAY), new Date(Date.now() + 10 * DAY + 3600_000));
    const r = await doctor(dir);
    expect(r.code).toBe(1);
    expect(r.line("gateway CA")).toMatch(/^FAIL  gateway CA: expires on .*Z \(in 10 days\)$/);
  });

  test("a CA key that is not ECDSA P-256", async () => {
    const dir = copyOfDataDir();
    const keyFile = join(dir, "ca.key");
    const made = Bun.spawnSync(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", keyFile]);
    expect(made.exitCode).toBe(0);
    const r = await doctor(dir);
    expect(r.code).toBe(1);
    expect(r.line("gateway CA")).toBe(`FAIL  gateway CA: ${keyFile} is not a usable ECDSA P-256 key (key type rsa)`);
  });

  test("a CA key that does not belong to the certificate", async () => {
    const dir = copyOfDataDir();
    const pem = readFileSync(join(dir, "ca.pem"), "utf8");
    await writeCa(dir, new Date(Date.now() - DAY), new Date(Date.now() + 3650 * DAY));
    writeFileSync(join(dir, "ca.pem"), pem);
    const r = await doctor(dir);
    expect(r.code).toBe(1);
    expect(r.line("gateway CA")).toBe(`FAIL  gateway CA: ${join(dir, "ca.key")} does not belong to ${join(dir, "ca.pem")}`);
  });

  test("a corrupted database file", async () => {
    const dir = copyOfDataDir();
    const file = join(dir, "credgate.db");
    const size = statSync(file).size;
    expect(size).toBeGreaterThan(8192);
    // Garbage over every page after the first: the schema survives, the tables do not.
    const fd = openSync(file, "r+");
    for (let at = 4096; at < size; at += 4096) writeSync(fd, Buffer.alloc(512, 0xa5), 0, 512, at + 100);
    closeSync(fd);
    const r = await doctor(dir);
    expect(r.code).toBe(1);
    expect(r.line("database")).toStartWith(`FAIL  database: ${file}`);
  });

  test("a port already in use", async () => {
    const holder = net.createServer().listen(Number(ports[3]), "127.0.0.1");
    await new Promise((resolve) => holder.once("listening", resolve));
    try {
      const r = await doctor(dataDir);
      expect(r.code).toBe(1);
      expect(r.line("ports")).toBe(`FAIL  ports: API 127.0.0.1:${ports[3]} in use (is credgate already running?)`);
    } finally {
      holder.close();
    }
  });

  test("an API TLS key that does not belong to its certificate", async () => {
    const other = makePki(["localhost"]);
    const r = await doctor(dataDir, { CREDGATE_TLS_CERT_FILE: pki.certFile, CREDGATE_TLS_KEY_FILE: other.keyFile });
    expect(r.code).toBe(1);
    expect(r.line("API TLS")).toBe(`FAIL  API TLS: CREDGATE_TLS_KEY_FILE: the key in ${other.keyFile} does not belong to the certificate in ${pki.certFile} (CREDGATE_TLS_CERT_FILE)`);
  });

  test("an upstream that does not answer", async () => {
    const closed = await freePort();
    const r = await doctor(dataDir, { CREDGATE_RESOLVE: `${HOST}:443:127.0.0.1` }, ["--check-host", `${HOST}:${closed}`]);
    expect(r.code).toBe(1);
    expect(r.line(`upstream ${HOST}:${closed}`)).toStartWith(`FAIL  upstream ${HOST}:${closed}: unreachable: `);
  });

  test("an upstream whose certificate is not trusted (no CREDGATE_UPSTREAM_CA_FILE)", async () => {
    const r = await doctor(dataDir, { CREDGATE_UPSTREAM_CA_FILE: "" });
    expect(r.code).toBe(1);
    expect(r.line("upstream CA file")).toStartWith("ok    upstream CA file: not set");
    expect(r.line(`upstream ${HOST}:${up.port}`)).toMatch(new RegExp(`^FAIL  upstream ${HOST}:${up.port}: unreachable via 127\\.0\\.0\\.1:${up.port}: .*(certificate|issuer)`, "i"));
  });

  test("an upstream CA file that cannot be read", async () => {
    const r = await doctor(dataDir, { CREDGATE_UPSTREAM_CA_FILE: join(tempDir(), "missing.pem") });
    expect(r.code).toBe(1);
    expect(r.line("upstream CA file")).toMatch(/^FAIL  upstream CA file: .*missing\.pem cannot be read/);
  });

  test("a configuration that does not load", async () => {
    const r = await doctor(dataDir, { CREDGATE_RESOLVE: `${HOST}:443:db.internal` });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`FAIL  configuration: CREDGATE_RESOLVE entry "${HOST}:443:db.internal": "db.internal" is not an IP address\n`);
  });
});

test("serve refuses a CREDGATE_RESOLVE address that is not an IP, with one line, before listening", async () => {
  const port = await freePort();
  const r = await runCli(["serve", "--data-dir", join(tempDir(), "d"), "--host", "127.0.0.1", "--port", String(port), "--gateway-port", String(await freePort())], {
    CREDGATE_DATABASE_URL: "",
    CREDGATE_RESOLVE: `${HOST}:443:127.0.0.1,api.other.test:443:upstream.internal`,
  });
  expect(r.code).toBe(1);
  expect(r.stderr).toBe('credgate: CREDGATE_RESOLVE entry "api.other.test:443:upstream.internal": "upstream.internal" is not an IP address\n');
  expect(r.stdout).toBe("");
});
