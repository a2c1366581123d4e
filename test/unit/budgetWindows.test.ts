// Budget windows and refusal wording (docs/budgets.md#budgets-for-every-scope, docs/agent-errors.md#budget_exceeded):
// UTC days, weeks from Monday, months from the 1st (leap years, year ends), a total window that never ends;
// the refusal message in every form; which alert percents a spend has reached.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { admits, budgetExceededMessage, normalisePercents, periodAdjective, reachedPercents, windowOf } from "../../src/core/budgetWindows.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const at = (s: string) => Date.parse(s);
const span = (period: Parameters<typeof windowOf>[0], when: string) => {
  const w = windowOf(period, at(when));
  return [iso(w.start), iso(w.end)];
};

describe("windowOf", () => {
  test("a day is from UTC midnight to the next", () => {
    expect(span("day", "2026-05-31T23:59:59.999Z")).toEqual(["2026-05-31T00:00:00.000Z", "2026-06-01T00:00:00.000Z"]);
    expect(span("day", "2026-06-01T00:00:00.000Z")).toEqual(["2026-06-01T00:00:00.000Z", "2026-06-02T00:00:00.000Z"]);
  });

  test("a week starts on Monday 00:00 UTC, also across a year end and before 1970", () => {
    expect(span("week", "2026-05-31T23:59:59.000Z")).toEqual(["2026-05-25T00:00:00.000Z", "2026-06-01T00:00:00.000Z"]); // Sunday
    expect(span("week", "2026-06-01T00:00:00.000Z")).toEqual(["2026-06-01T00:00:00.000Z", "2026-06-08T00:00:00.000Z"]); // Monday
    expect(span("week", "2027-01-01T12:00:00.000Z")).toEqual(["2026-12-28T00:00:00.000Z", "2027-01-04T00:00:00.000Z"]); // Friday
    expect(span("week", "1970-01-01T00:00:00.000Z")).toEqual(["1969-12-29T00:00:00.000Z", "1970-01-05T00:00:00.000Z"]);
  });

  test("a month is from the 1st to the next 1st (February of a leap year, December)", () => {
    expect(span("month", "2028-02-29T23:00:00.000Z")).toEqual(["2028-02-01T00:00:00.000Z", "2028-03-01T00:00:00.000Z"]);
    expect(span("month", "2026-12-31T23:59:59.999Z")).toEqual(["2026-12-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z"]);
  });

  test("total never ends", () => {
    expect(span("total", "2026-05-31T12:00:00.000Z")).toEqual(["1970-01-01T00:00:00.000Z", null]);
  });

  test("any instant lies in its window; the window's end begins the next one", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_102_444_800_000 }), fc.constantFrom("day", "week", "month") as fc.Arbitrary<"day" | "week" | "month">, (t, period) => {
        const w = windowOf(period, t);
        expect(w.start <= t && t < w.end!).toBe(true);
        expect(windowOf(period, w.end!).start).toBe(w.end!);
        expect(windowOf(period, w.end! - 1).start).toBe(w.start);
        if (period === "week") expect(new Date(w.start).getUTCDay()).toBe(1);
        if (period === "month") expect(new Date(w.start).getUTCDate()).toBe(1);
      }),
    );
  });
});

describe("the refusal message", () => {
  test("every scope, key type and period", () => {
    expect(budgetExceededMessage("agent", null, 500, "day", "2026-05-02T00:00:00.000Z")).toBe(
      "This agent's spend budget for LLM keys ($5.00 today) has been reached. It resets at 2026-05-02T00:00:00.000Z.",
    );
    expect(budgetExceededMessage("project", "llm_a", 1234, "week", "2026-05-04T00:00:00.000Z")).toBe(
      "This project's spend budget for the llm_a key ($12.34 this week) has been reached. It resets at 2026-05-04T00:00:00.000Z.",
    );
    expect(budgetExceededMessage("organization", "llm_b", 7, "month", "2026-06-01T00:00:00.000Z")).toBe(
      "This organization's spend budget for the llm_b key ($0.07 this month) has been reached. It resets at 2026-06-01T00:00:00.000Z.",
    );
    expect(budgetExceededMessage("agent", null, 100_000_000, "total", null)).toBe("This agent's spend budget for LLM keys ($1000000.00 in total) has been reached.");
  });

  test("periods as adjectives", () => {
    expect((["day", "week", "month", "total"] as const).map(periodAdjective)).toEqual(["daily", "weekly", "monthly", "total"]);
  });
});

describe("alert percents", () => {
  test("reached: spent ≥ percent % of the limit, exactly at the boundary", () => {
    const limit = 1000;
    expect(reachedPercents([50, 80, 100], 499, limit)).toEqual([]);
    expect(reachedPercents([50, 80, 100], 500, limit)).toEqual([50]);
    expect(reachedPercents([50, 80, 100], 999, limit)).toEqual([50, 80]);
    expect(reachedPercents([50, 80, 100], 1000, limit)).toEqual([50, 80, 100]);
    // Large nano-USD figures stay exact (10⁸ cents × 10⁷).
    expect(reachedPercents([1], 10_000_000_000_000, 1_000_000_000_000_000)).toEqual([1]);
  });

  test("stored unique and ascending", () => {
    expect(normalisePercents([100, 80, 80, 1])).toEqual([1, 80, 100]);
    expect(normalisePercents([])).toEqual([]);
  });
});

describe("the admission rule", () => {
  test("spent < limit and spent + reserved + estimate ≤ limit, at the edges", () => {
    expect(admits(0, 0, 100, 100)).toBe(true);
    expect(admits(0, 0, 101, 100)).toBe(false);
    expect(admits(40, 30, 30, 100)).toBe(true);
    expect(admits(40, 30, 31, 100)).toBe(false);
    // A spent budget refuses even what costs nothing; one short of it takes a request that costs nothing.
    expect(admits(100, 0, 0, 100)).toBe(false);
    expect(admits(99, 0, 0, 100)).toBe(true);
    expect(admits(0, 0, 0, 0)).toBe(false);
  });

  test("admitting never lets spent + reserved pass the limit", () => {
    fc.assert(
      fc.property(fc.nat(1e12), fc.nat(1e12), fc.nat(1e12), fc.nat(1e12), (spent, reserved, estimate, limit) => {
        if (admits(spent, reserved, estimate, limit)) expect(spent + reserved + estimate).toBeLessThanOrEqual(limit);
        else expect(spent >= limit || spent + reserved + estimate > limit).toBe(true);
      }),
    );
  });
});
