// The `claim` stage — `claim_required` (docs/guards.md#claim-required): an unclaimed partner organization's agents get
// their LLM requests through and nothing else; the answer carries the current claim link.
import { claimRequiredBody, isLlmRequest } from "../claim.ts";
import { gatewayJson } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";

export function requireClaim(rq: ProxyRequest): Response | undefined {
  const claim = rq.credentials.claim;
  if (claim === null || isLlmRequest(rq.host, rq.path, rq.credentials.injectable)) return undefined;
  rq.decision = "claim_required";
  return gatewayJson(403, claimRequiredBody(claim));
}
