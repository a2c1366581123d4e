// LLM metering and budget admission (docs/budgets.md). A request to a metered endpoint (llm_a POST
// …/v1/messages; llm_b POST …/v1/chat/completions, …/v1/responses) that an LLM secret was injected into is
// metered: it asks for an uncompressed answer (so usage can be read) and gets an estimate from its body
// (model, output cap, size). Every budget that applies — the agent's, its project's and its organization's
// (docs/budgets.md#budgets-for-every-scope, from the agent's view: no query to find them), and a partner's on
// the injected key (the snapshot's `partnerBudgets`) — must admit the estimate, all at once
// (docs/budgets.md#admission), or the request is answered 403 `budget_exceeded` before anything leaves. The
// ledger admits from this process's leases in memory when they cover the request, for budgets of every kind,
// and asks the store only when they do not.
// On the way back the body passes through to the agent chunk by chunk while a copy of each chunk feeds the
// usage reader; when it ends (or the agent goes away) the cost is known: a 2xx is charged what the vendor
// reported (the estimate when it reported nothing usable; on an abort, what it reported so far), anything else
// nothing. The cost settles what admission held (batched by the ledger), goes to the key's spend and to a
// spend record (docs/budgets.md#spend-report); the gateway waits for none of it. A request admitted but never
// forwarded drops what it held.
// Fail closed (docs/budgets.md#metering): every reading of the path is judged, so a spelling of a metered
// endpoint is metered; a request that would carry a budgeted key to anything else (another endpoint, a
// WebSocket) is admitted only while every budget has room for the smallest metered request, so a budget that
// refuses refuses the key, metered or not.
import { budgetExceededMessage, periodAdjective } from "../../core/budgetWindows.ts";
import { costOf, estimateOf, type MeteredType, type PriceTable, type Usage } from "../../core/pricing.ts";
import { JSON_LIMIT, meteredApiOf, requestHints, UsageReader, type MeteredApi } from "../../core/usage.ts";
import { metrics } from "../../observability/metrics.ts";
import { clockNow } from "../../runtime/clock.ts";
import type { BudgetLedger, Refusal } from "../../services/budgets/ledger.ts";
import type { PartnerBudget } from "../../services/budgets/partnerBudget.ts";
import type { PartnerBudgetService } from "../../services/budgets/partnerBudgets.ts";
import type { ScopeBudget } from "../../services/budgets/scopeBudgets.ts";
import type { SpendService } from "../../services/budgets/spend.ts";
import { gatewayJson } from "../errors.ts";
import type { Reply } from "../reply.ts";
import type { Meter, ProxyRequest } from "../request.ts";
import type { CompiledSecret } from "../snapshot.ts";
import { answer, PASS, type RequestVerdict, type Stage } from "../stage.ts";

export interface BudgetDeps {
  prices: PriceTable;
  /** Admission and settlement against every budget of a request. */
  ledger: Pick<BudgetLedger, "admit" | "settle">;
  /** The spend of every metered key, per (secret, organization) (batched). */
  keySpend: Pick<PartnerBudgetService, "record">;
  /** One spend record per admitted metered request (batched). */
  spend: Pick<SpendService, "record">;
  /** The dashboard's base URL, for the link to add an own key. */
  publicUrl: string;
}

const isLlmSecret = (s: CompiledSecret): boolean => s.type !== "generic";

export function budgetStage({ prices, ledger, keySpend, spend, publicUrl }: BudgetDeps): Stage {
  /** The estimate of the smallest metered request: an empty body, `max_tokens` 1, the type's default prices. */
  const minimum: Record<MeteredType, number> = { llm_a: estimateOf(prices, "llm_a", null, 0, 1), llm_b: estimateOf(prices, "llm_b", null, 0, 1) };

  async function admit(rq: ProxyRequest, secret: CompiledSecret, type: MeteredType, api: MeteredApi): Promise<RequestVerdict> {
    rq.headers.delete("accept-encoding");
    const head = rq.body ? await rq.peekBody(JSON_LIMIT) : new Uint8Array(0);
    const declared = Number(rq.agentHeaders.get("content-length"));
    const bytes = Number.isFinite(declared) && declared > head.byteLength ? declared : head.byteLength;
    const hints = requestHints(new TextDecoder().decode(head));
    const estimateNanos = estimateOf(prices, type, hints.model, bytes, hints.maxOutputTokens);
    const at = clockNow();
    const meter: Meter = { secretId: secret.id, type, api, model: hints.model, estimateNanos, at, hold: null, costNanos: null };

    const scoped = rq.credentials.scopeBudgets[type];
    const partner = (secret.scope === "partner" ? rq.credentials.partnerBudgets.get(secret.id) : undefined) ?? null;
    if (scoped.length > 0 || partner !== null) {
      // Never rejects: without the store the budgets cannot be honoured, and the first of them refuses.
      const admission = await ledger.admit(scoped, partner, estimateNanos, at);
      if (!admission.admitted) return answer("budget_exceeded", refusal(rq, type, admission.refusal));
      meter.hold = admission.hold;
    }
    rq.meter = meter;
    return PASS;
  }

  /**
   * A request carrying a budgeted key that is not metered: admitted while every budget has room for the
   * smallest metered request (nothing is held for it, nothing charged).
   */
  async function room(rq: ProxyRequest, type: MeteredType, scoped: readonly ScopeBudget[], partner: PartnerBudget | null): Promise<RequestVerdict> {
    const admission = await ledger.admit(scoped, partner, minimum[type], clockNow());
    if (!admission.admitted) return answer("budget_exceeded", refusal(rq, type, admission.refusal));
    ledger.settle(admission.hold, 0);
    return PASS;
  }

  /** 403 `budget_exceeded` (docs/agent-errors.md#budget_exceeded): a scope budget's form, or the partner key's. */
  function refusal(rq: ProxyRequest, type: MeteredType, r: Refusal): Response {
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
    const addKeyUrl = `${publicUrl.replace(/\/+$/, "")}/p/${rq.agent.projectId}/secrets?create=${type}`;
    const span = r.budget.period === "monthly" ? "this month" : "in total";
    return gatewayJson(403, {
      error: "budget_exceeded",
      message: `This organization's spend budget for the ${type} key ($${limitUsd.toFixed(2)} ${span}) has been reached, so the key is paused. The user can add their own key in the credgate dashboard to keep going: ${addKeyUrl}`,
      limit_usd: limitUsd,
      period: r.budget.period,
      add_key_url: addKeyUrl,
    });
  }

  function meterReply(rq: ProxyRequest, meter: Meter, reply: Reply): void {
    const ok = reply.status >= 200 && reply.status <= 299;
    const reader = new UsageReader(meter.type, meter.api, reply.header("content-type"));
    if (ok && reply.body) {
      reply.transforms.push({
        resizes: false,
        data(chunk) {
          reader.push(chunk);
          return chunk;
        },
        end: () => null,
      });
    }
    reply.onEnd((complete) => {
      let cost = 0;
      let usage: Usage | null = null;
      if (ok) {
        usage = reader.result(complete || !reply.body);
        cost = usage ? costOf(prices, meter.type, usage) : meter.estimateNanos;
      }
      meter.costNanos = cost;
      if (cost > 0) metrics.budgetSpend.inc({ type: meter.type }, cost / 1e9);
      record(rq, meter, cost, usage);
    });
  }

  /** Where an admitted request's cost goes: its budgets' windows, the key's spend, a spend record. */
  function record(rq: ProxyRequest, meter: Meter, cost: number, usage: Usage | null): void {
    if (meter.hold) ledger.settle(meter.hold, cost);
    keySpend.record(meter.secretId, rq.agent.organizationId, cost);
    spend.record({
      organizationId: rq.agent.organizationId,
      projectId: rq.agent.projectId,
      agentId: rq.agent.id,
      secretType: meter.type,
      model: usage?.model ?? meter.model ?? "unknown",
      // Every input token the vendor reported: Anthropic counts cache writes and reads apart, OpenAI within.
      inputTokens: usage ? usage.inputTokens + (meter.type === "llm_a" ? usage.cacheWriteTokens + usage.cacheReadTokens : 0) : 0,
      outputTokens: usage?.outputTokens ?? 0,
      costNanos: cost,
      createdAt: new Date(meter.at).toISOString(),
    });
  }

  return {
    name: "budget",
    reads: ["agent", "secrets"],
    provides: ["meter"],
    request(rq) {
      // The LLM key that applies is the last LLM secret injected (project over organization over partner).
      const secret = rq.matched.findLast(isLlmSecret);
      if (!secret) return PASS;
      const type = secret.type as MeteredType;
      const api = rq.websocket ? null : meteredApiOf(type, rq.method, rq.pathReadings);
      if (api) return admit(rq, secret, type, api);
      const scoped = rq.credentials.scopeBudgets[type];
      const partner = (secret.scope === "partner" ? rq.credentials.partnerBudgets.get(secret.id) : undefined) ?? null;
      // Synchronous for a request that is not metered and under no budget: no promise on every request's path.
      return scoped.length === 0 && partner === null ? PASS : room(rq, type, scoped, partner);
    },
    response(rq, reply) {
      const meter = rq.meter;
      if (meter === null) return reply;
      if (rq.forwarded) meterReply(rq, meter, reply);
      // Admitted but never forwarded (denied, held and released, unreachable): what it held is dropped, nothing charged.
      else if (meter.hold) ledger.settle(meter.hold, 0);
      return reply;
    },
  };
}
