// The `auth` stage — proxy authentication (docs/gateway.md#proxy-authentication): the tunnel's CONNECT token, or the request's own
// Proxy-Authorization on forward connections, checked against the snapshot on every request. Synchronous
// when the snapshot has the agent's view in memory (the common case).
import type { GatewayContext } from "../context.ts";
import { proxyAuthRequired } from "../errors.ts";
import { proxyToken } from "../proxyAuth.ts";
import type { ProxyRequest } from "../request.ts";
import type { AgentEntry } from "../snapshot.ts";

export function authenticate(rq: ProxyRequest, g: GatewayContext): Response | undefined | Promise<Response | undefined> {
  const token = rq.via.kind === "tunnel" ? rq.via.token : proxyToken(rq.agentHeaders.get("proxy-authorization"));
  const agent = token ? g.snapshot.agentForToken(token) : null;
  return agent instanceof Promise ? agent.then((a) => admit(rq, g, a)) : admit(rq, g, agent);
}

function admit(rq: ProxyRequest, g: GatewayContext, agent: AgentEntry | null): Response | undefined | Promise<undefined> {
  // A regenerated token inside an open tunnel: answer 407 and close the tunnel.
  if (!agent) return proxyAuthRequired(rq.via.kind === "tunnel");
  rq.agent = agent;
  const credentials = g.snapshot.credentials(agent);
  if (!(credentials instanceof Promise)) {
    rq.credentials = credentials;
    return undefined;
  }
  return credentials.then((c) => {
    rq.credentials = c;
    return undefined;
  });
}
