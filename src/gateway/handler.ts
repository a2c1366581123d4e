// What answers each request a client connection carries (docs/gateway.md#listener): inside a tunnel, the
// pipeline for the tunnel's host; on a plain connection, the pipeline for an absolute-form target, or the
// gateway's control routes for an origin-form one.
import type { ApiApp } from "../api/app.ts";
import { API_PREFIXES } from "../api/app.ts";
import { unknownRoute } from "../api/errors.ts";
import { normalizeHost } from "../core/patterns.ts";
import { VERSION } from "../runtime/version.ts";
import type { AgentSide } from "./agentSide.ts";
import type { RequestHandler } from "./client/http1AgentConnection.ts";
import { gatewayJson } from "./errors.ts";
import { isWebSocketUpgrade } from "./headers.ts";
import type { Pipeline } from "./pipeline.ts";
import { Reply } from "./reply.ts";
import { displayHostOf, ProxyRequest, type Destination } from "./request.ts";
import type { Tunnel } from "./tunnel.ts";

/** Origin-form paths the gateway port serves, below each API prefix. */
const CONTROL_PATHS = [/^\/approvals(\/|$)/, /^\/org\/approvals\/pending$/, /^\/health$/, /^\/gateway\/ca$/, /^\/gateway\/ssh-ca$/, /^\/gateway-url$/];

export function isControlPath(path: string): boolean {
  const prefix = API_PREFIXES.find((p) => path.startsWith(`${p}/`));
  return prefix !== undefined && CONTROL_PATHS.some((re) => re.test(path.slice(prefix.length)));
}

const ABSOLUTE = /^(https?):\/\/([^/?#]*)(.*)$/i;

/** The path and query of a request-target, whatever its form. */
function originPart(rest: string): string {
  if (rest.startsWith("/")) return rest;
  return rest.startsWith("?") || rest === "" ? `/${rest}` : rest;
}

/** Where an absolute-form request on a plain proxy connection goes; null for anything but an http(s) URL. */
export function absoluteDestination(target: string): Destination | null {
  const m = ABSOLUTE.exec(target);
  if (!m) return null;
  const scheme = m[1]!.toLowerCase() as "https" | "http";
  let url: URL;
  try {
    url = new URL(`${scheme}://${m[2]}/`);
  } catch {
    return null;
  }
  const port = Number(url.port) || (scheme === "https" ? 443 : 80);
  const host = normalizeHost(url.hostname);
  return { scheme, host, port, authority: url.host, target: originPart(m[3]!), displayHost: displayHostOf(scheme, host, port) };
}

/**
 * Where each request inside `tunnel` goes, by its target as the agent sent it (`scheme`: what the agent speaks
 * inside the tunnel): always the tunnel's host; an absolute-form target gives its path and query.
 */
export function destinationsIn(tunnel: Tunnel, scheme: "https" | "http"): (target: string) => Destination {
  const { host, port } = tunnel;
  const authority = tunnel.authorityFor(scheme);
  const displayHost = displayHostOf(scheme, host, port);
  return (raw) => {
    const m = raw.charCodeAt(0) === 0x2f ? null : ABSOLUTE.exec(raw);
    return { scheme, host, port, authority, target: m ? originPart(m[3]!) : raw, displayHost };
  };
}

/**
 * The handler of one client connection. `tunnel`: the tunnel it carries, with `scheme` what the agent speaks
 * inside it; every request goes to the tunnel's host (the target stage refuses one that names another).
 */
export function requestHandler(pipeline: Pipeline, api: ApiApp, tunnel: { tunnel: Tunnel; scheme: "https" | "http" } | null): RequestHandler {
  if (tunnel) {
    const destination = destinationsIn(tunnel.tunnel, tunnel.scheme);
    return (side) => proxied(pipeline, side, tunnel.tunnel, destination(side.target));
  }
  return async (side) => {
    if (side.target.startsWith("/")) return Reply.of(await control(side, api));
    const to = absoluteDestination(side.target);
    if (!to) return Reply.of(gatewayJson(400, { error: "bad_request", message: "Only http and https URLs can be proxied." }));
    return proxied(pipeline, side, null, to);
  };
}

function proxied(pipeline: Pipeline, side: AgentSide, tunnel: Tunnel | null, to: Destination): Promise<Reply | null> {
  // Absolute-form requests never upgrade: Upgrade/Connection are stripped and it goes as plain HTTP.
  const websocket = tunnel !== null && isWebSocketUpgrade(side.headerLines);
  const reply = pipeline.request(new ProxyRequest(side, tunnel, to, websocket));
  return reply instanceof Promise ? reply.then(takenOverOrReply) : Promise.resolve(takenOverOrReply(reply));
}

/** Null when a WebSocket took the connection over (nothing is left to write), else the reply. */
function takenOverOrReply(reply: Reply): Reply | null {
  if (!reply.takenOver) return reply;
  reply.finish(true);
  return null;
}

function control(side: AgentSide, api: ApiApp): Response | Promise<Response> {
  let request: Request;
  try {
    const hasBody = side.body !== null && side.method !== "GET" && side.method !== "HEAD";
    request = new Request(`http://${side.headers.get("host") || "localhost"}${side.target}`, {
      method: side.method,
      headers: side.headers,
      body: hasBody ? side.body : null,
      signal: side.signal,
    });
  } catch {
    return gatewayJson(400, { error: "bad_request", message: "Malformed HTTP request." });
  }
  // The path as the API will route it (dot segments resolved), so no route outside the list is reachable.
  const path = new URL(request.url).pathname;
  if (path === "/healthz" && side.method === "GET") return Response.json({ status: "ok", version: VERSION });
  if (isControlPath(path)) return api.handle(request);
  return unknownRoute(request.method, request.url);
}
