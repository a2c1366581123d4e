// The approval hold (docs/policy.md#approvals): a request the policy sent for approval waits, sending the agent
// no bytes, until a human decides, the approval times out, the agent goes away or the gateway shuts down.
// Its log row is written now (202, approval_pending) and updated with the outcome by the log stage. Waiting
// is a promise, not a thread: held requests cost memory only.
import { approvalSummary, renderBody, summaryPreview } from "../../core/approvalPreview.ts";
import { BODY_PEEK_BYTES } from "../../core/policy.ts";
import { log } from "../../observability/log.ts";
import type { ApprovalService, Outcome } from "../../services/approvals.ts";
import type { ApprovalSummary } from "../../core/model.ts";
import type { RequestLogService } from "../../services/requestLogs.ts";
import type { RememberedApprovals } from "../rememberedApprovals.ts";
import { gatewayJson } from "../errors.ts";
import { requestHeadersForUpstream } from "../headers.ts";
import { requestLogFieldsOf, writeRequestLog } from "../requestLog.ts";
import type { ProxyRequest } from "../request.ts";
import { answer, PASS, proceedAs, type RequestVerdict, type Stage } from "../stage.ts";

export interface ApprovalDeps {
  approvals: Pick<ApprovalService, "hold" | "awaitOutcome">;
  requestLogs: RequestLogService;
  /** Which agents may pass which rule's hold for now (docs/policy.md#remembered-approvals), kept by the snapshot. */
  remembered: Pick<RememberedApprovals, "allows">;
}

const REVIEWER_HIDDEN = ["authorization", "x-api-key", "cookie"];

function reviewerHeaders(agentHeaders: Headers): Record<string, string> {
  // A Headers object for the reviewer: names lowercased, repeated fields joined.
  const h = new Headers([...requestHeadersForUpstream(agentHeaders)]);
  for (const name of REVIEWER_HIDDEN) h.delete(name);
  return Object.fromEntries(h);
}

const APPROVED = proceedAs("approval_approved");
const REMEMBERED = proceedAs("approved_by_memory");

/** What a hold shows the reviewer, when it is not the request as the agent sent it (an MCP tool call). */
export interface HoldShown {
  method: string;
  path: string;
  summary: ApprovalSummary;
  bodyPreview: string | null;
  rule: { logicalId: string; name: string } | null;
}

export type HoldOutcome = { id: string; outcome: Outcome } | { failed: RequestVerdict };

/**
 * Holds `rq` for a person (docs/policy.md#approvals): the approval is stored, the 202 row written, and the
 * outcome awaited; an agent that goes away cancels it. Shared with the MCP tool hold (mcpTools.ts), which
 * shows the tool and its arguments instead of the request.
 */
export async function holdRequest(deps: Pick<ApprovalDeps, "approvals" | "requestLogs">, rq: ProxyRequest, shown: HoldShown): Promise<HoldOutcome> {
  let held;
  try {
    held = await deps.approvals.hold({
      organizationId: rq.agent.organizationId,
      projectId: rq.agent.projectId,
      agent: { id: rq.agent.id, name: rq.agent.name, identifier: rq.agent.identifier },
      method: shown.method,
      url: `${rq.scheme}://${rq.displayHost}${rq.target}`,
      host: rq.host,
      path: shown.path,
      headers: reviewerHeaders(rq.agentHeaders),
      bodyPreview: shown.bodyPreview,
      summary: shown.summary,
      rule: shown.rule,
    });
  } catch (err) {
    log.error("approval store failed", { error: (err as Error).message });
    return { failed: answer("error", gatewayJson(502, { error: "approval_store_unavailable", message: "credgate manual approval service is temporarily unavailable." })) };
  }
  const id = held.row.id;
  const requestLogId = writeRequestLog(deps.requestLogs, { ...requestLogFieldsOf(rq, 202), decision: "approval_pending", approvalId: id });
  rq.approval = { id, requestLogId };
  const outcome = await deps.approvals.awaitOutcome(id, held.outcome, rq.signal);
  return { id, outcome };
}

export function approvalStage({ approvals, requestLogs, remembered }: ApprovalDeps): Stage {
  async function hold(rq: ProxyRequest): Promise<RequestVerdict> {
    let bodyText: string | null = null;
    if (rq.body) {
      const head = await rq.peekBody(BODY_PEEK_BYTES + 1);
      const truncated = head.byteLength > BODY_PEEK_BYTES;
      bodyText = renderBody(head.subarray(0, BODY_PEEK_BYTES), rq.agentHeaders.get("content-type"), truncated);
    }
    const summary = approvalSummary(rq.method, rq.path, bodyText);
    const held = await holdRequest({ approvals, requestLogs }, rq, {
      method: rq.method,
      path: rq.target,
      summary,
      bodyPreview: bodyText === null ? null : summaryPreview(summary, bodyText),
      rule: rq.matchedRule,
    });
    if ("failed" in held) return held.failed;
    const { id, outcome } = held;
    switch (outcome) {
      case "approved":
        return APPROVED;
      case "denied":
      case "expired":
        return answer(
          outcome === "denied" ? "approval_denied" : "approval_expired",
          gatewayJson(403, {
            error: "manual_approval_denied",
            message: `This request was ${outcome === "denied" ? "denied" : "timed out"} by a credgate manual approval policy.`,
            approval_id: id,
          }),
        );
      case "cancelled":
        return answer(
          "approval_cancelled",
          gatewayJson(
            503,
            { error: "gateway_restarting", message: "credgate gateway is restarting and released this request before it was reviewed. Retry it.", approval_id: id },
            { "retry-after": "1" },
          ),
        );
    }
  }

  return {
    name: "approval",
    reads: ["agent", "policy"],
    provides: ["approval"],
    request(rq) {
      // Synchronous when nothing is held: no promise on every request's path.
      if (!rq.needsApproval) return PASS;
      // A person approved this agent under this rule for a while: no hold. When readings of the path reached
      // several approval rules, each must have been remembered (docs/injection.md#every-reading-of-a-path),
      // and the approval names the first that was not, so that remembering it moves on to the next.
      const pending = rq.heldBy.find((r) => !remembered.allows(rq.agent.id, r.logicalId));
      if (rq.heldBy.length > 0 && pending === undefined) return REMEMBERED;
      if (pending) rq.matchedRule = pending;
      return hold(rq);
    },
  };
}
