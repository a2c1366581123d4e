// The `budget` stage — LLM metering and budget admission (docs/budgets.md#admission). A request to a metered endpoint (llm_a
// POST …/v1/messages; llm_b POST …/v1/chat/completions, …/v1/responses) that an LLM secret was injected
// into is metered: it asks for an uncompressed answer (so usage can be read) and gets an estimate from its
// body (model, output cap, size). When the injected key is a partner's with a spend budget for the agent's
// organization, the estimate must be admitted (spent < limit, spent + reserved + estimate ≤ limit) or the
// request is answered 403 `budget_exceeded` before anything leaves.
import { estimateOf, type MeteredType } from "../../core/pricing.ts";
import { JSON_LIMIT, meteredApi, requestHints, type MeteredApi } from "../../core/usage.ts";
import { log } from "../../observability/log.ts";
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
  rq.meter = { secretId: secret.id, type, api, estimateNanos, reservationId: null };

  const budget = secret.scope === "partner" ? rq.credentials.budgets.get(secret.id) : undefined;
  if (!budget) return undefined;
  let admission;
  try {
    admission = await g.services.budgets.admit(budget, estimateNanos);
  } catch (err) {
    // Without the store there is no way to know the spend: the budget cannot be honoured, so the key waits.
    log.error("budget admission failed", { secretId: secret.id, error: (err as Error).message });
    admission = { admitted: false as const };
  }
  if (admission.admitted) {
    rq.meter.reservationId = admission.reservationId;
    return undefined;
  }
  rq.decision = "budget_exceeded";
  rq.meter = null;
  const limitUsd = budget.limitCents / 100;
  const addKeyUrl = `${g.config.publicUrl.replace(/\/+$/, "")}/p/${rq.agent.projectId}/secrets?create=${type}`;
  const span = budget.period === "monthly" ? "this month" : "in total";
  return gatewayJson(403, {
    error: "budget_exceeded",
    message: `This organization's spend budget for the ${type} key ($${limitUsd.toFixed(2)} ${span}) has been reached, so the key is paused. The user can add their own key in the credgate dashboard to keep going: ${addKeyUrl}`,
    limit_usd: limitUsd,
    period: budget.period,
    add_key_url: addKeyUrl,
  });
}
