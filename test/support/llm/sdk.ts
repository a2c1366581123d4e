// Runs the vendors' official SDKs (test/support/llm/client.mjs, in Node) through one or several running
// gateways as an agent, and what the budget suites expect of the calls they made: what each admitted call
// cost by the vendor's reported usage, tallied per model and agent, to hold the spend report to.
import { join } from "node:path";
import { costOf, DEFAULT_PRICES, type PriceTable } from "../../../src/core/pricing.ts";
import { run, ROOT } from "../gateway.ts";
import type { RunningCredgate } from "../process.ts";

export interface ClientResult {
  text?: string;
  usage?: Record<string, number> | null;
  events?: number;
  aborted?: boolean;
  error?: { status: number | null; body: any; message: string };
}

export interface SdkCall {
  sdk: "anthropic" | "openai";
  call: "json" | "stream" | "chat-json" | "chat-stream" | "responses-json" | "responses-stream";
  baseURL: string;
  model: string;
  maxTokens?: number;
  includeUsage?: boolean;
}

/**
 * One SDK call (or `concurrent` of them at once, spread over the gateways; `total` of them, `concurrent` at a
 * time) as the agent holding `token`.
 */
export async function sdk(gateways: RunningCredgate[], caFile: string, token: string, call: SdkCall, concurrent?: number, total?: number): Promise<ClientResult[]> {
  const proxies = gateways.map((g) => `http://x:${token}@127.0.0.1:${g.gatewayPort}`);
  const r = await run(["node", join(ROOT, "test/support/llm/client.mjs"), JSON.stringify({ proxies, ...call, ...(concurrent ? { concurrent, total } : {}) })], {
    env: { NODE_EXTRA_CA_CERTS: caFile },
    timeoutMs: 180_000,
  });
  if (r.code !== 0 || !r.stdout.trim()) throw new Error(`client failed (${r.code}): ${r.stderr}`);
  const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
  return concurrent ? out.results : [out];
}

/** What the fake vendor reports for a call (test/support/llm/fakeVendors.ts FakeUsage), as the pricing sees it. */
export interface Reported {
  input: number;
  output: number;
  cacheWrite?: number;
  cacheRead?: number;
}

export interface Tally {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  costNanos: number;
}

/** The spend the suite caused, by model and by agent, from the usage the fake vendor reported. */
export class SpendTally {
  readonly byModel = new Map<string, Tally>();
  readonly byAgent = new Map<string, Tally>();

  constructor(private readonly prices: PriceTable = DEFAULT_PRICES) {}

  /** `n` admitted calls of `model` by `agentId`, each reporting `r`; returns one call's cost. */
  add(agentId: string, type: "llm_a" | "llm_b", model: string, r: Reported, n = 1): number {
    const cost = costOf(this.prices, type, { model, inputTokens: r.input, outputTokens: r.output, cacheWriteTokens: r.cacheWrite ?? 0, cacheReadTokens: r.cacheRead ?? 0 });
    // The report's inputTokens: every input token reported (Anthropic counts cache tokens apart).
    const input = r.input + (type === "llm_a" ? (r.cacheWrite ?? 0) + (r.cacheRead ?? 0) : 0);
    for (const [map, key] of [
      [this.byModel, model],
      [this.byAgent, agentId],
    ] as const) {
      const t = map.get(key) ?? { requests: 0, inputTokens: 0, outputTokens: 0, costNanos: 0 };
      t.requests += n;
      t.inputTokens += input * n;
      t.outputTokens += r.output * n;
      t.costNanos += cost * n;
      map.set(key, t);
    }
    return cost;
  }

  get totalNanos(): number {
    let total = 0;
    for (const t of this.byModel.values()) total += t.costNanos;
    return total;
  }
}
