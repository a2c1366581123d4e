// The budgets row (docs/budgets.md#budgets-for-every-scope, docs/budgets.md#leases): the same metered requests
// without budgets, then under an agent, a project and an organization budget (large enough never to refuse),
// then without again (deleted), … in alternating rounds, so that the VM's drift between runs shows as spread
// between rounds instead of as the budgets' cost. Used by bench/gateway.ts and bench/budgets.ts.
import type { RunningCredgate } from "../test/support/process.ts";
import { parseExposition, sampleValue } from "../test/support/prometheus.ts";
import type { LoadResult } from "./load.ts";

export interface BudgetRounds {
  without: LoadResult[];
  under: LoadResult[];
  /** What the three budgets counted in each round (proof they were in force), in cents. */
  spentCents: number[][];
  /** Admissions decided from leases and in the store over all rounds (credgate_budget_admissions_total). */
  admissions: { lease: number; store: number };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The share of throughput the budgets cost: 1 − mean throughput under them ÷ mean throughput without. */
export const budgetCost = (r: BudgetRounds) => 1 - mean(r.under.map((x) => x.rps)) / mean(r.without.map((x) => x.rps));

export async function budgetRounds(cg: RunningCredgate, run: () => Promise<LoadResult>, rounds: number): Promise<BudgetRounds> {
  const out: BudgetRounds = { without: [], under: [], spentCents: [], admissions: { lease: 0, store: 0 } };
  for (let i = 0; i < rounds; i++) {
    out.without.push(await run());
    const ids = await activateBudgets(cg);
    out.under.push(await run());
    // Settlement is batched (tens of milliseconds): read once it caught up.
    await Bun.sleep(1000);
    const all = [...(await cg.api("GET", "/v1/budgets")).body, ...(await cg.api("GET", "/v1/org/budgets", { key: cg.keys.orgApiKey })).body];
    out.spentCents.push(ids.map((id) => all.find((b: { id: string; spentCents: number }) => b.id === id)?.spentCents ?? 0));
    await deleteBudgets(cg, ids);
  }
  const metrics = parseExposition(await (await fetch(`${cg.apiUrl}/metrics`)).text());
  for (const decided of ["lease", "store"] as const) out.admissions[decided] = sampleValue(metrics, "credgate_budget_admissions_total", { decided });
  return out;
}

/** An agent, a project and an organization budget on the LLM path's agent, each $1,000,000 a period: they admit every request. */
async function activateBudgets(cg: RunningCredgate): Promise<string[]> {
  const agentId = (await cg.api("GET", "/v1/agents")).body.find((a: { isDefault: boolean }) => a.isDefault).id;
  const made = [
    await cg.api("POST", "/v1/budgets", { body: { scope: "agent", agentId, limitCents: 100_000_000, period: "day" } }),
    await cg.api("POST", "/v1/budgets", { body: { scope: "project", limitCents: 100_000_000, period: "month" } }),
    await cg.api("POST", "/v1/org/budgets", { key: cg.keys.orgApiKey, body: { limitCents: 100_000_000, period: "total" } }),
  ];
  for (const r of made) if (r.status !== 201) throw new Error(`creating a budget failed: ${r.status} ${r.text}`);
  return made.map((r) => r.body.id);
}

async function deleteBudgets(cg: RunningCredgate, ids: string[]): Promise<void> {
  const gone = [
    await cg.api("DELETE", `/v1/budgets/${ids[0]}`),
    await cg.api("DELETE", `/v1/budgets/${ids[1]}`),
    await cg.api("DELETE", `/v1/org/budgets/${ids[2]}`, { key: cg.keys.orgApiKey }),
  ];
  for (const r of gone) if (r.status !== 204) throw new Error(`deleting a budget failed: ${r.status} ${r.text}`);
}
