// The test PostgreSQL server of the database broker's suites (test/support/databaseServer.ts) is what it says:
// TLS with the test CA, one role per authentication method, cleartext over TLS only. Checked with node's `pg`
// connecting directly, so that a broker test failing later is the broker's fault, not the fixture's.
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import pg from "pg";
import { databaseServer, type DatabaseUserKind } from "../support/databaseServer.ts";
import { pgBinary } from "../support/postgres.ts";

async function query(url: string, text: string, extra: pg.ClientConfig = {}): Promise<pg.QueryResult> {
  const client = new pg.Client(url ? { connectionString: url, ...extra } : extra);
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

async function failure(url: string, extra: pg.ClientConfig = {}): Promise<{ code?: string; message: string }> {
  try {
    await query(url, "SELECT 1", extra);
  } catch (e) {
    const err = e as { code?: string; message: string };
    return { code: err.code, message: err.message };
  }
  throw new Error(`connected to ${url.replace(/:[^:@/]*@/, ":…@")} but should not have`);
}

describe("the test database server", () => {
  for (const kind of ["scram", "md5", "cleartext"] as DatabaseUserKind[]) {
    test(`${kind}: connects over TLS verified against the test CA, reads and writes app.items`, async () => {
      const db = await databaseServer();
      const r = await query(
        db.connectUrl(kind, { sslmode: "verify-full" }),
        "WITH w AS (INSERT INTO items (name) VALUES ('fixture') RETURNING id) SELECT current_user AS who, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl, (SELECT count(*) FROM w) AS written",
      );
      expect(r.rows[0]).toEqual({ who: db.users[kind].name, ssl: true, written: "1" });
      // The server logged the method it asked for: the role really authenticated that way.
      const log = readFileSync(db.logFile, "utf8");
      expect(log).toContain(`identity="${db.users[kind].name}" method=${db.users[kind].method}`);
    });
  }

  test("SCRAM over TLS offers channel binding (SCRAM-SHA-256-PLUS): libpq's channel_binding=require succeeds, and fails without TLS", async () => {
    const db = await databaseServer();
    const psql = (url: string) => spawnSync(pgBinary("psql"), [url, "-XAtc", "SELECT current_user"], { encoding: "utf8" });
    const bound = psql(`${db.connectUrl("scram", { sslmode: "verify-full" })}&channel_binding=require`);
    expect(bound.stderr).toBe("");
    expect(bound.stdout.trim()).toBe("scram_user");
    const plain = psql(`${db.connectUrl("scram", { sslmode: "disable" })}&channel_binding=require`);
    expect(plain.status).not.toBe(0);
    expect(plain.stderr).toContain("channel binding");
  });

  test("scram and md5 connect without TLS too; the cleartext role does not; clear_plain_user only without", async () => {
    const db = await databaseServer();
    for (const kind of ["scram", "md5"] as DatabaseUserKind[]) {
      const r = await query(db.connectUrl(kind, { sslmode: "disable" }), "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
      expect(r.rows[0]).toEqual({ ssl: false });
    }
    const refused = await failure(db.connectUrl("cleartext", { sslmode: "disable" }));
    expect(refused.code).toBe("28000");
    expect(refused.message).toContain('no pg_hba.conf entry for host "127.0.0.1", user "clear_user"');
    // The careless server's role: cleartext without TLS only.
    const r = await query(db.connectUrl("cleartextPlain", { sslmode: "disable" }), "SELECT current_user AS who");
    expect(r.rows[0]).toEqual({ who: "clear_plain_user" });
    expect(readFileSync(db.logFile, "utf8")).toContain('identity="clear_plain_user" method=password');
    expect((await failure(db.connectUrl("cleartextPlain", { sslmode: "verify-full" }))).code).toBe("28000");
  });

  test("a wrong password is refused (28P01)", async () => {
    const db = await databaseServer();
    const refused = await failure(db.connectUrl("scram").replace(db.users.scram.password, "wrong"));
    expect(refused.code).toBe("28P01");
  });

  test("verify-full fails on 127.0.0.2 (not in the certificate) and against the other CA; require works on 127.0.0.2", async () => {
    const db = await databaseServer();
    const wrongName = await failure(db.connectUrl("scram", { sslmode: "verify-full", host: db.untrustedHost }));
    expect(wrongName.message).toMatch(/IP: 127\.0\.0\.2 is not in the cert's list|does not match/);
    const config = db.clientConfig("scram", { sslmode: "verify-full" });
    const wrongCa = await failure("", { ...config, ssl: { ca: readFileSync(db.otherCaFile, "utf8"), rejectUnauthorized: true } });
    expect(wrongCa.message).toMatch(/self[- ]signed|unable to (get|verify)/i);
    const r = await query("", "SELECT inet_server_addr()::text AS addr", db.clientConfig("scram", { sslmode: "require", host: db.untrustedHost }));
    expect(r.rows[0]).toEqual({ addr: "127.0.0.2/32" });
  });

  test("admin runs SQL as the superuser; add_item writes from inside a SELECT", async () => {
    const db = await databaseServer();
    const [row] = await db.admin<{ id: number }>("SELECT add_item('from admin') AS id");
    expect(row!.id).toBeGreaterThan(100);
    const [check] = await db.admin<{ name: string }>(`SELECT name FROM items WHERE id = ${row!.id}`);
    expect(check!.name).toBe("from admin");
    expect((await db.admin<{ n: number }>("SELECT count(*)::int AS n FROM items", db.otherDatabase))[0]!.n).toBe(100);
  });
});
