// Every setting of the process (command-line flags + CREDGATE_* environment) becomes one typed,
// validated Config here. Nothing else in the program reads process.env.
import { parseCidr, type Cidr } from "../core/addressRules.ts";
import { parseNoProxy, parseUpstreamProxy, type NoProxyRules, type UpstreamProxy } from "../core/upstreamProxy.ts";
import { isIP } from "node:net";
import { availableParallelism } from "node:os";
import { resolve as resolvePath } from "node:path";

export type Mode = "self-hosted" | "cloud";

export interface Config {
  mode: Mode;
  dataDir: string;
  port: number;
  gatewayPort: number;
  host: string;
  publicUrl: string;
  gatewayUrl: string;
  containerGatewayHost: string;
  /** base64 of 32 bytes, or null to use/generate `<dataDir>/master.key`. */
  masterKey: string | null;
  databaseUrl: string | null;
  bootstrapApiKey: string | null;
  bootstrapOrgApiKey: string | null;
  opConnectHost: string | null;
  opConnectToken: string | null;
  passthroughHosts: string[];
  upstreamCaFile: string | null;
  /** curl --resolve entries: "host:port" → address. */
  resolve: Map<string, string>;
  /** curl --connect-to entries: "host:port" → the host and port dialled instead (Host and TLS name kept). */
  connectTo: Map<string, { host: string; port: number }>;
  upstreamHeaderTimeoutSeconds: number;
  /** An intercepted tunnel with no request in flight is closed after this long without bytes (docs/gateway.md#tunnels). */
  tunnelIdleSeconds: number;
  /** A passthrough tunnel is closed after this long without bytes either way. */
  passthroughIdleSeconds: number;
  /** Offer h2 to agents inside intercepted tunnels (CREDGATE_GATEWAY_HTTP2, docs/gateway.md#http2-and-grpc). */
  gatewayHttp2: boolean;
  approvalPollSeconds: number;
  approvalTimeoutSeconds: number;
  logRetentionDays: number;
  pricingFile: string | null;
  /** OAuth client defaults by provider id, from CREDGATE_OAUTH_<PROVIDER>_CLIENT_ID/_SECRET. */
  oauthClients: Map<string, { clientId: string; clientSecret: string }>;
  /** CREDGATE_METRICS_TOKEN: the bearer token that opens `GET /metrics` to non-loopback clients. */
  metricsToken: string | null;
  /** Extra names for credgate's own certificates (CREDGATE_TLS_NAMES, docs/operations.md#tls). */
  tlsNames: string[];
  /** How the API port speaks (docs/operations.md#tls). */
  apiTls: ApiTls;
  /** Gateway processes sharing the gateway port (--gateway-workers, CREDGATE_GATEWAY_WORKERS): this one and N−1 workers. */
  gatewayWorkers: number;
  /** Egress guard adjustments (CREDGATE_EGRESS_ALLOW / CREDGATE_EGRESS_DENY, docs/guards.md#egress-guard). */
  egressAllow: Cidr[];
  egressDeny: Cidr[];
  /** Hosts that may receive credentials over plain HTTP (CREDGATE_PLAINTEXT_HOSTS, docs/guards.md#cleartext-rule). */
  plaintextHosts: string[];
  /** The credential leak guard (CREDGATE_LEAK_GUARD, on unless `off`: docs/guards.md#credential-leak-guard). */
  leakGuard: boolean;
  /** CREDGATE_TEST_NOW_OFFSET_SECONDS: shifts the clock of expiries (runtime/clock.ts); tests only, never in cloud mode. */
  testNowOffsetSeconds: number;
  /** DNS servers for outbound names (CREDGATE_DNS_SERVERS, docs/operations.md#dns), `ip` or `ip:port`; null: the system's. */
  dnsServers: string[] | null;
  /** The proxy for credgate's outbound connections (CREDGATE_UPSTREAM_PROXY, docs/operations.md#upstream-proxy). */
  upstreamProxy: UpstreamProxy | null;
  /** Destinations that go around it (CREDGATE_UPSTREAM_NO_PROXY). */
  upstreamNoProxy: NoProxyRules;
  /** OpenTelemetry trace export (the standard OTEL_* variables, docs/operations.md#traces); null: tracing is off. */
  tracing: TracingConfig | null;
}

/** Where and how spans are exported, and which requests are traced (docs/operations.md#traces). */
export interface TracingConfig {
  /** The URL spans are POSTed to: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. */
  endpoint: string;
  /** OTEL_EXPORTER_OTLP_HEADERS merged with OTEL_EXPORTER_OTLP_TRACES_HEADERS: often a backend's key, never logged. */
  headers: [string, string][];
  /** OTLP/HTTP body encoding (OTEL_EXPORTER_OTLP_PROTOCOL): binary protobuf (the default) or JSON. */
  protocol: "http/protobuf" | "http/json";
  /** OTEL_EXPORTER_OTLP_COMPRESSION=gzip. */
  gzip: boolean;
  /** OTEL_EXPORTER_OTLP_TIMEOUT: how long one export may take, in ms. */
  timeoutMs: number;
  /** OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES), default `credgate`. */
  serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, service.name excepted. */
  resourceAttributes: [string, string][];
  sampler: TraceSampler;
  /** The batching of finished spans (OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE). */
  batch: { delayMs: number; maxQueueSize: number; maxBatchSize: number };
}

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG: the decision for a trace credgate starts, and whether a caller's decision is followed. */
export interface TraceSampler {
  root: "always_on" | "always_off" | "traceidratio";
  /** `parentbased_*`: a request whose `traceparent` is valid is traced exactly when its caller's span was sampled. */
  parentBased: boolean;
  /** The share of traces `traceidratio` keeps, 0-1. */
  ratio: number;
}

/**
 * The API port's transport (docs/operations.md#tls): plain HTTP; HTTPS with a PEM pair from files (re-read when they change);
 * or HTTPS with a leaf of the gateway CA.
 */
export type ApiTls = { kind: "none" } | { kind: "files"; certFile: string; keyFile: string } | { kind: "gateway-ca" };

/** Flags given on the command line; each wins over its environment variable. */
export interface ConfigFlags {
  mode?: string;
  dataDir?: string;
  port?: string | number;
  gatewayPort?: string | number;
  host?: string;
  gatewayWorkers?: string | number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

export const KEY_FORMATS = {
  project: /^svc_[0-9a-f]{64}$/,
  organization: /^svc_org_[0-9a-f]{64}$/,
} as const;

function nonEmpty(v: string | undefined): string | null {
  const s = v?.trim();
  return s ? s : null;
}

function parsePort(name: string, raw: string | number | undefined, fallback: number): number {
  if (raw === undefined || raw === "") return fallback;
  const n = typeof raw === "number" ? raw : Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`${name} must be a port number (0-65535), got "${raw}"`);
  return n;
}

function parsePositive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(`${name} must be a positive number, got "${raw}"`);
  return n;
}

function parseOnOff(name: string, raw: string | undefined, fallback: boolean): boolean {
  const value = raw?.trim().toLowerCase();
  if (value === undefined || value === "") return fallback;
  if (value === "on") return true;
  if (value === "off") return false;
  throw new ConfigError(`${name} must be "on" or "off", got "${raw}"`);
}

function parseApiTls(env: Env): ApiTls {
  const certFile = nonEmpty(env.CREDGATE_TLS_CERT_FILE);
  const keyFile = nonEmpty(env.CREDGATE_TLS_KEY_FILE);
  const mode = nonEmpty(env.CREDGATE_TLS);
  if (mode !== null && mode !== "gateway-ca") throw new ConfigError(`CREDGATE_TLS must be "gateway-ca", got "${mode}"`);
  if (certFile === null && keyFile === null) return mode === null ? { kind: "none" } : { kind: "gateway-ca" };
  if (mode !== null) throw new ConfigError("CREDGATE_TLS=gateway-ca and CREDGATE_TLS_CERT_FILE/CREDGATE_TLS_KEY_FILE are exclusive: set one of them");
  if (certFile === null) throw new ConfigError("CREDGATE_TLS_CERT_FILE must be set with CREDGATE_TLS_KEY_FILE");
  if (keyFile === null) throw new ConfigError("CREDGATE_TLS_KEY_FILE must be set with CREDGATE_TLS_CERT_FILE");
  return { kind: "files", certFile: resolvePath(certFile), keyFile: resolvePath(keyFile) };
}

function parseUrl(name: string, raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${raw}"`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, "");
}

/**
 * Parses curl `--resolve` entries `host:port:addr[,addr…]`, several separated by commas or spaces. A piece
 * that is only an address is an extra address of the entry before it; like curl, the first one is dialled.
 */
function parseCidrList(name: string, raw: string | undefined): Cidr[] {
  const out: Cidr[] = [];
  for (const item of (raw ?? "").split(",").map((s) => s.trim()).filter(Boolean)) {
    const cidr = parseCidr(item);
    if (!cidr) throw new ConfigError(`${name}: "${item}" is not an IP address or CIDR range (e.g. 10.0.0.0/8, fd00::/8)`);
    out.push(cidr);
  }
  return out;
}

/** CREDGATE_DNS_SERVERS: `ip`, `ip:port`, `[ipv6]:port`, comma-separated, in the form node:dns `setServers` takes. */
export function parseDnsServers(raw: string | undefined): string[] | null {
  const items = (raw ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) return null;
  return items.map((item) => {
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(item) ?? /^([^:]+)(?::(\d+))?$/.exec(item) ?? (isIP(item) === 6 ? [item, item, undefined] : null);
    const address = m?.[1];
    const port = m?.[2] === undefined ? 53 : Number(m[2]);
    if (!address || !isIP(address) || !(port >= 1 && port <= 65535)) throw new ConfigError(`CREDGATE_DNS_SERVERS: "${item}" is not an IP address with an optional port (e.g. 10.0.0.2, 10.0.0.2:5353, [fd00::53]:53)`);
    return isIP(address) === 6 ? `[${address}]:${port}` : `${address}:${port}`;
  });
}

function parseProxySetting(raw: string | undefined): UpstreamProxy | null {
  const value = nonEmpty(raw);
  if (value === null) return null;
  const proxy = parseUpstreamProxy(value);
  if (typeof proxy === "string") throw new ConfigError(`CREDGATE_UPSTREAM_PROXY: ${proxy}`);
  return proxy;
}

function parseNoProxySetting(raw: string | undefined): NoProxyRules {
  const rules = parseNoProxy(raw ?? "");
  if (typeof rules === "string") throw new ConfigError(`CREDGATE_UPSTREAM_NO_PROXY: ${rules}`);
  return rules;
}

/** The first variable of `names` that is set (the signal-specific one first), trimmed. */
function firstSet(env: Env, ...names: string[]): { name: string; value: string } | null {
  for (const name of names) {
    const value = nonEmpty(env[name]);
    if (value !== null) return { name, value };
  }
  return null;
}

function parseWhole(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new ConfigError(`${name} must be a whole number of at least ${min}, got "${raw}"`);
  return n;
}

/**
 * `key=value,key2=value2` with percent-encoded values (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES).
 * A malformed entry is named by its key only: header values are often credentials.
 */
function parseKeyValues(name: string, raw: string | undefined): [string, string][] {
  const out: [string, string][] = [];
  for (const item of (raw ?? "").split(",")) {
    if (item.trim() === "") continue;
    const eq = item.indexOf("=");
    const key = (eq < 0 ? item : item.slice(0, eq)).trim();
    if (eq < 0 || key === "") throw new ConfigError(`${name} must be a comma list of key=value pairs: an entry has no ${eq < 0 ? "=" : "key"}`);
    let value: string;
    try {
      value = decodeURIComponent(item.slice(eq + 1).trim());
    } catch {
      throw new ConfigError(`${name}: the value of "${key}" is not valid percent-encoding`);
    }
    out.push([key, value]);
  }
  return out;
}

const TRACE_SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"];

function parseSampler(env: Env): TraceSampler {
  const name = nonEmpty(env.OTEL_TRACES_SAMPLER)?.toLowerCase() ?? "parentbased_always_on";
  if (!TRACE_SAMPLERS.includes(name)) throw new ConfigError(`OTEL_TRACES_SAMPLER must be one of ${TRACE_SAMPLERS.join(", ")}, got "${name}"`);
  const parentBased = name.startsWith("parentbased_");
  const root = (parentBased ? name.slice("parentbased_".length) : name) as TraceSampler["root"];
  const arg = nonEmpty(env.OTEL_TRACES_SAMPLER_ARG);
  const ratio = root === "traceidratio" && arg !== null ? Number(arg) : 1;
  if (!(ratio >= 0 && ratio <= 1)) throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (the share of traces kept), got "${arg}"`);
  return { root, parentBased, ratio };
}

/**
 * The OpenTelemetry variables credgate honours (docs/operations.md#traces); null when no endpoint is set,
 * OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none. What credgate cannot do is refused at start
 * rather than ignored: another exporter, gRPC, the client-certificate and CA-file variables.
 */
export function parseTracing(env: Env): TracingConfig | null {
  if (nonEmpty(env.OTEL_SDK_DISABLED)?.toLowerCase() === "true") return null;
  const exporter = nonEmpty(env.OTEL_TRACES_EXPORTER)?.toLowerCase() ?? "otlp";
  if (exporter === "none") return null;
  if (exporter !== "otlp") throw new ConfigError(`OTEL_TRACES_EXPORTER must be "otlp" or "none" (credgate exports traces over OTLP/HTTP), got "${exporter}"`);
  const specific = firstSet(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const base = firstSet(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  if (specific === null && base === null) return null;
  const given = specific ?? base!;
  const endpoint = specific !== null ? specific.value : `${base!.value.replace(/\/+$/, "")}/v1/traces`;
  let url: URL | null = null;
  try {
    url = new URL(endpoint);
  } catch {}
  // The value is not repeated: an endpoint may carry credentials.
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) throw new ConfigError(`${given.name} must be an http:// or https:// URL (e.g. http://localhost:4318)`);
  const protocol = firstSet(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
  if (protocol !== null && protocol.value !== "http/protobuf" && protocol.value !== "http/json") {
    throw new ConfigError(`${protocol.name} must be "http/protobuf" or "http/json" (credgate exports traces over OTLP/HTTP; gRPC is not supported), got "${protocol.value}"`);
  }
  const compression = firstSet(env, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION");
  if (compression !== null && compression.value !== "gzip" && compression.value !== "none") throw new ConfigError(`${compression.name} must be "gzip" or "none", got "${compression.value}"`);
  const tlsFile = firstSet(
    env,
    ...["CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"].flatMap((v) => [`OTEL_EXPORTER_OTLP_TRACES_${v}`, `OTEL_EXPORTER_OTLP_${v}`]),
  );
  if (tlsFile !== null) throw new ConfigError(`${tlsFile.name} is not supported: the collector's certificate is verified like any upstream's (system roots and CREDGATE_UPSTREAM_CA_FILE)`);
  const timeout = firstSet(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT");
  const headers = new Map<string, [string, string]>();
  for (const name of ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"]) {
    for (const [key, value] of parseKeyValues(name, env[name])) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) throw new ConfigError(`${name}: "${key}" is not a header name`);
      if (/[\r\n\0]/.test(value)) throw new ConfigError(`${name}: the value of "${key}" holds a line break`);
      headers.set(key.toLowerCase(), [key, value]);
    }
  }
  const resource = parseKeyValues("OTEL_RESOURCE_ATTRIBUTES", env.OTEL_RESOURCE_ATTRIBUTES);
  const maxQueueSize = parseWhole("OTEL_BSP_MAX_QUEUE_SIZE", env.OTEL_BSP_MAX_QUEUE_SIZE, 2048, 1);
  return {
    endpoint,
    headers: [...headers.values()],
    protocol: (protocol?.value as TracingConfig["protocol"] | undefined) ?? "http/protobuf",
    gzip: compression?.value === "gzip",
    timeoutMs: parseWhole(timeout?.name ?? "OTEL_EXPORTER_OTLP_TIMEOUT", timeout?.value, 10_000, 1),
    serviceName: nonEmpty(env.OTEL_SERVICE_NAME) ?? resource.find(([k]) => k === "service.name")?.[1] ?? "credgate",
    resourceAttributes: resource.filter(([k]) => k !== "service.name"),
    sampler: parseSampler(env),
    batch: {
      delayMs: parseWhole("OTEL_BSP_SCHEDULE_DELAY", env.OTEL_BSP_SCHEDULE_DELAY, 5000, 0),
      maxQueueSize,
      maxBatchSize: Math.min(maxQueueSize, parseWhole("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512, 1)),
    },
  };
}

export function parseResolve(raw: string | undefined): Map<string, string> {
  const map = new Map<string, string>();
  if (!raw) return map;
  let previous: string | null = null;
  for (const entry of raw.split(/[\s,]+/).filter(Boolean)) {
    const m = /^(\[[^\]]+\]|[^:\[\]]+):(\d+):(.+)$/.exec(entry);
    if (!m && previous !== null && isIP(entry.replace(/^\[|\]$/g, ""))) continue;
    if (!m) throw new ConfigError(`CREDGATE_RESOLVE entry "${entry}" must look like host:port:address`);
    previous = entry;
    const host = m[1]!.replace(/^\[|\]$/g, "").toLowerCase();
    const address = m[3]!.replace(/^\[|\]$/g, "");
    // Refused here, at start, rather than as ENOTFOUND on the first request that dials it.
    if (!isIP(address)) throw new ConfigError(`CREDGATE_RESOLVE entry "${entry}": "${address}" is not an IP address`);
    map.set(`${host}:${m[2]}`, address);
  }
  return map;
}

/**
 * Parses curl `--connect-to` entries `HOST1:PORT1:HOST2:PORT2`, separated by commas or spaces: a connection
 * meant for HOST1:PORT1 dials HOST2:PORT2 instead (e.g. an OAuth server or API under test on a free port).
 */
export function parseConnectTo(raw: string | undefined): Map<string, { host: string; port: number }> {
  const map = new Map<string, { host: string; port: number }>();
  if (!raw) return map;
  for (const entry of raw.split(/[\s,]+/).filter(Boolean)) {
    const m = /^(\[[^\]]+\]|[^:\[\]]+):(\d+):(\[[^\]]+\]|[^:\[\]]+):(\d+)$/.exec(entry);
    if (!m) throw new ConfigError(`CREDGATE_CONNECT_TO entry "${entry}" must look like host:port:host2:port2`);
    const bare = (h: string) => h.replace(/^\[|\]$/g, "").toLowerCase();
    map.set(`${bare(m[1]!)}:${m[2]}`, { host: bare(m[3]!), port: Number(m[4]) });
  }
  return map;
}

function parseOAuthClients(env: Env): Map<string, { clientId: string; clientSecret: string }> {
  const map = new Map<string, { clientId: string; clientSecret: string }>();
  for (const [name, value] of Object.entries(env)) {
    const m = /^CREDGATE_OAUTH_([A-Z0-9_]+)_CLIENT_ID$/.exec(name);
    if (!m || !value) continue;
    const secret = env[`CREDGATE_OAUTH_${m[1]}_CLIENT_SECRET`] ?? "";
    map.set(m[1]!.toLowerCase().replace(/_/g, "-"), { clientId: value, clientSecret: secret });
  }
  return map;
}

export function loadConfig(flags: ConfigFlags = {}, env: Env = process.env): Config {
  const modeRaw = flags.mode ?? env.CREDGATE_MODE ?? "self-hosted";
  if (modeRaw !== "self-hosted" && modeRaw !== "cloud") {
    throw new ConfigError(`mode must be "self-hosted" or "cloud", got "${modeRaw}"`);
  }
  const port = parsePort("port", flags.port ?? env.CREDGATE_PORT, 10254);
  const gatewayPort = parsePort("gateway port", flags.gatewayPort ?? env.CREDGATE_GATEWAY_PORT, 10255);

  const masterKey = nonEmpty(env.CREDGATE_MASTER_KEY);
  if (masterKey !== null && Buffer.from(masterKey, "base64").length !== 32) {
    throw new ConfigError("CREDGATE_MASTER_KEY must be the base64 encoding of 32 bytes");
  }
  const bootstrapApiKey = nonEmpty(env.CREDGATE_BOOTSTRAP_API_KEY);
  if (bootstrapApiKey !== null && !KEY_FORMATS.project.test(bootstrapApiKey)) {
    throw new ConfigError("CREDGATE_BOOTSTRAP_API_KEY must be svc_ followed by 64 lowercase hex characters");
  }
  const bootstrapOrgApiKey = nonEmpty(env.CREDGATE_BOOTSTRAP_ORG_API_KEY);
  if (bootstrapOrgApiKey !== null && !KEY_FORMATS.organization.test(bootstrapOrgApiKey)) {
    throw new ConfigError("CREDGATE_BOOTSTRAP_ORG_API_KEY must be svc_org_ followed by 64 lowercase hex characters");
  }
  const apiTls = parseApiTls(env);
  const workersRaw = flags.gatewayWorkers ?? nonEmpty(env.CREDGATE_GATEWAY_WORKERS) ?? undefined;
  const gatewayWorkers = workersRaw === undefined ? Math.max(1, availableParallelism()) : Number(workersRaw);
  if (!Number.isInteger(gatewayWorkers) || gatewayWorkers < 1 || gatewayWorkers > 64) {
    throw new ConfigError(`gateway workers must be a whole number from 1 to 64, got "${workersRaw}"`);
  }
  const databaseUrl = nonEmpty(env.CREDGATE_DATABASE_URL);
  if (databaseUrl !== null) {
    if (!/^postgres(ql)?:\/\//i.test(databaseUrl)) throw new ConfigError("CREDGATE_DATABASE_URL must be a postgres:// or postgresql:// URL");
    // Every instance must open what the others sealed: the key cannot be generated per instance.
    if (masterKey === null) throw new ConfigError("CREDGATE_MASTER_KEY is required with CREDGATE_DATABASE_URL (every instance must use the same key)");
  }

  const offsetRaw = nonEmpty(env.CREDGATE_TEST_NOW_OFFSET_SECONDS);
  const testNowOffsetSeconds = offsetRaw === null ? 0 : Number(offsetRaw);
  if (!/^-?\d+$/.test(offsetRaw ?? "0")) throw new ConfigError(`CREDGATE_TEST_NOW_OFFSET_SECONDS must be a whole number of seconds, got "${offsetRaw}"`);
  if (testNowOffsetSeconds !== 0 && modeRaw === "cloud") throw new ConfigError("CREDGATE_TEST_NOW_OFFSET_SECONDS is for tests and is refused in cloud mode");

  return {
    mode: modeRaw,
    dataDir: resolvePath(flags.dataDir ?? nonEmpty(env.CREDGATE_DATA_DIR) ?? "./credgate-data"),
    port,
    gatewayPort,
    host: flags.host ?? nonEmpty(env.CREDGATE_HOST) ?? "0.0.0.0",
    publicUrl: parseUrl("CREDGATE_PUBLIC_URL", nonEmpty(env.CREDGATE_PUBLIC_URL) ?? `${apiTls.kind === "none" ? "http" : "https"}://localhost:${port}`),
    gatewayUrl: parseUrl("CREDGATE_GATEWAY_URL", nonEmpty(env.CREDGATE_GATEWAY_URL) ?? `http://localhost:${gatewayPort}`),
    containerGatewayHost: nonEmpty(env.CREDGATE_CONTAINER_GATEWAY_HOST) ?? `host.docker.internal:${gatewayPort}`,
    masterKey,
    databaseUrl,
    bootstrapApiKey,
    bootstrapOrgApiKey,
    opConnectHost: nonEmpty(env.CREDGATE_OP_CONNECT_HOST),
    opConnectToken: nonEmpty(env.CREDGATE_OP_CONNECT_TOKEN),
    passthroughHosts: (env.CREDGATE_PASSTHROUGH_HOSTS ?? "").split(",").map((s) => s.trim()).filter(Boolean),
    upstreamCaFile: nonEmpty(env.CREDGATE_UPSTREAM_CA_FILE),
    resolve: parseResolve(env.CREDGATE_RESOLVE),
    connectTo: parseConnectTo(env.CREDGATE_CONNECT_TO),
    upstreamHeaderTimeoutSeconds: parsePositive("CREDGATE_UPSTREAM_HEADER_TIMEOUT", env.CREDGATE_UPSTREAM_HEADER_TIMEOUT, 300),
    tunnelIdleSeconds: parsePositive("CREDGATE_TUNNEL_IDLE_SECONDS", env.CREDGATE_TUNNEL_IDLE_SECONDS, 120),
    passthroughIdleSeconds: parsePositive("CREDGATE_PASSTHROUGH_IDLE_SECONDS", env.CREDGATE_PASSTHROUGH_IDLE_SECONDS, 600),
    gatewayHttp2: parseOnOff("CREDGATE_GATEWAY_HTTP2", env.CREDGATE_GATEWAY_HTTP2, true),
    approvalPollSeconds: parsePositive("CREDGATE_APPROVAL_POLL_SECONDS", env.CREDGATE_APPROVAL_POLL_SECONDS, 30),
    approvalTimeoutSeconds: parsePositive("CREDGATE_APPROVAL_TIMEOUT_SECONDS", env.CREDGATE_APPROVAL_TIMEOUT_SECONDS, 180),
    logRetentionDays: parsePositive("CREDGATE_LOG_RETENTION_DAYS", env.CREDGATE_LOG_RETENTION_DAYS, 30),
    pricingFile: nonEmpty(env.CREDGATE_PRICING_FILE),
    oauthClients: parseOAuthClients(env),
    metricsToken: nonEmpty(env.CREDGATE_METRICS_TOKEN),
    tlsNames: (env.CREDGATE_TLS_NAMES ?? "").split(",").map((s) => s.trim()).filter(Boolean),
    apiTls,
    gatewayWorkers,
    egressAllow: parseCidrList("CREDGATE_EGRESS_ALLOW", env.CREDGATE_EGRESS_ALLOW),
    egressDeny: parseCidrList("CREDGATE_EGRESS_DENY", env.CREDGATE_EGRESS_DENY),
    plaintextHosts: (env.CREDGATE_PLAINTEXT_HOSTS ?? "").split(",").map((s) => s.trim()).filter(Boolean),
    leakGuard: (env.CREDGATE_LEAK_GUARD ?? "").trim().toLowerCase() !== "off",
    testNowOffsetSeconds,
    dnsServers: parseDnsServers(env.CREDGATE_DNS_SERVERS),
    upstreamProxy: parseProxySetting(env.CREDGATE_UPSTREAM_PROXY),
    upstreamNoProxy: parseNoProxySetting(env.CREDGATE_UPSTREAM_NO_PROXY),
    tracing: parseTracing(env),
  };
}
