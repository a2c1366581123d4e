// Partner LLM keys with spend budgets for a running credgate, written straight into its store: the partner
// API (issue 14) is not needed to test metering and admission (issue 15). The organization of the process
// is attributed to a partner, and each key is sealed with the process's own master key, exactly as the
// service would store it. Create the agent that uses a key only after the key exists: an agent's view is
// read from the store on its first request, and nothing announced these rows.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { Sealer } from "../../src/crypto/seal.ts";
import type { RunningCredgate } from "./process.ts";
import { queryStore } from "./storeQuery.ts";

function sealerOf(c: RunningCredgate): Sealer {
  const key = c.env.CREDGATE_MASTER_KEY || readFileSync(join(c.dataDir, "master.key"), "utf8").trim();
  return new Sealer(Buffer.from(key, "base64"));
}

/** The partner of the process's organization, created on first use. */
async function partnerOf(c: RunningCredgate): Promise<string> {
  const [org] = await queryStore<{ partner_id: string | null }>(c, sql`SELECT partner_id FROM organizations WHERE id = ${c.keys.organizationId}`);
  if (org?.partner_id) return org.partner_id;
  const id = crypto.randomUUID();
  await queryStore(c, sql`INSERT INTO partners (id, name, created_at) VALUES (${id}, ${"Acme Partner"}, ${new Date().toISOString()})`, true);
  await queryStore(c, sql`UPDATE organizations SET partner_id = ${id} WHERE id = ${c.keys.organizationId}`, true);
  return id;
}

export interface PartnerKey {
  secretId: string;
  /** The id of its budget (null without one): what names the budget's windows in `budget_windows`. */
  budgetId: string | null;
}

/** A partner LLM secret for `hostPattern`, and optionally its budget for the process's organization. */
export async function addPartnerLlmKey(
  c: RunningCredgate,
  opts: { type: "llm_a" | "llm_b"; value: string; hostPattern: string; budget?: { limitCents: number; period: "monthly" | "total" } },
): Promise<PartnerKey> {
  const partnerId = await partnerOf(c);
  const id = crypto.randomUUID();
  const now = new Date().toISOString();
  const metadata = JSON.stringify({ authMode: "api-key" });
  await queryStore(
    c,
    sql`INSERT INTO secrets (id, scope, organization_id, project_id, partner_id, name, type, value_source, value_sealed, op_ref, host_pattern, path_pattern, injection_config, metadata, created_at, updated_at)
        VALUES (${id}, 'partner', NULL, NULL, ${partnerId}, ${`Partner ${opts.type} ${opts.hostPattern}`}, ${opts.type}, 'inline', ${sealerOf(c).seal(opts.value)}, NULL, ${opts.hostPattern}, NULL, NULL, ${metadata}, ${now}, ${now})`,
    true,
  );
  const budgetId = opts.budget ? crypto.randomUUID() : null;
  if (opts.budget) {
    await queryStore(
      c,
      sql`INSERT INTO budgets (id, secret_id, organization_id, limit_cents, period, created_at, updated_at) VALUES (${budgetId}, ${id}, ${c.keys.organizationId}, ${opts.budget.limitCents}, ${opts.budget.period}, ${now}, ${now})`,
      true,
    );
  }
  return { secretId: id, budgetId };
}

/** What a partner budget's windows count as spent, in nano-USD (every window of it: one in a test). */
export async function budgetSpentOf(c: RunningCredgate, budgetId: string): Promise<number> {
  const [row] = await queryStore<{ spent: number | string | null }>(c, sql`SELECT SUM(spent_nanos) AS spent FROM budget_windows WHERE partner_budget_id = ${budgetId}`);
  return Number(row?.spent ?? 0);
}

/** Spend of a key for the process's organization, in nano-USD: the month bucket and the total. */
export async function spendOf(c: RunningCredgate, secretId: string): Promise<{ month: number; total: number }> {
  const rows = await queryStore<{ bucket: string; nanos: number | string }>(c, sql`SELECT bucket, nanos FROM budget_spend WHERE secret_id = ${secretId} AND organization_id = ${c.keys.organizationId}`);
  const month = new Date().toISOString().slice(0, 7);
  return { month: Number(rows.find((r) => r.bucket === month)?.nanos ?? 0), total: Number(rows.find((r) => r.bucket === "total")?.nanos ?? 0) };
}

/**
 * Makes the process's organization an unclaimed partner organization (docs/guards.md#claim-required) with a placeholder owner and a
 * claim link, as `POST /partner/orgs` leaves one. Agents created afterwards see it; returns the link's token.
 */
export async function makeUnclaimed(c: RunningCredgate): Promise<{ token: string; claimUrl: string; partnerName: string }> {
  await partnerOf(c);
  const token = Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join("");
  const placeholder = crypto.randomUUID();
  const now = new Date().toISOString();
  await queryStore(c, sql`UPDATE organizations SET claimed = ${c.env.CREDGATE_DATABASE_URL ? sql`false` : sql`0`} WHERE id = ${c.keys.organizationId}`, true);
  await queryStore(c, sql`INSERT INTO users (id, email, name, password_hash, created_at) VALUES (${placeholder}, ${`placeholder-${placeholder}@claim.credgate.invalid`}, NULL, NULL, ${now})`, true);
  await queryStore(c, sql`INSERT INTO memberships (organization_id, user_id, role, status, created_at) VALUES (${c.keys.organizationId}, ${placeholder}, 'owner', 'pending', ${now})`, true);
  await queryStore(
    c,
    sql`INSERT INTO claim_links (id, kind, token_hash, token_sealed, organization_id, project_id, user_id, expires_at, created_at)
        VALUES (${crypto.randomUUID()}, 'organization', ${new Bun.CryptoHasher("sha256").update(token).digest("hex")}, ${sealerOf(c).seal(token)}, ${c.keys.organizationId}, NULL, ${placeholder}, NULL, ${now})`,
    true,
  );
  const publicUrl = c.env.CREDGATE_PUBLIC_URL ?? `http://localhost:${c.apiPort}`;
  return { token, claimUrl: `${publicUrl}/claim?token=${token}`, partnerName: "Acme Partner" };
}
