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

/** The agent's headers as they may go upstream (before injection). */
export function requestHeadersForUpstream(src: Headers): Headers {
  const listed = connectionListed(src);
  const kept: [string, string][] = [];
  for (const entry of src) {
    const name = entry[0];
    if (HOP_BY_HOP.has(name) || listed.has(name) || name === "host" || name === "expect" || name.startsWith("x-credgate-")) continue;
    kept.push(entry);
  }
  // One native call for the whole list, not one per header.
  return new Headers(kept);
}

/** The upstream's headers as they may go back to the agent. */
export function responseHeadersForAgent(src: Headers): Headers {
  const listed = connectionListed(src);
  const out = new Headers();
  for (const [name, value] of src) {
    if (HOP_BY_HOP.has(name) || listed.has(name)) continue;
    if (name === "set-cookie") continue;
    out.append(name, value);
  }
  for (const cookie of src.getSetCookie()) out.append("set-cookie", cookie);
  return out;
}

export function isWebSocketUpgrade(headers: Headers): boolean {
  return headers.get("upgrade")?.toLowerCase() === "websocket" && connectionListed(headers).has("upgrade");
}
