// The `budget` stage — LLM metering and budget admission (docs/budgets.md#admission). A request to a metered endpoint (llm_a
// POST …/v1/messages; llm_b POST …/v1/chat/completions, …/v1/responses) that an LLM secret was injected
// into is metered: it asks for an uncompressed answer (so usage can be read) and gets an estimate from its
// body (model, output cap, size). Every budget that applies — the agent's, its project's, its organization's
// (docs/budgets.md#budgets-for-every-scope), and a partner's on the injected key — must admit the estimate
// (spent < limit, spent + reserved + estimate ≤ limit), all of them at once, or the request is answered 403
// `budget_exceeded` before anything leaves. The budgets come from the agent's snapshot; the store is asked
// only when at least one applies.
import { budgetExceededMessage, periodAdjective } from "../../core/budgetWindows.ts";
import { estimateOf, type MeteredType } from "../../core/pricing.ts";
import { JSON_LIMIT, meteredApi, requestHints, type MeteredApi } from "../../core/usage.ts";
import { clockNow } from "../../runtime/clock.ts";
import type { Refusal } from "../../services/budgetLedger.ts";
import type { GatewayContext } from "../context.ts";
import { gatewayJson } from "../errors.ts";
import { peekStream } from "../peek.ts";
import type { ProxyRequest } from "../request.ts";
import type { CompiledSecret } from "../snapshot.ts";

export function meterAndAdmit(rq: ProxyRequest, g: GatewayContext): Promise<Response | undefined> | undefined {
  // The LLM key that applies is the last LLM secret injected (project over organization over partner).
  const secret = rq.matched.findLast((s) => s.type !== "generic");
  if (!secret || rq.websocket) return undefined;
  const type = secret.type as MeteredType;
  const api = meteredApi(type, rq.method, rq.path);
  // Synchronous for a request that is not metered: no promise on every request's path.
  return api ? meter(rq, g, secret, type, api) : undefined;
}

async function meter(rq: ProxyRequest, g: GatewayContext, secret: CompiledSecret, type: MeteredType, api: MeteredApi): Promise<Response | undefined> {
  rq.headers.delete("accept-encoding");
  let head: Uint8Array = new Uint8Array(0);
  if (rq.body) {
    const peeked = await peekStream(rq.body, JSON_LIMIT);
    rq.body = peeked.stream;
    head = peeked.head;
  }
  const declared = Number(rq.agentHeaders.get("content-length"));
  const bytes = Number.isFinite(declared) && declared > head.byteLength ? declared : head.byteLength;
  const hints = requestHints(new TextDecoder().decode(head));
  const estimateNanos = estimateOf(g.services.prices, type, hints.model, bytes, hints.maxOutputTokens);
  const at = clockNow();
  rq.meter = { secretId: secret.id, type, api, model: hints.model, estimateNanos, at, hold: null };

  const scoped = rq.credentials.scopeBudgets[type];
  const partner = (secret.scope === "partner" ? rq.credentials.budgets.get(secret.id) : undefined) ?? null;
  if (scoped.length === 0 && partner === null) return undefined;
  // Never rejects: without the store the budgets cannot be honoured, and the first of them refuses.
  const admission = await g.services.budgetLedger.admit(scoped, partner, estimateNanos, at);
  if (admission.admitted) {
    rq.meter.hold = admission.hold;
    return undefined;
  }
  rq.decision = "budget_exceeded";
  rq.meter = null;
  return refusal(rq, g, type, admission.refusal);
}

/** 403 `budget_exceeded` (docs/agent-errors.md#budget_exceeded): the scope budget's form, or the partner key's. */
function refusal(rq: ProxyRequest, g: GatewayContext, type: MeteredType, r: Refusal): Response {
  if (r.kind === "scope") {
    const b = r.budget;
    const resetsAt = r.window.end === null ? null : new Date(r.window.end).toISOString();
    return gatewayJson(403, {
      error: "budget_exceeded",
      message: budgetExceededMessage(b.scope, b.secretType, b.limitCents, b.period, resetsAt),
      scope: b.scope,
      budget_id: b.id,
      period: periodAdjective(b.period),
      limit_usd: b.limitCents / 100,
      resets_at: resetsAt,
    });
  }
  const limitUsd = r.budget.limitCents / 100;
  const addKeyUrl = `${g.config.publicUrl.replace(/\/+$/, "")}/p/${rq.agent.projectId}/secrets?create=${type}`;
  const span = r.budget.period === "monthly" ? "this month" : "in total";
  return gatewayJson(403, {
    error: "budget_exceeded",
    message: `This organization's spend budget for the ${type} key ($${limitUsd.toFixed(2)} ${span}) has been reached, so the key is paused. The user can add their own key in the credgate dashboard to keep going: ${addKeyUrl}`,
    limit_usd: limitUsd,
    period: r.budget.period,
    add_key_url: addKeyUrl,
  });
}
