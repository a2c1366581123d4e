// `credgate doctor` (docs/operations.md#doctor): checks an installation without changing it — the data dir's permissions,
// the gateway CA (validity, expiry, key), the database (integrity), the ports, and the upstream TLS settings
// (CA file, CREDGATE_RESOLVE pins, reachability of chosen hosts with the same dialling rules the gateway uses).
// Each check yields one line; the command exits 1 when one fails. Nothing is created, migrated or written.
import { Database } from "bun:sqlite";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import * as net from "node:net";
import { join } from "node:path";
import { readPair } from "../listen/apiCertificate.ts";
import type { ApiTls, Config } from "../runtime/config.ts";
import { plainTransportWarnings } from "../listen/plainTransport.ts";
import { Outbound } from "../services/outbound.ts";
import { DB_FILE } from "../store/sqlite.ts";

export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  /** Passes, but says something the operator should act on (printed as "warn"). */
  warning?: boolean;
}

/** A CA certificate closer than this to its expiry fails the check: agents would soon reject every leaf. */
export const CA_EXPIRY_MARGIN_DAYS = 30;
const DAY_MS = 24 * 3600 * 1000;
const UPSTREAM_TIMEOUT_MS = 5000;

const pass = (name: string, detail: string): CheckResult => ({ name, ok: true, detail });
const fail = (name: string, detail: string): CheckResult => ({ name, ok: false, detail });
const octal = (mode: number) => "0" + (mode & 0o777).toString(8);

/** The data dir and the key files in it: private to the user running credgate. */
export function checkDataDir(dataDir: string): CheckResult {
  const name = "data dir";
  if (!existsSync(dataDir)) return fail(name, `${dataDir} does not exist (run "credgate serve --data-dir ${dataDir}" once)`);
  const st = statSync(dataDir);
  if (!st.isDirectory()) return fail(name, `${dataDir} is not a directory`);
  try {
    accessSync(dataDir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch {
    return fail(name, `${dataDir} is not readable and writable by this user`);
  }
  if ((st.mode & 0o077) !== 0) return fail(name, `${dataDir} has mode ${octal(st.mode)}; other users can reach the keys in it (chmod 700 ${dataDir})`);
  for (const file of ["master.key", "ca.key", DB_FILE]) {
    const path = join(dataDir, file);
    if (!existsSync(path)) continue;
    const mode = statSync(path).mode;
    if (file !== DB_FILE && (mode & 0o077) !== 0) return fail(name, `${path} has mode ${octal(mode)} (chmod 600 ${path})`);
  }
  return pass(name, `${dataDir} (mode ${octal(st.mode)}; key files private)`);
}

function keyMatches(cert: X509Certificate, keyPem: string): boolean {
  const key = createPrivateKey(keyPem);
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (key.asymmetricKeyType !== "ec" || curve !== "prime256v1") throw new Error(curve ? `curve ${curve}` : `key type ${key.asymmetricKeyType}`);
  return cert.checkPrivateKey(key);
}

/** The gateway CA as the embedded store keeps it (`ca.pem` + `ca.key`): parseable, valid now, not near expiry, key matching. */
export async function checkCa(dataDir: string, now = Date.now()): Promise<CheckResult> {
  const name = "gateway CA";
  const certFile = join(dataDir, "ca.pem");
  const keyFile = join(dataDir, "ca.key");
  if (!existsSync(certFile) || !existsSync(keyFile)) return fail(name, `${certFile} or ${keyFile} is missing (created at the first start)`);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(certFile, "utf8"));
  } catch (err) {
    return fail(name, `${certFile} is not a PEM certificate (${(err as Error).message})`);
  }
  const notBefore = new Date(cert.validFrom);
  const notAfter = new Date(cert.validTo);
  const until = notAfter.toISOString();
  if (now < notBefore.getTime()) return fail(name, `not valid before ${notBefore.toISOString()} (check the clock)`);
  if (now >= notAfter.getTime()) return fail(name, `expired on ${until}; agents reject every intercepted connection`);
  const daysLeft = Math.floor((notAfter.getTime() - now) / DAY_MS);
  if (daysLeft < CA_EXPIRY_MARGIN_DAYS) return fail(name, `expires on ${until} (in ${daysLeft} days)`);
  try {
    if (!keyMatches(cert, readFileSync(keyFile, "utf8"))) return fail(name, `${keyFile} does not belong to ${certFile}`);
  } catch (err) {
    return fail(name, `${keyFile} is not a usable ECDSA P-256 key (${(err as Error).message})`);
  }
  // One attribute per line from node:crypto; shown as one RFC 4514-style line.
  return pass(name, `"${cert.subject.split("\n").join(", ")}", valid until ${until} (${daysLeft} days), key matches`);
}

/**
 * SQLite: the file passes `PRAGMA integrity_check` and `foreign_key_check`. Opened read-write (never created),
 * though nothing is written: a read-only connection to a WAL database leaves -wal and -shm files behind,
 * while the last read-write connection removes them when it closes.
 */
export function checkSqlite(dataDir: string): CheckResult {
  const name = "database";
  const file = join(dataDir, DB_FILE);
  if (!existsSync(file)) return fail(name, `${file} does not exist`);
  let db: Database | null = null;
  try {
    db = new Database(file, { readwrite: true, create: false });
    db.run("PRAGMA busy_timeout = 5000");
    const integrity = db.query("PRAGMA integrity_check").values().map((r) => String(r[0]));
    if (integrity.length !== 1 || integrity[0] !== "ok") return fail(name, `${file}: integrity check failed: ${integrity.slice(0, 3).join("; ")}`);
    const orphans = db.query("PRAGMA foreign_key_check").values().length;
    if (orphans > 0) return fail(name, `${file}: ${orphans} rows break foreign keys`);
    return pass(name, `${file}: integrity ok`);
  } catch (err) {
    return fail(name, `${file} cannot be read as a SQLite database (${(err as Error).message})`);
  } finally {
    db?.close();
  }
}

/** PostgreSQL: the server answers (integrity is the server's own business). */
export async function checkPostgres(databaseUrl: string): Promise<CheckResult> {
  const name = "database";
  const client = new Bun.SQL(databaseUrl, { max: 1, connectionTimeout: 5 });
  const where = new URL(databaseUrl).host;
  try {
    await client`SELECT 1`;
    return pass(name, `PostgreSQL at ${where} answers`);
  } catch (err) {
    return fail(name, `PostgreSQL at ${where} does not answer (${(err as Error).message})`);
  } finally {
    await client.close().catch(() => {});
  }
}

function portFree(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", (err: NodeJS.ErrnoException) => resolve(err.code === "EADDRINUSE" ? "in use (is credgate already running?)" : err.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

/** The API, gateway and database-listener ports (docs/databases.md#the-listener; unless off) can be bound on the configured address. */
export async function checkPorts(config: Pick<Config, "host" | "port" | "gatewayPort"> & Partial<Pick<Config, "dbPort">>): Promise<CheckResult> {
  const name = "ports";
  const problems: string[] = [];
  const ports: [string, number][] = [["API", config.port], ["gateway", config.gatewayPort], ...(config.dbPort ? [["database", config.dbPort] as [string, number]] : [])];
  for (const [label, port] of ports) {
    const problem = await portFree(config.host, port);
    if (problem) problems.push(`${label} ${config.host}:${port} ${problem}`);
  }
  if (config.port === config.gatewayPort && config.port !== 0) problems.push(`the API and gateway ports are both ${config.port}`);
  if (config.dbPort && (config.dbPort === config.port || config.dbPort === config.gatewayPort)) problems.push(`the database port ${config.dbPort} is also the ${config.dbPort === config.port ? "API" : "gateway"} port`);
  const free = ports.map(([label, port]) => `${label} ${config.host}:${port}`);
  return problems.length > 0 ? fail(name, problems.join("; ")) : pass(name, `${free.slice(0, -1).join(", ")} and ${free.at(-1)} are free`);
}

/** The API's TLS pair (docs/operations.md#tls), when files are configured: readable, and the key belongs to the certificate. */
export function checkApiTls(apiTls: ApiTls): CheckResult {
  const name = "API TLS";
  if (apiTls.kind === "none") return pass(name, "off (the API port speaks plain HTTP)");
  if (apiTls.kind === "gateway-ca") return pass(name, "a leaf of the gateway CA (CREDGATE_TLS=gateway-ca)");
  try {
    readPair(apiTls.certFile, apiTls.keyFile);
    return pass(name, `${apiTls.certFile} with its key ${apiTls.keyFile}`);
  } catch (err) {
    return fail(name, (err as Error).message);
  }
}

/** The start-up warnings of docs/operations.md#tls: a port open to the network in clear, one line each. */
export function checkTransport(config: Config): CheckResult[] {
  const lines = plainTransportWarnings(config);
  if (lines.length === 0) return [pass("transport", "no port is open to the network in plain HTTP")];
  return lines.map((line) => ({ name: "transport", ok: true, warning: true, detail: line.replace(/^credgate: /, "") }));
}

/** CREDGATE_UPSTREAM_CA_FILE, when set: readable PEM certificates. */
export function checkUpstreamCaFile(file: string | null): CheckResult {
  const name = "upstream CA file";
  if (file === null) return pass(name, "not set (upstreams are verified against the system roots)");
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (err) {
    return fail(name, `${file} cannot be read (${(err as Error).message})`);
  }
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return fail(name, `${file} holds no PEM certificate`);
  try {
    for (const b of blocks) new X509Certificate(b);
  } catch (err) {
    return fail(name, `${file} holds a certificate that does not parse (${(err as Error).message})`);
  }
  return pass(name, `${file}: ${blocks.length} certificate(s) trusted on top of the system roots`);
}

/** `host[:port]` (default 443), brackets allowed around IPv6 literals. */
export function parseCheckHost(raw: string): { host: string; port: number } | null {
  const m = /^(\[[^\]]+\]|[^:\s\[\]]+)(?::(\d{1,5}))?$/.exec(raw.trim());
  if (!m) return null;
  const port = m[2] === undefined ? 443 : Number(m[2]);
  return port >= 1 && port <= 65535 ? { host: m[1]!.replace(/^\[|\]$/g, ""), port } : null;
}

/**
 * One TLS handshake to `host:port` the way the gateway dials it (CREDGATE_RESOLVE, CREDGATE_CONNECT_TO,
 * CREDGATE_UPSTREAM_CA_FILE), the certificate verified for `host`. Nothing is sent after the handshake.
 */
export async function checkUpstream(outbound: Outbound, host: string, port: number): Promise<CheckResult> {
  const name = `upstream ${host}:${port}`;
  const target = outbound.dialTarget(host, port);
  const via = target.address !== target.host || target.port !== port ? ` via ${target.address}:${target.port}` : "";
  try {
    const socket = await outbound.connect(host, port, { tls: true, timeoutMs: UPSTREAM_TIMEOUT_MS });
    socket.end();
    return pass(name, `TLS handshake ok${via}, certificate valid for ${host}`);
  } catch (err) {
    return fail(name, `unreachable${via}: ${(err as Error).message}`);
  }
}

export interface DoctorOptions {
  /** Hosts to reach (`host[:port]`); default: the hosts pinned by CREDGATE_RESOLVE. */
  checkHosts: string[];
}

/** Every check, in order. */
export async function runChecks(config: Config, opts: DoctorOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = [checkDataDir(config.dataDir)];
  if (config.databaseUrl) {
    results.push(pass("gateway CA", "kept sealed in the PostgreSQL database (checked by the serving instances)"));
    results.push(await checkPostgres(config.databaseUrl));
  } else {
    results.push(await checkCa(config.dataDir));
    results.push(checkSqlite(config.dataDir));
  }
  results.push(await checkPorts(config));
  results.push(checkApiTls(config.apiTls), ...checkTransport(config));
  const caFile = checkUpstreamCaFile(config.upstreamCaFile);
  results.push(caFile);
  const targets: { host: string; port: number }[] = [];
  for (const raw of opts.checkHosts) {
    const t = parseCheckHost(raw);
    if (t === null) results.push(fail(`upstream ${raw}`, `--check-host must be host or host:port`));
    else targets.push(t);
  }
  if (opts.checkHosts.length === 0) {
    // Resolve keys are `host:port`, the host bare (an IPv6 literal keeps its colons).
    for (const key of config.resolve.keys()) {
      const at = key.lastIndexOf(":");
      targets.push({ host: key.slice(0, at), port: Number(key.slice(at + 1)) });
    }
  }
  if (targets.length === 0 && opts.checkHosts.length === 0) {
    results.push(pass("upstreams", "none checked (name hosts with --check-host host[:port]; CREDGATE_RESOLVE pins are checked by default)"));
  } else if (caFile.ok) {
    const outbound = new Outbound(config);
    for (const t of targets) results.push(await checkUpstream(outbound, t.host, t.port));
  }
  return results;
}
