// LLM prices and what a request costs (docs/budgets.md#pricing): USD per million tokens by model, matched by family
// substring (`llm_a`) or the longest model-name prefix (`llm_b`); costs in nano-USD (1 USD = 10⁹), integers.
// Pure: the price table is passed in (the default below, or CREDGATE_PRICING_FILE merged over it).

export type MeteredType = "llm_a" | "llm_b";

/** USD per 1M tokens. `cacheWrite` is `llm_a` only; `cacheRead` is the cached-input rate of both types. */
export interface ModelPrice {
  input: number;
  output: number;
  cacheWrite?: number;
  cacheRead?: number;
}

/** Per type: model keys (a family substring for llm_a, a name prefix for llm_b) and `default` for unknown models. */
export type PriceTable = Record<MeteredType, Record<string, ModelPrice> & { default: ModelPrice }>;

const opus: ModelPrice = { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 };

export const DEFAULT_PRICES: PriceTable = {
  llm_a: {
    opus,
    sonnet: { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
    haiku: { input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1 },
    default: opus,
  },
  llm_b: {
    "gpt-5-nano": { input: 0.05, output: 0.4, cacheRead: 0.005 },
    "gpt-5-mini": { input: 0.25, output: 2, cacheRead: 0.025 },
    "gpt-5": { input: 1.25, output: 10, cacheRead: 0.125 },
    "gpt-4.1-nano": { input: 0.1, output: 0.4, cacheRead: 0.025 },
    "gpt-4.1-mini": { input: 0.4, output: 1.6, cacheRead: 0.1 },
    "gpt-4.1": { input: 2, output: 8, cacheRead: 0.5 },
    "gpt-4o-mini": { input: 0.15, output: 0.6, cacheRead: 0.075 },
    "gpt-4o": { input: 2.5, output: 10, cacheRead: 1.25 },
    "o4-mini": { input: 1.1, output: 4.4, cacheRead: 0.275 },
    o3: { input: 2, output: 8, cacheRead: 0.5 },
    default: { input: 2.5, output: 10, cacheRead: 1.25 },
  },
};

/** nano-USD for `tokens` at `usdPerMillion` (1e9 nano-USD per USD / 1e6 tokens per price unit). */
function nanos(tokens: number, usdPerMillion: number): number {
  return Math.round(tokens * usdPerMillion * 1000);
}

/**
 * The price of a model: `llm_a` by family substring, `llm_b` by model-name prefix; when several keys match,
 * the longest (most specific) wins, so an override for one model beats its family. Unknown: `default`.
 */
export function priceOf(table: PriceTable, type: MeteredType, model: string | null): ModelPrice {
  const prices = table[type];
  const name = (model ?? "").toLowerCase();
  let best: string | null = null;
  for (const key of Object.keys(prices)) {
    if (key === "default" || !name) continue;
    const k = key.toLowerCase();
    const matches = type === "llm_a" ? name.includes(k) : name.startsWith(k);
    if (matches && (best === null || k.length > best.length)) best = key;
  }
  return best ? prices[best]! : prices.default;
}

/** Token counts as the vendor reported them (docs/budgets.md#usage usage table), normalised. */
export interface Usage {
  model: string | null;
  /** llm_a: `input_tokens` (without cache); llm_b: `prompt_tokens`/`input_tokens`, which include the cached ones. */
  inputTokens: number;
  outputTokens: number;
  /** llm_a `cache_creation_input_tokens`. */
  cacheWriteTokens: number;
  /** llm_a `cache_read_input_tokens`; llm_b `cached_tokens` (part of inputTokens). */
  cacheReadTokens: number;
}

/** What the usage cost, in nano-USD. `llm_b` cached tokens are charged at the cache-read rate instead of input. */
export function costOf(table: PriceTable, type: MeteredType, usage: Usage): number {
  const p = priceOf(table, type, usage.model);
  const cacheRead = p.cacheRead ?? p.input;
  if (type === "llm_a") {
    return nanos(usage.inputTokens, p.input) + nanos(usage.cacheWriteTokens, p.cacheWrite ?? p.input) + nanos(usage.cacheReadTokens, cacheRead) + nanos(usage.outputTokens, p.output);
  }
  const cached = Math.min(usage.cacheReadTokens, usage.inputTokens);
  return nanos(usage.inputTokens - cached, p.input) + nanos(cached, cacheRead) + nanos(usage.outputTokens, p.output);
}

/** The output-token cap a request names (`max_tokens`, `max_completion_tokens`, `max_output_tokens`); else 4096. */
export const DEFAULT_MAX_OUTPUT = 4096;

/** The admission estimate (docs/budgets.md#admission): (body bytes ÷ 2) × input price + maximum output tokens × output price. */
export function estimateOf(table: PriceTable, type: MeteredType, model: string | null, bodyBytes: number, maxOutputTokens: number | null): number {
  const p = priceOf(table, type, model);
  return nanos(Math.ceil(bodyBytes / 2), p.input) + nanos(maxOutputTokens ?? DEFAULT_MAX_OUTPUT, p.output);
}

/** nano-USD per cent: a budget of `limitCents` allows `limitCents × 10⁷` nano-USD. */
export const NANOS_PER_CENT = 10_000_000;

/**
 * A price table from a CREDGATE_PRICING_FILE document: `{"llm_a": {"<family>": {input, output, cacheWrite?,
 * cacheRead?}, …}, "llm_b": {…}}` (USD per 1M tokens), merged over the defaults model by model. Returns an
 * error message for a malformed document.
 */
export function mergePrices(base: PriceTable, doc: unknown): PriceTable | string {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return "must be a JSON object with llm_a and/or llm_b";
  const out: PriceTable = { llm_a: { ...base.llm_a }, llm_b: { ...base.llm_b } };
  for (const [type, models] of Object.entries(doc)) {
    if (type !== "llm_a" && type !== "llm_b") return `unknown key "${type}" (expected llm_a or llm_b)`;
    if (typeof models !== "object" || models === null || Array.isArray(models)) return `${type} must be an object of models`;
    for (const [model, price] of Object.entries(models)) {
      const p = price as Record<string, unknown>;
      const fields = ["input", "output", "cacheWrite", "cacheRead"] as const;
      if (typeof p !== "object" || p === null) return `${type}.${model} must be an object`;
      for (const f of fields) {
        if (p[f] !== undefined && (typeof p[f] !== "number" || !Number.isFinite(p[f]) || (p[f] as number) < 0)) return `${type}.${model}.${f} must be a non-negative number`;
      }
      if (typeof p.input !== "number" || typeof p.output !== "number") return `${type}.${model} needs input and output prices`;
      for (const k of Object.keys(p)) if (!(fields as readonly string[]).includes(k)) return `${type}.${model} has unknown field "${k}"`;
      out[type][model] = { input: p.input, output: p.output, ...(p.cacheWrite !== undefined ? { cacheWrite: p.cacheWrite as number } : {}), ...(p.cacheRead !== undefined ? { cacheRead: p.cacheRead as number } : {}) };
    }
  }
  return out;
}
