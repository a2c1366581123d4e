// Notification channels, the delivery log, approval links and remembered approvals through the in-process API
// (docs/policy.md#notifications, #approval-links, #remembered-approvals). Held requests come from the real
// approval service (`hold`, what the gateway calls). Sending to real receivers is in
// test/e2e/notifications.test.ts; here: validation, access, secrecy at rest, what `notify` queues, and the
// decisions and pages of approval links.
import { beforeAll, describe, expect, test } from "bun:test";
import { storedText, createTestApi, type TestApi } from "../support/app.ts";
import { until } from "../support/gateway.ts";
import { addMember, addOrganization, addProject, expectEnvelope, expectFlat, ISO_MS, UUID_V4 } from "./helpers.ts";

const UNKNOWN = "00000000-0000-4000-8000-000000000000";
const EVENTS = ["approval.requested", "approval.decided", "budget.threshold"];
const HOOK = "https://hooks.example.com/credgate/T0KEN-in-the-path";

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

async function channel(a: TestApi, body: Record<string, unknown>, path = "/v1/notifications/channels", key?: string) {
  const res = await a.call("POST", path, { body, key });
  if (res.status !== 201) throw new Error(`channel: ${res.status} ${res.text}`);
  return res.body;
}

/** A pending approval, as the gateway's hold stage creates it, for the project's default agent under one rule. */
async function hold(a: TestApi, opts: { projectId?: string; rule?: { logicalId: string; name: string } | null; agentName?: string; detail?: string } = {}) {
  const projectId = opts.projectId ?? a.projectId;
  const { agents, orgs } = a.core.services;
  const agent = (await agents.list(projectId)).find((x) => x.isDefault)!;
  const project = (await orgs.getProject(projectId))!;
  return await a.core.services.approvals.hold({
    organizationId: project.organizationId,
    projectId,
    agent: { id: agent.id, name: opts.agentName ?? agent.name, identifier: agent.identifier },
    method: "POST",
    url: "https://api.x.com/v1/send?to=a",
    host: "api.x.com",
    path: "/v1/send?to=a",
    headers: {},
    bodyPreview: null,
    summary: { action: "POST request", details: [{ label: "Body", value: opts.detail ?? '{"a":1}' }] },
    rule: opts.rule === undefined ? { logicalId: crypto.randomUUID(), name: "Ask first" } : opts.rule,
  });
}

/** The payload a delivery carries (sealed at rest), once `notify` has queued it. */
async function queuedPayload(a: TestApi, approvalId: string): Promise<any> {
  const { store, sealer } = a.core.services.deps;
  return until(async () => {
    const rows = await store.db.select().from(store.t.notificationDeliveries);
    const row = rows.find((r) => r.approvalId === approvalId);
    if (!row) throw new Error("not queued yet");
    return JSON.parse(sealer.open(row.payloadSealed));
  });
}

/** The approval link's token, read from the queued approval.requested payload. */
async function linkOf(a: TestApi, approvalId: string): Promise<{ approveUrl: string; denyUrl: string; token: string }> {
  const payload = await queuedPayload(a, approvalId);
  const { approveUrl, denyUrl } = payload.data;
  return { approveUrl, denyUrl, token: new URL(approveUrl).searchParams.get("t")! };
}

describe("channels", () => {
  test("create: a webhook's signing secret is shown once; slack and ntfy have none; events default to all", async () => {
    const hook = await channel(api, { kind: "webhook", url: HOOK });
    expect(hook).toMatchObject({ kind: "webhook", url: HOOK, events: EVENTS, enabled: true });
    expect(hook.id).toMatch(UUID_V4);
    expect(hook.createdAt).toMatch(ISO_MS);
    expect(hook.signingSecret).toMatch(/^whsec_[0-9a-f]{64}$/);
    const slack = await channel(api, { kind: "slack", url: "https://hooks.slack.com/services/T/B/X", events: ["approval.requested", "approval.requested"] });
    expect(slack.signingSecret).toBeUndefined();
    expect(slack.events).toEqual(["approval.requested"]);
    const ntfy = await channel(api, { kind: "ntfy", url: "  https://ntfy.sh/credgate-topic  ", events: ["budget.threshold", "approval.decided"] });
    expect(ntfy.url).toBe("https://ntfy.sh/credgate-topic");
    expect(ntfy.events).toEqual(["approval.decided", "budget.threshold"]);

    const list = await api.call("GET", "/v1/notifications/channels");
    expect(list.status).toBe(200);
    const ids = list.body.map((c: any) => c.id);
    expect(ids).toEqual(expect.arrayContaining([hook.id, slack.id, ntfy.id]));
    for (const c of list.body) expect(Object.keys(c).sort()).toEqual(["createdAt", "enabled", "events", "id", "kind", "url"]);
    expect(list.text).not.toContain(hook.signingSecret);
    const patched = await api.call("PATCH", `/v1/notifications/channels/${hook.id}`, { body: { enabled: false } });
    expect(patched.body).toEqual({ ...list.body.find((c: any) => c.id === hook.id), enabled: false });
    expect(patched.text).not.toContain("whsec_");
  });

  test("the signing secret and the URL are sealed at rest", async () => {
    const a = await createTestApi();
    const url = "https://hooks.slack.com/services/T000/B000/SECRETPATHVALUE0123";
    const hook = await channel(a, { kind: "webhook", url });
    await channel(a, { kind: "slack", url });
    const stored = await storedText(a);
    expect(stored).not.toContain(hook.signingSecret);
    expect(stored).not.toContain(hook.signingSecret.slice(6));
    expect(stored).not.toContain("SECRETPATHVALUE0123");
  });

  test("validation: kind, url, events, in that order, with the contract's messages", async () => {
    const cases: [unknown, string][] = [
      [{ url: HOOK }, "kind is required"],
      [{ kind: "email", url: HOOK }, "kind must be one of: webhook, slack, ntfy"],
      [{ kind: "webhook" }, "url is required"],
      [{ kind: "webhook", url: "http://hooks.example.com/x" }, "url must be an https:// URL"],
      [{ kind: "webhook", url: "ftp://hooks.example.com/x" }, "url must be an https:// URL"],
      [{ kind: "webhook", url: "hooks.example.com/x" }, "url must be an https:// URL"],
      [{ kind: "webhook", url: "http://10.0.0.5/x" }, "url must be an https:// URL"],
      [{ kind: "webhook", url: 7 }, "url must be a string"],
      [{ kind: "webhook", url: `https://x.example/${"a".repeat(2048)}` }, "url must be at most 2048 characters"],
      [{ kind: "webhook", url: HOOK, events: [] }, "events must be a non-empty list of: approval.requested, approval.decided, budget.threshold"],
      [{ kind: "webhook", url: HOOK, events: ["approval.requested", "nope"] }, "events must be a non-empty list of: approval.requested, approval.decided, budget.threshold"],
      [{ kind: "webhook", url: HOOK, events: "approval.requested" }, "events must be a non-empty list of: approval.requested, approval.decided, budget.threshold"],
      ["[]", "Request body must be a JSON object"],
    ];
    for (const [body, message] of cases) expectFlat(await api.call("POST", "/v1/notifications/channels", { body }), 400, message);
  });

  test("plain http only to loopback, only self-hosted", async () => {
    for (const url of ["http://127.0.0.1:9/hook", "http://localhost:9/hook", "http://[::1]:9/hook"]) expect((await api.call("POST", "/v1/notifications/channels", { body: { kind: "webhook", url } })).status).toBe(201);
    const cloud = await createTestApi({ CREDGATE_MODE: "cloud" });
    expectFlat(await cloud.call("POST", "/v1/notifications/channels", { body: { kind: "webhook", url: "http://127.0.0.1:9/hook" } }), 400, "url must be an https:// URL");
    expect((await cloud.call("POST", "/v1/notifications/channels", { body: { kind: "webhook", url: HOOK } })).status).toBe(201);
  });

  test("PATCH and DELETE: unknown → E 404 Channel not found; empty → No fields to update; kind cannot change", async () => {
    const hook = await channel(api, { kind: "webhook", url: HOOK });
    expectEnvelope(await api.call("PATCH", `/v1/notifications/channels/${UNKNOWN}`, { body: { enabled: false } }), 404, "Channel not found");
    expectEnvelope(await api.call("DELETE", `/v1/notifications/channels/${UNKNOWN}`), 404, "Channel not found");
    expectEnvelope(await api.call("POST", `/v1/notifications/channels/${UNKNOWN}/test`), 404, "Channel not found");
    expectFlat(await api.call("PATCH", `/v1/notifications/channels/${hook.id}`, { body: {} }), 400, "No fields to update");
    expectFlat(await api.call("PATCH", `/v1/notifications/channels/${hook.id}`, { body: { kind: "slack" } }), 400, "kind cannot be changed");
    expectFlat(await api.call("PATCH", `/v1/notifications/channels/${hook.id}`, { body: { url: "http://x.example/" } }), 400, "url must be an https:// URL");
    expectFlat(await api.call("PATCH", `/v1/notifications/channels/${hook.id}`, { body: { enabled: "no" } }), 400, "enabled must be a boolean");
    const moved = await api.call("PATCH", `/v1/notifications/channels/${hook.id}`, { body: { url: "https://other.example/h", events: ["approval.decided"] } });
    expect(moved.body).toMatchObject({ id: hook.id, url: "https://other.example/h", events: ["approval.decided"], enabled: true });
    expect((await api.call("DELETE", `/v1/notifications/channels/${hook.id}`)).status).toBe(204);
    expectEnvelope(await api.call("DELETE", `/v1/notifications/channels/${hook.id}`), 404, "Channel not found");
  });

  test("project channels are P·admin; the organization's are O·admin and kept apart", async () => {
    const a = await createTestApi();
    const own = await channel(a, { kind: "ntfy", url: "https://ntfy.sh/project" });
    const org = await channel(a, { kind: "ntfy", url: "https://ntfy.sh/org" }, "/v1/org/notifications/channels", a.orgKey);
    expect((await a.call("GET", "/v1/notifications/channels")).body.map((c: any) => c.id)).toEqual([own.id]);
    expect((await a.call("GET", "/v1/org/notifications/channels", { key: a.orgKey })).body.map((c: any) => c.id)).toEqual([org.id]);
    expectEnvelope(await a.call("DELETE", `/v1/notifications/channels/${org.id}`), 404, "Channel not found");
    expectEnvelope(await a.call("DELETE", `/v1/org/notifications/channels/${own.id}`, { key: a.orgKey }), 404, "Channel not found");

    const member = await addMember(a, "member");
    for (const [method, path] of [
      ["GET", "/v1/notifications/channels"],
      ["POST", "/v1/notifications/channels"],
      ["GET", "/v1/notifications/deliveries"],
      ["PATCH", `/v1/notifications/channels/${own.id}`],
      ["POST", `/v1/notifications/channels/${own.id}/test`],
    ] as const) {
      expectEnvelope(await a.call(method, path, { key: member.projectKey, body: method === "GET" ? undefined : { kind: "ntfy", url: "https://ntfy.sh/x" } }), 403, "Insufficient permissions");
    }
    const admin = await addMember(a, "admin");
    expect((await a.call("GET", "/v1/notifications/channels", { key: admin.projectKey })).status).toBe(200);
    expect((await a.call("GET", "/v1/org/notifications/channels", { key: admin.orgKey })).status).toBe(200);
    expectEnvelope(await a.call("GET", "/v1/org/notifications/deliveries", { key: member.projectKey }), 403, "Insufficient permissions");

    const stranger = await addOrganization(a);
    expectEnvelope(await a.call("PATCH", `/v1/org/notifications/channels/${org.id}`, { key: stranger.orgKey, body: { enabled: false } }), 404, "Channel not found");
  });

  test("a test send to an unreachable receiver answers what happened; nothing is logged as a delivery", async () => {
    const a = await createTestApi();
    // Port 9 (discard) on loopback: nothing listens there.
    const hook = await channel(a, { kind: "webhook", url: "http://127.0.0.1:9/hook" });
    const res = await a.call("POST", `/v1/notifications/channels/${hook.id}/test`);
    expect(res.status).toBe(200);
    expect(res.body.delivered).toBe(false);
    expect(res.body.status).toBeNull();
    expect(typeof res.body.error).toBe("string");
    expect(res.body.error).not.toContain("/hook");
    expect((await a.call("GET", "/v1/notifications/deliveries")).body).toEqual({ data: [], nextCursor: null });
  });
});

describe("notify(scope, event, data): what is queued", () => {
  test("one delivery per enabled, subscribed channel of the project and of its organization; none elsewhere", async () => {
    const a = await createTestApi();
    const other = await addProject(a, "Elsewhere");
    const all = await channel(a, { kind: "webhook", url: HOOK });
    const onlyDecided = await channel(a, { kind: "ntfy", url: "https://ntfy.sh/d", events: ["approval.decided"] });
    const disabled = await channel(a, { kind: "slack", url: "https://hooks.slack.com/services/x" });
    await a.call("PATCH", `/v1/notifications/channels/${disabled.id}`, { body: { enabled: false } });
    const orgWide = await channel(a, { kind: "webhook", url: HOOK, events: ["budget.threshold"] }, "/v1/org/notifications/channels", a.orgKey);
    const elsewhere = await channel(a, { kind: "webhook", url: HOOK }, "/v1/notifications/channels", other.projectKey);

    const data = { budgetId: crypto.randomUUID(), scope: "project", percent: 80, spentCents: 800, limitCents: 1000, period: "monthly", resetsAt: "2030-01-01T00:00:00.000Z" };
    const queued = await a.core.services.notifications.notify({ organizationId: a.organizationId, projectId: a.projectId }, "budget.threshold", data);
    expect(queued).toBe(2);
    const mine = (await a.call("GET", "/v1/notifications/deliveries")).body;
    expect(mine.data).toHaveLength(1);
    expect(mine.data[0]).toMatchObject({ channelId: all.id, event: "budget.threshold", status: "retrying", attempts: 0, lastStatus: null });
    expect(Object.keys(mine.data[0]).sort()).toEqual(["attempts", "channelId", "createdAt", "event", "id", "lastError", "lastStatus", "status"]);
    const org = (await a.call("GET", "/v1/org/notifications/deliveries", { key: a.orgKey })).body;
    expect(org.data.map((d: any) => d.channelId)).toEqual([orgWide.id]);
    expect((await a.call("GET", "/v1/notifications/deliveries", { key: other.projectKey })).body.data).toEqual([]);
    expect((await a.call("GET", `/v1/notifications/deliveries?channelId=${onlyDecided.id}`)).body.data).toEqual([]);
    void elsewhere;

    // An organization-only event reaches the organization's channels only.
    expect(await a.core.services.notifications.notify({ organizationId: a.organizationId, projectId: null }, "budget.threshold", data)).toBe(1);
    expect(await a.core.services.notifications.notify({ organizationId: a.organizationId, projectId: a.projectId }, "approval.decided", { approvalId: UNKNOWN } as never)).toBe(2);
  });

  test("the delivery log pages newest first; limit and cursor are checked", async () => {
    const a = await createTestApi();
    await channel(a, { kind: "webhook", url: HOOK });
    for (let i = 0; i < 3; i++) await a.core.services.notifications.notify({ organizationId: a.organizationId, projectId: a.projectId }, "budget.threshold", { percent: i } as never);
    const first = await a.call("GET", "/v1/notifications/deliveries?limit=2");
    expect(first.body.data).toHaveLength(2);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await a.call("GET", `/v1/notifications/deliveries?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.data).toHaveLength(1);
    expect(second.body.nextCursor).toBeNull();
    const times = [...first.body.data, ...second.body.data].map((d: any) => d.createdAt);
    expect(times).toEqual([...times].sort().reverse());
    for (const bad of ["0", "501", "x", "1.5"]) expectFlat(await a.call("GET", `/v1/notifications/deliveries?limit=${bad}`), 400, "limit must be between 1 and 500");
    expectFlat(await a.call("GET", "/v1/notifications/deliveries?cursor=%%%"), 400, "cursor is invalid");
  });

  test("a held request queues approval.requested with its approval links; the payload is sealed at rest", async () => {
    const a = await createTestApi();
    await channel(a, { kind: "webhook", url: HOOK, events: ["approval.requested"] });
    const held = await hold(a);
    const payload = await queuedPayload(a, held.row.id);
    expect(payload).toMatchObject({ event: "approval.requested" });
    expect(payload.id).toMatch(UUID_V4);
    const agent = (await a.call("GET", "/v1/agents/default")).body;
    expect(payload.data).toEqual({
      approvalId: held.row.id,
      projectId: a.projectId,
      agent: { id: agent.id, name: "Default Agent" },
      method: "POST",
      host: "api.x.com",
      path: "/v1/send",
      summary: held.row.summary,
      expiresAt: held.row.expiresAt,
      approveUrl: expect.stringMatching(new RegExp(`^http://localhost:0/approve/${held.row.id}\\?t=[0-9a-f]{64}$`)),
      denyUrl: expect.stringMatching(new RegExp(`^http://localhost:0/approve/${held.row.id}\\?t=[0-9a-f]{64}&d=deny$`)),
    });
    const { token } = await linkOf(a, held.row.id);
    expect(payload.data.denyUrl).toContain(token);
    const stored = await storedText(a);
    expect(stored).not.toContain(token);
  });
});

describe("approval links", () => {
  test("link-decision: wrong token → E 404, right token decides (no other credential), a used token → E 410", async () => {
    const a = await createTestApi();
    await channel(a, { kind: "webhook", url: HOOK, events: ["approval.requested"] });
    const held = await hold(a);
    const { token } = await linkOf(a, held.row.id);
    const path = `/v1/approvals/${held.row.id}/link-decision`;
    expectEnvelope(await a.call("POST", path, { key: null, body: { token: "0".repeat(64), decision: "approve" } }), 404, "Approval not found");
    expectEnvelope(await a.call("POST", path, { key: null, body: { token: token.slice(0, 63), decision: "approve" } }), 404, "Approval not found");
    expectEnvelope(await a.call("POST", `/v1/approvals/${UNKNOWN}/link-decision`, { key: null, body: { token, decision: "approve" } }), 404, "Approval not found");
    expectFlat(await a.call("POST", path, { key: null, body: { decision: "approve" } }), 400, "token is required");
    expectFlat(await a.call("POST", path, { key: null, body: { token, decision: "maybe" } }), 400, "decision must be one of: approve, deny");
    const ok = await a.call("POST", path, { key: null, body: { token, decision: "deny" } });
    expect(ok.status).toBe(200);
    expect(ok.text).toBe('{"success":true}');
    expect(await held.outcome).toBe("denied");
    expectEnvelope(await a.call("POST", path, { key: null, body: { token, decision: "approve" } }), 410, "Approval is no longer pending");
    expect((await a.call("GET", `/v1/approvals/${held.row.id}`)).body).toMatchObject({ status: "denied", decidedBy: null });
  });

  test("the page: GET shows the request (escaped) and changes nothing; the form post decides; then it is no longer pending", async () => {
    const a = await createTestApi();
    await channel(a, { kind: "webhook", url: HOOK, events: ["approval.requested"] });
    const held = await hold(a, { agentName: "<b>Agent</b>", detail: '<img src=x onerror="alert(1)">' });
    const { approveUrl, denyUrl, token } = await linkOf(a, held.row.id);
    const get = (url: string) => a.app.handle(new Request(url.replace("http://localhost:0", "http://localhost")));
    for (let i = 0; i < 3; i++) {
      const page = await get(approveUrl);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(page.headers.get("referrer-policy")).toBe("no-referrer");
      expect(page.headers.get("cache-control")).toBe("no-store");
      const html = await page.text();
      expect(html).toContain('<span class="method">POST</span>');
      expect(html).toContain('<span class="host">api.x.com</span><span class="path">/v1/send</span>');
      expect(html).toContain("&#60;b&#62;Agent&#60;/b&#62;");
      expect(html).toContain("&#60;img src=x onerror=&#34;alert(1)&#34;&#62;");
      expect(html).not.toContain("<img");
      expect(html).not.toContain("<script");
      expect(html).toContain('value="approve-15"');
      expect(html).toContain(`<form method="post" action="/approve/${held.row.id}">`);
    }
    expect((await get(denyUrl)).status).toBe(200);
    expect(await (await get(denyUrl)).text()).toContain("Deny this request?");
    expect((await a.call("GET", `/v1/approvals/${held.row.id}`)).body.status).toBe("pending");

    // Wrong token, no token, an id that is no approval: not found.
    for (const url of [`http://localhost/approve/${held.row.id}?t=${"f".repeat(64)}`, `http://localhost/approve/${held.row.id}`, `http://localhost/approve/nope?t=${token}`]) {
      const page = await a.app.handle(new Request(url));
      expect(page.status).toBe(404);
      expect(await page.text()).toContain("Approval not found");
    }
    const post = (choice: string, t = token) =>
      a.app.handle(new Request(`http://localhost/approve/${held.row.id}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ t, choice }) }));
    expect((await post("maybe")).status).toBe(400);
    expect((await post("approve", "f".repeat(64))).status).toBe(404);
    const decided = await post("approve-15");
    expect(decided.status).toBe(200);
    const text = await decided.text();
    expect(text).toContain("Approved");
    expect(text).toMatch(/without asking until <time datetime="\d{4}-/);
    expect(await held.outcome).toBe("approved");
    const after = await get(approveUrl);
    expect(after.status).toBe(410);
    expect(await after.text()).toContain("no longer pending");
    expect((await post("deny")).status).toBe(410);
    expect((await a.call("GET", "/v1/approvals/remembered")).body).toEqual([
      expect.objectContaining({ ruleName: "Ask first", createdBy: { kind: "link" } }),
    ]);
  });
});

describe("remembered approvals", () => {
  test("decision with remember: validation, the remembered approval, list, revoke (project·admin)", async () => {
    const a = await createTestApi();
    const rule = { logicalId: crypto.randomUUID(), name: "Payments need a person" };
    const held = await hold(a, { rule });
    const path = `/v1/approvals/${held.row.id}/decision`;
    for (const remember of [{ minutes: 0 }, { minutes: 1441 }, { minutes: 1.5 }, { minutes: "15" }, {}]) {
      expectFlat(await a.call("POST", path, { body: { decision: "approve", remember } }), 400, "remember.minutes must be from 1 to 1440");
    }
    expectFlat(await a.call("POST", path, { body: { decision: "approve", remember: 15 } }), 400, "remember must be an object");
    expectFlat(await a.call("POST", path, { body: { decision: "deny", remember: { minutes: 15 } } }), 400, "remember is only allowed with decision approve");
    const before = Date.now();
    const res = await a.call("POST", path, { body: { decision: "approve", remember: { minutes: 90 } } });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const until = Date.parse(res.body.rememberedUntil);
    expect(until).toBeGreaterThanOrEqual(before + 90 * 60_000);
    expect(until).toBeLessThan(Date.now() + 90 * 60_000 + 1000);
    expect(await held.outcome).toBe("approved");

    const agent = (await a.call("GET", "/v1/agents/default")).body;
    const list = await a.call("GET", "/v1/approvals/remembered");
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      { id: expect.stringMatching(UUID_V4), agentId: agent.id, ruleId: rule.logicalId, ruleName: rule.name, expiresAt: res.body.rememberedUntil, createdBy: { userId: a.core.bootstrap.userId, email: "owner@localhost" } },
    ]);
    // Another approval under the same rule replaces it (one per agent and rule).
    const again = await hold(a, { rule });
    const second = await a.call("POST", `/v1/approvals/${again.row.id}/decision`, { body: { decision: "approve", remember: { minutes: 5 } } });
    const replaced = (await a.call("GET", "/v1/approvals/remembered")).body;
    expect(replaced).toHaveLength(1);
    expect(replaced[0].expiresAt).toBe(second.body.rememberedUntil);

    const member = await addMember(a, "member");
    expect((await a.call("GET", "/v1/approvals/remembered", { key: member.projectKey })).body).toHaveLength(1);
    expectEnvelope(await a.call("DELETE", `/v1/approvals/remembered/${replaced[0].id}`, { key: member.projectKey }), 403, "Insufficient permissions");
    expect((await a.call("DELETE", `/v1/approvals/remembered/${replaced[0].id}`)).status).toBe(204);
    expectEnvelope(await a.call("DELETE", `/v1/approvals/remembered/${replaced[0].id}`), 404, "Remembered approval not found");
    expect((await a.call("GET", "/v1/approvals/remembered")).body).toEqual([]);
    const other = await addProject(a);
    expect((await a.call("GET", "/v1/approvals/remembered", { key: other.projectKey })).body).toEqual([]);
  });

  test("an approval held by no rule is decided, with nothing to remember", async () => {
    const a = await createTestApi();
    const held = await hold(a, { rule: null });
    const res = await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { body: { decision: "approve", remember: { minutes: 15 } } });
    expect(res.body).toEqual({ success: true, rememberedUntil: null });
    expect((await a.call("GET", "/v1/approvals/remembered")).body).toEqual([]);
  });

  test("approval.decided says who decided and until when it is remembered", async () => {
    const a = await createTestApi();
    await channel(a, { kind: "webhook", url: HOOK, events: ["approval.decided"] });
    const held = await hold(a);
    const res = await a.call("POST", `/v1/approvals/${held.row.id}/decision`, { body: { decision: "approve", remember: { minutes: 60 } } });
    const { store, sealer } = a.core.services.deps;
    const payload = await until(async () => {
      const [row] = await store.db.select().from(store.t.notificationDeliveries);
      if (!row) throw new Error("not queued yet");
      return JSON.parse(sealer.open(row.payloadSealed));
    });
    expect(payload.event).toBe("approval.decided");
    expect(payload.data).toMatchObject({
      approvalId: held.row.id,
      decision: "approve",
      decidedBy: { userId: a.core.bootstrap.userId, email: "owner@localhost" },
      rememberedUntil: res.body.rememberedUntil,
    });
  });
});
