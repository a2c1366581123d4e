// The statement reader against the reader it must agree with (docs/databases.md#statements-reads-and-writes):
// Debian's PostgreSQL itself. Random Query strings of SELECTs whose literals, quoted identifiers, dollar quotes
// and comments are full of `;`, quotes and `$$` are sent to a real server in one simple-protocol Query: it must
// answer exactly as many results as splitStatements finds statements, and each statement sent alone must give
// the same rows. Then the scanner's fine points, each checked by what the server does with it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import pg from "pg";
import { splitStatements, statementNature } from "../../src/core/sqlStatements.ts";
import { postgresServer } from "../support/postgres.ts";
import { selects, separators } from "../support/sqlFragments.ts";

let client: pg.Client;

beforeAll(async () => {
  const server = await postgresServer();
  client = new pg.Client({ connectionString: server.adminUrl });
  await client.connect();
});

afterAll(async () => {
  await client.end();
});

/** The rows of each statement the server ran for one Query string. */
async function results(sql: string): Promise<unknown[][]> {
  const r = (await client.query(sql)) as unknown as pg.QueryResult | pg.QueryResult[];
  return (Array.isArray(r) ? r : [r]).map((x) => x.rows.map((row) => Object.values(row as Record<string, unknown>).map(String)));
}

describe("splitStatements agrees with PostgreSQL", () => {
  test("random Query strings: as many results as statements, each statement alone the same rows", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(selects({ backslashes: true }), { minLength: 1, maxLength: 4 }), separators, async (statements, sep) => {
        const sql = statements.join(sep);
        const pieces = splitStatements(sql);
        const whole = await results(sql);
        expect(pieces.length).toBe(whole.length);
        for (let i = 0; i < pieces.length; i++) expect(await results(pieces[i]!)).toEqual([whole[i]!]);
      }),
      { numRuns: 400 },
    );
  });

  const fine: [string, string, number][] = [
    ["`$` continues an identifier: a$$ opens no dollar quote", "SELECT 1 AS a$$; SELECT 2; SELECT 3 AS b$$", 3],
    ["/*/* opens two comments: the first */ closes one", "SELECT /*/* */ 1 ; SELECT 2; -- */", 1],
    ["a string continued over a newline keeps the E string's escapes", "SELECT E'x'\n'\\' $$ ' ; SELECT 2; -- $$", 2],
    ["a -- comment may stand between a string and its continuation", "SELECT 'a' -- c\n';b'; SELECT 2", 2],
    ["a dollar quote's tag must match exactly", "SELECT $a$ $b$ ; $A$ ; $a$; SELECT 2", 2],
    ["a `$` after a number opens a dollar quote", "SELECT 1 +$$2$$::int; SELECT 2", 2],
    ["-- inside an operator starts a comment", "SELECT 1 +-- ; \n 2; SELECT 3", 2],
    ["U&'…' is a string with '' for a quote", "SELECT U&'a'';b'; SELECT 2", 2],
    ["\"…\" with \"\" for a quote", 'SELECT 1 AS "a"";b"; SELECT 2', 2],
  ];
  for (const [what, sql, count] of fine) {
    test(what, async () => {
      expect(splitStatements(sql).length).toBe(count);
      expect((await results(sql)).length).toBe(count);
    });
  }

  test("in a bit string '' is no quote: the server reads a second string where an '' escape would be", async () => {
    const sql = "SELECT B'01''; SELECT 2; --'";
    expect(splitStatements(sql)).toEqual([sql]);
    await expect(results(sql)).rejects.toThrow(`syntax error at or near "'; SELECT 2; --'"`);
  });

  test("an E prefix right after a number is no number of the server's (it refuses the statement)", async () => {
    await expect(results("SELECT 1e'x'")).rejects.toThrow("trailing junk");
  });
});

describe("the classification agrees with a read-only server", () => {
  // The server is the oracle: in a session made read-only as credgate makes it, a statement the server refuses as
  // a write (25006) must be a write or a lift to credgate, and one after which the session is no longer read-only
  // must be a lift. Built-in functions only: a writing function of the database's own is a documented limit.
  let ro: pg.Client;

  beforeAll(async () => {
    const server = await postgresServer();
    const name = `sqlscan_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    await client.query(`CREATE DATABASE ${name}`);
    ro = new pg.Client({ connectionString: server.urlOf(name) });
    await ro.connect();
    await ro.query("CREATE TABLE t (a int); CREATE TABLE u (a int); INSERT INTO t VALUES (1), (2); CREATE SEQUENCE s");
  });

  afterAll(async () => {
    await ro.end();
  });

  const cores = [
    // reads
    "SELECT * FROM t",
    "SELECT count(*) FROM t WHERE a > 1",
    "WITH x AS (SELECT a FROM t) SELECT * FROM x",
    "VALUES (1)",
    "TABLE t",
    "SHOW search_path",
    "EXPLAIN SELECT * FROM t",
    "EXPLAIN DELETE FROM t",
    "BEGIN READ ONLY",
    "SELECT pg_advisory_lock(1)",
    "SELECT set_config('search_path', 'public', false)",
    "SELECT current_setting('transaction_read_only')",
    // writes
    "INSERT INTO t VALUES (3)",
    "UPDATE t SET a = 2",
    "DELETE FROM t",
    "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
    "WITH x AS (SELECT 1) INSERT INTO u SELECT * FROM x",
    "SELECT * INTO t2 FROM t",
    "SELECT * FROM t FOR UPDATE",
    "SELECT * FROM t FOR NO KEY UPDATE",
    "SELECT * FROM t FOR SHARE",
    "SELECT * FROM t FOR KEY SHARE",
    "TABLE t FOR UPDATE",
    "SELECT * FROM (SELECT * FROM t FOR UPDATE) x",
    "SELECT nextval('s')",
    "SELECT setval('s', 5)",
    "SELECT lo_create(0)",
    "EXPLAIN ANALYZE DELETE FROM t",
    "EXPLAIN (ANALYZE) INSERT INTO t VALUES (3)",
    "CREATE TABLE t3 (a int)",
    "TRUNCATE t",
    "MERGE INTO t USING (VALUES (1)) v(x) ON t.a = v.x WHEN MATCHED THEN DELETE",
    "COMMENT ON TABLE t IS 'x'",
    "NOTIFY ch",
    // lifts
    "SET default_transaction_read_only = off",
    "SET SESSION default_transaction_read_only TO off",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT 1 WHERE set_config('default_transaction_read_only', 'off', false) = 'off'",
    "RESET ALL",
    "RESET default_transaction_read_only",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "DISCARD ALL",
    "BEGIN READ WRITE",
    "START TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE",
  ];
  // What may stand between two tokens without changing the statement.
  const gap = fc.constantFrom(" ", "\n", "\t", "  /* ; DELETE FROM t */ ", " -- ; \n", " /* /* nested */ */ ");

  test("random spellings of reads, writes and lifts (whitespace, comments): refused or lifted by the server ⇒ a write or a lift to credgate", async () => {
    const seen = { refused: 0, lifted: 0 };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...cores), fc.array(gap, { minLength: 12, maxLength: 12 }), fc.boolean(), async (core, gaps, lead) => {
        const words = core.split(" ");
        const sql = (lead ? "SELECT 1;" : "") + words.map((w, i) => (i === 0 ? w : gaps[i % gaps.length]! + w)).join("");
        const nature = statementNature(sql);
        await ro.query("ROLLBACK; SET default_transaction_read_only = on");
        let code: string | undefined;
        try {
          await ro.query(sql);
        } catch (err) {
          code = (err as { code?: string }).code;
        }
        const lifted = (await ro.query("SHOW transaction_read_only")).rows[0].transaction_read_only === "off";
        await ro.query("ROLLBACK");
        const stillDefault = (await ro.query("SHOW default_transaction_read_only")).rows[0].default_transaction_read_only === "on";
        if (code === "25006") {
          seen.refused++;
          expect({ sql, write: nature.write || nature.lifts }).toEqual({ sql, write: true });
        }
        if (lifted || !stillDefault) {
          seen.lifted++;
          expect({ sql, lifts: nature.lifts }).toEqual({ sql, lifts: true });
        }
      }),
      { numRuns: 300 },
    );
    // The oracle said something: both kinds of case were met.
    expect(seen.refused).toBeGreaterThan(0);
    expect(seen.lifted).toBeGreaterThan(0);
  });

  test("every read of the list runs on the read-only server", async () => {
    for (const sql of cores.filter((c) => !statementNature(c).write && !statementNature(c).lifts)) {
      await ro.query("ROLLBACK; SET default_transaction_read_only = on");
      await ro.query(sql);
      await ro.query("ROLLBACK; SELECT pg_advisory_unlock_all()");
    }
  });
});
