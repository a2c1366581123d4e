// MCP servers at the gateway, first half (docs/gateway.md#mcp-servers): a request whose URL is one of the agent's
// MCP servers' (same origin, path equal or below), or a message endpoint a server's HTTP+SSE stream named (it
// carries the gateway's mark: mcpEndpoints.ts), gets the server's token in place of whatever the agent sent; any
// other request with a body to a server's host is the server's too, to be judged, but gets no token. The
// server's answers are read on the way back: tools/list results filtered to the agent's grant (a JSON body whole,
// an SSE stream event by event) and the `endpoint` event of an HTTP+SSE stream marked. What the body asks is judged
// by mcp-tools (mcpTools.ts). An agent without MCP servers costs one length check; another agent's request to
// another host, a comparison per server.
import { isJsonObject, jsonRpcError, TOOL_REFUSED, type JsonValue } from "../../core/jsonRpc.ts";
import type { McpAuthService } from "../../services/mcpAuth.ts";
import { authHeaderOf } from "../../services/mcp/credential.ts";
import { REFRESH_AHEAD_MS } from "../../services/oauth.ts";
import { decodedBody, isDecodable } from "../encodedBody.ts";
import { credentialUnavailableFor, gatewayJson } from "../errors.ts";
import type { McpExchange, ProxyRequest } from "../request.ts";
import { Reply } from "../reply.ts";
import type { CompiledMcpServer } from "../snapshot.ts";
import { PASS, type RequestVerdict, type Stage } from "../stage.ts";
import { jsonBodyRewrite, parseSseEvent, SseEventSource, sseEventWith, type SseEvent } from "./mcpEvents.ts";
import { splitMark } from "./mcpEndpoints.ts";
import type { McpSessions } from "./mcpSessions.ts";

export interface McpDeps {
  sessions: McpSessions;
  /** Refreshes an OAuth token inside its refresh window, once for every process (docs/mcp.md#the-login). */
  auth: Pick<McpAuthService, "fresh">;
}

const NO_TOOLS: readonly string[] = [];

/** `scheme://host[:port]` as CompiledMcpServer.origin spells it: lowercase host, default port left out. */
export function originOf(rq: ProxyRequest): string {
  const host = rq.host.includes(":") ? `[${rq.host}]` : rq.host;
  const defaultPort = rq.scheme === "https" ? 443 : 80;
  return rq.port === defaultPort ? `${rq.scheme}://${host}` : `${rq.scheme}://${host}:${rq.port}`;
}

function under(prefix: string, path: string): boolean {
  return prefix === "" || path === prefix || (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 0x2f);
}

/**
 * The server whose URL a request of `origin` is under, and whether every reading of its path is
 * (docs/injection.md#every-reading-of-a-path; case is ignored). Any reading under the URL makes the request the
 * server's to judge: a server that reads `/MCP/../mcp` or `/Mcp` as its URL must not receive a call nobody judged.
 * Only a path every reading puts under the URL gets the server's token: `/mcp/..%2F..%2Fother` may be another
 * server's path on a shared host to a server that decodes `%2F`.
 */
export function mcpServerFor(servers: readonly CompiledMcpServer[], rq: ProxyRequest, origin = originOf(rq)): { server: CompiledMcpServer; everyReading: boolean } | null {
  for (const server of servers) {
    if (server.origin !== origin) continue;
    const prefix = server.pathPrefix.toLowerCase();
    let some = false;
    let every = true;
    for (const reading of rq.pathReadings) {
      if (under(prefix, reading.toLowerCase())) some = true;
      else every = false;
    }
    if (some) return { server, everyReading: every };
  }
  return null;
}

/** `target` with the mark's `suffix` (`?credgate_mcp=…` or `&credgate_mcp=…`) taken out, the query kept whole. */
function withoutMark(target: string, suffix: string): string {
  const at = target.indexOf(suffix);
  if (at < 0) return target;
  const rest = target.slice(at + suffix.length);
  return target.slice(0, at) + (suffix.startsWith("?") && rest.startsWith("&") ? `?${rest.slice(1)}` : rest);
}

function pathAndQueryOf(target: string, origin: string): string | null {
  try {
    const u = new URL(target, origin);
    return u.pathname + u.search;
  } catch {
    return null;
  }
}

/** Whether the agent may see tool `name` of a server under `grant`. */
export function toolVisible(grant: CompiledMcpServer["grant"], name: string): boolean {
  if (grant === null) return false;
  if (grant.access === "full") return true;
  return grant.allow.has(name) || grant.ask.has(name);
}

/**
 * The JSON-RPC text with every tools/list result (a response whose `result.tools` is an array, answering one of
 * `ids`, or any when `ids` is null) cut to the tools the grant shows; null when nothing changed or it is not JSON.
 */
export function filterToolLists(text: string, ids: ReadonlySet<string | number> | null, grant: CompiledMcpServer["grant"]): string | null {
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch {
    return null;
  }
  let changed = false;
  for (const msg of Array.isArray(value) ? value : [value]) {
    if (!isJsonObject(msg)) continue;
    const result = msg["result"];
    if (!isJsonObject(result) || !Array.isArray(result["tools"])) continue;
    const id = msg["id"];
    if (ids !== null && !(typeof id === "string" || typeof id === "number" ? ids.has(id) : false)) continue;
    const tools = result["tools"];
    const shown = tools.filter((t) => isJsonObject(t) && typeof t["name"] === "string" && toolVisible(grant, t["name"]));
    if (shown.length !== tools.length) {
      result["tools"] = shown;
      changed = true;
    }
  }
  return changed ? JSON.stringify(value) : null;
}

function filtersTools(server: CompiledMcpServer): boolean {
  return server.grant === null || server.grant.access !== "full";
}

/** Puts the server's credential on the request in place of the agent's Authorization. */
function injectAuth(rq: ProxyRequest, auth: { header: string; value: string }): RequestVerdict {
  // The agent's own Authorization never reaches the server: the server's token takes its place.
  rq.headers.delete("authorization");
  rq.headers.set(auth.header, auth.value);
  const bearer = /^bearer\s+/i.exec(auth.value);
  rq.recordInjection(bearer ? auth.value.slice(bearer[0].length) : auth.value);
  return PASS;
}

export function mcpStage({ sessions, auth: mcpAuth }: McpDeps): Stage {
  function readStream(rq: ProxyRequest, mcp: McpExchange, reply: Reply, body: NonNullable<Reply["body"]>): void {
    const server = mcp.server;
    // Only a stream of the server's registered URL names its endpoint: a GET elsewhere on its host (with a body,
    // so judged) may reach another server there, whose endpoint must not get this server's token.
    const isGet = rq.method === "GET" && mcp.via === "url";
    // Every tools/list result on any stream is cut, whatever its id: a server may answer with an id other than the
    // one asked (`1e400` comes back `null` from a JavaScript server), a GET stream may replay a POST's answers
    // (a resumed session) or carry every answer (HTTP+SSE).
    const ids = null;
    const filter = filtersTools(server);
    if (!filter && !isGet) return;
    let forget: (() => void) | null = null;
    const source: SseEventSource = new SseEventSource(
      body,
      (event) => {
        // Bytes are searched before anything is decoded: most events are neither an endpoint nor a tool list.
        if (isGet && forget === null && event.includes("endpoint")) {
          const ev = parseSseEvent(event.toString("utf8"));
          const marked = ev.event === "endpoint" && ev.data !== null ? markEndpoint(rq, server, ev, source) : null;
          if (marked !== null) {
            forget = marked.forget;
            return marked.event;
          }
        }
        // A stream that is not an HTTP+SSE session (its first event names no endpoint) of an agent whose tool
        // lists are not cut: nothing more to read, and no event is held from now on.
        if (!filter && forget === null) source.stopReading();
        // Any event that may name `tools`, spelled out or through a JSON escape, is read.
        if (filter && (event.includes("tools") || event.includes("\\u"))) {
          const ev = parseSseEvent(event.toString("utf8"));
          const filtered = ev.data === null ? null : filterToolLists(ev.data, ids, server.grant);
          if (filtered !== null) return sseEventWith(ev, filtered);
        }
        return null;
      },
      () => forget?.(),
    );
    reply.body = source;
    if (reply.header("content-length") !== null) reply.headers.delete("content-length");
  }

  /** The `endpoint` event's data, marked for this agent, when it names a path of the server's origin. */
  function markEndpoint(rq: ProxyRequest, server: CompiledMcpServer, ev: SseEvent, source: SseEventSource): { forget: () => void; event: string } | null {
    let url: URL;
    try {
      url = new URL(ev.data!.trim(), `${originOf(rq)}${rq.path}`);
    } catch {
      return null;
    }
    // Only a path of the server's own origin becomes the server's: the token never goes elsewhere.
    if (url.origin !== server.origin) return null;
    const forget = sessions.learn(server.id, url.pathname + url.search, source, rq.agent.id);
    return { forget, event: sseEventWith(ev, sessions.mark(rq.agent.id, server.id, ev.data!, url)) };
  }

  /**
   * The server a request carrying the gateway's mark was named by, and the endpoint's path and query; null when it
   * carries none or one not given to this agent for a server of `origin`. A mark never goes upstream, valid or not.
   */
  function markedEndpoint(rq: ProxyRequest, servers: readonly CompiledMcpServer[], origin: string): { server: CompiledMcpServer; endpoint: string } | null {
    const split = splitMark(rq.target);
    if (split === null) return null;
    rq.upstreamTarget = withoutMark(rq.upstreamTarget, rq.target.slice(split.target.length));
    const endpoint = pathAndQueryOf(split.target, origin);
    if (endpoint === null) return null;
    // The mark names one path. A spelling only some readings make that path (`/x/../messages`, `/x/..%2Fmessages`)
    // is another path to an origin that reads it literally or decodes `%2F` (docs/injection.md#every-reading-of-a-path).
    const query = endpoint.indexOf("?");
    const path = query < 0 ? endpoint : endpoint.slice(0, query);
    if (!rq.pathReadings.every((reading) => reading === path)) return null;
    for (const server of servers) {
      if (server.origin === origin && sessions.marked(rq.agent.id, server.id, endpoint, split.mark)) return { server, endpoint };
    }
    return null;
  }

  function serve(rq: ProxyRequest, exchange: McpExchange): RequestVerdict | Promise<RequestVerdict> {
    rq.mcp = exchange;
    // A body elsewhere on the origin may be no MCP message at all: the request goes as the agent wrote it.
    if (exchange.via === "host") return PASS;
    // Answers are read to filter tool lists: asked for unencoded, whether or not a token goes on.
    rq.headers.set("accept-encoding", "identity");
    const server = exchange.server;
    const auth = server.auth;
    if (auth === null) return PASS;
    // An OAuth token inside its refresh window is refreshed first, as connections' are (docs/mcp.md#the-login).
    if (server.expiresAt === null || Date.now() < server.expiresAt - REFRESH_AHEAD_MS) return injectAuth(rq, auth);
    return mcpAuth.fresh(server.id).then((fresh) => {
      const header = authHeaderOf(fresh);
      return header === null ? credentialUnavailableFor(rq) : injectAuth(rq, header);
    });
  }

  return {
    name: "mcp",
    reads: ["agent"],
    provides: ["mcp"],
    request(rq) {
      const servers = rq.credentials.mcpServers;
      if (servers.length === 0) return PASS;
      // A comparison per server for a request to another host; the origin string only on a server's host.
      if (!servers.some((s) => s.host === rq.host)) return PASS;
      const origin = originOf(rq);
      const named = markedEndpoint(rq, servers, origin);
      if (named !== null) return serve(rq, { server: named.server, via: "endpoint", judges: [named.server], endpoint: named.endpoint, tools: NO_TOOLS, listIds: null });
      const found = mcpServerFor(servers, rq, origin);
      if (found?.everyReading) return serve(rq, { server: found.server, via: "url", judges: [found.server], endpoint: null, tools: NO_TOOLS, listIds: null });
      // A body sent elsewhere on a server's host — another path, scheme or port, or a path only some readings put
      // under a server's URL — may be a message to an endpoint this request does not show was named (no mark:
      // another client, a guessed path, plain http): judged under every such server's grant, no token.
      if (rq.body === null) return PASS;
      const judges = servers.filter((s) => s.host === rq.host);
      return serve(rq, { server: judges[0]!, via: "host", judges, endpoint: null, tools: NO_TOOLS, listIds: null });
    },
    response(rq, reply) {
      const mcp = rq.mcp;
      if (mcp === null || !reply.fromUpstream || reply.body === null) return reply;
      const type = (reply.header("content-type") ?? "").toLowerCase();
      const sse = type.startsWith("text/event-stream");
      const reads = sse ? rq.method === "GET" || filtersTools(mcp.server) : type.includes("json") && mcp.listIds !== null && filtersTools(mcp.server);
      if (!reads) return reply;
      // Encoded although identity was asked for (the echo guard decodes only credentialed answers): decoded
      // here, or, in an encoding credgate cannot read, not passed on: an unread tool list must not leak.
      const coding = reply.header("content-encoding");
      if (coding !== null && coding.trim().toLowerCase() !== "identity") {
        if (!isDecodable(coding)) {
          reply.body.cancel();
          return Reply.of(gatewayJson(502, jsonRpcError(null, TOOL_REFUSED, `credgate: the MCP server answered in an encoding credgate cannot read (${coding.slice(0, 40)}); the answer was not passed on`)));
        }
        decodedBody(reply);
      }
      if (sse) readStream(rq, mcp, reply, reply.body!);
      else {
        const ids = [...mcp.listIds!];
        reply.transforms.push(
          jsonBodyRewrite(
            (text) => filterToolLists(text, null, mcp.server.grant),
            () => {
              const errors = (ids.length === 0 ? [null] : ids).map((id) => jsonRpcError(id, TOOL_REFUSED, "credgate: the tools/list result is over 16 MiB and was not passed on"));
              return JSON.stringify(errors.length === 1 ? errors[0] : errors);
            },
          ),
        );
      }
      return reply;
    },
  };
}
