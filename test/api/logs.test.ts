// Request-log batches (docs/gateway.md#request-logs) as the API returns them: rows enqueued the way the gateway
// does, written by the batch writer (500 rows or a flush), read back through GET /v1/logs unchanged.
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, test } from "bun:test";
import type { RequestLogRow } from "../../src/services/requestLogs.ts";
import { createTestApi, type TestApi } from "../support/app.ts";

let api: TestApi;
let agentId: string;
beforeAll(async () => {
  api = await createTestApi();
  agentId = (await api.call("GET", "/v1/agents")).body[0].id;
});

let n = 0;
function row(patch: Partial<RequestLogRow> = {}): RequestLogRow {
  n++;
  return {
    id: crypto.randomUUID(),
    organizationId: api.organizationId,
    projectId: api.projectId,
    agentId,
    method: "GET",
    host: "batch.test",
    path: `/r/${n}`,
    provider: null,
    status: 200,
    latencyMs: 3,
    injectionCount: 1,
    decision: "allowed",
    matchedRuleLogicalId: null,
    matchedRuleName: null,
    approvalId: null,
    costNanos: null,
    createdAt: new Date(Date.UTC(2030, 0, 1) + n).toISOString(),
    requestId: `req-${n}`,
    mcpServerId: null,
    ...patch,
  };
}

function view({ organizationId: _org, ...rest }: RequestLogRow) {
  return rest;
}

const count = async (host: string) => (await api.core.store.query(sql`SELECT id FROM request_logs WHERE host = ${host}`)).length;

/** The row count once it reaches `n`, or whatever it is after `ms`. */
async function countReaches(host: string, n: number, ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  let c = await count(host);
  while (c < n && Date.now() < deadline) {
    await Bun.sleep(10);
    c = await count(host);
  }
  return c;
}

describe("request-log batches", () => {
  test("every field round-trips, nulls and non-nulls alike", async () => {
    const full = row({
      host: "fields.test:8443",
      provider: "github",
      status: 403,
      latencyMs: 0,
      injectionCount: 0,
      decision: "approval_denied",
      matchedRuleLogicalId: crypto.randomUUID(),
      matchedRuleName: "Ask first",
      approvalId: crypto.randomUUID(),
      costNanos: 1234567890123,
    });
    const sparse = row({ host: "fields.test:8443" });
    api.core.services.requestLogs.enqueue(full);
    api.core.services.requestLogs.enqueue(sparse);
    const res = await api.call("GET", `/v1/logs?host=${encodeURIComponent("fields.test:8443")}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [view(sparse), view(full)], nextCursor: null });
  });

  test("500 queued rows are written at once, without a query or the timer", async () => {
    const svc = api.core.services.requestLogs;
    for (let i = 0; i < 499; i++) svc.enqueue(row({ host: "five-hundred.test" }));
    expect(await count("five-hundred.test")).toBe(0);
    svc.enqueue(row({ host: "five-hundred.test" }));
    // Written in the background at once: well before the 5 s timer.
    expect(await countReaches("five-hundred.test", 500, 1000)).toBe(500);
  });

  test("a query writes whatever is still queued first", async () => {
    const svc = api.core.services.requestLogs;
    for (let i = 0; i < 520; i++) svc.enqueue(row({ host: "drain-query.test" }));
    expect(await countReaches("drain-query.test", 500, 1000)).toBe(500);
    const res = await api.call("GET", "/v1/logs?host=drain-query.test&limit=500");
    expect(res.body.data.length).toBe(500);
    expect(res.body.nextCursor).not.toBeNull();
    expect(await count("drain-query.test")).toBe(520);
  });

  test("newest first; the cursor walks rows that share a createdAt in id order", async () => {
    const at = new Date(Date.UTC(2031, 0, 1)).toISOString();
    const same = Array.from({ length: 5 }, () => row({ host: "cursor.test", createdAt: at }));
    const older = row({ host: "cursor.test", createdAt: new Date(Date.UTC(2030, 11, 31)).toISOString() });
    for (const r of [older, ...same]) api.core.services.requestLogs.enqueue(r);
    const expected = [...same.sort((a, b) => (a.id < b.id ? 1 : -1)), older].map((r) => r.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { body: { data: { id: string }[]; nextCursor: string | null } } = await api.call(
        "GET",
        `/v1/logs?host=cursor.test&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      seen.push(...res.body.data.map((r) => r.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(expected);
  });

  test("update() patches a queued row and a written row", async () => {
    const svc = api.core.services.requestLogs;
    const written = row({ host: "update.test", status: 202, decision: "approval_pending" });
    const queued = row({ host: "update.test", status: 202, decision: "approval_pending" });
    svc.enqueue(written);
    await svc.flush();
    svc.enqueue(queued);
    svc.update(queued.id, { status: 200, decision: "approval_approved", latencyMs: 40 });
    svc.update(written.id, { status: 403, decision: "approval_denied", latencyMs: 50 });
    const res = await api.call("GET", "/v1/logs?host=update.test");
    expect(res.body.data).toEqual([
      view({ ...queued, status: 200, decision: "approval_approved", latencyMs: 40 }),
      view({ ...written, status: 403, decision: "approval_denied", latencyMs: 50 }),
    ]);
  });

  test("the batch sets the agents' lastSeenAt", async () => {
    const at = new Date().toISOString();
    api.core.services.requestLogs.enqueue(row({ host: "seen.test", createdAt: at }));
    await api.core.services.requestLogs.flush();
    expect((await api.call("GET", `/v1/agents/${agentId}`)).body.lastSeenAt).toBe(at);
  });

  test("a full batch leaves lastSeenAt to the next flush, which writes the latest time", async () => {
    const svc = api.core.services.requestLogs;
    const lastSeen = async () => (await api.call("GET", `/v1/agents/${agentId}`)).body.lastSeenAt;
    await svc.flush();
    const before = await lastSeen();
    const at = (i: number) => new Date(Date.UTC(2033, 0, 1) + i).toISOString();
    for (let i = 0; i < 500; i++) svc.enqueue(row({ host: "seen-later.test", createdAt: at(i) }));
    expect(await countReaches("seen-later.test", 500, 1000)).toBe(500);
    expect(await lastSeen()).toBe(before);
    svc.enqueue(row({ host: "seen-later.test", createdAt: at(500) }));
    await svc.flush();
    expect(await lastSeen()).toBe(at(500));
  });
  test("/org/logs merges the projects' rows newest first, pages across them, and follows an agent to its project", async () => {
    const { services } = api.core;
    const { project: other } = await services.projects.create(api.organizationId, `Logs merge ${n}`);
    const otherAgent = await services.agents.create(other.id, { name: "Merge agent", identifier: `merge-agent-${n}`, mode: "all" });
    const base = Date.UTC(2032, 0, 1);
    const at = (ms: number) => new Date(base + ms).toISOString();
    // Interleaved in time across the two projects, with a tie on one millisecond between them.
    const rows = [
      row({ host: "merge.test", createdAt: at(1) }),
      row({ host: "merge.test", createdAt: at(2), projectId: other.id, agentId: otherAgent.id }),
      row({ host: "merge.test", createdAt: at(3) }),
      row({ host: "merge.test", createdAt: at(3), projectId: other.id, agentId: otherAgent.id }),
      row({ host: "merge.test", createdAt: at(4), projectId: other.id, agentId: otherAgent.id }),
      row({ host: "merge.test", createdAt: at(5) }),
    ];
    for (const r of rows) services.requestLogs.enqueue(r);
    const newestFirst = [...rows].sort((a, b) => (a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? 1 : -1) : a.id < b.id ? 1 : -1)).map((r) => r.id);

    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: { data: { id: string }[]; nextCursor: string | null } } = await api.call(
        "GET",
        `/v1/org/logs?host=merge.test&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
        { key: api.orgKey },
      );
      expect(res.status).toBe(200);
      pages.push(res.body.data.map((r) => r.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(pages.flat()).toEqual(newestFirst);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 2]);

    // An agent filter reads the agent's own project; a projectId filter the one project.
    const byAgent = await api.call("GET", `/v1/org/logs?host=merge.test&agentId=${otherAgent.id}`, { key: api.orgKey });
    expect(byAgent.body.data.map((r: { id: string }) => r.id)).toEqual(newestFirst.filter((id) => rows.find((r) => r.id === id)!.projectId === other.id));
    const byProject = await api.call("GET", `/v1/org/logs?host=merge.test&projectId=${api.projectId}`, { key: api.orgKey });
    expect(byProject.body.data.map((r: { id: string }) => r.id)).toEqual(newestFirst.filter((id) => rows.find((r) => r.id === id)!.projectId === api.projectId));

    // A deleted agent's rows stay listed under its id.
    await services.agents.delete(other.id, otherAgent.id);
    const gone = await api.call("GET", `/v1/org/logs?host=merge.test&agentId=${otherAgent.id}`, { key: api.orgKey });
    expect(gone.body.data.length).toBe(3);

    // Deleting the project takes its rows out of the organization's list.
    await services.projects.delete(api.organizationId, other.id);
    const after = await api.call("GET", "/v1/org/logs?host=merge.test", { key: api.orgKey });
    expect(after.body.data.map((r: { id: string }) => r.id)).toEqual(newestFirst.filter((id) => rows.find((r) => r.id === id)!.projectId === api.projectId));
  });
});
