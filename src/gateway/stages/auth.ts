// Stage 1 — proxy authentication (CONTRACT §6.2): the tunnel's CONNECT token, or the request's own
// Proxy-Authorization on forward connections, checked against the snapshot on every request.
import type { GatewayContext } from "../context.ts";
import { proxyAuthRequired } from "../errors.ts";
import { proxyToken } from "../proxyAuth.ts";
import type { ProxyRequest } from "../request.ts";

export function authenticate(rq: ProxyRequest, g: GatewayContext): Response | undefined {
  const token = rq.conn.kind === "tunnel" ? rq.conn.token : proxyToken(rq.request.headers.get("proxy-authorization"));
  const agent = token ? g.snapshot.agentForToken(token) : null;
  // A regenerated token inside an open tunnel: answer 407 and close the tunnel.
  if (!agent) return proxyAuthRequired(rq.conn.kind === "tunnel");
  rq.agent = agent;
  rq.credentials = g.snapshot.credentials(agent);
  return undefined;
}
