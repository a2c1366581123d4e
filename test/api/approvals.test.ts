// Approvals API (docs/policy.md#approvals, docs/policy.md#reviewing-approvals) through the in-process API. Held requests come from
// the real approval service (`hold`, what the gateway calls); the gateway side is in test/e2e/policy-gateway.
import { beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { tokenHash } from "../../src/crypto/hash.ts";
import { setClockOffset } from "../../src/runtime/clock.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addMember, addOrganization, addProject, expectEnvelope, expectFlat, expectUnauthorized, ISO_MS } from "./helpers.ts";

const UNKNOWN = "00000000-0000-4000-8000-000000000000";
const POLL_SECONDS = 0.6;

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi({ CREDGATE_APPROVAL_POLL_SECONDS: String(POLL_SECONDS) });
});

/** A pending approval, as the gateway's hold stage creates it, for the project's default agent. */
async function hold(a: TestApi, projectId = a.projectId, path = "/v1/send", rule: { logicalId: string; name: string } | null = null) {
  const { agents, orgs } = a.core.services;
  const agent = (await agents.list(projectId)).find((x) => x.isDefault)!;
  const project = (await orgs.getProject(projectId))!;
  return await a.core.services.approvals.hold({
    organizationId: project.organizationId,
    projectId,
    agent: { id: agent.id, name: agent.name, identifier: agent.identifier },
    method: "POST",
    url: `https://api.x.com${path}`,
    host: "api.x.com",
    path,
    headers: { "content-type": "application/json" },
    bodyPreview: 'POST request\nEndpoint: /v1/send\nBody: {"a":1}',
    summary: { action: "POST request", details: [{ label: "Endpoint", value: "/v1/send" }, { label: "Body", value: '{"a":1}' }] },
    rule,
  });
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await work;
  return { value, ms: performance.now() - t0 };
}

describe("no held request", () => {
  test("GET /approvals/{id}: unknown id → flat 404 approval_not_found", async () => {
    for (const id of [UNKNOWN, "not-a-uuid"]) {
      const res = await api.call("GET", `/v1/approvals/${id}`);
      expect(res.text).toBe('{"error":"approval_not_found"}');
      expectFlat(res, 404, "approval_not_found");
    }
  });

  test("example 34: decision on an unknown id → flat 404 approval_not_found", async () => {
    const res = await api.call("POST", `/v1/approvals/${UNKNOWN}/decision`, { body: { decision: "approve" } });
    expect(res.text).toBe('{"error":"approval_not_found"}');
    expectFlat(res, 404, "approval_not_found");
    expectFlat(await api.call("POST", `/v1/approvals/${UNKNOWN}/decision`, { key: api.orgKey, body: { decision: "deny" } }), 404, "approval_not_found");
  });

  test("decision validation → flat 400, before the lookup", async () => {
    const cases: [unknown, string][] = [
      [{ decision: "maybe" }, "decision must be one of: approve, deny"],
      [{ decision: "APPROVE" }, "decision must be one of: approve, deny"],
      [{ decision: true }, "decision must be one of: approve, deny"],
      [{}, "decision is required"],
      [{ decision: null }, "decision is required"],
      ["[]", "Request body must be a JSON object"],
      ["{nope", "Request body must be valid JSON"],
    ];
    for (const [body, message] of cases) expectFlat(await api.call("POST", `/v1/approvals/${UNKNOWN}/decision`, { body }), 400, message);
  });

  test("pending long-poll holds for the poll time, then {requests:[], timeoutSeconds:180}", async () => {
    const { value: res, ms } = await timed(api.call("GET", "/v1/approvals/pending"));
    expect(res.status).toBe(200);
    expect(res.text).toBe('{"requests":[],"timeoutSeconds":180}');
    expect(ms).toBeGreaterThanOrEqual(POLL_SECONDS * 1000 - 50);
    expect(ms).toBeLessThan(POLL_SECONDS * 1000 + 1500);
  });

  test("timeoutSeconds is the approval lifetime (CREDGATE_APPROVAL_TIMEOUT_SECONDS), not the hold", async () => {
    const a = await createTestApi({ CREDGATE_APPROVAL_POLL_SECONDS: "0.2", CREDGATE_APPROVAL_TIMEOUT_SECONDS: "45" });
    expect((await a.call("GET", "/v1/approvals/pending")).body).toEqual({ requests: [], timeoutSeconds: 45 });
  });

  test("GET /org/approvals/pending: org key → 200; a project key → 403; a member → 403; no key → 401", async () => {
    const res = await api.call("GET", "/v1/org/approvals/pending", { key: api.orgKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ requests: [], timeoutSeconds: 180 });
    const asProject = await api.call("GET", "/v1/org/approvals/pending", { key: api.projectKey });
    expect(asProject.text).toBe('{"error":{"message":"An organization API key is required for this endpoint","type":"authentication_error"}}');
    expectEnvelope(asProject, 403, "An organization API key is required for this endpoint");
    const member = await addMember(api, "member");
    // A member's project key fails both gates (role and key kind); either message is a 403 envelope.
    const asMember = await api.call("GET", "/v1/org/approvals/pending", { key: member.projectKey });
    expect(asMember.status).toBe(403);
    expect(["Insufficient permissions", "An organization API key is required for this endpoint"]).toContain(asMember.body.error.message);
    expectUnauthorized(await api.call("GET", "/v1/org/approvals/pending", { key: member.orgKey }));
    expectUnauthorized(await api.call("GET", "/v1/org/approvals/pending", { key: null }));
    const admin = await addMember(api, "admin");
    expect((await api.call("GET", "/v1/org/approvals/pending", { key: admin.orgKey })).status).toBe(200);
  });

  test("the project list needs a project context", async () => {
    expectUnauthorized(await api.call("GET", "/v1/approvals/pending", { key: null }));
    expectUnauthorized(await api.call("GET", "/v1/approvals/pending", { key: api.orgKey }));
    expectUnauthorized(await api.call("GET", `/v1/approvals/${UNKNOWN}`, { key: null }));
    expectUnauthorized(await api.call("POST", `/v1/approvals/${UNKNOWN}/decision`, { key: null, body: { decision: "approve" } }));
  });
});

describe("with held requests", () => {
  test("pending returns at once with the request shape; exclude skips ids (blanks ignored)", async () => {
    const a = await createTestApi({ CREDGATE_APPROVAL_POLL_SECONDS: String(POLL_SECONDS) });
    const first = await hold(a);
    const second = await hold(a, a.projectId, "/v1/other");
    const { value: res, ms } = await timed(a.call("GET", "/v1/approvals/pending"));
    expect(ms).toBeLessThan(300);
    expect(res.status).toBe(200);
    expect(res.body.timeoutSeconds).toBe(180);
    // Two approvals created in the same millisecond: the order is not part of the contract.
    expect(res.body.requests.map((r: any) => r.id).sort()).toEqual([first.row.id, second.row.id].sort());
    const item = res.body.requests.find((r: any) => r.id === first.row.id);
    expect(Object.keys(item).sort()).toEqual(["agent", "bodyPreview", "createdAt", "expiresAt", "headers", "host", "id", "method", "path", "projectId", "summary", "url"]);
    expect(item.bodyPreview).toBe('POST request\nEndpoint: /v1/send\nBody: {"a":1}');
    expect(item.summary).toEqual({ action: "POST request", details: [{ label: "Endpoint", value: "/v1/send" }, { label: "Body", value: '{"a":1}' }] });
    const agent = (await a.call("GET", "/v1/agents/default")).body;
    expect(item).toMatchObject({
      projectId: a.projectId,
      method: "POST",
      url: "https://api.x.com/v1/send",
      host: "api.x.com",
      path: "/v1/send",
      headers: { "content-type": "application/json" },
      agent: { id: agent.id, name: "Default Agent", externalId: "default" },
    });
    expect(item.createdAt).toMatch(ISO_MS);
    expect(Date.parse(item.expiresAt) - Date.parse(item.createdAt)).toBe(180_000);

    // An org key selects the project with X-Project-Id.
    const viaOrg = await a.call("GET", "/v1/approvals/pending", { key: a.orgKey, headers: { "x-project-id": a.projectId } });
    expect(viaOrg.body.requests.map((r: any) => r.id).sort()).toEqual([first.row.id, second.row.id].sort());
    const excluded = await a.call("GET", `/v1/approvals/pending?exclude=${first.row.id},,%20`);
    expect(excluded.body.requests.map((r: any) => r.id)).toEqual([second.row.id]);
    const { value: none, ms: held } = await timed(a.call("GET", `/v1/approvals/pending?exclude=${first.row.id}, ${second.row.id}`));
    expect(none.body).toEqual({ requests: [], timeoutSeconds: 180 });
    expect(held).toBeGreaterThanOrEqual(POLL_SECONDS * 1000 - 50);
  });

  test("a waiting long-poll returns as soon as a new approval arrives", async () => {
    const a = await createTestApi({ CREDGATE_APPROVAL_POLL_SECONDS: "10" });
    const t0 = performance.now();
    const poll = a.call("GET", "/v1/approvals/pending");
    // A fixed pause so the poll is waiting when the approval comes (the service does not say it is).
    await Bun.sleep(200);
    const held = await hold(a);
    const res = await poll;
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(res.body.requests.map((r: any) => r.id)).toEqual([held.row.id]);
  });

  test("approve → 200 {success:true}, the holder is released approved; a second decision → 410; the record shows who decided", async () => {
    const a = await createTestApi({ CREDGATE_APPROVAL_POLL_SECONDS: "0.2" });
    const held = await hold(a);
    const res = await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { body: { decision: "approve" } });
    expect(res.status).toBe(200);
    expect(res.text).toBe('{"success":true}');
    expect(await held.outcome).toBe("approved");
    const again = await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { body: { decision: "deny" } });
    expect(again.text).toBe('{"error":"approval_expired"}');
    expectFlat(again, 410, "approval_expired");
    const record = await a.call("GET", `/v1/approvals/${held.row.id}`);
    expect(record.status).toBe(200);
    expect(record.body).toMatchObject({ id: held.row.id, status: "approved", decidedBy: { userId: a.core.bootstrap.userId, email: "owner@localhost" } });
    expect(record.body.decidedAt).toMatch(ISO_MS);
    // No longer pending.
    expect((await a.call("GET", "/v1/approvals/pending")).body.requests).toEqual([]);
  });

  test("deny → the holder gets denied; the record says denied", async () => {
    const a = await createTestApi();
    const held = await hold(a);
    expect((await a.call("GET", `/v1/approvals/${held.row.id}`)).body).toMatchObject({ status: "pending", decidedAt: null, decidedBy: null });
    expect((await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    expect(await held.outcome).toBe("denied");
    expect((await a.call("GET", `/v1/approvals/${held.row.id}`)).body.status).toBe("denied");
  });

  test("an org key may decide without X-Project-Id; another project's key or organization → 404", async () => {
    const a = await createTestApi();
    const other = await addProject(a, "Approvals elsewhere");
    const held = await hold(a, other.project.id);
    // The bootstrap project's key cannot see the other project's approval.
    expectFlat(await a.call("GET", `/v1/approvals/${held.row.id}`), 404, "approval_not_found");
    expectFlat(await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { body: { decision: "approve" } }), 404, "approval_not_found");
    // An org key with the wrong project header does not either.
    expectFlat(await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { key: a.orgKey, headers: { "x-project-id": a.projectId }, body: { decision: "approve" } }), 404, "approval_not_found");
    const stranger = await addOrganization(a, "Approval strangers");
    expectFlat(await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { key: stranger.orgKey, body: { decision: "approve" } }), 404, "approval_not_found");
    expectUnauthorized(await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { key: a.orgKey, headers: { "x-project-id": stranger.project.id }, body: { decision: "approve" } }));
    // The other project's own key sees it; the org key decides without a project header.
    expect((await a.call("GET", `/v1/approvals/${held.row.id}`, { key: other.projectKey })).body.status).toBe("pending");
    expect((await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { key: a.orgKey, body: { decision: "approve" } })).status).toBe(200);
    expect(await held.outcome).toBe("approved");
  });

  test("org pending lists every project's approvals with projectId", async () => {
    const a = await createTestApi({ CREDGATE_APPROVAL_POLL_SECONDS: "0.3" });
    const other = await addProject(a, "Org-wide approvals");
    const mine = await hold(a);
    const theirs = await hold(a, other.project.id);
    const org = await a.call("GET", "/v1/org/approvals/pending", { key: a.orgKey });
    const byId = Object.fromEntries(org.body.requests.map((r: any) => [r.id, r.projectId]));
    expect(byId).toEqual({ [mine.row.id]: a.projectId, [theirs.row.id]: other.project.id });
    expect((await a.call("GET", `/v1/org/approvals/pending?exclude=${mine.row.id}`, { key: a.orgKey })).body.requests.map((r: any) => r.id)).toEqual([theirs.row.id]);
    // The project list only has its own.
    expect((await a.call("GET", "/v1/approvals/pending")).body.requests.map((r: any) => r.id)).toEqual([mine.row.id]);
    expect((await a.call("GET", "/v1/approvals/pending", { key: other.projectKey })).body.requests.map((r: any) => r.id)).toEqual([theirs.row.id]);
    // Another organization sees none of them.
    const stranger = await addOrganization(a, "Other approvals org");
    expect((await a.call("GET", "/v1/org/approvals/pending", { key: stranger.orgKey })).body.requests).toEqual([]);
  });

  test("timeout: the approval expires, leaves the pending list, and a late decision → 410", async () => {
    const a = await createTestApi({ CREDGATE_APPROVAL_POLL_SECONDS: "0.2", CREDGATE_APPROVAL_TIMEOUT_SECONDS: "0.4" });
    const held = await hold(a);
    expect(await held.outcome).toBe("expired");
    expect((await a.call("GET", `/v1/approvals/${held.row.id}`)).body).toMatchObject({ status: "expired", decidedBy: null });
    expectFlat(await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { body: { decision: "approve" } }), 410, "approval_expired");
    expect((await a.call("GET", "/v1/approvals/pending")).body.requests).toEqual([]);
  });

  test("shutdown (releaseAll): holders are cancelled and long-polls answer {requests:[]} at once", async () => {
    const a = await createTestApi({ CREDGATE_APPROVAL_POLL_SECONDS: "10" });
    const held = await hold(a);
    const poll = a.call("GET", `/v1/approvals/pending?exclude=${held.row.id}`);
    // A fixed pause so the poll is waiting when the shutdown comes (the service does not say it is).
    await Bun.sleep(100);
    const t0 = performance.now();
    await a.core.services.approvals.releaseAll();
    expect(await held.outcome).toBe("cancelled");
    const res = await poll;
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(res.body.requests).toEqual([]);
    expect((await a.call("GET", `/v1/approvals/${held.row.id}`)).body.status).toBe("cancelled");
  });
});

describe("a decision on an approval still pending but past its expiresAt (its timer never ran here)", () => {
  // The clock that expiries read moved past the approval's end (CREDGATE_TEST_NOW_OFFSET_SECONDS does this to a
  // whole process): what a process sees when the holder's timer did not settle the row first — the holder
  // restarted, or another process or instance serves the decision. The holding timer (real time) never fires here.
  async function expiredButPending(a: TestApi) {
    const held = await hold(a, a.projectId, "/v1/send", { logicalId: crypto.randomUUID(), name: "Needs a person" });
    setClockOffset(a.core.config.approvalTimeoutSeconds + 1);
    const row = (await a.core.store.query<{ status: string }>(sql`SELECT status FROM approvals WHERE id = ${held.row.id}`))[0]!;
    expect(row.status).toBe("pending");
    return held;
  }
  const rememberedRows = async (a: TestApi) => Number((await a.core.store.query<{ n: number }>(sql`SELECT count(*) AS n FROM remembered_approvals`))[0]!.n);

  test("approve with remember → 410 approval_expired; the approval is expired, undecided, and nothing is remembered", async () => {
    const a = await createTestApi();
    try {
      const held = await expiredButPending(a);
      const res = await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { body: { decision: "approve", remember: { minutes: 30 } } });
      expect(res.text).toBe('{"error":"approval_expired"}');
      expectFlat(res, 410, "approval_expired");
      expect(await held.outcome).toBe("expired");
      expect((await a.call("GET", `/v1/approvals/${held.row.id}`)).body).toMatchObject({ status: "expired", decidedBy: null });
      expect(await rememberedRows(a)).toBe(0);
      expect((await a.call("GET", "/v1/approvals/remembered")).body).toEqual([]);
      // Settled once: a second try is the same 410.
      expectFlat(await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { body: { decision: "deny" } }), 410, "approval_expired");
    } finally {
      setClockOffset(0);
    }
  });

  test("deny, and an org key without X-Project-Id, get the same 410", async () => {
    const a = await createTestApi();
    try {
      const first = await expiredButPending(a);
      expectFlat(await a.call("POST", `/v1/approvals/${first.row.id}/decision`, { body: { decision: "deny" } }), 410, "approval_expired");
      expect((await a.call("GET", `/v1/approvals/${first.row.id}`)).body.status).toBe("expired");
      setClockOffset(0);
      const second = await expiredButPending(a);
      expectFlat(await a.call("POST", `/v1/approvals/${second.row.id}/decision`, { key: a.orgKey, body: { decision: "approve", remember: { minutes: 5 } } }), 410, "approval_expired");
      expect((await a.call("GET", `/v1/approvals/${second.row.id}`)).body.status).toBe("expired");
      expect(await rememberedRows(a)).toBe(0);
    } finally {
      setClockOffset(0);
    }
  });

  test("the approval link: approve with remember → 410 Approval is no longer pending; expired, nothing remembered", async () => {
    const a = await createTestApi();
    try {
      const held = await expiredButPending(a);
      // The link token is sent only to notification channels: this test sets a known one.
      const token = "b".repeat(64);
      await a.core.store.query(sql`UPDATE approvals SET link_token_hash = ${tokenHash(token)} WHERE id = ${held.row.id}`);
      const res = await a.call("POST", `/v1/approvals/${held.row.id}/link-decision`, { key: null, body: { token, decision: "approve", remember: { minutes: 30 } } });
      expectEnvelope(res, 410, "Approval is no longer pending");
      expect((await a.call("GET", `/v1/approvals/${held.row.id}`)).body.status).toBe("expired");
      expect(await held.outcome).toBe("expired");
      expect(await rememberedRows(a)).toBe(0);
    } finally {
      setClockOffset(0);
    }
  });

  test("before its expiresAt the same decision succeeds (the clock moved, but not past it)", async () => {
    const a = await createTestApi();
    try {
      const held = await hold(a, a.projectId, "/v1/send", { logicalId: crypto.randomUUID(), name: "Needs a person" });
      setClockOffset(a.core.config.approvalTimeoutSeconds - 30);
      const res = await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { body: { decision: "approve", remember: { minutes: 30 } } });
      expect(res.status).toBe(200);
      expect(await held.outcome).toBe("approved");
      expect(await rememberedRows(a)).toBe(1);
    } finally {
      setClockOffset(0);
    }
  });
});
