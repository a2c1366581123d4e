// The settings of credgate's outbound connections (docs/operations.md#dns, docs/operations.md#upstream-proxy,
// docs/guards.md#egress-guard): curl-style --resolve and --connect-to overrides, DNS servers, the upstream proxy,
// and the egress guard's address lists.
import { isIP } from "node:net";
import { parseCidr, type Cidr } from "../core/addressRules.ts";
import { parseNoProxy, parseUpstreamProxy, type NoProxyRules, type UpstreamProxy } from "../core/upstreamProxy.ts";
import { ConfigError, nonEmpty } from "./configParsing.ts";

export function parseCidrList(name: string, raw: string | undefined): Cidr[] {
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

export function parseProxySetting(raw: string | undefined): UpstreamProxy | null {
  const value = nonEmpty(raw);
  if (value === null) return null;
  const proxy = parseUpstreamProxy(value);
  if (typeof proxy === "string") throw new ConfigError(`CREDGATE_UPSTREAM_PROXY: ${proxy}`);
  return proxy;
}

export function parseNoProxySetting(raw: string | undefined): NoProxyRules {
  const rules = parseNoProxy(raw ?? "");
  if (typeof rules === "string") throw new ConfigError(`CREDGATE_UPSTREAM_NO_PROXY: ${rules}`);
  return rules;
}

/**
 * Parses curl `--resolve` entries `host:port:addr[,addr…]`, several separated by commas or spaces. A piece
 * that is only an address is an extra address of the entry before it; like curl, the first one is dialled.
 */
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
