// Remembered approvals through the real process (docs/policy.md#remembered-approvals): an approve with
// `remember` lets the same agent's later requests under the same rule through the real gateway without a hold
// (logged `approved_by_memory`), while another agent, or another rule, is still held; revoking ends it at once;
// and it ends by itself (the process restarted with its clock moved past the end by
// CREDGATE_TEST_NOW_OFFSET_SECONDS).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { curlThroughGateway, type CurlResult } from "../support/curl.ts";
import { gatewayCa, until } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const HOST = "pay.memory.test";
const OTHER = "mail.memory.test";

let up: TestUpstream;
let cg: RunningCredgate;
let caFile: string;
let env: Record<string, string>;
let second: { id: string; token: string };
let payRule: string;

beforeAll(async () => {
  const pki = makePki([HOST, OTHER]);
  up = startUpstream(pki);
  env = { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: `${HOST}:${up.port}:127.0.0.1,${OTHER}:${up.port}:127.0.0.1`, CREDGATE_APPROVAL_POLL_SECONDS: "1" };
  cg = await startCredgate({ env });
  caFile = (await gatewayCa(cg)).file;
  for (const [name, host] of [["Payments need a person", HOST], ["Mail needs a person", OTHER]] as const) {
    const rule = await cg.api("POST", "/v1/policy/rules", { body: { name, action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: host }] } });
    expect(rule.status).toBe(201);
    if (host === HOST) payRule = rule.body.logicalId;
  }
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
  const agent = await cg.api("POST", "/v1/agents", { body: { name: "Second agent", identifier: "second" } });
  expect(agent.status).toBe(201);
  const listed = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.id === agent.body.id);
  second = { id: agent.body.id, token: listed.accessToken };
}, 60_000);

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
});

function call(c: RunningCredgate, host: string, path: string, token?: string): Promise<CurlResult> {
  return curlThroughGateway(c, `https://${host}:${up.port}${path}`, { caFile, method: "POST", data: '{"amount":1}', agentToken: token, maxTime: 60 });
}

async function pendingFor(c: RunningCredgate, path: string): Promise<any> {
  return until(async () => {
    const found = (await c.api("GET", "/v1/approvals/pending")).body.requests.find((r: any) => r.path === path);
    if (!found) throw new Error(`${path} is not held`);
    return found;
  }, 20_000);
}

/** A request that must be held: it is, and denying it answers the agent. */
async function expectHeld(c: RunningCredgate, host: string, path: string, token?: string): Promise<void> {
  const done = call(c, host, path, token);
  const approval = await pendingFor(c, path);
  expect((await c.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
  expect((await done).json.error).toBe("manual_approval_denied");
}

async function logOf(c: RunningCredgate, path: string): Promise<any> {
  return until(async () => {
    const row = (await c.api("GET", "/v1/logs?limit=200")).body.data.find((r: any) => r.path === path);
    if (!row) throw new Error(`no log for ${path} yet`);
    return row;
  }, 15_000);
}

test("approve with remember → the agent's next request under that rule passes without a hold; others are still held; revoke ends it", async () => {
  const first = call(cg, HOST, "/pay/1");
  const approval = await pendingFor(cg, "/pay/1");
  const decided = await cg.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "approve", remember: { minutes: 15 } } });
  expect(decided.status).toBe(200);
  expect((await first).status).toBe(200);

  const remembered = await cg.api("GET", "/v1/approvals/remembered");
  const agent = (await cg.api("GET", "/v1/agents/default")).body;
  expect(remembered.body).toEqual([
    { id: expect.any(String), agentId: agent.id, ruleId: payRule, ruleName: "Payments need a person", expiresAt: decided.body.rememberedUntil, createdBy: { userId: expect.any(String), email: "owner@localhost" } },
  ]);

  // No approval is created: the request is forwarded at once.
  const seenBefore = up.seen.length;
  const next = await call(cg, HOST, "/pay/2");
  expect(next.status).toBe(200);
  expect(next.json.url).toBe("/pay/2");
  expect(up.seen.length).toBe(seenBefore + 1);
  expect((await cg.api("GET", "/v1/approvals/pending")).body.requests).toEqual([]);
  expect(await logOf(cg, "/pay/2")).toMatchObject({ decision: "approved_by_memory", status: 200, matchedRuleLogicalId: payRule, matchedRuleName: "Payments need a person", approvalId: null });
  expect((await cg.api("GET", "/v1/logs?decision=approved_by_memory")).body.data.map((r: any) => r.path)).toEqual(["/pay/2"]);

  // Another agent under the same rule, and the same agent under another rule: held.
  await expectHeld(cg, HOST, "/pay/other-agent", second.token);
  await expectHeld(cg, OTHER, "/mail/1");

  // Revoked: held again at once.
  const member = remembered.body[0];
  expect((await cg.api("DELETE", `/v1/approvals/remembered/${member.id}`)).status).toBe(204);
  await expectHeld(cg, HOST, "/pay/3");
  expect((await cg.api("GET", "/v1/approvals/remembered")).body).toEqual([]);
}, 90_000);

test("a remembered approval ends by itself: after its end (clock moved past it), the request is held again", async () => {
  const first = call(cg, HOST, "/pay/expiring", second.token);
  const approval = await pendingFor(cg, "/pay/expiring");
  expect((await cg.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "approve", remember: { minutes: 1 } } })).status).toBe(200);
  expect((await first).status).toBe(200);
  expect((await call(cg, HOST, "/pay/still", second.token)).status).toBe(200);
  expect(await logOf(cg, "/pay/still")).toMatchObject({ decision: "approved_by_memory" });

  // The same data (and database) two minutes later.
  await cg.stop();
  cg = await startCredgate({ dataDir: cg.dataDir, env: { ...env, CREDGATE_TEST_NOW_OFFSET_SECONDS: "120" } });
  caFile = (await gatewayCa(cg)).file;
  expect((await cg.api("GET", "/v1/approvals/remembered")).body).toEqual([]);
  await expectHeld(cg, HOST, "/pay/later", second.token);
}, 90_000);

test("the clock offset is refused in cloud mode", async () => {
  const { runCli } = await import("../support/process.ts");
  const r = await runCli(["serve", "--mode", "cloud", "--port", "0", "--gateway-port", "0"], { CREDGATE_TEST_NOW_OFFSET_SECONDS: "60", CREDGATE_DATA_DIR: tempDir() });
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("CREDGATE_TEST_NOW_OFFSET_SECONDS is for tests and is refused in cloud mode");
});
