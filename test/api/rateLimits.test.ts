// Rate-limit counters (docs/policy.md#rate-limits) in the store: fixed epoch windows, the first `limit` requests pass,
// limited ones count too, keys are independent, a new window starts over; counting is one atomic upsert, so
// concurrent hits never lose a count. Against the real store of the engine under test.
import { describe, expect, test } from "bun:test";
import { createTestApi } from "../support/app.ts";

describe("rate-limit counters", () => {
  test("the first `limit` requests of a window pass; limited ones count too; a new window starts over", async () => {
    const { rateLimits } = (await createTestApi()).core.services;
    const k = { scope: "project" as const, logicalId: "rule-1", agentId: "agent-1" };
    const t0 = 3_600_000 * 10;
    expect((await rateLimits.hit(k, 2, "hour", t0)).limited).toBe(false);
    expect((await rateLimits.hit(k, 2, "hour", t0 + 1)).limited).toBe(false);
    expect(await rateLimits.hit(k, 2, "hour", t0 + 2)).toEqual({ limited: true, retryAfter: 3600 });
    expect((await rateLimits.hit(k, 5, "hour", t0 + 3)).limited).toBe(false); // 4th hit: counted although the 3rd was limited
    expect((await rateLimits.hit(k, 3, "hour", t0 + 4)).limited).toBe(true);
    // Keys are independent (rule, agent, scope); the next hour resets.
    expect((await rateLimits.hit({ ...k, agentId: "agent-2" }, 1, "hour", t0 + 5)).limited).toBe(false);
    expect((await rateLimits.hit({ ...k, scope: "organization" }, 1, "hour", t0 + 5)).limited).toBe(false);
    expect((await rateLimits.hit(k, 1, "hour", t0 + 3_600_000)).limited).toBe(false);
    expect((await rateLimits.hit(k, 1, "hour", t0 + 3_600_001)).limited).toBe(true);
  });

  test("100 concurrent hits on one counter: exactly `limit` pass", async () => {
    const { rateLimits } = (await createTestApi()).core.services;
    const k = { scope: "project" as const, logicalId: "rule-burst", agentId: "agent-burst" };
    const now = 86_400_000 * 3;
    const hits = await Promise.all(Array.from({ length: 100 }, () => rateLimits.hit(k, 7, "day", now)));
    expect(hits.filter((h) => !h.limited)).toHaveLength(7);
  });
});
