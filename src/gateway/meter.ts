// The response side of metering (docs/budgets.md#metering): the body passes through to the agent chunk by chunk, and a
// copy of each chunk feeds the usage reader. When the body ends (or the agent goes away) the cost is known:
// a 2xx is charged what the vendor reported (the estimate when it reported nothing usable; on an abort,
// what it reported so far); anything else is charged nothing. What admission held against the request's
// budgets is settled (batched by the ledger), the key's spend and the spend record (docs/budgets.md#spend-report)
// are queued; the gateway waits for none of it. The cost is left on the request for its log row.
import { costOf, type Usage } from "../core/pricing.ts";
import { UsageReader } from "../core/usage.ts";
import { metrics } from "../observability/metrics.ts";
import type { GatewayContext } from "./context.ts";
import type { Reply } from "./reply.ts";
import type { Meter, ProxyRequest } from "./request.ts";

export function meterReply(rq: ProxyRequest, g: GatewayContext, reply: Reply): void {
  const meter = rq.meter!;
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
      cost = usage ? costOf(g.services.prices, meter.type, usage) : meter.estimateNanos;
    }
    rq.costNanos = cost;
    if (cost > 0) metrics.budgetSpend.inc({ type: meter.type }, cost / 1e9);
    record(rq, g, meter, cost, usage);
  });
}

/** Where an admitted request's cost goes: its budgets' windows (and a partner's reservation), the key's spend, the spend records. */
function record(rq: ProxyRequest, g: GatewayContext, meter: Meter, cost: number, usage: Usage | null): void {
  const { budgetLedger, budgets, spend } = g.services;
  if (meter.hold) budgetLedger.settle(meter.hold, cost);
  // A partner's reserved key is charged by the settlement; every other key's spend is batched.
  if (!meter.hold?.partner) budgets.record(meter.secretId, rq.agent.organizationId, cost);
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

/** Admitted but never forwarded (denied, held and released, unreachable): what it held is dropped, nothing charged. */
export function releaseReservation(rq: ProxyRequest, g: GatewayContext): void {
  const hold = rq.meter?.hold;
  if (hold) g.services.budgetLedger.settle(hold, 0);
}
