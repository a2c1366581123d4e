// Which proxy a Node request should use, from the environment `credgate run` sets (the same rules as undici's
// EnvHttpProxyAgent, so fetch() and the http/https modules agree): HTTPS_PROXY/HTTP_PROXY by the target's scheme
// (lowercase names first), NO_PROXY entries matched against the host (and port, when an entry names one).
// Bundled into the Node preload: imports nothing of ours.

export type Env = Record<string, string | undefined>;

/** The proxy for a request to host:port, or null to connect directly. */
export function proxyFor(secure: boolean, host: string, port: number, env: Env): URL | null {
  const raw = (secure ? (env.https_proxy ?? env.HTTPS_PROXY) : (env.http_proxy ?? env.HTTP_PROXY))?.trim();
  if (!raw) return null;
  let proxy: URL;
  try {
    proxy = new URL(raw.includes("://") ? raw : `http://${raw}`);
  } catch {
    return null;
  }
  const target = bare(host);
  if (bypassed(target, port, env.no_proxy ?? env.NO_PROXY ?? "")) return null;
  // Connections to the proxy itself go straight to it.
  if (bare(proxy.hostname) === target && defaultPort(proxy) === port) return null;
  return proxy;
}

export function defaultPort(url: URL): number {
  return Number(url.port) || (url.protocol === "https:" ? 443 : 80);
}

function bare(host: string): string {
  return host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
}

/** NO_PROXY: `*` matches everything; `host`, `.host` and `*.host` match the host and its subdomains. */
export function bypassed(host: string, port: number, noProxy: string): boolean {
  for (const raw of noProxy.split(/[,\s]+/)) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === "*") return true;
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry);
    const name = bare((m ? m[1]! : entry).replace(/^\*?\./, ""));
    if (m && Number(m[2]) !== port) continue;
    if (host === name || host.endsWith(`.${name}`)) return true;
  }
  return false;
}
