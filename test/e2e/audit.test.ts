// The audit log through the real process and the real CLI (docs/operations.md#audit-log), on either engine:
// API writes carry the client's address, CLI writes (partner create, rotate-master-key) are events of actor
// `cli`, `credgate audit verify` reports an intact chain with its length, and one edited row (changed with the
// test's own database handle) makes it name that row and exit 1.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { userInfo } from "node:os";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";

let c: RunningCredgate;
beforeAll(async () => {
  c = await startCredgate({ env: { CREDGATE_MODE: "cloud" } });
}, 60_000);
afterAll(async () => {
  await c?.stop();
});

const verify = () => runCli(["audit", "verify", "--data-dir", c.dataDir], c.env);
const rows = () => queryStore<{ id: string; action: string; actor_kind: string; actor_id: string; changes: string }>(c, sql`SELECT id, action, actor_kind, actor_id, changes FROM audit_events ORDER BY seq`);

describe("credgate audit verify and the events of API and CLI writes", () => {
  test("API writes carry the client address; partner create is an event of actor cli; the chain verifies", async () => {
    const agent = await c.api("POST", "/v1/agents", { body: { name: "Audited", identifier: "audited", mode: "all" } });
    expect(agent.status).toBe(201);
    expect((await c.api("PATCH", `/v1/agents/${agent.body.id}`, { body: { name: "Audited 2" } })).status).toBe(200);
    const listed = await c.api("GET", "/v1/org/audit", { key: c.keys.orgApiKey });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((e: any) => [e.action, e.address, e.actor.kind])).toEqual([
      ["PATCH /v1/agents/{agentId}", "127.0.0.1", "project_key"],
      ["POST /v1/agents", "127.0.0.1", "project_key"],
    ]);

    const made = await runCli(["partner", "create", "--name", "Audit Partner", "--owner-email", "po@example.com", "--data-dir", c.dataDir, "--json"], c.env);
    expect(made.code).toBe(0);
    const partnerKey = JSON.parse(made.stdout).partnerKey;
    const events = await rows();
    const cli = events.find((e) => e.action === "credgate partner create")!;
    expect(cli).toMatchObject({ actor_kind: "cli", actor_id: userInfo().username });
    expect(JSON.parse(cli.changes)).toEqual({ name: [null, "Audit Partner"], ownerEmail: [null, "po@example.com"], partnerKey: [null, "<redacted>"] });
    expect(JSON.stringify(events)).not.toContain(partnerKey);

    const ok = await verify();
    expect(ok).toEqual({ code: 0, stdout: `audit chain intact: ${events.length} events\n`, stderr: "" });
  });

  test("an edited row: audit verify names it and exits 1; put back, the chain is intact again", async () => {
    const events = await rows();
    const victim = events[1]!;
    await queryStore(c, sql`UPDATE audit_events SET changes = ${victim.changes.replace("Audited", "Tampered")} WHERE id = ${victim.id}`, true);
    const broken = await verify();
    expect(broken).toEqual({ code: 1, stdout: `audit chain broken at ${victim.id}\n`, stderr: "" });
    await queryStore(c, sql`UPDATE audit_events SET changes = ${victim.changes} WHERE id = ${victim.id}`, true);
    expect((await verify()).stdout).toBe(`audit chain intact: ${events.length} events\n`);
  });

  test("a deleted row breaks the chain at the row after it", async () => {
    const events = await rows();
    await queryStore(c, sql`DELETE FROM audit_events WHERE id = ${events[0]!.id}`, true);
    expect(await verify()).toEqual({ code: 1, stdout: `audit chain broken at ${events[1]!.id}\n`, stderr: "" });
  });

  test("rotate-master-key is an event of actor cli, in the rotation's transaction", async () => {
    // The chain was broken above on purpose: a fresh instance for this one.
    const fresh = await startCredgate();
    try {
      expect((await fresh.api("POST", "/v1/agents", { body: { name: "R", identifier: "r", mode: "all" } })).status).toBe(201);
      expect(await fresh.stop()).toBe(0);
      const rotated = await runCli(["rotate-master-key", "--data-dir", fresh.dataDir], fresh.env);
      expect(rotated.code).toBe(0);
      const events = await queryStore<{ action: string; actor_kind: string; target_type: string; changes: string }>(fresh, sql`SELECT action, actor_kind, target_type, changes FROM audit_events ORDER BY seq`);
      expect(events.map((e) => e.action)).toEqual(["POST /v1/agents", "credgate rotate-master-key"]);
      expect(events[1]).toMatchObject({ actor_kind: "cli", target_type: "master_key", changes: '{"masterKey":["<redacted>","<redacted>"]}' });
      const ok = await runCli(["audit", "verify", "--data-dir", fresh.dataDir], fresh.env);
      expect(ok).toEqual({ code: 0, stdout: "audit chain intact: 2 events\n", stderr: "" });
    } finally {
      await fresh.stop();
    }
  }, 60_000);

  test("a data dir without data: one line, exit 1", async () => {
    const r = await runCli(["audit", "verify", "--data-dir", "/nonexistent/credgate-data"], {});
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("credgate: no credgate data in /nonexistent/credgate-data: pass the --data-dir the server uses\n");
  });
});
