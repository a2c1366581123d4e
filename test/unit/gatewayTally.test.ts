// The gateway's request counts and latencies reach prom-client through a tally (src/observability/metrics.ts): every read of
// the registry sees every request counted before it, whether or not a batch was full.
import { describe, expect, test } from "bun:test";
import { countGatewayRequest, metricsText, observeGatewayLatency } from "../../src/observability/metrics.ts";

/** The value of one exposition line (0 when the series is not there yet). */
async function value(series: string): Promise<number> {
  const line = (await metricsText()).split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

const ALLOWED = 'credgate_gateway_requests_total{decision="allowed",status="200"}';
const BLOCKED = 'credgate_gateway_requests_total{decision="blocked",status="403"}';
const ADDED_COUNT = "credgate_gateway_added_latency_seconds_count";
const ADDED_FAST = 'credgate_gateway_added_latency_seconds_bucket{le="0.0005"}';
const UPSTREAM_SUM = "credgate_gateway_upstream_latency_seconds_sum";

describe("gateway metrics tally", () => {
  test("a read sees the requests counted before it, by decision and status, and every latency observed", async () => {
    const before = { allowed: await value(ALLOWED), blocked: await value(BLOCKED), added: await value(ADDED_COUNT), fast: await value(ADDED_FAST), upstream: await value(UPSTREAM_SUM) };
    countGatewayRequest("allowed", 200);
    countGatewayRequest("allowed", 200);
    countGatewayRequest("blocked", 403);
    observeGatewayLatency(0.25, 0.0002);
    observeGatewayLatency(0.5, 0.003);
    expect(await value(ALLOWED)).toBe(before.allowed + 2);
    expect(await value(BLOCKED)).toBe(before.blocked + 1);
    expect(await value(ADDED_COUNT)).toBe(before.added + 2);
    expect(await value(ADDED_FAST)).toBe(before.fast + 1);
    expect(await value(UPSTREAM_SUM)).toBeCloseTo(before.upstream + 0.75, 9);
    // Read twice, counted once.
    expect(await value(ALLOWED)).toBe(before.allowed + 2);
  });

  test("more requests than one batch holds are all counted", async () => {
    const before = { allowed: await value(ALLOWED), added: await value(ADDED_COUNT) };
    for (let i = 0; i < 2500; i++) {
      countGatewayRequest("allowed", 200);
      observeGatewayLatency(0.01, 0.0001);
    }
    expect(await value(ALLOWED)).toBe(before.allowed + 2500);
    expect(await value(ADDED_COUNT)).toBe(before.added + 2500);
  });
});
