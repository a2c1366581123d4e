// Policy (docs/policy.md): the agent's published rules are evaluated per scope and combined; blocks and rate
// limits are answered before anything leaves. An approval verdict is carried to the approval stage. Every
// reading of the path is judged and the strictest verdict wins (docs/injection.md#every-reading-of-a-path).
import { evaluateReadings, BODY_PEEK_BYTES, type CompiledRule, type PolicyRequest } from "../../core/policy.ts";
import type { RateLimitService } from "../../services/rateLimits.ts";
import { gatewayJson } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { answer, PASS, type RequestVerdict, type Stage } from "../stage.ts";

export interface PolicyDeps {
  rateLimits: Pick<RateLimitService, "hit">;
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

export function policyStage({ rateLimits }: PolicyDeps): Stage {
  function decide(rq: ProxyRequest, body: string | null): RequestVerdict | Promise<RequestVerdict> {
    const policy = rq.credentials.policy;
    const method = rq.websocket ? "GET" : rq.method;
    const req: PolicyRequest = { host: rq.host, path: rq.path, method, agentId: rq.agent.id, connectionId: rq.connection?.id ?? null, body };
    const decision = evaluateReadings(policy, req, rq.pathReadings);
    const rule = decision.rule;
    if (rule) rq.matchedRule = { logicalId: rule.logicalId, name: rule.name };
    // Matching ignores the query, but answers show the path as the agent sent it.
    const shownPath = rq.target;
    switch (decision.verdict) {
      case "allow":
        return PASS;
      case "block":
        if (rule?.isDefault) {
          return answer(
            "blocked_by_default_policy",
            gatewayJson(403, {
              error: "blocked_by_default_policy",
              message: `A default-deny policy blocked this request. ${method} ${rq.host}${shownPath} is not permitted for this agent. Ask an administrator to allow the destination.`,
              method,
              host: rq.host,
              path: shownPath,
            }),
          );
        }
        return answer("blocked", blockedByPolicy(rule!.name, method, shownPath));
      case "rate": {
        // Readings limited by different rules: each counts the request, and the first that limits it answers.
        if (decision.rules.length === 1) return hitRate(rq, rule!);
        return Promise.all(decision.rules.map((r) => hitRate(rq, r))).then((verdicts) => verdicts.find((v) => v !== PASS) ?? PASS);
      }
      case "approval":
        // A WebSocket upgrade cannot be held (docs/policy.md#approvals).
        if (rq.websocket) return answer("blocked", blockedByPolicy("Manual approval required", method, shownPath));
        rq.needsApproval = true;
        rq.heldBy = decision.rules.map((r) => ({ logicalId: r.logicalId, name: r.name }));
        return PASS;
    }
  }

  function hitRate(rq: ProxyRequest, r: CompiledRule): Promise<RequestVerdict> {
    return rateLimits.hit({ scope: r.scope, logicalId: r.logicalId, agentId: rq.agent.id }, r.rateLimit!, r.rateLimitWindow!).then((hit) => {
      if (!hit.limited) return PASS;
      return answer(
        "rate_limited",
        gatewayJson(
          429,
          { error: "rate_limited", message: "This request was rate-limited by a credgate policy rule.", limit: r.rateLimit, window: r.rateLimitWindow },
          { "retry-after": String(hit.retryAfter) },
        ),
      );
    });
  }

  return {
    name: "policy",
    reads: ["agent", "connection"],
    provides: ["policy"],
    request(rq) {
      const policy = rq.credentials.policy;
      if (policy.empty) return PASS;
      // Synchronous unless a rule reads the body or counts a rate: no promise on most requests' path.
      if (!policy.needsBody || !rq.body) return decide(rq, null);
      return rq.peekBody(BODY_PEEK_BYTES).then((head) => decide(rq, new TextDecoder().decode(head).toLowerCase()));
    },
  };
}
