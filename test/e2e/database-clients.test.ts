// The database broker with real clients (docs/databases.md): psql, psycopg2 (both libpq), node's pg and postgres
// (porsager) connect to the real credgate process's database listener with the agent token as the password and a
// database secret's name as the user, over TLS verified against the gateway CA and over loopback without TLS;
// credgate logs in to the test PostgreSQL server (test/support/databaseServer.ts) with SCRAM (channel binding
// offered over TLS), MD5 or cleartext over TLS. Every connection refusal the agent can meet, with its SQLSTATE and
// message as each client shows it; the protocol passing through (extended protocol, COPY both ways,
// notifications, large results, cancel); the real password nowhere an agent or an operator's log could see it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { spawn } from "bun";
import type pg from "pg";
import { startBroker, storeText, type Broker } from "../support/databaseBroker.ts";
import { pgClient, pgConnectError, porsager, porsagerError, psql, psycopg2 } from "../support/databaseClients.ts";
import { eventually } from "../support/gateway.ts";
import { freePort } from "../support/ports.ts";
import { pgBinary } from "../support/postgres.ts";

const S = {
  scram: "pg_scram",
  md5: "pg_md5",
  clear: "pg_clear",
  scramPlain: "pg_scram_plain",
  md5Plain: "pg_md5_plain",
  requireOnly: "pg_require",
  wrongName: "pg_wrong_name",
  clearPlain: "pg_clear_plain",
  wrongPassword: "pg_wrong_password",
  otherOnly: "pg_other_only",
  unreachable: "pg_unreachable",
};
const WRONG_PASSWORD = `not-the-password-${crypto.randomUUID()}`;
const CONNECT_FAILED = "credgate: could not connect to the database: ";

let b: Broker;
/** Every message a client was given, to search for the password afterwards. */
const seenByClients: string[] = [];

beforeAll(async () => {
  b = await startBroker();
  await b.secret(S.scram, { user: "scram" });
  await b.secret(S.md5, { user: "md5" });
  await b.secret(S.clear, { user: "cleartext" });
  await b.secret(S.scramPlain, { user: "scram", tls: "off" });
  await b.secret(S.md5Plain, { user: "md5", tls: "off" });
  // 127.0.0.2 is not in the server's certificate: `require` encrypts without checking the name, verify-full fails.
  await b.secret(S.requireOnly, { user: "scram", host: "127.0.0.2", tls: "require" });
  await b.secret(S.wrongName, { user: "scram", host: "127.0.0.2" });
  await b.secret(S.clearPlain, { user: "cleartextPlain", tls: "off" });
  await b.secret(S.wrongPassword, { user: "scram", password: WRONG_PASSWORD });
  await b.secret(S.otherOnly, { user: "scram", databases: ["other"] });
  await b.secret(S.unreachable, { user: "scram", tls: "off", port: await freePort() });
});

afterAll(async () => {
  await b?.stop();
});

/** The server's own record of how the backend `pid` authenticated (log_connections). */
function authLine(pid: number): string | undefined {
  return readFileSync(b.db.logFile, "utf8")
    .split("\n")
    .find((l) => l.includes(`[${pid}]`) && l.includes("connection authenticated"));
}

const WHO = "SELECT current_user AS who, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS upstream_tls, pg_backend_pid() AS pid";

describe("real clients connect with the agent token (verify-full against the gateway CA, and loopback without TLS)", () => {
  for (const sslmode of ["verify-full", "disable"] as const) {
    test(`psql, sslmode=${sslmode}: reads and writes as the secret's database user`, async () => {
      const name = `psql-${sslmode}-${crypto.randomUUID()}`;
      const r = await psql(b.url(S.scram, { sslmode }), `${WHO}; INSERT INTO items (name) VALUES ('${name}'); SELECT count(*) FROM items WHERE name = '${name}'`);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const [who, count] = r.stdout.trim().split("\n");
      expect(who).toMatch(/^scram_user\|t\|\d+$/);
      expect(count).toBe("1");
      expect(await b.db.admin(`SELECT 1 FROM items WHERE name = '${name}'`)).toHaveLength(1);
    });

    test(`node pg, sslmode=${sslmode}`, async () => {
      const client = await pgClient(b.pgConfig(S.scram, { sslmode }));
      try {
        const r = await client.query(WHO);
        expect(r.rows[0]).toMatchObject({ who: "scram_user", upstream_tls: true });
        expect((await client.query("INSERT INTO items (name) VALUES ('pg') RETURNING id")).rowCount).toBe(1);
        // The agent side is what was asked: TLS checked against the gateway CA, or plain.
        const stream = (client as unknown as { connection: { stream: { encrypted?: boolean; authorized?: boolean } } }).connection.stream;
        expect(Boolean(stream.encrypted)).toBe(sslmode !== "disable");
        if (sslmode !== "disable") expect(stream.authorized).toBe(true);
      } finally {
        await client.end();
      }
    });

    test(`postgres (porsager), sslmode=${sslmode}`, async () => {
      const sql = porsager(b.url(S.scram, { sslmode }));
      try {
        const [row] = await sql.unsafe(WHO);
        expect(row).toMatchObject({ who: "scram_user", upstream_tls: true });
        const [written] = await sql`INSERT INTO items (name) VALUES (${"porsager"}) RETURNING name`;
        expect(written).toEqual({ name: "porsager" });
      } finally {
        await sql.end();
      }
    });

    test(`psycopg2, sslmode=${sslmode}`, async () => {
      const out = await psycopg2(b.url(S.scram, { sslmode }), [{ sql: WHO }, { sql: "INSERT INTO items (name) VALUES (%s) RETURNING name", params: ["psycopg2"] }]);
      expect(out.connectError).toBeUndefined();
      expect(out.results![0]!.rows![0]!.slice(0, 2)).toEqual(["scram_user", true]);
      expect(out.results![1]!.rows).toEqual([["psycopg2"]]);
    });
  }

  test("the listener's certificate is a leaf of the gateway CA for 127.0.0.1 and localhost (libpq verify-full on both names)", async () => {
    for (const host of ["127.0.0.1", "localhost"]) {
      const r = await psql(b.url(S.scram).replace("@127.0.0.1:", `@${host}:`), "SELECT 1");
      expect(r.stderr).toBe("");
      expect(r.stdout.trim()).toBe("1");
    }
  });
});

describe("credgate answers the server's authentication itself", () => {
  const cases: [string, string, string, boolean][] = [
    // secret, expected role, method the server logged, upstream TLS
    [S.scram, "scram_user", "scram-sha-256", true], // the server offers SCRAM-SHA-256-PLUS and SCRAM-SHA-256 over TLS
    [S.scramPlain, "scram_user", "scram-sha-256", false], // no channel binding without TLS
    [S.md5, "md5_user", "md5", true],
    [S.md5Plain, "md5_user", "md5", false],
    [S.clear, "clear_user", "password", true],
    [S.requireOnly, "scram_user", "scram-sha-256", true],
  ];
  for (const [secret, role, method, tls] of cases) {
    test(`${secret}: the server authenticated ${role} by ${method}${tls ? " over TLS" : " without TLS"}`, async () => {
      const client = await pgClient(b.pgConfig(secret));
      try {
        const r = await client.query(WHO);
        expect(r.rows[0]).toMatchObject({ who: role, upstream_tls: tls });
        expect(authLine(r.rows[0].pid)).toContain(`identity="${role}" method=${method}`);
      } finally {
        await client.end();
      }
    });
  }

  test("a server asking for a cleartext password without TLS gets no password: 08006", async () => {
    const before = readFileSync(b.db.logFile, "utf8").split('identity="clear_plain_user"').length;
    const err = await pgConnectError(b.pgConfig(S.clearPlain));
    seenByClients.push(err.message);
    expect(err.code).toBe("08006");
    expect(err.message.startsWith(CONNECT_FAILED)).toBe(true);
    // Had credgate sent it, the server would have accepted it (the role's password is right).
    expect(readFileSync(b.db.logFile, "utf8").split('identity="clear_plain_user"').length).toBe(before);
  });
});

describe("connection refusals: PostgreSQL errors with the contract's SQLSTATE and message", () => {
  test("a wrong agent token → FATAL 28P01 credgate: invalid agent token (pg, porsager, psql, psycopg2)", async () => {
    const token = "agt_not-a-real-token";
    const err = await pgConnectError(b.pgConfig(S.scram, { token }));
    expect(err).toEqual({ code: "28P01", message: "credgate: invalid agent token" });
    const sql = porsager(b.url(S.scram, { token }));
    expect(await porsagerError(sql`SELECT 1`)).toMatchObject({ code: "28P01", message: "credgate: invalid agent token" });
    await sql.end();
    const r = await psql(b.url(S.scram, { token }), "SELECT 1");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("FATAL:  credgate: invalid agent token");
    const py = await psycopg2(b.url(S.scram, { token, sslmode: "disable" }), []);
    expect(py.connectError?.message).toContain("FATAL:  credgate: invalid agent token");
  });

  test("an unknown secret name → FATAL 28000 no database credential", async () => {
    const err = await pgConnectError(b.pgConfig("no_such_secret"));
    expect(err).toEqual({ code: "28000", message: 'credgate: no database credential "no_such_secret" for this agent' });
    const r = await psql(b.url("no_such_secret", { sslmode: "disable" }), "SELECT 1");
    expect(r.stderr).toContain('FATAL:  credgate: no database credential "no_such_secret" for this agent');
  });

  test("an agent in grants mode reaches only the database secrets granted to it (28000 for the others)", async () => {
    const agent = await b.agent("db-granted", "grants");
    const secrets = (await b.cg.api("GET", "/v1/secrets")).body as { id: string; name: string }[];
    const md5 = secrets.find((s) => s.name === S.md5)!;
    expect((await b.cg.api("PUT", `/v1/agents/${agent.id}/grants/secrets/${md5.id}`)).status).toBe(200);
    const refused = await pgConnectError(b.pgConfig(S.scram, { token: agent.token }));
    expect(refused).toEqual({ code: "28000", message: `credgate: no database credential "${S.scram}" for this agent` });
    const client = await eventually(async () => {
      try {
        return await pgClient(b.pgConfig(S.md5, { token: agent.token }));
      } catch {
        return null;
      }
    });
    expect(client).not.toBeNull();
    expect((await client!.query("SELECT current_user AS who")).rows[0]).toEqual({ who: "md5_user" });
    await client!.end();
  });

  test("a database outside the secret's `databases` → FATAL 42501; one inside connects", async () => {
    const err = await pgConnectError(b.pgConfig(S.otherOnly, { database: "app" }));
    expect(err).toEqual({ code: "42501", message: 'credgate: database "app" is not allowed for this credential' });
    const r = await psql(b.url(S.otherOnly, { database: "other" }), "SELECT current_database()");
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("other");
  });

  test("the server refusing credgate's password → FATAL 08006 with the server's reason, no password in it", async () => {
    const err = await pgConnectError(b.pgConfig(S.wrongPassword));
    seenByClients.push(err.message);
    expect(err.code).toBe("08006");
    expect(err.message).toBe(`${CONNECT_FAILED}password authentication failed for user "scram_user"`);
    const r = await psql(b.url(S.wrongPassword), "SELECT 1");
    seenByClients.push(r.stderr);
    expect(r.stderr).toContain(`FATAL:  ${CONNECT_FAILED}`);
  });

  test("a server nobody listens for → FATAL 08006 could not connect", async () => {
    const err = await pgConnectError(b.pgConfig(S.unreachable));
    seenByClients.push(err.message);
    expect(err.code).toBe("08006");
    expect(err.message.startsWith(CONNECT_FAILED)).toBe(true);
  });

  test("verify-full against a server whose certificate does not name the host → FATAL 08006; tls require on the same host works", async () => {
    const err = await pgConnectError(b.pgConfig(S.wrongName));
    seenByClients.push(err.message);
    expect(err.code).toBe("08006");
    expect(err.message.startsWith(CONNECT_FAILED)).toBe(true);
    const client = await pgClient(b.pgConfig(S.requireOnly));
    expect((await client.query("SELECT inet_server_addr()::text AS addr")).rows[0]).toEqual({ addr: "127.0.0.2/32" });
    await client.end();
  });

  test("verify-full against a server certificate the upstream CA file does not trust → FATAL 08006", async () => {
    // A second credgate whose CREDGATE_UPSTREAM_CA_FILE holds another CA.
    const other = await startBroker({ db: b.db, env: { CREDGATE_UPSTREAM_CA_FILE: b.db.otherCaFile } });
    try {
      await other.secret("pg_untrusted", { user: "scram" });
      const err = await pgConnectError(other.pgConfig("pg_untrusted"));
      seenByClients.push(err.message);
      expect(err.code).toBe("08006");
      expect(err.message.startsWith(CONNECT_FAILED)).toBe(true);
      expect(other.cg.output()).not.toContain(b.db.users.scram.password);
    } finally {
      await other.stop();
    }
  });
});

describe("the protocol passes through", () => {
  test("the agent gets credgate's own BackendKeyData, not the server's process id", async () => {
    const client = await pgClient(b.pgConfig(S.scram));
    try {
      const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
      const own = client as unknown as { processID: number; secretKey: number };
      expect(typeof own.processID).toBe("number");
      expect(own.processID).not.toBe(pid);
    } finally {
      await client.end();
    }
  });

  test("the server's ParameterStatus reach the agent (server_version, client_encoding)", async () => {
    const sql = porsager(b.url(S.scram));
    try {
      await sql`SELECT 1`;
      const [row] = await sql`SELECT current_setting('server_version') AS v`;
      expect(sql.parameters.server_version).toBe(row!.v);
      expect(sql.parameters.client_encoding).toBe("UTF8");
    } finally {
      await sql.end();
    }
  });

  test("extended protocol: parameters, named prepared statements, bytea; bound values never in the request log", async () => {
    const bound = `bound-value-${crypto.randomUUID()}`;
    const client = await pgClient(b.pgConfig(S.scram));
    try {
      const r = await client.query("SELECT $1::text AS v, $2::int + 1 AS n, $3::bytea AS raw", [bound, 41, Buffer.from([0, 1, 2, 255])]);
      expect(r.rows[0]).toEqual({ v: bound, n: 42, raw: Buffer.from([0, 1, 2, 255]) });
      for (const n of [1, 2]) {
        const named = await client.query({ name: "item-by-n", text: "SELECT name FROM items WHERE n = $1", values: [n] });
        expect(named.rows).toEqual([{ name: `item ${n}` }]);
      }
      const inserted = await client.query("INSERT INTO items (name, n) VALUES ($1, $2) RETURNING n", [bound, 7]);
      expect(inserted.rows).toEqual([{ n: 7 }]);
    } finally {
      await client.end();
    }
    const sql = porsager(b.url(S.scram));
    try {
      const rows = await sql`SELECT ${bound}::text AS v, ${[1, 2, 3]}::int[] AS a`;
      expect(rows[0]).toEqual({ v: bound, a: [1, 2, 3] });
    } finally {
      await sql.end();
    }
    const rows = await b.logs((r) => r.method === "SQL" && r.path.includes("$1::text AS v"), 2);
    expect(rows.length).toBeGreaterThanOrEqual(2);
    await b.logs((r) => r.method === "SQL" && r.path.startsWith("INSERT INTO items (name, n) VALUES ($1, $2)"));
    const all = JSON.stringify((await b.cg.api("GET", "/v1/logs?limit=500")).body);
    expect(all).not.toContain(bound);
    expect(await storeText(b.cg)).not.toContain(bound);
  });

  test("COPY FROM STDIN and TO STDOUT: psql, psycopg2 and porsager", async () => {
    const tag = crypto.randomUUID().slice(0, 8);
    const lines = Array.from({ length: 500 }, (_, i) => `copy-${tag}-${i}\t${i}`).join("\n") + "\n";
    const r = await psql(b.url(S.scram), "COPY items (name, n) FROM STDIN", { stdin: lines });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = await psql(b.url(S.scram, { sslmode: "disable" }), `COPY (SELECT name, n FROM items WHERE name LIKE 'copy-${tag}-%' ORDER BY n) TO STDOUT`);
    expect(out.stdout).toBe(lines);

    const py = await psycopg2(b.url(S.md5), [
      { copyIn: "COPY items (name, n) FROM STDIN", data: `py-${tag}\t1\npy-${tag}\t2\n` },
      { copyOut: `COPY (SELECT name, n FROM items WHERE name = 'py-${tag}' ORDER BY n) TO STDOUT WITH (FORMAT csv)` },
    ]);
    expect(py.results).toEqual([{ rowcount: 2 }, { data: `py-${tag},1\npy-${tag},2\n` }]);

    const sql = porsager(b.url(S.scram));
    try {
      const writable = await sql`COPY items (name, n) FROM STDIN`.writable();
      await pipeline(Readable.from(Array.from({ length: 1000 }, (_, i) => `pors-${tag}\t${i}\n`)), writable);
      const readable = await sql.unsafe(`COPY (SELECT n FROM items WHERE name = 'pors-${tag}' ORDER BY n) TO STDOUT`).readable();
      let text = "";
      await pipeline(
        readable,
        new Writable({
          write(chunk, _enc, done) {
            text += chunk.toString();
            done();
          },
        }),
      );
      expect(text).toBe(Array.from({ length: 1000 }, (_, i) => `${i}\n`).join(""));
    } finally {
      await sql.end();
    }
  });

  test("LISTEN/NOTIFY: notifications from another session reach the agent (pg, psycopg2)", async () => {
    const client = await pgClient(b.pgConfig(S.scram));
    try {
      const got: { channel: string; payload?: string }[] = [];
      client.on("notification", (n) => got.push({ channel: n.channel, payload: n.payload }));
      await client.query("LISTEN credgate_test");
      await b.db.admin("NOTIFY credgate_test, 'from the admin'");
      const other = await pgClient(b.pgConfig(S.md5));
      await other.query("SELECT pg_notify('credgate_test', 'through credgate')");
      await other.end();
      await eventually(() => got.length >= 2, 10_000);
      expect(got).toEqual([
        { channel: "credgate_test", payload: "from the admin" },
        { channel: "credgate_test", payload: "through credgate" },
      ]);
    } finally {
      await client.end();
    }
    const py = await psycopg2(b.url(S.scram), [{ listen: "py_channel", notifySql: "NOTIFY py_channel, 'hello psycopg2'" }]);
    expect(py.results).toEqual([{ notifies: [["py_channel", "hello psycopg2"]] }]);
  });

  test("a large result (100,000 rows, 50 MB) arrives whole (pg and psql)", async () => {
    const query = "SELECT g AS n, repeat(chr(97 + g % 26), 500) AS s FROM generate_series(1, 100000) g";
    const client = await pgClient(b.pgConfig(S.scram));
    try {
      const r = await client.query(query);
      expect(r.rowCount).toBe(100_000);
      // chr(97 + 100000 % 26) = 'e'
      expect(r.rows[99_999]).toEqual({ n: 100_000, s: "e".repeat(500) });
      expect(r.rows.reduce((sum: number, row: { s: string }) => sum + row.s.length, 0)).toBe(50_000_000);
    } finally {
      await client.end();
    }
    const out = await psql(b.url(S.scram, { sslmode: "disable" }), query);
    const lines = out.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(100_000);
    expect(lines[0]).toBe(`1|${"b".repeat(500)}`);
  });

  test("CancelRequest: SELECT pg_sleep(30) cancelled by porsager and by psql (SIGINT) → 57014 at once; the sessions go on", async () => {
    const sql = porsager(b.url(S.scram));
    try {
      const started = Date.now();
      const q = sql`SELECT pg_sleep(30)`;
      const failed = porsagerError(q);
      await activeSleep();
      q.cancel();
      expect(await failed).toMatchObject({ code: "57014", message: "canceling statement due to user request" });
      expect(Date.now() - started).toBeLessThan(25_000);
      expect([...(await sql`SELECT 2 AS two`)]).toEqual([{ two: 2 }]);
    } finally {
      await sql.end();
    }
    const proc = spawn([pgBinary("psql"), b.url(S.md5), "-X", "-v", "VERBOSITY=verbose", "-c", "SELECT pg_sleep(30)"], { stdout: "pipe", stderr: "pipe" });
    await activeSleep();
    proc.kill("SIGINT");
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    expect(stderr).toContain("ERROR:  57014: canceling statement due to user request");
    expect(code).toBe(1);
  });

  test("30 sessions at once, each with its own values: every answer reaches its own session, in order", async () => {
    const sessions = await Promise.all(Array.from({ length: 30 }, (_, i) => pgClient(b.pgConfig(i % 2 ? S.md5 : S.scramPlain, { sslmode: i % 3 ? "verify-full" : "disable" }))));
    try {
      await Promise.all(
        sessions.map(async (c, i) => {
          for (let k = 0; k < 20; k++) {
            const r = await c.query("SELECT $1::int AS i, $2::int AS k, pg_backend_pid() AS pid", [i, k]);
            expect(r.rows[0]).toMatchObject({ i, k });
          }
        }),
      );
      const pids = await Promise.all(sessions.map(async (c) => (await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid));
      expect(new Set(pids).size).toBe(30);
    } finally {
      await Promise.all(sessions.map((c) => c.end()));
    }
  });

  test("the server ending the session (pg_terminate_backend) reaches the agent as the server's FATAL 57P01, and the connection closes", async () => {
    const client = await pgClient(b.pgConfig(S.scram));
    const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
    const ended = new Promise<void>((resolve) => client.on("end", () => resolve()));
    const errors: { code?: string }[] = [];
    client.on("error", (e) => errors.push(e as { code?: string }));
    await b.db.admin(`SELECT pg_terminate_backend(${pid})`);
    await ended;
    expect(errors.map((e) => e.code)).toContain("57P01");
  });

  test("Terminate ends the server session too", async () => {
    const client = await pgClient(b.pgConfig(S.scram));
    const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
    await client.end();
    const gone = await eventually(async () => (await b.db.admin(`SELECT 1 FROM pg_stat_activity WHERE pid = ${pid}`)).length === 0, 10_000);
    expect(gone).toBe(true);
  });
});

/** Waits until the server runs a pg_sleep(30) statement. */
async function activeSleep(): Promise<void> {
  const seen = await eventually(async () => (await b.db.admin("SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep(30)%'")).length > 0, 15_000, 50);
  if (!seen) throw new Error("pg_sleep(30) never started on the server");
}

describe("the password stays secret", () => {
  test("no real password in what clients were told, in credgate's output, in API answers or in the store", async () => {
    const passwords = Object.values(b.db.users).map((u) => u.password);
    const answers = [
      await b.cg.api("GET", "/v1/secrets"),
      await b.cg.api("GET", "/v1/logs?limit=500"),
      await b.cg.api("GET", "/v1/approvals/pending"),
      await b.cg.api("GET", `/v1/agents/${(await b.cg.api("GET", "/v1/agents/default")).body.id}/effective-credentials`),
    ].map((r) => r.text);
    for (const id of ((await b.cg.api("GET", "/v1/secrets")).body as { id: string }[]).map((s) => s.id)) answers.push((await b.cg.api("GET", `/v1/secrets/${id}`)).text);
    // What the refusals above told their clients, and (when this test runs alone) two told here.
    for (const secret of [S.wrongPassword, S.clearPlain]) seenByClients.push((await pgConnectError(b.pgConfig(secret))).message);
    expect(seenByClients.length).toBeGreaterThan(1);
    const stored = await storeText(b.cg);
    for (const pw of [...passwords, WRONG_PASSWORD]) {
      for (const text of [...seenByClients, b.cg.output(), ...answers, stored]) expect(text).not.toContain(pw);
    }
    // The store does hold the secrets (encrypted): the check above read the right store.
    expect(stored).toContain(S.wrongPassword);
  });
});
