// The egress guard (docs/guards.md#egress-guard): the destination is resolved once and the address that will be
// dialled is judged before any connection — for a CONNECT before the tunnel opens (a passthrough tunnel then
// dials exactly that address), and again for every request (whatever tunnel or URL it came by).
import type { EgressGuard, EgressVerdict } from "../egressGuard.ts";
import { egressDenied, egressDeniedAnswer, upstreamUnreachable } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { answer, PASS, type ConnectVerdict, type RequestVerdict, type Stage } from "../stage.ts";
import type { Tunnel } from "../tunnel.ts";

export interface EgressDeps {
  egress: Pick<EgressGuard, "check">;
}

function settleRequest(rq: ProxyRequest, verdict: EgressVerdict): RequestVerdict {
  switch (verdict.kind) {
    case "dial":
      rq.dial = verdict.target;
      return PASS;
    case "denied":
      return answer("blocked", egressDenied(rq.host, verdict.address));
    case "unresolved":
      return answer("error", upstreamUnreachable(rq.host, rq.port, verdict.reason));
  }
}

/** Only a refused address answers a CONNECT: a name that does not resolve fails the tunnel's requests (or dial). */
function settleConnect(tunnel: Tunnel, verdict: EgressVerdict): ConnectVerdict {
  tunnel.egress = verdict;
  return verdict.kind === "denied" ? answer("blocked", egressDeniedAnswer(tunnel.host, verdict.address)) : PASS;
}

export function egressStage({ egress }: EgressDeps): Stage {
  return {
    name: "egress",
    reads: [],
    provides: ["dial"],
    connect(tunnel) {
      // Answered by the gateway itself, never dialled (docs/cloud-identities.md#placeholders); its requests are
      // judged one by one, and one the gateway does not answer comes back here.
      if (tunnel.local) return PASS;
      const verdict = egress.check(tunnel.host, tunnel.port);
      return verdict instanceof Promise ? verdict.then((v) => settleConnect(tunnel, v)) : settleConnect(tunnel, verdict);
    },
    request(rq) {
      const verdict = egress.check(rq.host, rq.port);
      return verdict instanceof Promise ? verdict.then((v) => settleRequest(rq, v)) : settleRequest(rq, verdict);
    },
  };
}
