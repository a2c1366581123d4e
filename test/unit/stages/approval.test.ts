// The approval stage (docs/policy.md#approvals) with the real approval service on a real store, behind the real
// auth and policy stages: a request the policy sends for approval is held, its log row written at once (202,
// approval_pending), until a person decides through the API — approved: it goes on, logged as
// approval_approved; denied: 403 manual_approval_denied — or the agent goes away (cancelled). A request the
// policy did not send passes at once; a store that cannot hold it is 502 approval_store_unavailable.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { PipelineDeps } from "../../../src/gateway/pipeline.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { Pipeline } from "../../../src/gateway/pipeline.ts";
import { Reply } from "../../../src/gateway/reply.ts";
import { relay } from "../../../src/gateway/stage.ts";
import { approvalStage } from "../../../src/gateway/stages/approval.ts";
import { logStage } from "../../../src/gateway/stages/log.ts";
import { authStage } from "../../../src/gateway/stages/auth.ts";
import { policyStage } from "../../../src/gateway/stages/policy.ts";
import { TestAgentSide, testPipelineDeps, testRequest, testTunnel } from "../../../src/gateway/testing.ts";
import { createTestApi, type TestApi } from "../../support/app.ts";
import { until } from "../../support/gateway.ts";
import { outcome } from "./helpers.ts";

const TWO_RULES = "two.approve.test";
let api: TestApi;
let deps: PipelineDeps;
let stage: ReturnType<typeof approvalStage>;

beforeAll(async () => {
  api = await createTestApi();
  const rule = { name: "Sends need approval", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: "approve.test", method: "POST" }] };
  expect((await api.call("POST", "/v1/policy/rules", { body: rule })).status).toBe(201);
  for (const path of ["/a/*", "/b/*"]) {
    const body = { name: `Approve ${path}`, action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: TWO_RULES, pathPattern: path }] };
    expect((await api.call("POST", "/v1/policy/rules", { body })).status).toBe(201);
  }
  expect((await api.call("POST", "/v1/policy/publish")).status).toBe(200);
  deps = await testPipelineDeps(api.core.config, api.core.services);
  stage = approvalStage({ approvals: api.core.services.approvals, requestLogs: api.core.services.requestLogs, remembered: deps.snapshot.remembered });
});

afterAll(async () => {
  deps.upstreams.close();
  await api.core.close();
});

/** A request of the default agent through the real auth and policy stages. */
async function request(method: string, body: string | null = null, side?: TestAgentSide): Promise<ProxyRequest> {
  const tunnel = testTunnel({ authority: "approve.test:443", token: api.core.bootstrap.defaultAgentToken });
  const rq = testRequest({ tunnel, method, target: "/send?to=ops", body, headers: { "content-type": "application/json", authorization: "Bearer hidden" }, side });
  expect(await outcome(authStage({ snapshot: deps.snapshot }).request!(rq))).toBe("pass");
  expect(await outcome(policyStage({ rateLimits: api.core.services.rateLimits }).request!(rq))).toBe("pass");
  return rq;
}

/** A GET of the default agent on TWO_RULES, through the real auth and policy stages. */
async function requestTo(target: string): Promise<ProxyRequest> {
  const tunnel = testTunnel({ authority: `${TWO_RULES}:443`, token: api.core.bootstrap.defaultAgentToken });
  const rq = testRequest({ tunnel, method: "GET", target });
  expect(await outcome(authStage({ snapshot: deps.snapshot }).request!(rq))).toBe("pass");
  expect(await outcome(policyStage({ rateLimits: api.core.services.rateLimits }).request!(rq))).toBe("pass");
  return rq;
}

/** The approval the request is held on, once its row exists. */
async function held(rq: ProxyRequest): Promise<{ id: string; requestLogId: string }> {
  return until(() => {
    if (!rq.approval) throw new Error("not held yet");
    return rq.approval;
  });
}

async function logRow(id: string) {
  await api.core.services.requestLogs.flush();
  const rows = (await api.call("GET", "/v1/logs?host=approve.test")).body.data as { id: string; status: number; decision: string; approvalId: string }[];
  return rows.find((r) => r.id === id);
}

describe("held requests", () => {
  test("approved: logged 202 approval_pending while held, then goes on as approval_approved; the body still whole", async () => {
    const body = '{"text":"ship it"}';
    const rq = await request("POST", body);
    const verdict = stage.request!(rq);
    expect(verdict).toBeInstanceOf(Promise);
    const { id, requestLogId } = await held(rq);
    expect(await logRow(requestLogId)).toMatchObject({ status: 202, decision: "approval_pending", approvalId: id });
    const pending = (await api.call("GET", `/v1/approvals/${id}`)).body;
    expect(pending).toMatchObject({ method: "POST", host: "approve.test", path: "/send?to=ops" });
    expect(JSON.stringify(pending)).not.toContain("Bearer hidden");
    expect((await api.call("POST", `/v1/approvals/${id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
    expect(await verdict).toEqual({ decision: "approval_approved", response: null });
    expect(await new Response(rq.body).text()).toBe(body);
    // Once answered (the runner took the decision), the log stage updates the same row.
    const pipeline = new Pipeline([logStage({ requestLogs: api.core.services.requestLogs }), { name: "decided", request: () => verdict }, { name: "forward", request: () => relay(new Reply(200, "OK", [], null)) }]);
    await pipeline.request(rq);
    expect(await logRow(requestLogId)).toMatchObject({ status: 200, decision: "approval_approved", approvalId: id });
  });

  test("denied → 403 manual_approval_denied with the approval id, decision approval_denied", async () => {
    const rq = await request("POST", "{}");
    const verdict = stage.request!(rq);
    const { id } = await held(rq);
    expect((await api.call("POST", `/v1/approvals/${id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    expect(await outcome(verdict)).toEqual({
      decision: "approval_denied",
      status: 403,
      headers: expect.objectContaining({ "x-should-retry": "false" }),
      body: { error: "manual_approval_denied", message: "This request was denied by a credgate manual approval policy.", approval_id: id },
    });
  });

  test("the agent goes away while held: the approval is cancelled, decision approval_cancelled", async () => {
    const side = new TestAgentSide("POST", "/send?to=ops", { "content-type": "application/json" }, "{}");
    const rq = await request("POST", null, side);
    const verdict = stage.request!(rq);
    const { id } = await held(rq);
    side.goAway();
    expect(await outcome(verdict)).toMatchObject({ decision: "approval_cancelled", status: 503, headers: { "retry-after": "1" }, body: { error: "gateway_restarting", approval_id: id } });
    expect((await api.call("GET", `/v1/approvals/${id}`)).body.status).toBe("cancelled");
  });
});

describe("remembered approvals", () => {
  test("approved with remember: the same agent under the same rule passes synchronously as approved_by_memory; a revoke holds it again", async () => {
    const first = await request("POST", "{}");
    const verdict = stage.request!(first);
    const { id } = await held(first);
    const decided = await api.call("POST", `/v1/approvals/${id}/decision`, { body: { decision: "approve", remember: { minutes: 15 } } });
    expect(decided.status).toBe(200);
    expect(await verdict).toEqual({ decision: "approval_approved", response: null });
    const next = await request("POST", "{}");
    expect(next.needsApproval).toBe(true);
    expect(stage.request!(next)).toEqual({ decision: "approved_by_memory", response: null });
    const [memory] = (await api.call("GET", "/v1/approvals/remembered")).body as { id: string }[];
    expect((await api.call("DELETE", `/v1/approvals/remembered/${memory!.id}`)).status).toBe(204);
    const after = await request("POST", "{}");
    const again = stage.request!(after);
    expect(again).toBeInstanceOf(Promise);
    const { id: heldAgain } = await held(after);
    expect((await api.call("POST", `/v1/approvals/${heldAgain}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    expect(await outcome(again)).toMatchObject({ decision: "approval_denied", status: 403 });
  });
});

describe("remembered approvals and every reading of the path (docs/injection.md#every-reading-of-a-path)", () => {
  /** Holds `target`, then approves it remembering the decision for 15 minutes. */
  async function approveRemembering(target: string): Promise<void> {
    const rq = await requestTo(target);
    const verdict = stage.request!(rq);
    const { id } = await held(rq);
    expect((await api.call("POST", `/v1/approvals/${id}/decision`, { body: { decision: "approve", remember: { minutes: 15 } } })).status).toBe(200);
    expect(await verdict).toEqual({ decision: "approval_approved", response: null });
  }

  test("a path whose readings reach two approval rules passes by memory only once both were remembered", async () => {
    const both = await requestTo("/a/../b/1");
    expect(both.heldBy.length).toBe(2);
    await approveRemembering("/a/x");
    // Rule /a/* is remembered, /b/* is not: held, the approval naming the rule still to be decided.
    const stillHeld = await requestTo("/a/../b/1");
    const verdict = stage.request!(stillHeld);
    expect(verdict).toBeInstanceOf(Promise);
    const { id } = await held(stillHeld);
    const [row] = await api.core.store.query<{ rule_name: string }>(sql`SELECT rule_name FROM approvals WHERE id = ${id}`);
    expect(row?.rule_name).toBe("Approve /b/*");
    expect((await api.call("POST", `/v1/approvals/${id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    expect(await outcome(verdict)).toMatchObject({ decision: "approval_denied", status: 403 });
    // Approving that one with remember: from then on both are remembered.
    await approveRemembering("/a/../b/1");
    expect(stage.request!(await requestTo("/a/../b/1"))).toEqual({ decision: "approved_by_memory", response: null });
    expect(stage.request!(await requestTo("/b/%2e/2"))).toEqual({ decision: "approved_by_memory", response: null });
  });
});

describe("not held", () => {
  test("a request the policy did not send for approval passes synchronously", () => {
    return request("GET").then((rq) => {
      expect(rq.needsApproval).toBe(false);
      expect(stage.request!(rq)).toEqual({ decision: null, response: null });
    });
  });

  test("a store that cannot hold the request → 502 approval_store_unavailable, decision error", async () => {
    const closed = await createTestApi();
    const broken = approvalStage({ approvals: closed.core.services.approvals, requestLogs: closed.core.services.requestLogs, remembered: deps.snapshot.remembered });
    const rq = await request("POST", "{}");
    await closed.core.close();
    expect(await outcome(broken.request!(rq))).toMatchObject({
      decision: "error",
      status: 502,
      body: { error: "approval_store_unavailable", message: "credgate manual approval service is temporarily unavailable." },
    });
  });
});
