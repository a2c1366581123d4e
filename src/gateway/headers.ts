// Header hygiene both ways (docs/gateway.md#forwarding): hop-by-hop headers, and every header named in Connection,
// never cross the gateway; requests also lose Host (rebuilt from the target) and every x-credgate-* header.
import { connectionTokens, hasNamePrefix, headerValue, isOneOf, type HeaderLines } from "./http1/head.ts";
import { HeaderList } from "./http1/headerList.ts";

const HOP_BY_HOP = ["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"];
/** Never sent upstream as the agent wrote them: Host is rebuilt from the target, Expect is answered here. */
const NOT_SENT_UP = [...HOP_BY_HOP, "host", "expect"];

/** Whether `name` (any case) is one of `lowerNames`, or one the Connection header listed. */
function isDropped(name: string, lowerNames: readonly string[], listed: ReadonlySet<string>): boolean {
  return isOneOf(name, lowerNames) || (listed.size > 0 && listed.has(name.toLowerCase()));
}

/**
 * The agent's headers as they may go upstream (before injection), from the head's lines as parsed (names as
 * sent) or a Headers object: one pass for the Connection tokens, one for the rest.
 */
export function requestHeadersForUpstream(src: Iterable<[string, string]>): HeaderList {
  const entries: HeaderLines = Array.isArray(src) ? src : [...src];
  const listed = connectionTokens(entries);
  const kept: [string, string][] = [];
  for (const entry of entries) if (!isDropped(entry[0], NOT_SENT_UP, listed) && !hasNamePrefix(entry[0], "x-credgate-")) kept.push(entry);
  return new HeaderList(kept);
}

/** Control bytes a response field value may not hold (RFC 9110 §5.5: HTAB is the only one allowed). */
const CONTROL_IN_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;

/**
 * An upstream's header lines as they may go back to the agent (`listed`: its Connection tokens): hop-by-hop and
 * Connection-named ones dropped, the rest as sent. Null when a value holds a control byte other than HTAB (the
 * head parser has refused NUL, CR and LF already): relayed, it could split or corrupt the agent's response.
 * `lines` itself when nothing is dropped (the parsed head is not used after this).
 */
export function responseLinesForAgent(lines: HeaderLines, listed: ReadonlySet<string>): HeaderLines | null {
  let kept: HeaderLines | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (CONTROL_IN_VALUE.test(line[1])) return null;
    if (isDropped(line[0], HOP_BY_HOP, listed)) kept ??= lines.slice(0, i);
    else kept?.push(line);
  }
  return kept ?? lines;
}

export function isWebSocketUpgrade(lines: HeaderLines): boolean {
  return headerValue(lines, "upgrade")?.toLowerCase() === "websocket" && connectionTokens(lines).has("upgrade");
}
