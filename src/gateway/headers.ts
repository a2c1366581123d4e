// Header hygiene both ways (CONTRACT §6.14): hop-by-hop headers, and every header named in Connection,
// never cross the gateway; requests also lose Host (rebuilt from the target) and every x-credgate-* header.

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function connectionListed(headers: Headers): Set<string> {
  const v = headers.get("connection");
  return v ? new Set(v.split(",").map((s) => s.trim().toLowerCase()).filter(Boolean)) : new Set();
}

/**
 * The agent's headers as they may go upstream (before injection), from the head's lines as parsed (names as
 * sent) or a Headers object: one pass for the Connection tokens, one for the rest, one native call to build.
 */
export function requestHeadersForUpstream(src: Iterable<[string, string]>): Headers {
  const entries = Array.isArray(src) ? (src as [string, string][]) : [...src];
  const listed = new Set<string>();
  for (const [name, value] of entries) {
    if (name.length !== 10 || name.toLowerCase() !== "connection") continue;
    for (const t of value.split(",")) {
      const token = t.trim().toLowerCase();
      if (token) listed.add(token);
    }
  }
  const kept: [string, string][] = [];
  for (const entry of entries) {
    const name = entry[0].toLowerCase();
    if (HOP_BY_HOP.has(name) || listed.has(name) || name === "host" || name === "expect" || name.startsWith("x-credgate-")) continue;
    kept.push(entry);
  }
  return new Headers(kept);
}

export function isWebSocketUpgrade(headers: Headers): boolean {
  return headers.get("upgrade")?.toLowerCase() === "websocket" && connectionListed(headers).has("upgrade");
}
