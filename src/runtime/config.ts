// Every setting of the process (command-line flags + CREDGATE_* environment) becomes one typed,
// validated Config here. Nothing else in the program reads process.env. The parsing helpers are in
// configParsing.ts; the outbound-connection and trace settings in configOutbound.ts and configTracing.ts.
import type { Cidr } from "../core/addressRules.ts";
import type { NoProxyRules, UpstreamProxy } from "../core/upstreamProxy.ts";
import { availableParallelism } from "node:os";
import { resolve as resolvePath } from "node:path";
import { parseCidrList, parseConnectTo, parseDnsServers, parseNoProxySetting, parseProxySetting, parseResolve } from "./configOutbound.ts";
import { ConfigError, nonEmpty, parseOnOff, parsePort, parsePositive, parseUrl, type Env } from "./configParsing.ts";
import { parseStoreSettings, type StoreSettings } from "./configStores.ts";
import { parseTracing, type TracingConfig } from "./configTracing.ts";

export { ConfigError } from "./configParsing.ts";

export type Mode = "self-hosted" | "cloud";

/** The secret-store settings (StoreSettings, docs/configuration.md#secret-stores) are spread into it. */
export interface Config extends StoreSettings {
  mode: Mode;
  dataDir: string;
  port: number;
  gatewayPort: number;
  /** The PostgreSQL broker's listener (CREDGATE_DB_PORT, --db-port, docs/databases.md#the-listener); 0: off. */
  dbPort: number;
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
  dbPort?: string | number;
  host?: string;
  gatewayWorkers?: string | number;
}

export const KEY_FORMATS = {
  project: /^svc_[0-9a-f]{64}$/,
  organization: /^svc_org_[0-9a-f]{64}$/,
} as const;

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
  const dbPort = parsePort("database port", flags.dbPort ?? env.CREDGATE_DB_PORT, 10256);

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
    dbPort,
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
    ...parseStoreSettings(env, modeRaw),
  };
}
