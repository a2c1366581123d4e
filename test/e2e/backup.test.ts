// Backups of the embedded store (docs/operations.md#backups) through the real CLI and the real server:
// `credgate backup` while the server serves and writes (the copy opens, passes integrity_check and holds every
// row written before the backup began; the master key is not in it), `credgate restore` into a stopped data dir
// (served again, secrets and keys still open), and the refusals: a running server, a foreign file, a newer
// schema, a master key that cannot open the backup, and PostgreSQL mode.
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sqliteMigrations } from "../../migrations/sqlite/index.ts";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";

// This suite is about the SQLite file: it runs its servers on SQLite whatever the engine under test.
const SQLITE = { CREDGATE_DATABASE_URL: "" };
const running: RunningCredgate[] = [];
afterAll(async () => {
  await Promise.all(running.map((c) => c.stop()));
});

async function serve(dataDir: string): Promise<RunningCredgate> {
  const c = await startCredgate({ dataDir, env: SQLITE });
  running.push(c);
  return c;
}

const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { ...SQLITE, ...env });

function secretBody(n: number) {
  return { name: `S${n}`, type: "generic", value: `backup-value-${n}`, hostPattern: "api.example.com", injectionConfig: { headerName: "x-key" } };
}

/** Secret ids in a database file, opened read-only. */
function secretIdsIn(file: string): Set<string> {
  const db = new Database(file, { readonly: true });
  try {
    return new Set((db.query("SELECT id FROM secrets").all() as { id: string }[]).map((r) => r.id));
  } finally {
    db.close();
  }
}

describe("credgate backup while the server serves and writes", () => {
  test("a consistent copy: opens, passes integrity_check, holds every row written before it began; 0600; no master key", async () => {
    const dir = join(tempDir(), "data");
    const c = await serve(dir);
    const written: { id: string; at: number }[] = [];
    let stop = false;
    // Two writers that keep going through the backup.
    const writer = async (w: number) => {
      for (let n = 0; !stop; n++) {
        const r = await c.api("POST", "/v1/secrets", { body: secretBody(w * 100000 + n) });
        if (r.status !== 201) throw new Error(`write failed: ${r.status} ${r.text}`);
        written.push({ id: r.body.id, at: performance.now() });
      }
    };
    const writers = [writer(1), writer(2)];
    while (written.length < 20) await Bun.sleep(10);
    const began = performance.now();
    const before = new Set(written.filter((w) => w.at < began).map((w) => w.id));
    const file = join(tempDir(), "nightly.credgate");
    const r = await cli(["backup", "--to", file, "--data-dir", dir]);
    const ended = performance.now();
    const duringBackup = written.filter((w) => w.at > began && w.at < ended).length;
    stop = true;
    await Promise.all(writers);

    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^backup of ${dir}/credgate\\.db written to ${file} \\(\\d+\\.\\d (KiB|MiB)\\)\\n`));
    expect(r.stdout).toEndWith(`the master key is not in the backup: keep ${dir}/master.key safely\n`);
    // The server kept writing while the copy was made.
    expect(duringBackup).toBeGreaterThan(0);

    expect((statSync(file).mode & 0o777).toString(8)).toBe("600");
    const copy = new Database(file, { readonly: true });
    expect(copy.query("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }]);
    copy.close();
    const inCopy = secretIdsIn(file);
    expect([...before].filter((id) => !inCopy.has(id))).toEqual([]);
    // The copy is one consistent moment: nothing in it that the server did not write.
    const all = new Set(written.map((w) => w.id));
    expect([...inCopy].filter((id) => !all.has(id))).toEqual([]);

    const key = readFileSync(join(dir, "master.key"), "utf8").trim();
    const bytes = readFileSync(file);
    expect(bytes.includes(Buffer.from(key))).toBe(false);
    expect(bytes.includes(Buffer.from(key, "base64"))).toBe(false);
    expect(bytes.includes(Buffer.from("backup-value-"))).toBe(false);
  }, 60_000);

  test("a key from CREDGATE_MASTER_KEY: the message names the variable; --to replaces an older backup", async () => {
    const dir = join(tempDir(), "data");
    const key = Buffer.alloc(32, 9).toString("base64");
    const c = await startCredgate({ dataDir: dir, env: { ...SQLITE, CREDGATE_MASTER_KEY: key } });
    running.push(c);
    const file = join(tempDir(), "b.db");
    writeFileSync(file, "an older backup");
    const r = await cli(["backup", "--to", file, "--data-dir", dir], { CREDGATE_MASTER_KEY: key });
    expect(r.code).toBe(0);
    expect(r.stdout).toEndWith("the master key is not in the backup: keep CREDGATE_MASTER_KEY safely\n");
    expect(readFileSync(file).subarray(0, 15).toString()).toBe("SQLite format 3");
  }, 60_000);

  test("no database in the data dir; an unwritable target: one line, exit 1", async () => {
    const empty = tempDir();
    const r = await cli(["backup", "--to", join(tempDir(), "x.db"), "--data-dir", empty]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: `credgate: no credgate database at ${empty}/credgate.db: pass the --data-dir the server uses\n` });
    const dir = join(tempDir(), "data");
    await serve(dir);
    const r2 = await cli(["backup", "--to", "/nonexistent-dir/x.db", "--data-dir", dir]);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toStartWith("credgate: cannot write /nonexistent-dir/x.db: ");
    expect(r2.stderr.split("\n").length).toBe(2);
  }, 60_000);
});

describe("credgate restore", () => {
  /** A data dir with two secrets and an agent, its backup, and what the server answered. */
  async function backedUp() {
    const dir = join(tempDir(), "data");
    const c = await serve(dir);
    const ids = [];
    for (let n = 0; n < 2; n++) ids.push((await c.api("POST", "/v1/secrets", { body: secretBody(n) })).body.id);
    const made = (await c.api("POST", "/v1/agents", { body: { name: "Kept", identifier: "kept", mode: "all" } })).body;
    const agent = (await c.api("GET", "/v1/agents")).body.find((a: any) => a.id === made.id);
    expect(agent.accessToken).toStartWith("agt_");
    const file = join(tempDir(), "backup.db");
    expect((await cli(["backup", "--to", file, "--data-dir", dir])).code).toBe(0);
    return { c, dir, file, ids, agent };
  }

  test("into a new data dir with the master key: served again, secrets listed, tokens and keys open", async () => {
    const { c, dir, file, ids, agent } = await backedUp();
    const target = join(tempDir(), "restored");
    mkdirSync(target, { mode: 0o700 });
    copyFileSync(join(dir, "master.key"), join(target, "master.key"));
    const r = await cli(["restore", "--from", file, "--data-dir", target]);
    expect(r).toEqual({ code: 0, stdout: `restored ${file} into ${target}/credgate.db\n`, stderr: "" });

    const again = await serve(target);
    expect(again.keys).toEqual(c.keys);
    const secrets = (await again.api("GET", "/v1/secrets")).body.map((s: any) => s.id);
    expect(secrets.sort()).toEqual([...ids].sort());
    // The agent's token is stored sealed: reading it back opens it with the master key.
    const agents = (await again.api("GET", "/v1/agents")).body;
    expect(agents.find((a: any) => a.id === agent.id).accessToken).toBe(agent.accessToken);
    expect((await again.api("GET", "/v1/agents", { key: c.keys.orgApiKey, headers: { "x-project-id": c.keys.projectId } })).status).toBe(200);
  }, 60_000);

  test("into a data dir without a key: restored, and the one thing left to do is said", async () => {
    const { file } = await backedUp();
    const target = join(tempDir(), "fresh");
    const r = await cli(["restore", "--from", file, "--data-dir", target]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`restored ${file} into ${target}/credgate.db\nput the master key this backup was made with in ${target}/master.key (mode 0600) or CREDGATE_MASTER_KEY before starting credgate\n`);
    expect((statSync(target).mode & 0o777).toString(8)).toBe("700");
  }, 60_000);

  test("over the stopped server's own data: later writes are gone, the previous database is kept", async () => {
    const { c, dir, file, ids } = await backedUp();
    const later = (await c.api("POST", "/v1/secrets", { body: secretBody(99) })).body.id;
    expect(await c.stop()).toBe(0);
    const r = await cli(["restore", "--from", file, "--data-dir", dir]);
    expect(r).toEqual({ code: 0, stdout: `restored ${file} into ${dir}/credgate.db\nthe previous database was kept as ${dir}/credgate.db.before-restore\n`, stderr: "" });
    expect(existsSync(join(dir, "credgate.db-wal"))).toBe(false);
    expect(secretIdsIn(join(dir, "credgate.db.before-restore")).has(later)).toBe(true);
    const again = await serve(dir);
    expect((await again.api("GET", "/v1/secrets")).body.map((s: any) => s.id).sort()).toEqual([...ids].sort());
  }, 60_000);

  test("refused while a server holds the data dir: one line, exit 1, the server keeps its data", async () => {
    const { c, dir, file } = await backedUp();
    const later = (await c.api("POST", "/v1/secrets", { body: secretBody(7) })).body.id;
    const r = await cli(["restore", "--from", file, "--data-dir", dir]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: `credgate: ${dir}/credgate.db is in use by a running credgate: stop the server (and any credgate command on ${dir}), then restore\n` });
    expect((await c.api("GET", `/v1/secrets/${later}`)).status).toBe(200);
    expect((await c.api("POST", "/v1/secrets", { body: secretBody(8) })).status).toBe(201);
  }, 60_000);

  test("a file written by a newer credgate is refused, naming both schemas", async () => {
    const { file } = await backedUp();
    const newer = join(tempDir(), "newer.db");
    copyFileSync(file, newer);
    const db = new Database(newer);
    const future = sqliteMigrations[sqliteMigrations.length - 1]!.when + 86_400_000;
    db.run('INSERT INTO "__drizzle_migrations" ("hash", "created_at") VALUES (?, ?)', ["future", future]);
    db.close();
    const target = join(tempDir(), "t");
    const r = await cli(["restore", "--from", newer, "--data-dir", target]);
    const known = new Date(sqliteMigrations[sqliteMigrations.length - 1]!.when).toISOString();
    expect(r).toEqual({
      code: 1,
      stdout: "",
      stderr: `credgate: ${newer} was written by a newer credgate (schema of ${new Date(future).toISOString()}, this build knows schemas up to ${known}): restore it with that version or a newer one\n`,
    });
    expect(existsSync(join(target, "credgate.db"))).toBe(false);
  }, 60_000);

  test("files that are not credgate databases, and a missing file", async () => {
    const target = join(tempDir(), "t");
    const text = join(tempDir(), "notes.txt");
    writeFileSync(text, "these are not the rows you are looking for\n".repeat(10));
    expect(await cli(["restore", "--from", text, "--data-dir", target])).toEqual({ code: 1, stdout: "", stderr: `credgate: ${text} is not a credgate backup (not an SQLite database)\n` });
    const other = join(tempDir(), "other.db");
    const db = new Database(other);
    db.run("CREATE TABLE organizations (id TEXT)");
    db.close();
    expect(await cli(["restore", "--from", other, "--data-dir", target])).toEqual({
      code: 1,
      stdout: "",
      stderr: `credgate: ${other} is not a credgate backup (it has no __drizzle_migrations, projects, api_keys, settings tables)\n`,
    });
    const missing = join(tempDir(), "missing.db");
    expect(await cli(["restore", "--from", missing, "--data-dir", target])).toEqual({ code: 1, stdout: "", stderr: `credgate: ${missing} does not exist\n` });
    expect(existsSync(target)).toBe(false);
  }, 60_000);

  test("a data dir whose master key cannot open the backup is left as it is", async () => {
    const { file } = await backedUp();
    const other = join(tempDir(), "other");
    const c = await serve(other);
    expect(await c.stop()).toBe(0);
    const before = readFileSync(join(other, "credgate.db"));
    const r = await cli(["restore", "--from", file, "--data-dir", other]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: `credgate: the master key in ${other}/master.key does not open ${file}: put the key the backup was made with there first\n` });
    expect(readFileSync(join(other, "credgate.db")).equals(before)).toBe(true);
  }, 60_000);
});

describe("PostgreSQL mode", () => {
  test("backup and restore point at pg_dump / pg_restore and exit 1", async () => {
    const env = { CREDGATE_DATABASE_URL: "postgres://credgate@127.0.0.1:1/credgate", CREDGATE_MASTER_KEY: Buffer.alloc(32, 1).toString("base64") };
    const dir = tempDir();
    for (const [command, flag] of [["backup", "--to"], ["restore", "--from"]] as const) {
      const r = await runCli([command, flag, join(dir, "x.db"), "--data-dir", dir], env);
      expect(r).toEqual({
        code: 1,
        stdout: "",
        stderr: `credgate: ${command} works on the embedded SQLite database; this installation uses PostgreSQL (CREDGATE_DATABASE_URL): back it up with pg_dump and restore it with pg_restore\n`,
      });
    }
  });
});
