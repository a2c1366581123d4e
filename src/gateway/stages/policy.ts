// The `policy` stage — policy (docs/policy.md#evaluation, docs/policy.md#rate-limits): evaluate the agent's published rules per scope, combine, and
// answer blocks and rate limits before anything leaves. An approval verdict is carried to the hold stage.
import { combine, evaluateScope, BODY_PEEK_BYTES, type PolicyRequest } from "../../core/policy.ts";
import type { GatewayContext } from "../context.ts";
import { gatewayJson } from "../errors.ts";
import { peekStream } from "../peek.ts";
import type { ProxyRequest } from "../request.ts";

export function enforcePolicy(rq: ProxyRequest, g: GatewayContext): Response | undefined | Promise<Response | undefined> {
  const policy = rq.credentials.policy;
  if (policy.empty) return undefined;
  // Synchronous unless a rule reads the body or counts a rate: no promise on most requests' path.
  if (!policy.needsBody || !rq.body) return decide(rq, g, null);
  return peekStream(rq.body, BODY_PEEK_BYTES).then(({ head, stream }) => {
    rq.body = stream;
    return decide(rq, g, new TextDecoder().decode(head).toLowerCase());
  });
}

function decide(rq: ProxyRequest, g: GatewayContext, body: string | null): Response | undefined | Promise<Response | undefined> {
  const policy = rq.credentials.policy;
  const method = rq.websocket ? "GET" : rq.method;
  const req: PolicyRequest = { host: rq.host, path: rq.path, method, agentId: rq.agent.id, connectionId: rq.connection?.id ?? null, body };
  const decision = combine(
    evaluateScope(policy.organization.ordered, policy.organization.fallback, req),
    evaluateScope(policy.project.ordered, policy.project.fallback, req),
  );
  const rule = decision.rule;
  if (rule) rq.matchedRule = { logicalId: rule.logicalId, name: rule.name };
  // Matching ignores the query, but answers show the path as the agent sent it (docs/policy.md#evaluation).
  const shownPath = rq.target;
  switch (decision.verdict) {
    case "allow":
      return undefined;
    case "block":
      if (rule?.isDefault) {
        rq.decision = "blocked_by_default_policy";
        return gatewayJson(403, {
          error: "blocked_by_default_policy",
          message: `A default-deny policy blocked this request. ${method} ${rq.host}${shownPath} is not permitted for this agent. Ask an administrator to allow the destination.`,
          method,
          host: rq.host,
          path: shownPath,
        });
      }
      rq.decision = "blocked";
      return blockedByPolicy(rule!.name, method, shownPath);
    case "rate": {
      const r = rule!;
      return g.services.rateLimits.hit({ scope: r.scope, logicalId: r.logicalId, agentId: rq.agent.id }, r.rateLimit!, r.rateLimitWindow!).then((hit) => {
        if (!hit.limited) return undefined;
        rq.decision = "rate_limited";
        return gatewayJson(
          429,
          { error: "rate_limited", message: "This request was rate-limited by a credgate policy rule.", limit: r.rateLimit, window: r.rateLimitWindow },
          { "retry-after": String(hit.retryAfter) },
        );
      });
    }
    case "approval":
      // A WebSocket upgrade cannot be held (docs/policy.md#approvals).
      if (rq.websocket) {
        rq.decision = "blocked";
        return blockedByPolicy("Manual approval required", method, shownPath);
      }
      rq.needsApproval = true;
      return undefined;
  }
}

export function blockedByPolicy(ruleName: string, method: string, path: string): Response {
  return gatewayJson(403, {
    error: "blocked_by_policy",
    message: `Blocked by credgate policy rule "${ruleName}". ${method} ${path} is not allowed. Review this agent's access in your credgate dashboard.`,
    rule_name: ruleName,
    method,
    path,
  });
}
