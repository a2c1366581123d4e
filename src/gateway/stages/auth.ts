// Proxy authentication (docs/gateway.md#proxy-authentication): the CONNECT's token before a tunnel opens, then
// on every request again — the tunnel's token inside a tunnel, the request's own Proxy-Authorization on a
// proxy connection — against the snapshot, so a regenerated token stops working at once. Synchronous when the
// snapshot has the agent's view in memory (the common case).
import { PROXY_AUTH_REQUIRED, proxyAuthRequired } from "../errors.ts";
import type { Flow } from "../flow.ts";
import { proxyToken } from "../proxyAuth.ts";
import type { ProxyRequest } from "../request.ts";
import type { AgentEntry, GatewaySnapshot } from "../snapshot.ts";
import { answer, PASS, type ConnectVerdict, type RequestVerdict, type Stage, type Verdict } from "../stage.ts";

export interface AuthDeps {
  snapshot: Pick<GatewaySnapshot, "agentForToken" | "credentials">;
}

const CONNECT_REFUSED: ConnectVerdict = answer("blocked", PROXY_AUTH_REQUIRED);

/** 407; inside a tunnel (its token regenerated since the CONNECT) the tunnel closes too. */
function refused(rq: ProxyRequest): RequestVerdict {
  return answer("blocked", proxyAuthRequired(rq.tunnel !== null));
}

export function authStage({ snapshot }: AuthDeps): Stage {
  /** The agent and its resolved view go on the flow; PASS once both are there. */
  function admit(flow: Flow, agent: AgentEntry): Verdict<never> | Promise<Verdict<never>> {
    flow.agent = agent;
    const credentials = snapshot.credentials(agent);
    if (!(credentials instanceof Promise)) {
      flow.credentials = credentials;
      return PASS;
    }
    return credentials.then((c) => {
      flow.credentials = c;
      return PASS;
    });
  }

  return {
    name: "auth",
    reads: [],
    provides: ["agent"],
    connect(tunnel) {
      const agent = tunnel.token ? snapshot.agentForToken(tunnel.token) : null;
      if (!(agent instanceof Promise)) return agent ? admit(tunnel, agent) : CONNECT_REFUSED;
      return agent.then(
        (a) => (a ? admit(tunnel, a) : CONNECT_REFUSED),
        () => CONNECT_REFUSED,
      );
    },
    request(rq) {
      const token = rq.tunnel ? rq.tunnel.token : proxyToken(rq.agentHeaders.get("proxy-authorization"));
      const agent = token ? snapshot.agentForToken(token) : null;
      if (!(agent instanceof Promise)) return agent ? admit(rq, agent) : refused(rq);
      return agent.then((a) => (a ? admit(rq, a) : refused(rq)));
    },
  };
}
