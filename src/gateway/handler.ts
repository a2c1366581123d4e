// What answers each request the agent's connection carries: inside a tunnel, the pipeline for the CONNECT
// authority; on a plain connection, the pipeline for an absolute-form target, or the gateway's control routes
// for an origin-form one (docs/gateway.md#listener).
import type { ApiApp } from "../api/app.ts";
import { API_PREFIXES } from "../api/app.ts";
import { unknownRoute } from "../api/errors.ts";
import { normalizeHost } from "../core/patterns.ts";
import { VERSION } from "../runtime/version.ts";
import type { ClientConnection, IncomingRequest, RequestHandler } from "./client/agentConnection.ts";
import type { GatewayContext } from "./context.ts";
import { gatewayJson } from "./errors.ts";
import { isWebSocketUpgrade, requestHeadersForUpstream } from "./headers.ts";
import { runStages } from "./pipeline.ts";
import { Reply } from "./reply.ts";
import { logHostOf, ProxyRequest, type Destination, type Via } from "./request.ts";

/** What the front learnt from a CONNECT. */
export interface Tunnel {
  scheme: "https" | "http";
  host: string;
  port: number;
  authority: string;
  token: string;
}

/** Origin-form paths the gateway port serves (docs/gateway.md#listener), below each API prefix. */
const CONTROL_PATHS = [/^\/approvals(\/|$)/, /^\/org\/approvals\/pending$/, /^\/health$/, /^\/gateway\/ca$/, /^\/gateway-url$/];

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

function absoluteDestination(target: string): Destination | null {
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
  return { scheme, host, port, authority: url.host, target: originPart(m[3]!), logHost: logHostOf(scheme, host, port) };
}

export function requestHandler(g: GatewayContext, api: ApiApp, tunnel: Tunnel | null): RequestHandler {
  if (tunnel) {
    const via: Via = { kind: "tunnel", token: tunnel.token };
    const logHost = logHostOf(tunnel.scheme, tunnel.host, tunnel.port);
    return (incoming, client) => {
      const m = ABSOLUTE.exec(incoming.target);
      const target = m ? originPart(m[3]!) : incoming.target;
      return proxied(incoming, client, via, { scheme: tunnel.scheme, host: tunnel.host, port: tunnel.port, authority: tunnel.authority, target, logHost }, g);
    };
  }
  const via: Via = { kind: "forward" };
  return async (incoming, client) => {
    if (incoming.target.startsWith("/")) return Reply.of(await control(incoming, api));
    const to = absoluteDestination(incoming.target);
    if (!to) return Reply.of(gatewayJson(400, { error: "bad_request", message: "Only http and https URLs can be proxied." }));
    return proxied(incoming, client, via, to, g);
  };
}

function proxied(incoming: IncomingRequest, client: ClientConnection, via: Via, to: Destination, g: GatewayContext): Promise<Reply | null> {
  // Absolute-form requests never upgrade: Upgrade/Connection are stripped and it goes as plain HTTP.
  const websocket = via.kind === "tunnel" && isWebSocketUpgrade(incoming.headerLines);
  const rq = new ProxyRequest(incoming, via, client, to, requestHeadersForUpstream(incoming.headerLines), websocket);
  const reply = runStages(rq, g);
  return reply instanceof Promise ? reply.then(takenOverOrReply) : Promise.resolve(takenOverOrReply(reply));
}

/** Null when a WebSocket took the connection over (nothing is left to write), else the reply. */
function takenOverOrReply(reply: Reply): Reply | null {
  if (!reply.takenOver) return reply;
  reply.finish(true);
  return null;
}

function control(incoming: IncomingRequest, api: ApiApp): Response | Promise<Response> {
  let request: Request;
  try {
    const hasBody = incoming.body !== null && incoming.method !== "GET" && incoming.method !== "HEAD";
    request = new Request(`http://${incoming.headers.get("host") || "localhost"}${incoming.target}`, {
      method: incoming.method,
      headers: incoming.headers,
      body: hasBody ? incoming.body : null,
      signal: incoming.signal,
    });
  } catch {
    return gatewayJson(400, { error: "bad_request", message: "Malformed HTTP request." });
  }
  // The path as the API will route it (dot segments resolved), so no route outside the list is reachable.
  const path = new URL(request.url).pathname;
  if (path === "/healthz" && incoming.method === "GET") return Response.json({ status: "ok", version: VERSION });
  if (isControlPath(path)) return api.handle(request);
  return unknownRoute(request.method, request.url);
}
