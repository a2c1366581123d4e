// The statement reader against the reader it must agree with (docs/databases.md#statements-reads-and-writes):
// Debian's PostgreSQL itself. Random Query strings of SELECTs whose literals, quoted identifiers, dollar quotes
// and comments are full of `;`, quotes and `$$` are sent to a real server in one simple-protocol Query: it must
// answer exactly as many results as splitStatements finds statements, and each statement sent alone must give
// the same rows. Then the scanner's fine points, each checked by what the server does with it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import pg from "pg";
import { splitStatements } from "../../src/core/sqlStatements.ts";
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
