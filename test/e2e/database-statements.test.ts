// Statements judged at the database broker (docs/databases.md): read-only credentials that stay read-only on the
// server (credgate refuses what would lift it; the server refuses a write hidden in a SELECT), blocked writes,
// writes held for a person while other sessions go on, the leak guard on statements, policy rules on the
// database host (block, rate limit, approval), one request-log row per statement with bound values never logged,
// and metrics per decision. Real credgate process, real PostgreSQL server, node pg / porsager / psql clients.
// The engine matters (approvals and request logs live in the store): this suite runs on both.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type pg from "pg";
import { startBroker, storeText, type Broker, type LogRow } from "../support/databaseBroker.ts";
import { pgClient, pgQueryError, porsager, psql, psycopg2 } from "../support/databaseClients.ts";
import { eventually } from "../support/gateway.ts";
import { fe, RawPg, types } from "../support/pgRawClient.ts";
import { parseExposition, sampleValue, type Family } from "../support/prometheus.ts";
import { clearOfWindowEdge, HOUR_MS } from "../support/windowEdge.ts";

const READ_ONLY = "credgate: this database credential is read-only";
const WRITES_BLOCKED = "credgate: writes are blocked for this database credential";
const NOT_APPROVED = "credgate: the write was not approved";
const CARRIES_SECRET = "credgate: the statement carries a credgate secret";
const RATE_LIMITED = "credgate: rate limit reached";
const NON_ASCII_UNSYNCED = "credgate: a statement with non-ASCII text cannot follow extended-protocol messages not yet synced on this credential; send a Sync first";

const S = { free: "db_free", ro: "db_readonly", block: "db_writes_block", approve: "db_writes_approve", policy: "db_policy", rate: "db_rate", ask: "db_ask" };
const HTTP_SECRET_VALUE = `http-secret-value-${crypto.randomUUID()}`;

let b: Broker;
let host: string;

beforeAll(async () => {
  b = await startBroker();
  host = `127.0.0.1:${b.db.port}`;
  await b.secret(S.free, { user: "scram" });
  await b.secret(S.ro, { user: "scram", readOnly: true });
  await b.secret(S.block, { user: "md5", writes: "block" });
  await b.secret(S.approve, { user: "scram", writes: "approve" });
  await b.secret(S.policy, { user: "scram", host: "policy.db.test" });
  await b.secret(S.rate, { user: "scram", host: "rate.db.test" });
  await b.secret(S.ask, { user: "scram", host: "ask.db.test" });
  const http = await b.cg.api("POST", "/v1/secrets", {
    body: { name: "an http secret", type: "generic", value: HTTP_SECRET_VALUE, hostPattern: "api.example.test", injectionConfig: { headerName: "x-api-key" } },
  });
  expect(http.status).toBe(201);
});

afterAll(async () => {
  await b?.stop();
});

async function session<T>(secret: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = await pgClient(b.pgConfig(secret));
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

const tag = () => crypto.randomUUID().slice(0, 8);
const rowsNamed = async (name: string) => (await b.db.admin<{ n: number }>(`SELECT count(*)::int AS n FROM items WHERE name = '${name}'`))[0]!.n;

async function pendingApproval(path: string): Promise<{ id: string; method: string; host: string; path: string }> {
  const found = await eventually(async () => {
    const res = await b.cg.api("GET", "/v1/approvals/pending");
    return (res.body?.requests ?? []).find((r: { path: string }) => r.path === path) ?? null;
  }, 15_000, 100);
  if (!found) throw new Error(`no pending approval for ${path}`);
  return found;
}

async function decide(id: string, decision: "approve" | "deny", extra: Record<string, unknown> = {}) {
  const res = await b.cg.api("POST", `/v1/approvals/${id}/decision`, { body: { decision, ...extra } });
  expect(res.status).toBe(200);
}

async function scrape(): Promise<Map<string, Family>> {
  const res = await fetch(`${b.cg.apiUrl}/metrics`);
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

const logOf = async (path: string, n = 1): Promise<LogRow[]> => b.logs((r) => r.method === "SQL" && r.path === path, n);

describe("request logs: one row per statement", () => {
  test("a multi-statement Query is two rows (method SQL, host, statement, allowed, 200); a server error is 400; a refusal 403", async () => {
    const t = tag();
    await session(S.free, async (c) => {
      await c.query(`SELECT 'log-${t}-a' AS a; SELECT 'log-${t}-b' AS b`);
      expect((await pgQueryError(c, `SELECT 1/0 AS "log-${t}-err"`)).code).toBe("22012");
    });
    await session(S.ro, async (c) => {
      expect(await pgQueryError(c, `INSERT INTO items (name) VALUES ('log-${t}-ro')`)).toEqual({ code: "25006", message: READ_ONLY });
    });
    const [a] = await logOf(`SELECT 'log-${t}-a' AS a`);
    const [bRow] = await logOf(`SELECT 'log-${t}-b' AS b`);
    for (const row of [a!, bRow!]) {
      expect(row).toMatchObject({ method: "SQL", host, status: 200, decision: "allowed", agentId: expect.any(String) });
      expect(row.latencyMs).toBeGreaterThanOrEqual(0);
    }
    expect((await logOf(`SELECT 1/0 AS "log-${t}-err"`))[0]).toMatchObject({ status: 400, decision: "allowed" });
    expect((await logOf(`INSERT INTO items (name) VALUES ('log-${t}-ro')`))[0]).toMatchObject({ status: 403, decision: "blocked" });
  });

  test("the logged statement is its first 200 characters; extended-protocol statements are logged with $n, never their bound values", async () => {
    const t = tag();
    const long = `SELECT '${t}' AS t, ${Array.from({ length: 80 }, (_, i) => `${i} AS c${i}`).join(", ")}`;
    expect(long.length).toBeGreaterThan(400);
    const bound = `bound-${crypto.randomUUID()}`;
    await session(S.free, async (c) => {
      await c.query(long);
      const r = await c.query(`SELECT $1::text AS v, '${t}' AS t`, [bound]);
      expect(r.rows[0]).toEqual({ v: bound, t });
    });
    await b.logs((r) => r.path === long.slice(0, 200));
    const [param] = await logOf(`SELECT $1::text AS v, '${t}' AS t`);
    expect(param).toMatchObject({ status: 200, decision: "allowed" });
    expect(JSON.stringify((await b.cg.api("GET", "/v1/logs?limit=500")).body)).not.toContain(bound);
  });
});

describe("readOnly: true", () => {
  test("reads pass; the session is read-only on the server; a write → 25006 and the session goes on", async () => {
    await session(S.ro, async (c) => {
      expect((await c.query("SELECT count(*)::int AS n FROM items WHERE n <= 100")).rows[0].n).toBeGreaterThanOrEqual(100);
      expect((await c.query("SHOW default_transaction_read_only")).rows[0]).toEqual({ default_transaction_read_only: "on" });
      for (const write of ["INSERT INTO items (name) VALUES ('ro')", "UPDATE items SET n = 0", "DELETE FROM items", "CREATE TABLE ro_t (x int)", "TRUNCATE items", "NOTIFY ro_channel"]) {
        expect(await pgQueryError(c, write)).toEqual({ code: "25006", message: READ_ONLY });
        expect((await c.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      }
    });
    // psycopg2 (libpq) sees the same SQLSTATE and message, and its connection goes on.
    const py = await psycopg2(b.url(S.ro), [{ sql: "INSERT INTO items (name) VALUES (%s)", params: ["py"] }, { sql: "SELECT 1" }]);
    expect(py.results).toEqual([{ error: { pgcode: "25006", message: `ERROR:  ${READ_ONLY}` } }, { rows: [[1]], status: "SELECT 1" }]);
  });

  test("every statement that would lift read-only → 25006 (SET, RESET, set_config, RESET ALL, SESSION CHARACTERISTICS, BEGIN/START … READ WRITE)", async () => {
    const lifts = [
      "SET default_transaction_read_only = off",
      "SET SESSION default_transaction_read_only TO false",
      "set /* hidden */ default_transaction_read_only=0",
      "SET transaction_read_only = off",
      "RESET default_transaction_read_only",
      "RESET ALL",
      "SELECT set_config('default_transaction_read_only', 'off', false)",
      "SELECT pg_catalog.set_config('transaction_read_only', 'off', true)",
      "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
      "BEGIN READ WRITE",
      "BEGIN ISOLATION LEVEL SERIALIZABLE, READ WRITE",
      "START TRANSACTION READ WRITE",
    ];
    await session(S.ro, async (c) => {
      for (const lift of lifts) {
        expect({ lift, ...(await pgQueryError(c, lift)) }).toEqual({ lift, code: "25006", message: READ_ONLY });
        expect((await c.query("SHOW default_transaction_read_only")).rows[0]).toEqual({ default_transaction_read_only: "on" });
      }
      // Still read-only on the server: a write the server sees fails there.
      expect((await pgQueryError(c, "SELECT add_item('lifted?')")).code).toBe("25006");
    });
    // psql shows the same refusal with its SQLSTATE.
    const r = await psql(b.url(S.ro), "BEGIN READ WRITE");
    expect(r.stderr).toContain(`ERROR:  25006: ${READ_ONLY}`);
  });

  test("a writing function inside a SELECT is refused by the server itself; nothing is written", async () => {
    const t = `fn-${tag()}`;
    await session(S.ro, async (c) => {
      const err = await pgQueryError(c, `SELECT add_item('${t}')`);
      expect(err).toEqual({ code: "25006", message: "cannot execute INSERT in a read-only transaction" });
      // Inside an explicit transaction (a read) too.
      await c.query("BEGIN");
      expect((await pgQueryError(c, `SELECT add_item('${t}')`)).code).toBe("25006");
      await c.query("ROLLBACK");
    });
    expect(await rowsNamed(t)).toBe(0);
    // The log says the server refused it (400), credgate allowed it through.
    expect((await logOf(`SELECT add_item('${t}')`, 2))[0]).toMatchObject({ status: 400, decision: "allowed" });
  });

  test("a multi-statement Query with one write is refused whole: its reads do not run either", async () => {
    await session(S.ro, async (c) => {
      expect(await pgQueryError(c, "SELECT set_config('application_name', 'ran', false); INSERT INTO items (name) VALUES ('multi')")).toEqual({ code: "25006", message: READ_ONLY });
      expect((await c.query("SHOW application_name")).rows[0].application_name).not.toBe("ran");
    });
  });

  test("keywords are read past comments, literals, quoted identifiers and dollar quotes", async () => {
    await session(S.ro, async (c) => {
      for (const write of ["/* SELECT */ DELETE FROM items", "-- SELECT\nDELETE FROM items", "WITH d AS (DELETE FROM items RETURNING *) SELECT count(*) FROM d", "  (SELECT 1); DELETE FROM items"]) {
        expect({ write, ...(await pgQueryError(c, write)) }).toEqual({ write, code: "25006", message: READ_ONLY });
      }
      const reads: [string, unknown][] = [
        ["SELECT 'x; DELETE FROM items' AS v", "x; DELETE FROM items"],
        ['SELECT 1 AS "; DELETE FROM items"', 1],
        ["SELECT $tag$; DELETE FROM items; $tag$ AS v", "; DELETE FROM items; "],
        ["SELECT 2 /* ; DELETE FROM items */ AS v", 2],
        ["VALUES (3)", 3],
        ["TABLE items ORDER BY id LIMIT 1", "item 1"],
        ["WITH x AS (SELECT 4 AS v) SELECT v FROM x", 4],
        ["EXPLAIN SELECT 1", expect.stringContaining("Result")],
      ];
      for (const [read, value] of reads) {
        const r = await c.query({ text: read, rowMode: "array" });
        expect({ read, value: r.rows[0]?.[r.fields.length > 1 ? 1 : 0] }).toEqual({ read, value });
      }
      expect(await pgQueryError(c, "EXPLAIN ANALYZE DELETE FROM items")).toEqual({ code: "25006", message: READ_ONLY });
    });
    expect((await b.db.admin<{ n: number }>("SELECT count(*)::int AS n FROM items WHERE n BETWEEN 1 AND 100"))[0]!.n).toBe(100);
  });

  test("extended protocol (Parse): a write with parameters → 25006; the next statement on the session works; inside a transaction it stays open", async () => {
    await session(S.ro, async (c) => {
      expect(await pgQueryError(c, "INSERT INTO items (name) VALUES ($1)", ["parse"])).toEqual({ code: "25006", message: READ_ONLY });
      expect((await c.query("SELECT $1::int + 1 AS n", [1])).rows).toEqual([{ n: 2 }]);
      await c.query("BEGIN");
      expect((await pgQueryError(c, "UPDATE items SET n = $1", [0])).code).toBe("25006");
      // credgate's refusal did not abort the server's transaction.
      expect((await c.query("SELECT $1::text AS v", ["still in"])).rows).toEqual([{ v: "still in" }]);
      await c.query("COMMIT");
    });
    const sql = porsager(b.url(S.ro));
    try {
      await expect(sql`INSERT INTO items (name) VALUES (${"porsager"})`).rejects.toMatchObject({ code: "25006", message: READ_ONLY });
      expect([...(await sql`SELECT ${5}::int AS five`)]).toEqual([{ five: 5 }]);
    } finally {
      await sql.end();
    }
  });
});

describe('writes: "block"', () => {
  test("a write → 42501; the session is read-only on the server (a writing function fails there); reads go on", async () => {
    const t = `block-${tag()}`;
    await session(S.block, async (c) => {
      expect(await pgQueryError(c, `INSERT INTO items (name) VALUES ('${t}')`)).toEqual({ code: "42501", message: WRITES_BLOCKED });
      expect(await pgQueryError(c, "SET default_transaction_read_only = off")).toEqual({ code: "42501", message: WRITES_BLOCKED });
      expect(await pgQueryError(c, "INSERT INTO items (name) VALUES ($1)", [t])).toEqual({ code: "42501", message: WRITES_BLOCKED });
      expect((await pgQueryError(c, `SELECT add_item('${t}')`)).code).toBe("25006");
      expect((await c.query("SELECT current_user AS who")).rows).toEqual([{ who: "md5_user" }]);
    });
    expect(await rowsNamed(t)).toBe(0);
    expect((await logOf(`INSERT INTO items (name) VALUES ('${t}')`))[0]).toMatchObject({ status: 403, decision: "blocked" });
    const r = await psql(b.url(S.block, { sslmode: "disable" }), `DELETE FROM items WHERE name = '${t}'`);
    expect(r.stderr).toContain(`ERROR:  42501: ${WRITES_BLOCKED}`);
  });
});

describe('writes: "approve"', () => {
  test("a write is held for a person while another session of the same credential keeps reading; approved → it runs", async () => {
    const t = `approve-${tag()}`;
    const statement = `INSERT INTO items (name) VALUES ('${t}')`;
    const held = await pgClient(b.pgConfig(S.approve));
    const reader = await pgClient(b.pgConfig(S.approve));
    try {
      // Reads of the held session's credential pass at once.
      expect((await held.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      const write = held.query(statement);
      const approval = await pendingApproval(statement);
      expect(approval).toMatchObject({ method: "SQL", host, path: statement });
      for (let i = 0; i < 3; i++) expect((await reader.query("SELECT count(*)::int AS n FROM items WHERE n = 1")).rows[0].n).toBeGreaterThanOrEqual(1);
      expect(await rowsNamed(t)).toBe(0);
      await decide(approval.id, "approve");
      expect((await write).rowCount).toBe(1);
      expect(await rowsNamed(t)).toBe(1);
      // The held session goes on.
      expect((await held.query("SELECT 2 AS two")).rows).toEqual([{ two: 2 }]);
    } finally {
      await held.end();
      await reader.end();
    }
    expect((await b.logs((r) => r.path === statement && r.decision === "approval_approved"))[0]).toMatchObject({ status: 200, method: "SQL", approvalId: expect.any(String) });
  });

  test("denied → 42501 the write was not approved; nothing written; the session goes on", async () => {
    const t = `deny-${tag()}`;
    const statement = `UPDATE items SET name = '${t}' WHERE n = 1`;
    await session(S.approve, async (c) => {
      const write = pgQueryError(c, statement);
      const approval = await pendingApproval(statement);
      await decide(approval.id, "deny");
      expect(await write).toEqual({ code: "42501", message: NOT_APPROVED });
      expect((await c.query("SELECT name FROM items WHERE n = 1")).rows[0].name).not.toBe(t);
    });
    expect(await rowsNamed(t)).toBe(0);
    expect((await b.logs((r) => r.path === statement && r.decision === "approval_denied"))[0]).toMatchObject({ status: 403 });
  });

  test("nobody decides: the approval expires → 42501 the write was not approved (a credgate whose approvals last 2 s)", async () => {
    const short = await startBroker({ db: b.db, env: { CREDGATE_APPROVAL_TIMEOUT_SECONDS: "2" } });
    try {
      await short.secret("db_expiring", { user: "scram", writes: "approve" });
      const t = `expire-${tag()}`;
      const statement = `INSERT INTO items (name) VALUES ('${t}')`;
      const client = await pgClient(short.pgConfig("db_expiring"));
      try {
        expect(await pgQueryError(client, statement)).toEqual({ code: "42501", message: NOT_APPROVED });
        expect((await client.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      } finally {
        await client.end();
      }
      expect(await rowsNamed(t)).toBe(0);
      expect((await short.logs((r) => r.path === statement && r.decision === "approval_expired"))[0]).toMatchObject({ status: 403 });
    } finally {
      await short.stop();
    }
  });

  test("a write sent with parameters (Parse) is held too, and its bound values are not in the approval", async () => {
    const t = `parse-approve-${tag()}`;
    const statement = "INSERT INTO items (name, n) VALUES ($1, $2)";
    await session(S.approve, async (c) => {
      const write = c.query(statement, [t, 5]);
      const approval = await pendingApproval(statement);
      expect(JSON.stringify(await b.cg.api("GET", `/v1/approvals/${approval.id}`))).not.toContain(t);
      await decide(approval.id, "approve");
      expect((await write).rowCount).toBe(1);
    });
    expect(await rowsNamed(t)).toBe(1);
  });

  test("approved with remember: the agent's next write on this credential runs without a hold (approved_by_memory)", async () => {
    const first = `INSERT INTO items (name) VALUES ('remember-${tag()}')`;
    const second = `INSERT INTO items (name) VALUES ('remembered-${tag()}')`;
    await session(S.approve, async (c) => {
      const write = c.query(first);
      const approval = await pendingApproval(first);
      await decide(approval.id, "approve", { remember: { minutes: 5 } });
      await write;
      expect((await c.query(second)).rowCount).toBe(1);
    });
    expect((await logOf(second))[0]).toMatchObject({ decision: "approved_by_memory", status: 200 });
    for (const r of (await b.cg.api("GET", "/v1/approvals/remembered")).body as { id: string }[]) await b.cg.api("DELETE", `/v1/approvals/remembered/${r.id}`);
  });

  // A function the judge cannot see into changes a setting the server then reads statements with, and reports it
  // (ParameterStatus): the session ends behind the answer owed (docs/databases.md#the-relay).
  const uncheckable = (reason: string) => ({
    type: "E",
    severity: "FATAL",
    code: "42501",
    message: `credgate: the server's ${reason}: this session's statements can no longer be checked; reconnect`,
  });
  const serverSessions = async (name: string) => (await b.db.admin(`SELECT 1 FROM pg_stat_activity WHERE application_name = '${name}'`)).length;

  test("a function that turns standard_conforming_strings off ends the session (FATAL 42501); the statement after it never reaches the server", async () => {
    const t = `sneaky-${tag()}`;
    // `SELECT sneaky()` is a read to the judge, which cannot see inside a function; the server changes the setting.
    await b.db.admin("CREATE OR REPLACE FUNCTION sneaky() RETURNS text LANGUAGE sql AS $$ SELECT set_config('standard_conforming_strings', 'off', false) $$");
    // Read with standard_conforming_strings on: two literals, 'a\' and ' ; INSERT … -- '. Read with it off, \' is a
    // quote inside the first literal, which then ends at the second quote, and the INSERT is a statement.
    const smuggled = `SELECT 'a\\' , ' ; INSERT INTO items (name) VALUES ($n$${t}$n$); -- '`;
    const { client } = await RawPg.login(b.dbPort, { user: S.approve, database: "app", application_name: t }, b.token);
    client.send(fe.query("SELECT sneaky()"));
    expect(types(await client.until((s) => s.type === "Z"))).toContain("S");
    client.send(fe.query(smuggled));
    expect((await client.until((s) => s.type === "E" || s.type === "Z")).at(-1)).toEqual(uncheckable("standard_conforming_strings is off"));
    expect(await client.closedWithin()).toBe(true);
    expect(await eventually(async () => (await serverSessions(t)) === 0)).toBe(true);
    expect(await rowsNamed(t)).toBe(0);
    const pending = await b.cg.api("GET", "/v1/approvals/pending");
    expect(JSON.stringify(pending.body)).not.toContain(t);
  });

  test("a database whose default turns standard_conforming_strings off: a guarded session ends at its start; an unguarded one goes on", async () => {
    const name = `scs_off_${tag()}`;
    await b.db.createDatabase(name);
    await b.db.admin(`ALTER DATABASE "${name}" SET standard_conforming_strings = off`, "postgres");
    const guarded = await RawPg.login(b.dbPort, { user: S.approve, database: name }, b.token);
    expect(types(guarded.startup)).toContain("Z");
    expect((await guarded.client.until((s) => s.type === "E")).at(-1)).toEqual(uncheckable("standard_conforming_strings is off"));
    expect(await guarded.client.closedWithin()).toBe(true);
    const free = await RawPg.login(b.dbPort, { user: S.free, database: name }, b.token);
    free.client.send(fe.query("SELECT 1"));
    expect(types(await free.client.until((s) => s.type === "Z"))).toBe("TDCZ");
    free.client.close();
  });

  test("a function that sets client_encoding SJIS ends the session (FATAL 42501): a write hidden behind a multibyte character never runs", async () => {
    const t = `sjis-${tag()}`;
    await b.db.admin("CREATE OR REPLACE FUNCTION sneaky_encoding() RETURNS text LANGUAGE sql AS $$ SELECT set_config('client_encoding', 'SJIS', false) $$");
    // In SJIS, 0x95 0x5c is one character and the quote after it ends the E'…' string, so the INSERT runs. Read as
    // credgate reads it (0x5c a backslash), \' escapes that quote and the INSERT is inside the string: a read.
    const smuggled = Buffer.concat([Buffer.from("SELECT E'"), Buffer.from([0x95, 0x5c]), Buffer.from(`' ; INSERT INTO items (name) VALUES ($n$${t}$n$); -- '`), Buffer.from([0])]);
    const { client } = await RawPg.login(b.dbPort, { user: S.approve, database: "app", application_name: t }, b.token);
    client.send(fe.query("SELECT sneaky_encoding()"));
    await client.until((s) => s.type === "Z");
    client.send(fe.typed("Q", smuggled));
    expect((await client.until((s) => s.type === "E" || s.type === "Z")).at(-1)).toEqual(uncheckable("client_encoding is SJIS"));
    expect(await client.closedWithin()).toBe(true);
    expect(await eventually(async () => (await serverSessions(t)) === 0)).toBe(true);
    expect(await rowsNamed(t)).toBe(0);
  });

  test("the SJIS statement pipelined behind the function call (one write) waits for its answer, and never runs", async () => {
    const t = `sjis-pipelined-${tag()}`;
    await b.db.admin("CREATE OR REPLACE FUNCTION sneaky_encoding() RETURNS text LANGUAGE sql AS $$ SELECT set_config('client_encoding', 'SJIS', false) $$");
    // As above, but sent before the server's answer (and its ParameterStatus) came: judged then, under the old
    // encoding, it was a read and went on to the server, which read it in SJIS and ran the INSERT.
    const smuggled = Buffer.concat([Buffer.from("SELECT E'"), Buffer.from([0x95, 0x5c]), Buffer.from(`' ; INSERT INTO items (name) VALUES ($n$${t}$n$); -- '`), Buffer.from([0])]);
    const { client } = await RawPg.login(b.dbPort, { user: S.approve, database: "app", application_name: t }, b.token);
    client.send(fe.query("SELECT sneaky_encoding()"), fe.typed("Q", smuggled));
    const seen = await client.until((s) => s.type === "E");
    expect(types(seen)).toBe("TDCSZE");
    expect(seen.at(-1)).toEqual(uncheckable("client_encoding is SJIS"));
    expect(await client.closedWithin()).toBe(true);
    expect(await eventually(async () => (await serverSessions(t)) === 0)).toBe(true);
    expect(await rowsNamed(t)).toBe(0);
  });

  test("behind unsynced extended messages (no answer to wait for), a non-ASCII Parse is refused (0A000) and never runs", async () => {
    const t = `sjis-unsynced-${tag()}`;
    await b.db.admin("CREATE OR REPLACE FUNCTION sneaky_encoding() RETURNS text LANGUAGE sql AS $$ SELECT set_config('client_encoding', 'SJIS', false) $$");
    // One statement (a Parse holds one): in SJIS the literal ends after 0x95 0x5c and the INSERT in the WITH runs;
    // read as credgate reads it, \' escapes the quote and the INSERT is inside the literal: a read.
    const sql = Buffer.concat([Buffer.from("WITH x AS (SELECT E'"), Buffer.from([0x95, 0x5c]), Buffer.from(`' AS a), y AS (INSERT INTO items (name) VALUES ($n$${t}$n$) RETURNING 1) SELECT 1 FROM x -- '`)]);
    const parse = fe.typed("P", Buffer.concat([Buffer.from([0]), sql, Buffer.from([0, 0, 0])]));
    const { client } = await RawPg.login(b.dbPort, { user: S.approve, database: "app", application_name: t }, b.token);
    client.send(fe.parse("", "SELECT sneaky_encoding()"), fe.bind("", ""), fe.execute(""), parse, fe.bind("", ""), fe.execute(""), fe.sync());
    const seen = await client.until((s) => s.type === "E" && s.severity === "FATAL");
    expect(seen.find((s) => s.type === "E")).toMatchObject({ code: "0A000", message: NON_ASCII_UNSYNCED });
    expect(seen.at(-1)).toEqual(uncheckable("client_encoding is SJIS"));
    expect(await client.closedWithin()).toBe(true);
    expect(await rowsNamed(t)).toBe(0);
  });

  test("a non-ASCII statement pipelined on a guarded credential waits for the answers owed, then runs as usual", async () => {
    const t = `pipelined-é-${tag()}`;
    const { client } = await RawPg.login(b.dbPort, { user: S.approve, database: "app", application_name: "pipelined" }, b.token);
    client.send(fe.query("SELECT pg_sleep(0.2)"), fe.query(`SELECT 'ü' AS u`), fe.query(`SELECT $n$${t}$n$ AS t`));
    const seen = await client.readies(3);
    expect(types(seen)).toBe("TDCZTDCZTDCZ");
    client.close();
  });
});

describe("the leak guard on statements", () => {
  test("a statement carrying a credgate secret's value (its own password, an HTTP secret) → 42501, logged redacted", async () => {
    const own = b.db.users.scram.password;
    await session(S.free, async (c) => {
      expect(await pgQueryError(c, `SELECT '${own}' AS leaked`)).toEqual({ code: "42501", message: CARRIES_SECRET });
      expect(await pgQueryError(c, `INSERT INTO items (name) VALUES ('${HTTP_SECRET_VALUE}')`)).toEqual({ code: "42501", message: CARRIES_SECRET });
      expect(await pgQueryError(c, `SELECT $1::text, '${HTTP_SECRET_VALUE}'`, ["x"])).toEqual({ code: "42501", message: CARRIES_SECRET });
      expect((await c.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    });
    expect(await rowsNamed(HTTP_SECRET_VALUE)).toBe(0);
    const rows = await b.logs((r) => r.method === "SQL" && r.path.includes("credgate-redacted"), 3);
    for (const r of rows) expect(r).toMatchObject({ status: 403, decision: "blocked" });
    expect(rows.map((r) => r.path)).toContain("SELECT 'credgate-redacted' AS leaked");
    const everything = JSON.stringify((await b.cg.api("GET", "/v1/logs?limit=500")).body);
    expect(everything).not.toContain(own);
    expect(everything).not.toContain(HTTP_SECRET_VALUE);
    expect(b.cg.output()).not.toContain(own);
  });
});

describe("policy rules on the database host (method SQL, path /)", () => {
  async function rule(body: Record<string, unknown>): Promise<string> {
    const res = await b.cg.api("POST", "/v1/policy/rules", { body });
    expect(res.status).toBe(201);
    expect((await b.cg.api("POST", "/v1/policy/publish")).status).toBe(200);
    return res.body.id;
  }
  async function drop(id: string) {
    await b.cg.api("DELETE", `/v1/policy/rules/${id}`);
    await b.cg.api("POST", "/v1/policy/publish");
  }

  test("a block rule refuses every statement on that host (42501, decision blocked); other hosts go on", async () => {
    const id = await rule({ name: "No policy.db.test", action: "block", targets: [{ kind: "network", hostPattern: "policy.db.test" }] });
    try {
      const t = tag();
      await session(S.policy, async (c) => {
        const err = await pgQueryError(c, `SELECT '${t}' AS blocked`);
        expect(err.code).toBe("42501");
        expect(err.message).toStartWith("credgate: ");
        expect(err.message).toContain("No policy.db.test");
      });
      expect((await logOf(`SELECT '${t}' AS blocked`))[0]).toMatchObject({ status: 403, decision: "blocked", host: `policy.db.test:${b.db.port}`, matchedRuleName: "No policy.db.test" });
      await session(S.free, async (c) => expect((await c.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]));
    } finally {
      await drop(id);
    }
  });

  test("a rate limit → 53400 rate limit reached once spent (decision rate_limited)", async () => {
    await clearOfWindowEdge(HOUR_MS);
    const id = await rule({ name: "Three an hour", action: "allow", rateLimit: 3, rateLimitWindow: "hour", targets: [{ kind: "network", hostPattern: "rate.db.test" }] });
    try {
      const t = tag();
      await session(S.rate, async (c) => {
        for (let i = 0; i < 3; i++) expect((await c.query(`SELECT ${i} AS i, '${t}' AS t`)).rows[0].i).toBe(i);
        expect(await pgQueryError(c, `SELECT 3 AS i, '${t}' AS t`)).toEqual({ code: "53400", message: RATE_LIMITED });
      });
      expect((await logOf(`SELECT 3 AS i, '${t}' AS t`))[0]).toMatchObject({ status: 403, decision: "rate_limited" });
    } finally {
      await drop(id);
    }
  });

  test("an approval rule holds even a read until a person approves it", async () => {
    const id = await rule({ name: "Ask for ask.db.test", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: "ask.db.test" }] });
    try {
      const statement = `SELECT '${tag()}' AS asked`;
      await session(S.ask, async (c) => {
        const read = c.query(statement);
        const approval = await pendingApproval(statement);
        expect(approval).toMatchObject({ method: "SQL", host: `ask.db.test:${b.db.port}` });
        await decide(approval.id, "approve");
        expect((await read).rowCount).toBe(1);
      });
      expect((await b.logs((r) => r.path === statement && r.decision === "approval_approved"))[0]).toMatchObject({ status: 200 });
    } finally {
      await drop(id);
    }
  });
});

describe("the passwords stay secret on this engine's store", () => {
  test("no database password in the store (SQLite file bytes or every PostgreSQL row), the request logs or credgate's output", async () => {
    const stored = await storeText(b.cg);
    expect(stored).toContain(S.approve);
    const logs = JSON.stringify((await b.cg.api("GET", "/v1/logs?limit=500")).body);
    for (const u of Object.values(b.db.users)) {
      expect(stored).not.toContain(u.password);
      expect(logs).not.toContain(u.password);
      expect(b.cg.output()).not.toContain(u.password);
    }
    expect(stored).not.toContain(HTTP_SECRET_VALUE);
  });
});

describe("metrics", () => {
  test("credgate_db_statements_total counts statements per decision", async () => {
    const before = await scrape();
    const count = (m: typeof before, decision: string) => (m.has("credgate_db_statements_total") ? sampleValue(m, "credgate_db_statements_total", { decision }) : 0);
    await session(S.free, (c) => c.query("SELECT 1; SELECT 2"));
    await session(S.ro, async (c) => void (await pgQueryError(c, "DELETE FROM items")));
    const after = await eventually(async () => {
      const m = await scrape();
      return count(m, "allowed") >= count(before, "allowed") + 2 && count(m, "blocked") >= count(before, "blocked") + 1 ? m : null;
    });
    expect(after).not.toBeNull();
    expect(after!.get("credgate_db_statements_total")!.type).toBe("COUNTER");
  });
});
