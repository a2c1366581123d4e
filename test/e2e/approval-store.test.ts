// The approval store failing (CONTRACT §6.15 `approval_store_unavailable`): when the approval record cannot
// be written, the request that needs approval is answered 502 and nothing reaches the upstream. The failure
// is real: a second SQLite connection installs a trigger that aborts inserts into the approvals table.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { curlThroughGateway } from "../support/curl.ts";
import { eventually, gatewayCa, resolveEntries } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
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

  const db = new Database(join(cg.dataDir, "credgate.db"));
  db.run("PRAGMA busy_timeout = 5000");
  db.run("CREATE TRIGGER approvals_fail BEFORE INSERT ON approvals BEGIN SELECT RAISE(ABORT, 'store unavailable'); END");
  try {
    const r = await curlThroughGateway(cg, `https://${HOST}:${up.port}/pay`, { caFile, method: "POST", data: '{"amount":1}' });
    expect(r.status).toBe(502);
    expect(r.json).toEqual({ error: "approval_store_unavailable", message: "credgate manual approval service is temporarily unavailable." });
    expect(up.seen.length).toBe(0);
  } finally {
    db.run("DROP TRIGGER approvals_fail");
    db.close();
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
