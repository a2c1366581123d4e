// Name resolution for every outbound connection (docs/operations.md#dns). /etc/hosts first; then DNS with TTLs:
// the servers of CREDGATE_DNS_SERVERS, or else the system's (those of /etc/resolv.conf), asked for A, then AAAA
// when there is no A record. Without CREDGATE_DNS_SERVERS a name DNS does not know is also given to the system's
// lookup (getaddrinfo: search domains, nsswitch), which reports no TTL. The answers are cached by the caller
// (services/outbound.ts, one cache per instance) for the lifetime given here.
import { promises as dns } from "node:dns";
import { readFileSync, statSync } from "node:fs";
import { clampTtlMs, parseHosts, pickAddress } from "../core/dnsRules.ts";
import type { Loaded } from "../core/sharedCache.ts";

/** One name's answer: the address to dial, or why there is none (a resolver code such as ENOTFOUND). */
export type DnsAnswer = { address: string } | { address: null; reason: string };

/** Names from /etc/hosts or the system lookup carry no TTL: they are looked up again after this. */
export const FIXED_TTL_MS = 5_000;
/** The name does not exist, or has no address record. */
export const NEGATIVE_TTL_MS = 5_000;
/** The resolver failed (timeout, refused, server failure): asked again after this. */
export const FAILURE_TTL_MS = 1_000;
/** How often /etc/hosts is checked for changes at most. */
const HOSTS_CHECK_MS = 1_000;

const NOT_FOUND = new Set(["ENOTFOUND", "ENODATA", "NOTFOUND", "NODATA"]);

function code(err: unknown): string {
  const e = err as NodeJS.ErrnoException | null;
  return e?.code ?? e?.message ?? "resolver error";
}

export class NameResolver {
  readonly #resolver: dns.Resolver | null;
  /** CREDGATE_DNS_SERVERS names the servers: no fall-back to the system's lookup. */
  readonly #explicit: boolean;
  #hosts = new Map<string, string[]>();
  #hostsMtimeMs = -1;
  #hostsCheckedAt = -Infinity;

  constructor(
    servers: string[] | null,
    private readonly hostsPath = "/etc/hosts",
  ) {
    const resolver = new dns.Resolver({ timeout: 2_000, tries: 2 });
    if (servers) resolver.setServers(servers);
    this.#explicit = servers !== null;
    // No servers known (no /etc/resolv.conf): the system's lookup only.
    this.#resolver = this.#explicit || resolver.getServers().length > 0 ? resolver : null;
  }

  /** The answer for `name` and how long it may be used. Never rejects. */
  async load(name: string): Promise<Loaded<DnsAnswer>> {
    const listed = this.#fromHosts(name);
    if (listed !== undefined) return { value: { address: listed }, ttlMs: FIXED_TTL_MS };
    if (this.#resolver === null) return this.#system(name);
    let failure: string | null = null;
    for (const family of [4, 6] as const) {
      try {
        const records = family === 4 ? await this.#resolver.resolve4(name, { ttl: true }) : await this.#resolver.resolve6(name, { ttl: true });
        if (records.length > 0) return { value: { address: records[0]!.address }, ttlMs: clampTtlMs(records.map((r) => r.ttl)) };
      } catch (err) {
        const reason = code(err);
        if (!NOT_FOUND.has(reason)) {
          failure = reason;
          break;
        }
      }
    }
    if (failure !== null) return { value: { address: null, reason: failure }, ttlMs: FAILURE_TTL_MS };
    if (!this.#explicit) return this.#system(name);
    return { value: { address: null, reason: "ENOTFOUND" }, ttlMs: NEGATIVE_TTL_MS };
  }

  async #system(name: string): Promise<Loaded<DnsAnswer>> {
    try {
      const all = await dns.lookup(name, { all: true });
      const address = pickAddress(all.map((a) => a.address));
      if (address !== undefined) return { value: { address }, ttlMs: FIXED_TTL_MS };
      return { value: { address: null, reason: "ENOTFOUND" }, ttlMs: NEGATIVE_TTL_MS };
    } catch (err) {
      const reason = code(err);
      return { value: { address: null, reason }, ttlMs: NOT_FOUND.has(reason) ? NEGATIVE_TTL_MS : FAILURE_TTL_MS };
    }
  }

  /** The name's address in the hosts file (read again when it changed, checked at most once a second). */
  #fromHosts(name: string): string | undefined {
    const now = performance.now();
    if (now - this.#hostsCheckedAt >= HOSTS_CHECK_MS) {
      this.#hostsCheckedAt = now;
      let mtime = 0;
      try {
        mtime = statSync(this.hostsPath).mtimeMs;
      } catch {}
      if (mtime !== this.#hostsMtimeMs) {
        this.#hostsMtimeMs = mtime;
        try {
          this.#hosts = parseHosts(readFileSync(this.hostsPath, "utf8"));
        } catch {
          this.#hosts = new Map();
        }
      }
    }
    const addresses = this.#hosts.get(name.replace(/\.$/, ""));
    return addresses ? pickAddress(addresses) : undefined;
  }
}
