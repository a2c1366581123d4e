// Two credgate instances on one PostgreSQL database writing at the same time keep ONE linear audit chain
// (docs/operations.md#audit-log): appends take an advisory lock and read the head under it, so no two events
// name the same predecessor. Checked with `credgate audit verify` through the real CLI.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { sql } from "drizzle-orm";
import { startServer, TEST_MASTER_KEY, type PostgresServer } from "../support/postgres.ts";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";

let pg: PostgresServer;
let a: RunningCredgate;
let b: RunningCredgate;

beforeAll(async () => {
  pg = await startServer();
  const admin = new SQL(pg.adminUrl);
  await admin.unsafe("CREATE DATABASE audit_chain");
  await admin.close();
  const env = { CREDGATE_DATABASE_URL: pg.urlOf("audit_chain"), CREDGATE_MASTER_KEY: TEST_MASTER_KEY };
  [a, b] = await Promise.all([startCredgate({ env }), startCredgate({ env })]);
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  pg?.stop();
});

test("concurrent writes on both instances: every write is one event, and the chain verifies", async () => {
  const PER_INSTANCE = 25;
  const writes = [a, b].flatMap((c, i) =>
    Array.from({ length: PER_INSTANCE }, (_, n) => c.api("POST", "/v1/agents", { body: { name: `Agent ${i}-${n}`, identifier: `agent-${i}-${n}`, mode: "all" } })),
  );
  const answers = await Promise.all(writes);
  expect(answers.map((r) => r.status)).toEqual(answers.map(() => 201));

  const events = await queryStore<{ target_id: string; hash: string }>(a, sql`SELECT target_id, hash FROM audit_events ORDER BY seq`);
  expect(events.length).toBe(2 * PER_INSTANCE);
  expect(new Set(events.map((e) => e.target_id))).toEqual(new Set(answers.map((r) => r.body.id)));
  expect(new Set(events.map((e) => e.hash)).size).toBe(events.length);

  const verified = await runCli(["audit", "verify", "--data-dir", b.dataDir], b.env);
  expect(verified).toEqual({ code: 0, stdout: `audit chain intact: ${2 * PER_INSTANCE} events\n`, stderr: "" });
}, 120_000);
