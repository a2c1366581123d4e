// The two schemas describe the same database: every table, column (name, nullability, default, primary
// key), composite primary key, index (name, columns, uniqueness, partial condition) and foreign key of the
// SQLite schema exists in the PostgreSQL schema, and nothing else does. Both are generated from the one table
// declaration (scripts/gen-schema.ts); this checks what the generator made of it. Services are typed against
// the generated PostgreSQL tables and run on both (src/store/store.ts): this is what makes that sound.
import { describe, expect, test } from "bun:test";
import { getTableName, is, SQL } from "drizzle-orm";
import { getTableConfig as pgConfig, PgDialect, PgTable } from "drizzle-orm/pg-core";
import { getTableConfig as sqliteConfig, SQLiteSyncDialect, SQLiteTable } from "drizzle-orm/sqlite-core";
import * as pg from "../../src/store/schema.pg.ts";
import * as sqlite from "../../src/store/schema.sqlite.ts";

type Config = ReturnType<typeof pgConfig> | ReturnType<typeof sqliteConfig>;

// Every table has the same row and insert types in both files: what services read and write through `Tables`
// (typed by the PostgreSQL file) is what the SQLite tables take and give back. The compiler checks this
// (`npm run typecheck`): a difference makes `true` unassignable here.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Rows<M> = { [K in keyof M]: M[K] extends { $inferSelect: infer R } ? R : never };
type Inserts<M> = { [K in keyof M]: M[K] extends { $inferInsert: infer R } ? R : never };
const sameRowTypes: Equal<Rows<typeof sqlite>, Rows<typeof pg>> = true;
const sameInsertTypes: Equal<Inserts<typeof sqlite>, Inserts<typeof pg>> = true;

function whereText(where: SQL | undefined, dialect: PgDialect | SQLiteSyncDialect): string | null {
  if (!where) return null;
  return dialect.sqlToQuery(where).sql.replace(/["`]/g, "");
}

/** The shape of one table, in terms both engines share. */
function shape(config: Config, dialect: PgDialect | SQLiteSyncDialect) {
  return {
    name: config.name,
    columns: config.columns
      .map((c) => ({
        name: c.name,
        notNull: c.notNull,
        primary: c.primary,
        unique: c.isUnique,
        // SQLite booleans are 0/1 integers; both schemas write the default as the same JS value.
        default: c.default === undefined ? null : is(c.default, SQL) ? "sql" : JSON.stringify(c.default),
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    primaryKeys: config.primaryKeys.map((pk) => pk.columns.map((c) => c.name)),
    indexes: config.indexes
      .map((i) => ({
        name: i.config.name ?? "",
        unique: i.config.unique,
        columns: i.config.columns.map((c) => ("name" in c ? c.name : "expr")),
        where: whereText(i.config.where, dialect),
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    foreignKeys: config.foreignKeys
      .map((fk) => {
        const r = fk.reference();
        return { columns: r.columns.map((c) => c.name), foreignTable: getTableName(r.foreignTable), foreignColumns: r.foreignColumns.map((c) => c.name), onDelete: fk.onDelete ?? null };
      })
      .sort((a, b) => a.columns.join().localeCompare(b.columns.join())),
  };
}

const pgTables: PgTable[] = Object.values(pg as Record<string, unknown>).filter((v): v is PgTable => is(v, PgTable));
const sqliteTables: SQLiteTable[] = Object.values(sqlite as Record<string, unknown>).filter((v): v is SQLiteTable => is(v, SQLiteTable));

describe("the SQLite and PostgreSQL schemas are the same", () => {
  test("the same tables, exported under the same names", () => {
    const names = (mod: Record<string, unknown>, isTable: (v: unknown) => boolean) =>
      Object.entries(mod)
        .filter(([, v]) => isTable(v))
        .map(([k]) => k)
        .sort();
    expect(names(pg, (v) => is(v, PgTable))).toEqual(names(sqlite, (v) => is(v, SQLiteTable)));
    expect(pgTables.length).toBeGreaterThan(15);
    expect([sameRowTypes, sameInsertTypes]).toEqual([true, true]);
  });

  for (const table of sqliteTables) {
    const name = getTableName(table);
    test(`${name}: columns, keys, indexes and foreign keys`, () => {
      const other = pgTables.find((t) => getTableName(t) === name);
      expect(other).toBeDefined();
      expect(shape(pgConfig(other!), new PgDialect())).toEqual(shape(sqliteConfig(table), new SQLiteSyncDialect()));
    });
  }
});
