// The response side of metering (docs/budgets.md#metering): the body passes through to the agent chunk by chunk, and a
// copy of each chunk feeds the usage reader. When the body ends (or the agent goes away) the cost is known:
// a 2xx is charged what the vendor reported (the estimate when it reported nothing usable; on an abort,
// what it reported so far); anything else is charged nothing. A budgeted key settles its reservation at
// once; other spend is batched. The cost is left on the request for its log row.
import { costOf } from "../core/pricing.ts";
import { UsageReader } from "../core/usage.ts";
import { log } from "../observability/log.ts";
import { metrics } from "../observability/metrics.ts";
import type { GatewayContext } from "./context.ts";
import type { Reply } from "./reply.ts";
import type { ProxyRequest } from "./request.ts";

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
    if (ok) {
      const usage = reader.result(complete || !reply.body);
      cost = usage ? costOf(g.services.prices, meter.type, usage) : meter.estimateNanos;
    }
    rq.costNanos = cost;
    if (cost > 0) metrics.budgetSpend.inc({ type: meter.type }, cost / 1e9);
    const budgets = g.services.budgets;
    if (meter.reservationId === null) budgets.record(meter.secretId, rq.agent.organizationId, cost);
    else budgets.charge(meter.secretId, rq.agent.organizationId, cost, meter.reservationId).catch((err: Error) => log.warn("LLM spend not recorded", { secretId: meter.secretId, costNanos: cost, error: err.message }));
  });
}

/** Admitted but never forwarded (denied, held and released, unreachable): the reservation is dropped. */
export function releaseReservation(rq: ProxyRequest, g: GatewayContext): void {
  const reservation = rq.meter?.reservationId;
  if (reservation) g.services.budgets.release(reservation).catch((err: Error) => log.warn("budget reservation not released", { error: err.message }));
}
