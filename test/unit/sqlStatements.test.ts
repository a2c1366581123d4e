// The statement reader of the database broker (docs/databases.md#statements-reads-and-writes): splitting a Query
// string as PostgreSQL's scanner does, the read list, and every spelling of a statement that lifts read-only mode.
// Written as an attacker with one agent token: each case is a way to get a write read as a read, or a lift missed.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { asciiSafeEncoding, classifyStatement, liftsReadOnly, splitStatements, statementNature } from "../../src/core/sqlStatements.ts";
import { selects, separators } from "../support/sqlFragments.ts";

describe("splitStatements", () => {
  const cases: [string, string[]][] = [
    ["SELECT 1", ["SELECT 1"]],
    ["SELECT 1; SELECT 2;", ["SELECT 1", "SELECT 2"]],
    ["  ;; SELECT 1 ;  ; ", ["SELECT 1"]],
    ["-- only a comment\n", []],
    ["/* a ; b */", []],
    ["SELECT 'a;b'; SELECT 'it''s; fine'", ["SELECT 'a;b'", "SELECT 'it''s; fine'"]],
    ["SELECT E'a\\';b'; SELECT 2", ["SELECT E'a\\';b'", "SELECT 2"]],
    ["SELECT \"a;\"\"b\" FROM t; SELECT 2", ['SELECT "a;""b" FROM t', "SELECT 2"]],
    ["SELECT $$a;b$$; SELECT $tag$ $$ ; $tag$; SELECT 3", ["SELECT $$a;b$$", "SELECT $tag$ $$ ; $tag$", "SELECT 3"]],
    ["SELECT $1; SELECT 2", ["SELECT $1", "SELECT 2"]],
    ["SELECT 1 -- ; not here\n; SELECT 2", ["SELECT 1 -- ; not here", "SELECT 2"]],
    ["SELECT /* a /* nested ; */ still ; */ 1; SELECT 2", ["SELECT /* a /* nested ; */ still ; */ 1", "SELECT 2"]],
    // /*/* opens two comments (scan.l puts back what follows the first /*): the first */ closes only one.
    ["SELECT /*/* */ 1 ; DELETE FROM t; -- */", ["SELECT /*/* */ 1 ; DELETE FROM t; -- */"]],
    ["SELECT U&'d\\0061t;a'; SELECT 2", ["SELECT U&'d\\0061t;a'", "SELECT 2"]],
    // In a bit string '' is no quote: it ends the string and opens another.
    ["SELECT B'01''; SELECT 2; --'", ["SELECT B'01''; SELECT 2; --'"]],
    // A string continued over a newline is one string, in the first part's mode.
    ["SELECT E'a'\n'\\';b'; SELECT 2", ["SELECT E'a'\n'\\';b'", "SELECT 2"]],
    ["SELECT 'a' -- c\n';b'; SELECT 2", ["SELECT 'a' -- c\n';b'", "SELECT 2"]],
    // `$` continues an identifier: a$$ opens no dollar quote.
    ["SELECT 1 AS a$$; DELETE FROM t; SELECT 2 AS b$$", ["SELECT 1 AS a$$", "DELETE FROM t", "SELECT 2 AS b$$"]],
    ["SELECT 'open; DELETE FROM t", ["SELECT 'open; DELETE FROM t"]],
    ["SELECT 1; /* open", ["SELECT 1", "/* open"]],
  ];
  for (const [sql, expected] of cases) test(JSON.stringify(sql), () => expect(splitStatements(sql)).toEqual(expected));
});

describe("classifyStatement", () => {
  const reads = [
    "SELECT 1",
    "select * from t where a = 'delete'",
    "(SELECT 1)",
    "((select 1) union (select 2))",
    "WITH x AS (SELECT 1) SELECT * FROM x",
    "WITH RECURSIVE t(n) AS (VALUES (1) UNION ALL SELECT n+1 FROM t WHERE n < 3) SEARCH DEPTH FIRST BY n SET o SELECT * FROM t",
    "VALUES (1), (2)",
    "TABLE t",
    "SHOW search_path",
    "EXPLAIN SELECT 1",
    "EXPLAIN DELETE FROM t",
    "EXPLAIN (FORMAT json, COSTS off) SELECT 1",
    "FETCH 10 FROM c",
    "DECLARE c CURSOR WITH HOLD FOR SELECT * FROM t",
    "DECLARE c NO SCROLL CURSOR FOR (SELECT 1)",
    "COPY t TO STDOUT",
    "copy (select * from t) to stdout with (format csv)",
    "COPY BINARY t TO STDOUT",
    "BEGIN",
    "BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY",
    "START TRANSACTION READ ONLY",
    "COMMIT",
    "END",
    "ROLLBACK",
    "ABORT",
    "ROLLBACK TO SAVEPOINT s",
    "SAVEPOINT s",
    "RELEASE SAVEPOINT s",
    "DEALLOCATE ALL",
    "CLOSE c",
    "LISTEN ch",
    "UNLISTEN *",
    "/* leading comment */ SELECT 1",
    "-- comment\nSELECT 1",
    "SELECT $$ DELETE FROM t $$",
    "SELECT 'x' FROM t WHERE b = $1",
    'SELECT "update" FROM t',
    // An empty statement (a Parse of "") does nothing.
    "",
    "SELECT pg_catalog.set_config('search_path', '', false)",
  ];
  for (const sql of reads) test(`read: ${sql}`, () => expect(classifyStatement(sql)).toBe("read"));

  const writes = [
    "INSERT INTO t VALUES (1)",
    "UPDATE t SET a = 1",
    "DELETE FROM t",
    "MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE",
    "TRUNCATE t",
    "CREATE TABLE x (a int)",
    "DROP TABLE t",
    "ALTER TABLE t ADD b int",
    "GRANT SELECT ON t TO public",
    "SET search_path = x",
    "RESET ALL",
    "DO $$ BEGIN DELETE FROM t; END $$",
    "CALL p()",
    "VACUUM t",
    "ANALYZE t",
    "LOCK TABLE t",
    "PREPARE p AS SELECT 1",
    "EXECUTE p",
    "NOTIFY ch",
    "MOVE NEXT IN c",
    "COMMIT PREPARED 'x'",
    "ROLLBACK PREPARED 'x'",
    "PREPARE TRANSACTION 'x'",
    // Data-modifying CTEs, at any depth.
    "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
    "WITH a AS (SELECT 1), b AS MATERIALIZED (UPDATE t SET a = 1 RETURNING *) SELECT * FROM b",
    "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
    "(WITH x AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM x)",
    // SELECT … INTO creates a table; FOR UPDATE/SHARE locks rows (the server refuses both read-only).
    "SELECT * INTO t2 FROM t",
    "SELECT * FROM t FOR UPDATE",
    "SELECT * FROM t FOR NO KEY UPDATE",
    "SELECT * FROM t FOR SHARE",
    "SELECT * FROM t FOR KEY SHARE SKIP LOCKED",
    "SELECT * FROM (SELECT * FROM t FOR UPDATE) s",
    "TABLE t FOR UPDATE",
    // EXPLAIN ANALYZE runs the statement, however it is spelled.
    "EXPLAIN ANALYZE DELETE FROM t",
    "EXPLAIN ANALYSE SELECT 1",
    "EXPLAIN (ANALYZE) DELETE FROM t",
    "EXPLAIN (analyze true, format json) DELETE FROM t",
    'EXPLAIN ("analyze") DELETE FROM t',
    'EXPLAIN (U&"an\\0061lyze") DELETE FROM t',
    "EXPLAIN VERBOSE ANALYZE SELECT 1",
    // COPY anywhere but to the client, or from anything.
    "COPY t TO '/tmp/out'",
    "COPY t TO PROGRAM 'rm -rf /'",
    "COPY t FROM STDIN",
    "COPY t (a, b) FROM '/etc/passwd'",
    "COPY (DELETE FROM t RETURNING *) TO STDOUT",
    "COPY (SELECT * FROM t FOR UPDATE) TO STDOUT",
    "DECLARE c CURSOR FOR SELECT * FROM t FOR UPDATE",
    "DECLARE c CURSOR FOR DELETE FROM t RETURNING *",
    "BEGIN READ WRITE",
    "BEGIN ISOLATION LEVEL READ COMMITTED, READ WRITE",
    "START TRANSACTION READ /* sneaky */ WRITE",
    "START",
    // Built-in functions that write, in a "read".
    "SELECT nextval('s')",
    "SELECT pg_catalog.setval('s', 1)",
    "SELECT lo_unlink(123)",
    "SELECT pg_terminate_backend(42)",
    "VALUES (nextval('s'))",
    "SELECT dblink_exec('dbname=x', 'DELETE FROM t')",
    "SELECT query_to_xml('DELETE FROM t RETURNING 1', true, true, '')",
    'SELECT "nextval"(\'s\')',
    "SELECT nextval /* gap */ ('s')",
    // Two statements in one: the stricter answer.
    "SELECT 1; DELETE FROM t",
    // What the scanner must not be fooled by.
    "SELECT 1 AS a$$; DELETE FROM t; SELECT 2 AS b$$",
    "SELECT E'x'\n'\\' $$ ' ; DELETE FROM t; -- $$",
    "SELECT 'unterminated",
    "SELECT $$ never closed",
    "SELECT /* never closed",
    '"SELECT" 1',
    "42",
  ];
  for (const sql of writes) test(`write: ${JSON.stringify(sql)}`, () => expect(classifyStatement(sql)).toBe("write"));
});

describe("liftsReadOnly", () => {
  const lifts = [
    "SET default_transaction_read_only = off",
    "set DEFAULT_TRANSACTION_READ_ONLY to 0",
    'SET "default_transaction_read_only" = off',
    'SET "Transaction_Read_Only" = off',
    "SET SESSION default_transaction_read_only = off",
    "SET LOCAL transaction_read_only = off",
    "SET transaction_read_only TO DEFAULT",
    'SET U&"transaction\\005fread_only" = off',
    "SET U&\"transaction!005fread_only\" UESCAPE '!' = off",
    "RESET default_transaction_read_only",
    "RESET transaction_read_only",
    "RESET ALL",
    "DISCARD ALL",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
    "SET TRANSACTION READ WRITE",
    "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ WRITE",
    "BEGIN READ WRITE",
    "BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ WRITE",
    "START TRANSACTION READ WRITE",
    "SELECT set_config('transaction_read_only', 'off', false)",
    "SELECT set_config('Default_Transaction_Read_Only', 'off', false)",
    "select pg_catalog.set_config('default_transaction_read_only', 'off', false)",
    'SELECT "set_config"(\'transaction_read_only\', \'off\', false)',
    'SELECT U&"set\\005fconfig"(\'transaction_read_only\', \'off\', false)',
    "SELECT 1 WHERE set_config('transaction_read_only', 'off', true) IS NOT NULL",
    "SELECT * FROM t WHERE a IN (SELECT set_config('transaction_read_only', 'off', false))",
    "SELECT set_config($1, $2, false)",
    "SELECT set_config('transaction_' || 'read_only', 'off', false)",
    "SELECT set_config(E'transaction_read_only', 'off', false)",
    "SELECT set_config(name, 'off', false) FROM (VALUES ('transaction_read_only')) v(name)",
    "SELECT set_config('standard_conforming_strings', 'off', false)",
    "SELECT set_config('client_encoding', 'SJIS', false)",
    "SET standard_conforming_strings = off",
    "SET client_encoding = 'SJIS'",
    "SET NAMES 'SJIS'",
    "DECLARE c CURSOR FOR SELECT set_config('transaction_read_only', 'off', false)",
    "COPY (SELECT set_config('transaction_read_only', 'off', false)) TO STDOUT",
    "EXPLAIN SELECT set_config('transaction_read_only', 'off', false)",
    "SELECT query_to_xml('select set_config(''transaction_read_only'', ''off'', false)', true, true, '')",
    "SELECT 1; SET transaction_read_only = off",
  ];
  for (const sql of lifts) test(`lifts: ${JSON.stringify(sql)}`, () => expect(liftsReadOnly(sql)).toBe(true));

  const keeps = [
    "SELECT 1",
    "SET search_path = x",
    "SET default_transaction_read_only = on",
    "BEGIN READ ONLY",
    "BEGIN",
    "SELECT set_config('search_path', 'public', false)",
    "SELECT current_setting('transaction_read_only')",
    "SHOW transaction_read_only",
    "SELECT 'set_config(''transaction_read_only'', ''off'', false)'",
    "SELECT $$ RESET ALL $$",
    "-- SET transaction_read_only = off\nSELECT 1",
  ];
  // SET default_transaction_read_only = on is a SET: a write, refused read-only anyway; it lifts nothing.
  for (const sql of keeps.filter((s) => !s.includes("= on"))) test(`keeps: ${JSON.stringify(sql)}`, () => expect(liftsReadOnly(sql)).toBe(false));
});

describe("client encodings in which a multibyte character can hold a backslash or a quote", () => {
  const rereads = [
    "SET client_encoding = 'SJIS'",
    "SET client_encoding TO sjis",
    "set session client_encoding to 'BIG5'",
    "SET LOCAL client_encoding = 'gbk'",
    "SET NAMES 'UHC'",
    "SET NAMES gb18030",
    `SET "client_encoding" = 'Shift_JIS_2004'`,
    "SET client_encoding = 'WIN932'",
    "SELECT set_config('client_encoding', 'SJIS', false)",
    "SELECT set_config('Client_Encoding', 'johab', false)",
    "SELECT set_config('client_encoding', $1, false)",
    "SELECT set_config($1, 'SJIS', false)",
    "SELECT 1; SET client_encoding = 'SJIS'",
  ];
  for (const sql of rereads) test(`rereads: ${JSON.stringify(sql)}`, () => expect(statementNature(sql).rereads).toBe(true));
  const safe = [
    "SET client_encoding = 'UTF8'",
    "SET client_encoding TO 'utf-8'",
    "SET client_encoding TO DEFAULT",
    "SET NAMES 'LATIN1'",
    "SET client_encoding = 'EUC_JP'",
    "SELECT set_config('client_encoding', 'UTF8', false)",
    "SELECT set_config('search_path', 'x', false)",
    "SET search_path = sjis",
    `SELECT 'SET client_encoding = ''SJIS'''`,
  ];
  for (const sql of safe) test(`safe: ${JSON.stringify(sql)}`, () => expect(statementNature(sql).rereads).toBe(false));
  test("asciiSafeEncoding reads PostgreSQL's spellings", () => {
    expect(["UTF8", "utf-8", "Unicode", "SQL_ASCII", "LATIN1", "ISO_8859_5", "WIN1252", "KOI8R", "EUC_KR", "default"].every(asciiSafeEncoding)).toBe(true);
    expect(["SJIS", "Shift_JIS", "BIG5", "GBK", "UHC", "GB18030", "JOHAB", "WIN950", "cp936", "nonsense"].some(asciiSafeEncoding)).toBe(false);
  });
});

describe("read twice when a backslash could change the reading", () => {
  test("a statement that hides a second one when backslashes escape quotes is a write", () => {
    // As the server reads it today: one SELECT of a string. With standard_conforming_strings off: a DELETE.
    const sql = "SELECT 'a\\' , $$' ; DELETE FROM t; -- $$";
    expect(splitStatements(sql)).toEqual([sql]);
    expect(statementNature(sql).write).toBe(true);
    // The same for a lift hidden that way.
    expect(liftsReadOnly("SELECT 'a\\' , $$' ; SET transaction_read_only = off; -- $$")).toBe(true);
  });

  test("split where the server splits, each piece still judged the old way", () => {
    const sql = "SELECT 'a\\'; SELECT $$'; DELETE FROM t; --$$";
    const pieces = splitStatements(sql);
    expect(pieces).toEqual(["SELECT 'a\\'", "SELECT $$'; DELETE FROM t; --$$"]);
    // Read the old way, the first piece's string never ends: a write.
    expect(classifyStatement(pieces[0]!)).toBe("write");
  });

  test("a plain backslash in an E string is only an escape", () => {
    expect(classifyStatement("SELECT E'a\\nb', 'c'")).toBe("read");
    expect(liftsReadOnly("SELECT E'\\\\'")).toBe(false);
  });
});

describe("properties (fast-check): literals, identifiers, dollar quotes and comments full of `;`", () => {
  const trim = (s: string) => s.replace(/^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g, "");
  const query = (statements: string[], seps: string[]) => statements.map((s, i) => s + (seps[i % seps.length] ?? ";")).join("");

  test("a Query of SELECTs splits into exactly those SELECTs, never inside a literal or comment", () => {
    fc.assert(
      fc.property(fc.array(selects({ backslashes: true }), { minLength: 1, maxLength: 4 }), fc.array(separators, { minLength: 1, maxLength: 4 }), (statements, seps) => {
        expect(splitStatements(query(statements, seps))).toEqual(statements.map(trim));
      }),
      { numRuns: 2000 },
    );
  });

  test("whatever the literals and comments hold (DELETE, SET …, quotes, $$), such a SELECT is a read that lifts nothing", () => {
    fc.assert(
      fc.property(selects({ backslashes: false }), (statement) => {
        expect(statementNature(statement)).toEqual({ write: false, lifts: false, rereads: false });
      }),
      { numRuns: 2000 },
    );
  });

  test("a DELETE outside the literals, after any of them, makes the Query a write", () => {
    fc.assert(
      fc.property(fc.array(selects({ backslashes: false }), { minLength: 1, maxLength: 3 }), separators, fc.nat(), (statements, sep, at) => {
        const parts = [...statements];
        parts.splice(at % (parts.length + 1), 0, "DELETE FROM t");
        const sql = parts.join(sep);
        expect(classifyStatement(sql)).toBe("write");
        expect(splitStatements(sql).filter((s) => classifyStatement(s) === "write")).toEqual(["DELETE FROM t"]);
      }),
      { numRuns: 1000 },
    );
  });

  test("a lift outside the literals is found wherever it stands", () => {
    fc.assert(
      fc.property(selects({ backslashes: false }), fc.constantFrom("SET transaction_read_only = off", "RESET ALL", "BEGIN READ WRITE", "SELECT set_config('transaction_read_only', 'off', false)"), (statement, lift) => {
        expect(liftsReadOnly(`${statement}; ${lift}`)).toBe(true);
        expect(liftsReadOnly(`${lift}; ${statement}`)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
