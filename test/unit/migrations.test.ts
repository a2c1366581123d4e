// Upgrading a data dir: the migrations of a newer binary apply on top of what an older one left, keeping
// the data. Here: request logs written before 0003 (uuid primary key) survive the move to the rowid key, in
// time order, with their ids; and the newer migrations after it apply too.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { sqliteMigrations } from "../../migrations/sqlite/index.ts";
import { DB_FILE, SqliteStore } from "../../src/store/sqlite.ts";
import { tempDir } from "../support/tmp.ts";

test("request logs written before 0003 are kept, ordered by time, after the upgrade", async () => {
  const dir = tempDir();
  const file = join(dir, DB_FILE);
  const before = sqliteMigrations.findIndex((m) => m.tag === "0003_request_log_seq");
  expect(before).toBeGreaterThan(0);
  const old = await SqliteStore.open(file, sqliteMigrations.slice(0, before));
  const insert = old.client.prepare(
    "INSERT INTO request_logs (id, organization_id, project_id, agent_id, method, host, path, status, latency_ms, injection_count, decision, created_at) VALUES (?, 'o', 'p', 'a', 'GET', 'h', '/', 200, 1, 0, 'allowed', ?)",
  );
  insert.run("id-late", "2026-11-02T00:00:00.000Z");
  insert.run("id-early", "2026-11-01T00:00:00.000Z");
  await old.close();

  const store = await SqliteStore.open(file);
  const rows = store.client.query("SELECT seq, id, created_at FROM request_logs ORDER BY seq").all() as { seq: number; id: string; created_at: string }[];
  expect(rows.map((r) => r.id)).toEqual(["id-early", "id-late"]);
  expect(rows[0]!.seq).toBeLessThan(rows[1]!.seq);
  // The uuid has no index of its own any more; one listing index remains, per project (project, time; the rowid implied).
  const indexes = (store.client.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'request_logs'").all() as { name: string }[]).map((r) => r.name).sort();
  expect(indexes).toEqual(["request_logs_project_time"]);
  const columns = (store.client.query("SELECT name FROM pragma_index_info('request_logs_project_time')").all() as { name: string }[]).map((r) => r.name);
  expect(columns).toEqual(["project_id", "created_at"]);
  // Every migration is recorded once; opening again applies nothing.
  const applied = () => (store.client.query('SELECT count(*) AS n FROM "__drizzle_migrations"').get() as { n: number }).n;
  expect(applied()).toBe(sqliteMigrations.length);
  await store.close();
  const again = await SqliteStore.open(file);
  expect((again.client.query('SELECT count(*) AS n FROM "__drizzle_migrations"').get() as { n: number }).n).toBe(sqliteMigrations.length);
  await again.close();
});

test("a new database gets 16 KiB pages; an existing one keeps its page size and its data", async () => {
  const fresh = await SqliteStore.open(join(tempDir(), DB_FILE));
  expect((fresh.client.query("PRAGMA page_size").get() as { page_size: number }).page_size).toBe(16384);
  expect((fresh.client.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
  await fresh.close();

  // A file an older credgate made, with SQLite's default 4 KiB pages.
  const file = join(tempDir(), DB_FILE);
  const { Database } = await import("bun:sqlite");
  const older = new Database(file, { create: true });
  older.run("PRAGMA journal_mode = WAL");
  older.run("CREATE TABLE kept (v TEXT)");
  older.run("INSERT INTO kept VALUES ('still here')");
  older.close();
  const reopened = await SqliteStore.open(file);
  expect((reopened.client.query("PRAGMA page_size").get() as { page_size: number }).page_size).toBe(4096);
  expect(reopened.client.query("SELECT v FROM kept").get()).toEqual({ v: "still here" });
  await reopened.close();
});
