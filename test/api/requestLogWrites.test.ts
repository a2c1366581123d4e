// How request-log batches reach the store (docs/operations.md#postgresql-performance): finished requests' rows
// go the engine's bulk way (PostgreSQL: COPY in text format), held requests' rows with their row number for the
// later update. Text that COPY must escape, and text that looks like its null marker, round-trip exactly; a
// batch mixing both kinds stores each row once, and the held row's outcome lands on it.
import { beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { RequestLogRow } from "../../src/services/requestLogs.ts";
import { createTestApi, type TestApi } from "../support/app.ts";

let api: TestApi;
let agentId: string;
beforeAll(async () => {
  api = await createTestApi();
  agentId = (await api.call("GET", "/v1/agents")).body[0].id;
}, 30_000);

let n = 0;
function row(patch: Partial<RequestLogRow> = {}): RequestLogRow {
  n++;
  return {
    id: crypto.randomUUID(),
    organizationId: api.organizationId,
    projectId: api.projectId,
    agentId,
    method: "GET",
    host: "copy.test",
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
    createdAt: new Date(Date.UTC(2032, 0, 1) + n).toISOString(),
    requestId: `req-${n}`,
    mcpServerId: null,
    ...patch,
  };
}

const view = ({ organizationId: _org, ...rest }: RequestLogRow) => rest;

test("backslashes, tabs, newlines, carriage returns, the text \\N and non-ASCII round-trip exactly", async () => {
  const odd = [
    row({ host: "escape.test", path: "/a\\b\\\\c\\N\\t", matchedRuleName: "tab\there\nnew line\r\nend", provider: "\\N" }),
    row({ host: "escape.test", path: "/ünïcödé/日本/🙂?q=%00", matchedRuleName: "\\", requestId: null }),
    row({ host: "escape.test", path: "\\N", matchedRuleName: "N", costNanos: 0 }),
  ];
  for (const r of odd) api.core.services.requestLogs.enqueue(r);
  const res = await api.call("GET", "/v1/logs?host=escape.test");
  expect(res.status).toBe(200);
  expect(res.body.data).toEqual([...odd].reverse().map(view));
});

test("a batch of finished and held rows: each stored once; the held row's outcome updates it", async () => {
  const svc = api.core.services.requestLogs;
  const held = row({ host: "mixed.test", status: 202, decision: "approval_pending" });
  const done = Array.from({ length: 30 }, () => row({ host: "mixed.test" }));
  svc.enqueue(done[0]!);
  svc.enqueue(held);
  for (const r of done.slice(1)) svc.enqueue(r);
  await svc.flush();
  const stored = await api.core.store.query<{ id: string }>(sql`SELECT id FROM request_logs WHERE host = ${"mixed.test"}`);
  expect(stored.length).toBe(31);
  expect(new Set(stored.map((r) => r.id)).size).toBe(31);
  svc.update(held.id, { status: 200, decision: "approval_approved", latencyMs: 900 });
  const res = await api.call("GET", "/v1/logs?host=mixed.test&limit=100");
  expect(res.body.data.find((r: { id: string }) => r.id === held.id)).toEqual(view({ ...held, status: 200, decision: "approval_approved", latencyMs: 900 }));
  expect(res.body.data.length).toBe(31);
});
