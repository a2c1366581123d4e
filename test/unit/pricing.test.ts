// Prices and costs (docs/budgets.md#pricing): the default table, family-substring and longest-prefix matching, the
// llm_b cached-token rate, cache write and read for llm_a, the estimate, and CREDGATE_PRICING_FILE merging.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { costOf, DEFAULT_PRICES, estimateOf, mergePrices, priceOf } from "../../src/core/pricing.ts";
import { loadPriceTable } from "../../src/services/pricing.ts";
import { tempDir } from "../support/tmp.ts";

const u = (model: string, inputTokens: number, outputTokens: number, cacheWriteTokens = 0, cacheReadTokens = 0) => ({ model, inputTokens, outputTokens, cacheWriteTokens, cacheReadTokens });

describe("prices", () => {
  test("llm_a by family substring; unknown → opus rates", () => {
    expect(priceOf(DEFAULT_PRICES, "llm_a", "claude-sonnet-4-5-20250929")).toEqual({ input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 });
    expect(priceOf(DEFAULT_PRICES, "llm_a", "claude-3-5-haiku-latest").input).toBe(1);
    expect(priceOf(DEFAULT_PRICES, "llm_a", "claude-opus-4-1").output).toBe(25);
    expect(priceOf(DEFAULT_PRICES, "llm_a", "some-new-model")).toEqual(DEFAULT_PRICES.llm_a.opus!);
    expect(priceOf(DEFAULT_PRICES, "llm_a", null)).toEqual(DEFAULT_PRICES.llm_a.opus!);
  });
  test("llm_b by the longest prefix; unknown → the default row", () => {
    expect(priceOf(DEFAULT_PRICES, "llm_b", "gpt-5-nano-2025-08-07").input).toBe(0.05);
    expect(priceOf(DEFAULT_PRICES, "llm_b", "gpt-5-mini").input).toBe(0.25);
    expect(priceOf(DEFAULT_PRICES, "llm_b", "gpt-5-2025-08-07").input).toBe(1.25);
    expect(priceOf(DEFAULT_PRICES, "llm_b", "gpt-4.1-mini-2025-04-14").input).toBe(0.4);
    expect(priceOf(DEFAULT_PRICES, "llm_b", "gpt-4o-mini").input).toBe(0.15);
    expect(priceOf(DEFAULT_PRICES, "llm_b", "gpt-4o-2024-11-20").input).toBe(2.5);
    expect(priceOf(DEFAULT_PRICES, "llm_b", "o4-mini").input).toBe(1.1);
    expect(priceOf(DEFAULT_PRICES, "llm_b", "o3-pro").input).toBe(2);
    expect(priceOf(DEFAULT_PRICES, "llm_b", "llama-3")).toEqual({ input: 2.5, output: 10, cacheRead: 1.25 });
  });
});

describe("costs in nano-USD", () => {
  test("docs/budgets.md#pricing: 1,000,000 input tokens on sonnet = 300 cents", () => {
    expect(costOf(DEFAULT_PRICES, "llm_a", u("claude-sonnet-4-5", 1_000_000, 0))).toBe(300 * 10_000_000);
  });
  test("llm_a: input, cache write and cache read at their rates, output", () => {
    // 1000×3 + 200×3.75 + 500×0.3 + 100×15 (USD per 1M) → nano = ×1000
    expect(costOf(DEFAULT_PRICES, "llm_a", u("claude-sonnet-4-5", 1000, 100, 200, 500))).toBe((1000 * 3 + 200 * 3.75 + 500 * 0.3 + 100 * 15) * 1000);
  });
  test("llm_b: cached tokens are part of the input and charged at the cache-read rate instead", () => {
    // gpt-4o: 900 prompt of which 512 cached: 388×2.5 + 512×1.25 + 12×10
    expect(costOf(DEFAULT_PRICES, "llm_b", u("gpt-4o", 900, 12, 0, 512))).toBe((388 * 2.5 + 512 * 1.25 + 12 * 10) * 1000);
    expect(costOf(DEFAULT_PRICES, "llm_b", u("gpt-5-nano", 1_000_000, 1_000_000, 0, 0))).toBe((0.05 + 0.4) * 1e9);
  });
  test("the estimate: (body bytes ÷ 2) × input + max output (default 4096) × output", () => {
    expect(estimateOf(DEFAULT_PRICES, "llm_a", "claude-haiku-4-5", 2000, 100)).toBe((1000 * 1 + 100 * 5) * 1000);
    expect(estimateOf(DEFAULT_PRICES, "llm_b", "gpt-4o", 3, null)).toBe((2 * 2.5 + 4096 * 10) * 1000);
  });
});

describe("CREDGATE_PRICING_FILE", () => {
  test("merges over the defaults model by model; a specific key beats its family", () => {
    const merged = mergePrices(DEFAULT_PRICES, { llm_a: { "sonnet-4-5": { input: 2, output: 10 } }, llm_b: { "gpt-4o": { input: 1, output: 2, cacheRead: 0.5 } } });
    if (typeof merged === "string") throw new Error(merged);
    expect(priceOf(merged, "llm_a", "claude-sonnet-4-5").input).toBe(2);
    expect(priceOf(merged, "llm_a", "claude-sonnet-4").input).toBe(3);
    expect(priceOf(merged, "llm_b", "gpt-4o-2024").input).toBe(1);
    expect(priceOf(merged, "llm_b", "gpt-4o-mini").input).toBe(0.15);
    expect(DEFAULT_PRICES.llm_b["gpt-4o"]!.input).toBe(2.5);
  });
  test("malformed documents are refused with a message", () => {
    expect(mergePrices(DEFAULT_PRICES, [])).toBe("must be a JSON object with llm_a and/or llm_b");
    expect(mergePrices(DEFAULT_PRICES, { llm_c: {} })).toBe('unknown key "llm_c" (expected llm_a or llm_b)');
    expect(mergePrices(DEFAULT_PRICES, { llm_a: { x: { input: 1 } } })).toBe("llm_a.x needs input and output prices");
    expect(mergePrices(DEFAULT_PRICES, { llm_a: { x: { input: -1, output: 1 } } })).toBe("llm_a.x.input must be a non-negative number");
    expect(mergePrices(DEFAULT_PRICES, { llm_b: { x: { input: 1, output: 1, bogus: 2 } } })).toBe('llm_b.x has unknown field "bogus"');
  });
});

describe("loading CREDGATE_PRICING_FILE", () => {
  test("unset: the defaults; a file: merged; a bad file: one message naming the variable and the reason", () => {
    expect(loadPriceTable(null)).toBe(DEFAULT_PRICES);
    const dir = tempDir();
    const good = join(dir, "prices.json");
    writeFileSync(good, JSON.stringify({ llm_a: { sonnet: { input: 1, output: 2 } } }));
    expect(priceOf(loadPriceTable(good), "llm_a", "claude-sonnet-4-5")).toEqual({ input: 1, output: 2 });
    expect(() => loadPriceTable(join(dir, "missing.json"))).toThrow(`CREDGATE_PRICING_FILE ${join(dir, "missing.json")}: no such file`);
    const bad = join(dir, "bad.json");
    writeFileSync(bad, "{nope");
    expect(() => loadPriceTable(bad)).toThrow(/^CREDGATE_PRICING_FILE .*bad\.json: not valid JSON/);
    writeFileSync(bad, JSON.stringify({ llm_a: { x: { input: 1 } } }));
    expect(() => loadPriceTable(bad)).toThrow("llm_a.x needs input and output prices");
  });
});
