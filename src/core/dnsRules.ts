// How credgate turns DNS answers into one address to dial and a lifetime (docs/operations.md#dns): record TTLs
// are clamped to 1-300 s, an IPv4 address is preferred to an IPv6 one, and /etc/hosts is read first.

export const MIN_TTL_S = 1;
export const MAX_TTL_S = 300;

/** A TTL in seconds (the smallest of an answer's records), clamped, in milliseconds. */
export function clampTtlMs(ttls: number[]): number {
  const ttl = ttls.length === 0 ? MIN_TTL_S : Math.min(...ttls);
  return Math.min(MAX_TTL_S, Math.max(MIN_TTL_S, Number.isFinite(ttl) ? ttl : MIN_TTL_S)) * 1000;
}

/**
 * A hosts file (`/etc/hosts` format): address, then names, `#` comments. Names are lowercased, without a trailing
 * dot; each name keeps its addresses in file order.
 */
export function parseHosts(text: string): Map<string, string[]> {
  const hosts = new Map<string, string[]>();
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (!line) continue;
    const [address, ...names] = line.split(/\s+/);
    if (!address || names.length === 0) continue;
    for (const name of names) {
      const key = name.toLowerCase().replace(/\.$/, "");
      const list = hosts.get(key);
      if (!list) hosts.set(key, [address]);
      else if (!list.includes(address)) list.push(address);
    }
  }
  return hosts;
}

/** The address dialled among a name's: the first IPv4 one, else the first IPv6 one. */
export function pickAddress(addresses: readonly string[]): string | undefined {
  return addresses.find((a) => !a.includes(":")) ?? addresses[0];
}
