// LLM metering and budget admission (docs/budgets.md). A request to a metered endpoint (llm_a POST
// …/v1/messages; llm_b POST …/v1/chat/completions, …/v1/responses) that an LLM secret was injected into is
// metered: it asks for an uncompressed answer (so usage can be read) and gets an estimate from its body
// (model, output cap, size). When the injected key is a partner's with a spend budget for the agent's
// organization, the estimate must be admitted (spent < limit, spent + reserved + estimate ≤ limit) or the
// request is answered 403 `budget_exceeded` before anything leaves.
// On the way back the body passes through to the agent chunk by chunk while a copy of each chunk feeds the
// usage reader; when it ends (or the agent goes away) the cost is known: a 2xx is charged what the vendor
// reported (the estimate when it reported nothing usable; on an abort, what it reported so far), anything else
// nothing. A budgeted key settles its reservation at once; other spend is batched. A request admitted but
// never forwarded drops its reservation.
import { costOf, estimateOf, type MeteredType, type PriceTable } from "../../core/pricing.ts";
import { JSON_LIMIT, meteredApi, requestHints, UsageReader, type MeteredApi } from "../../core/usage.ts";
import { log } from "../../observability/log.ts";
import { metrics } from "../../observability/metrics.ts";
import type { BudgetService } from "../../services/budgets.ts";
import { gatewayJson } from "../errors.ts";
import type { Reply } from "../reply.ts";
import type { Meter, ProxyRequest } from "../request.ts";
import type { CompiledSecret } from "../snapshot.ts";
import { answer, PASS, type RequestVerdict, type Stage } from "../stage.ts";

export interface BudgetDeps {
  prices: PriceTable;
  budgets: Pick<BudgetService, "admit" | "charge" | "record" | "release">;
  /** The dashboard's base URL, for the link to add an own key. */
  publicUrl: string;
}

const isLlmSecret = (s: CompiledSecret): boolean => s.type !== "generic";

export function budgetStage({ prices, budgets, publicUrl }: BudgetDeps): Stage {
  async function admit(rq: ProxyRequest, secret: CompiledSecret, type: MeteredType, api: MeteredApi): Promise<RequestVerdict> {
    rq.headers.delete("accept-encoding");
    const head = rq.body ? await rq.peekBody(JSON_LIMIT) : new Uint8Array(0);
    const declared = Number(rq.agentHeaders.get("content-length"));
    const bytes = Number.isFinite(declared) && declared > head.byteLength ? declared : head.byteLength;
    const hints = requestHints(new TextDecoder().decode(head));
    const estimateNanos = estimateOf(prices, type, hints.model, bytes, hints.maxOutputTokens);

    const budget = secret.scope === "partner" ? rq.credentials.budgets.get(secret.id) : undefined;
    let reservationId: string | null = null;
    if (budget) {
      let admission;
      try {
        admission = await budgets.admit(budget, estimateNanos);
      } catch (err) {
        // Without the store there is no way to know the spend: the budget cannot be honoured, so the key waits.
        log.error("budget admission failed", { secretId: secret.id, error: (err as Error).message });
        admission = { admitted: false as const };
      }
      if (!admission.admitted) {
        const limitUsd = budget.limitCents / 100;
        const addKeyUrl = `${publicUrl.replace(/\/+$/, "")}/p/${rq.agent.projectId}/secrets?create=${type}`;
        const span = budget.period === "monthly" ? "this month" : "in total";
        return answer(
          "budget_exceeded",
          gatewayJson(403, {
            error: "budget_exceeded",
            message: `This organization's spend budget for the ${type} key ($${limitUsd.toFixed(2)} ${span}) has been reached, so the key is paused. The user can add their own key in the credgate dashboard to keep going: ${addKeyUrl}`,
            limit_usd: limitUsd,
            period: budget.period,
            add_key_url: addKeyUrl,
          }),
        );
      }
      reservationId = admission.reservationId;
    }
    rq.meter = { secretId: secret.id, type, api, estimateNanos, reservationId, costNanos: null };
    return PASS;
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
      if (ok) {
        const usage = reader.result(complete || !reply.body);
        cost = usage ? costOf(prices, meter.type, usage) : meter.estimateNanos;
      }
      meter.costNanos = cost;
      if (cost > 0) metrics.budgetSpend.inc({ type: meter.type }, cost / 1e9);
      if (meter.reservationId === null) budgets.record(meter.secretId, rq.agent.organizationId, cost);
      else budgets.charge(meter.secretId, rq.agent.organizationId, cost, meter.reservationId).catch((err: Error) => log.warn("LLM spend not recorded", { secretId: meter.secretId, costNanos: cost, error: err.message }));
    });
  }

  return {
    name: "budget",
    request(rq) {
      // The LLM key that applies is the last LLM secret injected (project over organization over partner).
      const secret = rq.matched.findLast(isLlmSecret);
      if (!secret || rq.websocket) return PASS;
      const type = secret.type as MeteredType;
      const api = meteredApi(type, rq.method, rq.path);
      // Synchronous for a request that is not metered: no promise on every request's path.
      return api ? admit(rq, secret, type, api) : PASS;
    },
    response(rq, reply) {
      const meter = rq.meter;
      if (meter === null) return reply;
      if (rq.forwarded) meterReply(rq, meter, reply);
      else if (meter.reservationId) {
        // Admitted but never forwarded (denied, held and released, unreachable): the reservation is dropped.
        budgets.release(meter.reservationId).catch((err: Error) => log.warn("budget reservation not released", { error: err.message }));
      }
      return reply;
    },
  };
}
