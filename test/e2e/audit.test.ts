// The audit log through the real process and the real CLI (docs/operations.md#audit-log), on either engine:
// API writes carry the client's address, CLI writes (partner create, rotate-master-key) are events of actor
// `cli`, `credgate audit verify` reports an intact chain with its length, and one edited row (changed with the
// test's own database handle) makes it name that row and exit 1. The anchored chain (docs/operations.md#the-checkpoint):
// rows cut from the end, every row deleted, and a chain rewritten without the master key are reported with the
// contract's lines; with SQLite, an older database file put back is reported, and `credgate restore` of a backup
// leaves a chain that verifies.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { copyFileSync, existsSync, rmSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { chainHash, GENESIS_HASH } from "../../src/services/auditChain.ts";
import { tempDir } from "../support/tmp.ts";
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
      const chosen = Buffer.alloc(32, 0xa7).toString("base64");
      const rotated = await runCli(["rotate-master-key", "--data-dir", fresh.dataDir], { ...fresh.env, CREDGATE_NEW_MASTER_KEY: chosen });
      expect(rotated.stderr).toBe("");
      expect(rotated.code).toBe(0);
      const events = await queryStore<{ action: string; actor_kind: string; target_type: string; changes: string }>(fresh, sql`SELECT action, actor_kind, target_type, changes FROM audit_events ORDER BY seq`);
      expect(events.map((e) => e.action)).toEqual(["POST /v1/agents", "credgate rotate-master-key"]);
      expect(events[1]).toMatchObject({ actor_kind: "cli", target_type: "master_key", changes: '{"masterKey":["<redacted>","<redacted>"]}' });
      // The checkpoint was MACed again under the new key, in the rotation's transaction.
      const ok = await runCli(["audit", "verify", "--data-dir", fresh.dataDir], { ...fresh.env, CREDGATE_MASTER_KEY: chosen });
      expect(ok).toEqual({ code: 0, stdout: "audit chain intact: 2 events\n", stderr: "" });
    } finally {
      await fresh.stop();
    }
  }, 60_000);

  test("another master key: refused with one line, exit 1 (without the key no checkpoint can be checked)", async () => {
    const wrong = Buffer.alloc(32, 0x55).toString("base64");
    const r = await runCli(["audit", "verify", "--data-dir", c.dataDir], { ...c.env, CREDGATE_MASTER_KEY: wrong });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toStartWith("credgate: master key does not match the data in ");
    expect(r.stderr.split("\n").length).toBe(2);
  });

  test("a data dir without data: one line, exit 1", async () => {
    const r = await runCli(["audit", "verify", "--data-dir", "/nonexistent/credgate-data"], {});
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("credgate: no credgate data in /nonexistent/credgate-data: pass the --data-dir the server uses\n");
  });
});

type FullRow = Record<string, any>;
const allRows = (r: RunningCredgate) => queryStore<FullRow>(r, sql`SELECT * FROM audit_events ORDER BY seq`);
const verifyOf = (r: RunningCredgate) => runCli(["audit", "verify", "--data-dir", r.dataDir], r.env);
const putBack = async (r: RunningCredgate, rows: FullRow[]) => {
  for (const x of rows) {
    await queryStore(
      r,
      sql`INSERT INTO audit_events (seq, id, at, organization_id, partner_id, project_id, actor_kind, actor_id, actor_email, action, target_type, target_id, address, changes, hash)
          VALUES (${x.seq}, ${x.id}, ${x.at}, ${x.organization_id}, ${x.partner_id}, ${x.project_id}, ${x.actor_kind}, ${x.actor_id}, ${x.actor_email}, ${x.action}, ${x.target_type}, ${x.target_id}, ${x.address}, ${x.changes}, ${x.hash})`,
      true,
    );
  }
};

describe("the anchored chain through the real CLI (docs/operations.md#the-checkpoint)", () => {
  let d: RunningCredgate;
  beforeAll(async () => {
    d = await startCredgate();
    for (let i = 0; i < 4; i++) expect((await d.api("POST", "/v1/agents", { body: { name: `T${i}`, identifier: `t${i}`, mode: "all" } })).status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await d?.stop();
  });

  test("the two newest rows deleted: '2 events missing after <id>'; put back, intact; every row deleted: 'after genesis'", async () => {
    const rows = await allRows(d);
    expect(rows.length).toBe(4);
    expect(await verifyOf(d)).toEqual({ code: 0, stdout: "audit chain intact: 4 events\n", stderr: "" });
    await queryStore(d, sql`DELETE FROM audit_events WHERE seq > 2`, true);
    expect(await verifyOf(d)).toEqual({ code: 1, stdout: `audit chain broken: 2 events missing after ${rows[1]!.id}\n`, stderr: "" });
    await putBack(d, rows.slice(2));
    expect(await verifyOf(d)).toEqual({ code: 0, stdout: "audit chain intact: 4 events\n", stderr: "" });
    await queryStore(d, sql`DELETE FROM audit_events`, true);
    expect(await verifyOf(d)).toEqual({ code: 1, stdout: "audit chain broken: 4 events missing after genesis\n", stderr: "" });
    await putBack(d, rows);
    expect((await verifyOf(d)).code).toBe(0);
  });

  test("an event edited and every plain hash recomputed (no master key): 'checkpoint does not match'", async () => {
    const rows = await allRows(d);
    const original = rows.map((r) => ({ id: r.id, hash: r.hash, changes: r.changes }));
    rows[1]!.changes = rows[1]!.changes.replace("T1", "T9");
    let previous = GENESIS_HASH;
    for (const r of rows) {
      previous = chainHash(previous, {
        id: r.id,
        at: r.at,
        organizationId: r.organization_id,
        partnerId: r.partner_id,
        projectId: r.project_id,
        actor: { kind: r.actor_kind, id: r.actor_id, email: r.actor_email },
        action: r.action,
        targetType: r.target_type,
        targetId: r.target_id,
        address: r.address,
        changes: JSON.parse(r.changes),
      });
      await queryStore(d, sql`UPDATE audit_events SET hash = ${previous}, changes = ${r.changes} WHERE id = ${r.id}`, true);
    }
    expect(await verifyOf(d)).toEqual({ code: 1, stdout: "audit chain broken: checkpoint does not match\n", stderr: "" });
    for (const o of original) await queryStore(d, sql`UPDATE audit_events SET hash = ${o.hash}, changes = ${o.changes} WHERE id = ${o.id}`, true);
    expect((await verifyOf(d)).stdout).toBe("audit chain intact: 4 events\n");
  });

  test("a stale checkpoint (an earlier one put back after more writes): 'checkpoint does not match'", async () => {
    const current = (await queryStore<{ value: string }>(d, sql`SELECT value FROM settings WHERE key = 'audit_checkpoint'`))[0]!.value;
    expect((await d.api("POST", "/v1/agents", { body: { name: "Stale", identifier: "stale", mode: "all" } })).status).toBe(201);
    expect((await verifyOf(d)).stdout).toBe("audit chain intact: 5 events\n");
    const newer = (await queryStore<{ value: string }>(d, sql`SELECT value FROM settings WHERE key = 'audit_checkpoint'`))[0]!.value;
    await queryStore(d, sql`UPDATE settings SET value = ${current} WHERE key = 'audit_checkpoint'`, true);
    expect(await verifyOf(d)).toEqual({ code: 1, stdout: "audit chain broken: checkpoint does not match\n", stderr: "" });
    await queryStore(d, sql`UPDATE settings SET value = ${newer} WHERE key = 'audit_checkpoint'`, true);
    expect((await verifyOf(d)).stdout).toBe("audit chain intact: 5 events\n");
  });

  test("SQLite: an older database file put back is reported; credgate restore of the same backup verifies", async () => {
    if (d.env.CREDGATE_DATABASE_URL) return; // PostgreSQL: pg_dump / pg_restore, and no file beside
    const backup = join(tempDir(), "before.db");
    expect((await runCli(["backup", "--to", backup, "--data-dir", d.dataDir], d.env)).code).toBe(0);
    expect((await d.api("POST", "/v1/agents", { body: { name: "Later", identifier: "later", mode: "all" } })).status).toBe(201);
    expect((await verifyOf(d)).stdout).toBe("audit chain intact: 6 events\n");
    expect(await d.stop()).toBe(0);
    // Put back by hand: the database's own checkpoint matches it, the copy beside it names event 5.
    for (const f of ["credgate.db-wal", "credgate.db-shm"]) rmSync(join(d.dataDir, f), { force: true });
    copyFileSync(backup, join(d.dataDir, "credgate.db"));
    expect(await verifyOf(d)).toEqual({ code: 1, stdout: "audit chain broken: checkpoint does not match\n", stderr: "" });
    const restored = await runCli(["restore", "--from", backup, "--data-dir", d.dataDir], d.env);
    expect(restored.code).toBe(0);
    expect(existsSync(join(d.dataDir, "audit-checkpoint"))).toBe(true);
    expect(await verifyOf(d)).toEqual({ code: 0, stdout: "audit chain intact: 5 events\n", stderr: "" });
    // And the server goes on from there: its next write extends the restored chain.
    d = await startCredgate({ dataDir: d.dataDir, env: d.env });
    expect((await d.api("POST", "/v1/agents", { body: { name: "After", identifier: "after-restore", mode: "all" } })).status).toBe(201);
    expect(await verifyOf(d)).toEqual({ code: 0, stdout: "audit chain intact: 6 events\n", stderr: "" });
  }, 60_000);
});
