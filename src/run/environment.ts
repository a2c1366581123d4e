// The environment `credgate run` gives a child process (docs/configuration.md#credgate-run): the agent's proxy URL, the gateway
// CA for every runtime (Node, Bun, Python, curl, git, Go, Deno), the git settings and the LLM placeholders,
// all derived from the container config the API hands out.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import { databaseEnv, isDatabaseEnvKey, type DatabaseUrlCredential } from "../core/databaseUrls.ts";

export interface ContainerConfig {
  env: Record<string, string>;
  caCertificate: string;
  credentialStubs?: { containerPath: string; content: string }[];
}

const SYSTEM_BUNDLES = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"];
/** Container-only settings: paths inside the agent container and the in-container proxy address. */
const CONTAINER_ONLY = new Set(["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "GIT_PROXY_SSL_CAINFO", "CODEX_HOME", "GOOGLE_APPLICATION_CREDENTIALS"]);
const LOOPBACK = ["localhost", "127.0.0.1", "::1"];

/** The system trust store plus the gateway CA, so proxied and direct HTTPS both verify. */
export function combinedBundle(caPem: string): string {
  const system = SYSTEM_BUNDLES.find((p) => existsSync(p));
  const base = system ? readFileSync(system, "utf8") : rootCertificates.join("\n");
  return `${base.trimEnd()}\n${caPem.trimEnd()}\n`;
}

/**
 * curl reads no environment variable for the CA of an https:// proxy: it gets `proxy-cacert` from a .curlrc in a
 * CURL_HOME of its own, after the lines of the user's .curlrc (the first curl would have read), which stay in force.
 */
export function curlrcWithProxyCa(base: Record<string, string | undefined>, bundle: string): string {
  const homes = [base.CURL_HOME, base.XDG_CONFIG_HOME, base.HOME].filter((d): d is string => Boolean(d));
  const own = homes.map((d) => join(d, ".curlrc")).find((f) => existsSync(f));
  const lines = own ? readFileSync(own, "utf8").trimEnd() + "\n" : "";
  return `${lines}proxy-cacert = ${JSON.stringify(bundle)}\n`;
}

/**
 * The container config's database URLs made for this machine (docs/databases.md#connecting): the same names,
 * token, port and databases, on the gateway URL's host, with the CA file `run` wrote.
 */
export function runDatabaseEnv(config: ContainerConfig, gatewayHost: string, caFile: string): Record<string, string> {
  const list: DatabaseUrlCredential[] = [];
  let token = "";
  let port = 0;
  for (const [key, value] of Object.entries(config.env)) {
    if (!/^CREDGATE_DB_[A-Z0-9_]*_URL$/.test(key)) continue;
    const url = new URL(value);
    token = decodeURIComponent(url.password);
    port = Number(url.port);
    const database = decodeURIComponent(url.pathname.slice(1));
    list.push({ name: decodeURIComponent(url.username), databases: database === "" ? null : [database] });
  }
  return list.length === 0 ? {} : databaseEnv(list, { host: gatewayHost.replace(/^\[|\]$/g, ""), port, token, caPath: caFile });
}

export function runEnvironment(
  base: Record<string, string | undefined>,
  config: ContainerConfig,
  gatewayUrl: string,
  files: { ca: string; bundle: string; nodePreload: string; curlHome: string; gcpCredentials?: string },
): Record<string, string> {
  const token = decodeURIComponent(new URL(config.env.HTTPS_PROXY!).password);
  // An https:// gateway URL is TLS to the proxy itself (docs/gateway.md#listener): every CA setting below covers that hop too.
  const gateway = new URL(gatewayUrl);
  const proxy = `${gateway.protocol}//x:${token}@${gateway.host}`;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  for (const [k, v] of Object.entries(config.env)) if (!CONTAINER_ONLY.has(k) && !isDatabaseEnvKey(k)) env[k] = v;
  Object.assign(env, runDatabaseEnv(config, gateway.hostname, files.ca));
  const noProxy = [...new Set([...(env.NO_PROXY ?? env.no_proxy ?? "").split(",").map((s) => s.trim()).filter(Boolean), ...LOOPBACK])].join(",");
  const nodeOptions = [env.NODE_OPTIONS, `--require ${JSON.stringify(files.nodePreload)}`].filter(Boolean).join(" ");
  return {
    ...env,
    HTTPS_PROXY: proxy,
    HTTP_PROXY: proxy,
    https_proxy: proxy,
    http_proxy: proxy,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    NODE_EXTRA_CA_CERTS: files.ca,
    NODE_USE_ENV_PROXY: "1",
    NODE_OPTIONS: nodeOptions,
    SSL_CERT_FILE: files.bundle,
    REQUESTS_CA_BUNDLE: files.bundle,
    CURL_CA_BUNDLE: files.bundle,
    GIT_SSL_CAINFO: files.bundle,
    GIT_PROXY_SSL_CAINFO: files.bundle,
    DENO_CERT: files.bundle,
    GIT_TERMINAL_PROMPT: "0",
    GIT_HTTP_PROXY_AUTHMETHOD: "basic",
    ...(gateway.protocol === "https:" ? { CURL_HOME: files.curlHome } : {}),
    // The Google SDKs read the stub service-account file written beside the CA, and the metadata server by name
    // (docs/cloud-identities.md#agent-setup).
    ...(files.gcpCredentials !== undefined ? { GOOGLE_APPLICATION_CREDENTIALS: files.gcpCredentials, GCE_METADATA_HOST: "metadata.google.internal" } : {}),
  };
}
