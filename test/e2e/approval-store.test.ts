// The approval store failing (docs/agent-errors.md#approval_store_unavailable): when the approval record cannot
// be written, the request that needs approval is answered 502 and nothing reaches the upstream. The failure
// is real: a trigger installed in the store (the SQLite file, or the PostgreSQL database) aborts inserts into the
// approvals table.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { curlThroughGateway } from "../support/curl.ts";
import { eventually, gatewayCa, resolveEntries } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "store.approval.test";
let pki: TestPki;
let up: TestUpstream;
let cg: RunningCredgate;
let caFile: string;

beforeAll(async () => {
  pki = makePki([HOST]);
  up = startUpstream(pki);
  cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([HOST], up.port) } });
  caFile = (await gatewayCa(cg)).file;
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
});

test("an approval that cannot be stored → 502 approval_store_unavailable, nothing forwarded; the gateway recovers", async () => {
  const rule = await cg.api("POST", "/v1/policy/rules", { body: { name: "ask", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HOST }] } });
  expect(rule.status).toBe(201);
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);

  const postgres = Boolean(cg.env.CREDGATE_DATABASE_URL);
  if (postgres) {
    await queryStore(cg, sql.raw("CREATE FUNCTION approvals_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'store unavailable'; END $$"), true);
    await queryStore(cg, sql.raw("CREATE TRIGGER approvals_fail BEFORE INSERT ON approvals FOR EACH ROW EXECUTE FUNCTION approvals_fail()"), true);
  } else {
    await queryStore(cg, sql.raw("CREATE TRIGGER approvals_fail BEFORE INSERT ON approvals BEGIN SELECT RAISE(ABORT, 'store unavailable'); END"), true);
  }
  try {
    const r = await curlThroughGateway(cg, `https://${HOST}:${up.port}/pay`, { caFile, method: "POST", data: '{"amount":1}' });
    expect(r.status).toBe(502);
    expect(r.json).toEqual({ error: "approval_store_unavailable", message: "credgate manual approval service is temporarily unavailable." });
    expect(up.seen.length).toBe(0);
  } finally {
    await queryStore(cg, sql.raw(postgres ? "DROP TRIGGER approvals_fail ON approvals" : "DROP TRIGGER approvals_fail"), true);
  }
  // With the store back, the same request is held again; denying it answers the agent.
  const held = curlThroughGateway(cg, `https://${HOST}:${up.port}/pay`, { caFile, method: "POST", data: '{"amount":1}', maxTime: 20 });
  const pending = await eventually(async () => {
    const list = await cg.api("GET", "/v1/approvals/pending");
    if (list.body.requests.length === 0) throw new Error("nothing pending yet");
    return list.body.requests[0];
  });
  expect(pending.path).toBe("/pay");
  expect((await cg.api("POST", `/v1/approvals/${pending.id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
  expect((await held).json.error).toBe("manual_approval_denied");
  expect(up.seen.length).toBe(0);
});
