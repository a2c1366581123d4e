// Header hygiene both ways (CONTRACT §6.14): hop-by-hop headers, and every header named in Connection,
// never cross the gateway; requests also lose Host (rebuilt from the target) and every x-credgate-* header.
import { connectionTokens, headerValue, type HeaderLines } from "./http1/head.ts";

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

/**
 * The agent's headers as they may go upstream (before injection), from the head's lines as parsed (names as
 * sent) or a Headers object: one pass for the Connection tokens, one for the rest, one native call to build.
 */
export function requestHeadersForUpstream(src: Iterable<[string, string]>): Headers {
  const entries: HeaderLines = Array.isArray(src) ? src : [...src];
  const listed = connectionTokens(entries);
  const kept: [string, string][] = [];
  for (const entry of entries) {
    const name = entry[0].toLowerCase();
    if (HOP_BY_HOP.has(name) || listed.has(name) || name === "host" || name === "expect" || name.startsWith("x-credgate-")) continue;
    kept.push(entry);
  }
  return new Headers(kept);
}

export function isWebSocketUpgrade(lines: HeaderLines): boolean {
  return headerValue(lines, "upgrade")?.toLowerCase() === "websocket" && connectionTokens(lines).has("upgrade");
}
