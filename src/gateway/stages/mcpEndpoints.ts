// The gateway's mark on an HTTP+SSE message endpoint (docs/gateway.md#mcp-servers). An MCP server of the older
// transport names, in its stream's `endpoint` event, the URL its client POSTs messages to — usually outside the
// server's registered URL (`/messages?sessionId=…`). The gateway relays that event with a parameter of its own
// appended, an HMAC of the agent, the server and the endpoint's path and query under a key every gateway process
// of every instance derives from the master key. A POST carrying a valid mark is that server's — it gets the
// server's token — whichever process or instance serves it, with nothing remembered; the mark is taken off before
// the request goes upstream. A POST without a valid mark never gets a token (an agent cannot send it to a path the
// server did not name), and is judged all the same (mcpTools.ts).
import { createHmac, timingSafeEqual } from "node:crypto";

/** The query parameter the gateway appends to a named endpoint. */
export const ENDPOINT_MARK = "credgate_mcp";
const MARK_LENGTH = 43;

function markOf(key: Buffer, agentId: string, serverId: string, pathAndQuery: string): string {
  return createHmac("sha256", key).update(`${agentId}\n${serverId}\n${pathAndQuery}`).digest("base64url");
}

/** The endpoint event's data with the mark appended to its query (before any fragment). */
export function markedEndpoint(key: Buffer, agentId: string, serverId: string, data: string, url: URL): string {
  const text = data.trim();
  const hash = text.indexOf("#");
  const head = hash < 0 ? text : text.slice(0, hash);
  const tail = hash < 0 ? "" : text.slice(hash);
  const sep = head.includes("?") ? "&" : "?";
  return `${head}${sep}${ENDPOINT_MARK}=${markOf(key, agentId, serverId, url.pathname + url.search)}${tail}`;
}

/** `target` without a mark at the end of its query, and the mark; null when it carries none. */
export function splitMark(target: string): { target: string; mark: string } | null {
  const at = target.lastIndexOf(`${ENDPOINT_MARK}=`);
  if (at < 1) return null;
  const before = target.charCodeAt(at - 1);
  if (before !== 0x3f && before !== 0x26) return null;
  const mark = target.slice(at + ENDPOINT_MARK.length + 1);
  if (mark.length !== MARK_LENGTH || !/^[A-Za-z0-9_-]+$/.test(mark)) return null;
  // `?credgate_mcp=…` drops the `?` too; `&credgate_mcp=…` its `&`.
  return { target: target.slice(0, at - 1), mark };
}

/** Whether `mark` is the one the gateway gave `serverId`'s endpoint `pathAndQuery` for `agentId`. */
export function markValid(key: Buffer, agentId: string, serverId: string, pathAndQuery: string, mark: string): boolean {
  const want = Buffer.from(markOf(key, agentId, serverId, pathAndQuery));
  const got = Buffer.from(mark);
  return got.length === want.length && timingSafeEqual(got, want);
}
