// The price table the gateway meters with: the defaults of docs/budgets.md#pricing, with CREDGATE_PRICING_FILE (a JSON
// document, see core/pricing.ts mergePrices) merged over them. Read once at start; a bad file stops the start.
import { readFileSync } from "node:fs";
import { DEFAULT_PRICES, mergePrices, type PriceTable } from "../core/pricing.ts";

export function loadPriceTable(file: string | null): PriceTable {
  if (file === null) return DEFAULT_PRICES;
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(`CREDGATE_PRICING_FILE ${file}: ${e.code === "ENOENT" ? "no such file" : e instanceof SyntaxError ? `not valid JSON (${e.message})` : e.message}`);
  }
  const merged = mergePrices(DEFAULT_PRICES, doc);
  if (typeof merged === "string") throw new Error(`CREDGATE_PRICING_FILE ${file}: ${merged}`);
  return merged;
}
