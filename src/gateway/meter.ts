// The response side of metering (CONTRACT §6.11): the body passes through to the agent chunk by chunk, and a
// copy of each chunk feeds the usage reader. When the body ends (or the agent goes away) the cost is known:
// a 2xx is charged what the vendor reported (the estimate when it reported nothing usable; on an abort,
// what it reported so far); anything else is charged nothing. The reservation is dropped and the spend added
// in one transaction, and the request's log row is written then, with its costNanos.
import { costOf } from "../core/pricing.ts";
import { UsageReader } from "../core/usage.ts";
import { log } from "../log.ts";
import type { GatewayContext } from "./context.ts";
import type { ProxyRequest } from "./request.ts";

export interface Meter {
  secretId: string;
  type: "llm_a" | "llm_b";
  api: "messages" | "chat_completions" | "responses";
  /** nano-USD; charged when a 2xx reports no usage. */
  estimateNanos: number;
  /** The budget reservation to drop when the request ends (null: no budget applies). */
  reservationId: string | null;
}

/** Wraps the response body; `finish(costNanos)` runs once, when the body ended or was abandoned. */
export function meterResponse(rq: ProxyRequest, g: GatewayContext, response: Response, finish: (costNanos: number) => void): Response {
  const meter = rq.meter!;
  const ok = response.status >= 200 && response.status <= 299;
  const reader = new UsageReader(meter.type, meter.api, response.headers.get("content-type"));
  let done = false;
  const end = (complete: boolean) => {
    if (done) return;
    done = true;
    let cost = 0;
    if (ok) {
      const usage = reader.result(complete);
      cost = usage ? costOf(g.services.prices, meter.type, usage) : meter.estimateNanos;
    }
    finish(cost);
    const budgets = g.services.budgets;
    // A budgeted key settles its reservation at once (admission depends on it); other spend is batched.
    if (meter.reservationId === null) budgets.record(meter.secretId, rq.agent.organizationId, cost);
    else budgets.charge(meter.secretId, rq.agent.organizationId, cost, meter.reservationId).catch((err: Error) => log.warn("LLM spend not recorded", { secretId: meter.secretId, costNanos: cost, error: err.message }));
  };
  if (!response.body) {
    end(true);
    return response;
  }
  const source = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const r = await source.read();
        if (r.done) {
          end(true);
          controller.close();
          return;
        }
        if (ok) reader.push(r.value);
        controller.enqueue(r.value);
      } catch (err) {
        end(false);
        controller.error(err);
      }
    },
    cancel(reason) {
      end(false);
      return source.cancel(reason);
    },
  });
  const headers = new Headers(response.headers);
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}
