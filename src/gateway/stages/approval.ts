// The `approval` stage — approval hold (docs/policy.md#approvals): the request waits, sending the agent no bytes, until a human
// decides, the approval times out, the agent goes away or the gateway shuts down. Waiting is a promise,
// not a thread: held requests cost memory only.
import { approvalSummary, renderBody, summaryPreview } from "../../core/redact.ts";
import { BODY_PEEK_BYTES } from "../../core/policy.ts";
import { log } from "../../observability/log.ts";
import type { GatewayContext } from "../context.ts";
import { gatewayJson } from "../errors.ts";
import { requestHeadersForUpstream } from "../headers.ts";
import { logFieldsOf, writeLog } from "../requestLog.ts";
import { peekStream } from "../peek.ts";
import type { ProxyRequest } from "../request.ts";

const REVIEWER_HIDDEN = ["authorization", "x-api-key", "cookie"];

function reviewerHeaders(agentHeaders: Headers): Record<string, string> {
  // A Headers object for the reviewer: names lowercased, repeated fields joined.
  const h = new Headers([...requestHeadersForUpstream(agentHeaders)]);
  for (const name of REVIEWER_HIDDEN) h.delete(name);
  return Object.fromEntries(h);
}

export function holdForApproval(rq: ProxyRequest, g: GatewayContext): Promise<Response | undefined> | undefined {
  // Synchronous when nothing is held: no promise on every request's path.
  if (!rq.needsApproval) return undefined;
  // A person approved this agent under this rule for a while (docs/policy.md#remembered-approvals).
  if (rq.matchedRule && g.snapshot.remembered.allows(rq.agent.id, rq.matchedRule.logicalId)) {
    rq.decision = "approved_by_memory";
    return undefined;
  }
  return hold(rq, g);
}

async function hold(rq: ProxyRequest, g: GatewayContext): Promise<Response | undefined> {
  let bodyText: string | null = null;
  if (rq.body) {
    const { head, stream } = await peekStream(rq.body, BODY_PEEK_BYTES + 1);
    rq.body = stream;
    const truncated = head.byteLength > BODY_PEEK_BYTES;
    bodyText = renderBody(head.subarray(0, BODY_PEEK_BYTES), rq.agentHeaders.get("content-type"), truncated);
  }
  const summary = approvalSummary(rq.method, rq.path, bodyText);
  let held;
  try {
    held = await g.services.approvals.hold({
      organizationId: rq.agent.organizationId,
      projectId: rq.agent.projectId,
      agent: { id: rq.agent.id, name: rq.agent.name, identifier: rq.agent.identifier },
      method: rq.method,
      url: `${rq.scheme}://${rq.logHost}${rq.target}`,
      host: rq.host,
      path: rq.target,
      headers: reviewerHeaders(rq.agentHeaders),
      bodyPreview: bodyText === null ? null : summaryPreview(summary, bodyText),
      summary,
      rule: rq.matchedRule,
    });
  } catch (err) {
    log.error("approval store failed", { error: (err as Error).message });
    rq.decision = "error";
    return gatewayJson(502, { error: "approval_store_unavailable", message: "credgate manual approval service is temporarily unavailable." });
  }
  const id = held.row.id;
  rq.approvalId = id;
  rq.logId = writeLog(g.services, { ...logFieldsOf(rq, 202), decision: "approval_pending", approvalId: id });
  const cancel = () => void g.services.approvals.settle(id, "cancelled").catch((err: Error) => log.warn("approval not cancelled", { error: err.message }));
  rq.signal.addEventListener("abort", cancel);
  const outcome = await held.outcome;
  rq.signal.removeEventListener("abort", cancel);
  switch (outcome) {
    case "approved":
      rq.decision = "approval_approved";
      return undefined;
    case "denied":
    case "expired":
      rq.decision = outcome === "denied" ? "approval_denied" : "approval_expired";
      return gatewayJson(403, {
        error: "manual_approval_denied",
        message: `This request was ${outcome === "denied" ? "denied" : "timed out"} by a credgate manual approval policy.`,
        approval_id: id,
      });
    case "cancelled":
      rq.decision = "approval_cancelled";
      return gatewayJson(
        503,
        { error: "gateway_restarting", message: "credgate gateway is restarting and released this request before it was reviewed. Retry it.", approval_id: id },
        { "retry-after": "1" },
      );
  }
}
