// A decision on an approval that is past its expiresAt while its row still reads `pending`
// (docs/policy.md#approvals), through the real process and the real gateway: the timer that expires an approval
// runs only in the process that holds the request, so a decision served where that timer has not run must still
// see the end. Answered 410 approval_expired (or, through an approval link, 410 `Approval is no longer
// pending`), the approval becomes `expired`, nothing is remembered even with `remember`, and the held agent gets
// the timed-out 403 at once. On either engine the store's row is moved past its end directly; on PostgreSQL also
// the real case: a second instance whose clock is ahead (CREDGATE_TEST_NOW_OFFSET_SECONDS) serves the decision.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { tokenHash } from "../../src/crypto/hash.ts";
import { curlThroughGateway, type CurlResult } from "../support/curl.ts";
import { gatewayCa, until } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const HOST = "pay.expiry.test";
const TIMED_OUT = "This request was timed out by a credgate manual approval policy.";

let up: TestUpstream;
let cg: RunningCredgate;
let caFile: string;
let env: Record<string, string>;

beforeAll(async () => {
  const pki = makePki([HOST]);
  up = startUpstream(pki);
  env = { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: `${HOST}:${up.port}:127.0.0.1`, CREDGATE_APPROVAL_POLL_SECONDS: "1" };
  cg = await startCredgate({ env });
  caFile = (await gatewayCa(cg)).file;
  const rule = await cg.api("POST", "/v1/policy/rules", { body: { name: "Payments need a person", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HOST }] } });
  expect(rule.status).toBe(201);
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
}, 60_000);

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
});

function call(path: string): Promise<CurlResult> {
  return curlThroughGateway(cg, `https://${HOST}:${up.port}${path}`, { caFile, method: "POST", data: '{"amount":1}', maxTime: 60 });
}

async function pendingFor(c: RunningCredgate, path: string): Promise<any> {
  return until(async () => {
    const found = (await c.api("GET", "/v1/approvals/pending")).body.requests.find((r: any) => r.path === path);
    if (!found) throw new Error(`${path} is not held`);
    return found;
  }, 20_000);
}

/** The approval's end moved into the past in the store: what any process whose timer has not run sees. */
const endNow = (id: string) => queryStore(cg, sql`UPDATE approvals SET expires_at = ${new Date(Date.now() - 1000).toISOString()} WHERE id = ${id}`, true);
const remembered = async () => Number((await queryStore<{ n: number | string }>(cg, sql`SELECT count(*) AS n FROM remembered_approvals`))[0]!.n);

async function expectTimedOut(agent: Promise<CurlResult>, id: string, seenBefore: number): Promise<void> {
  const res = await agent;
  expect(res.status).toBe(403);
  expect(res.json).toEqual({ error: "manual_approval_denied", message: TIMED_OUT, approval_id: id });
  expect(up.seen.length).toBe(seenBefore);
}

describe("a decision after the end, where no timer settled the approval", () => {
  test("approve with remember → 410 approval_expired; expired, nothing remembered; the agent gets the timed-out 403 at once", async () => {
    const seen = up.seen.length;
    const agent = call("/pay/late");
    const approval = await pendingFor(cg, "/pay/late");
    await endNow(approval.id);
    const res = await cg.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "approve", remember: { minutes: 30 } } });
    expect(res.status).toBe(410);
    expect(res.text).toBe('{"error":"approval_expired"}');
    expect((await cg.api("GET", `/v1/approvals/${approval.id}`)).body).toMatchObject({ status: "expired", decidedBy: null });
    expect(await remembered()).toBe(0);
    expect((await cg.api("GET", "/v1/approvals/remembered")).body).toEqual([]);
    await expectTimedOut(agent, approval.id, seen);
    // The next request under the rule is held again: no approval was remembered.
    const again = call("/pay/after");
    const next = await pendingFor(cg, "/pay/after");
    expect((await cg.api("POST", `/v1/approvals/${next.id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    expect((await again).json.error).toBe("manual_approval_denied");
  }, 60_000);

  test("through the approval link: 410 Approval is no longer pending; expired, nothing remembered", async () => {
    const seen = up.seen.length;
    const agent = call("/pay/link");
    const approval = await pendingFor(cg, "/pay/link");
    // The link token goes only to notification channels: the test sets one it knows.
    const token = "c".repeat(64);
    await queryStore(cg, sql`UPDATE approvals SET link_token_hash = ${tokenHash(token)} WHERE id = ${approval.id}`, true);
    await endNow(approval.id);
    const res = await cg.api("POST", `/v1/approvals/${approval.id}/link-decision`, { key: null, body: { token, decision: "approve", remember: { minutes: 30 } } });
    expect(res.status).toBe(410);
    expect(res.body.error.message).toBe("Approval is no longer pending");
    expect((await cg.api("GET", `/v1/approvals/${approval.id}`)).body.status).toBe("expired");
    expect(await remembered()).toBe(0);
    await expectTimedOut(agent, approval.id, seen);
  }, 60_000);

  test("PostgreSQL: a second instance whose clock is past the end serves the decision; the holder's agent gets the timed-out 403", async () => {
    if (!cg.env.CREDGATE_DATABASE_URL) return; // one SQLite file has one server
    const ahead = await startCredgate({ env: { ...env, ...cg.env, CREDGATE_TEST_NOW_OFFSET_SECONDS: "600" } });
    try {
      const seen = up.seen.length;
      const agent = call("/pay/elsewhere");
      const approval = await pendingFor(cg, "/pay/elsewhere");
      // The holder's own timer (180 s) has not run; the row reads pending on both instances.
      expect((await ahead.api("GET", `/v1/approvals/${approval.id}`)).body.status).toBe("pending");
      const res = await ahead.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "approve", remember: { minutes: 30 } } });
      expect(res.status).toBe(410);
      expect(res.text).toBe('{"error":"approval_expired"}');
      expect((await cg.api("GET", `/v1/approvals/${approval.id}`)).body.status).toBe("expired");
      expect(await remembered()).toBe(0);
      await expectTimedOut(agent, approval.id, seen);
    } finally {
      await ahead.stop();
    }
  }, 90_000);
});
