// `claim_required` (docs/guards.md#claim-required): an unclaimed partner organization's agents get their LLM
// requests through and nothing else — not a passthrough tunnel to another host (refused before it opens), not
// a request inside an intercepted one; the answer carries the current claim link.
import { claimRequiredBody, isLlmRequest } from "../claim.ts";
import { gatewayJson } from "../errors.ts";
import { answer, PASS, type Stage } from "../stage.ts";

export function claimStage(): Stage {
  return {
    name: "claim",
    reads: ["agent", "passthrough"],
    provides: [],
    connect(tunnel) {
      // An intercepted tunnel's requests are checked one by one (below); a raw tunnel carries anything.
      if (!tunnel.passthrough) return PASS;
      const { claim, injectable } = tunnel.credentials;
      if (claim === null || isLlmRequest(tunnel.host, null, injectable)) return PASS;
      return answer("claim_required", { status: 403, body: claimRequiredBody(claim) });
    },
    request(rq) {
      const claim = rq.credentials.claim;
      if (claim === null || isLlmRequest(rq.host, rq.pathReadings, rq.credentials.injectable)) return PASS;
      return answer("claim_required", gatewayJson(403, claimRequiredBody(claim)));
    },
  };
}
