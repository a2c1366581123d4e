// Writes src/store/schema.sqlite.ts and src/store/schema.pg.ts, each engine's drizzle tables, from the one
// table declaration (src/store/schema/, docs/architecture.md#storage). Run `npm run db:schema` after changing
// the declaration (`npm run db:generate` runs it first, then drizzle-kit makes each engine's migration from the
// file written here); test/unit/schemaGenerated.test.ts fails while a committed file is stale.
// The two files differ only where the engines do: the column kinds of src/store/schema/define.ts.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AnyTable, ColumnKind, ColumnSpec, IndexSpec } from "../src/store/schema/define.ts";
import { Column } from "../src/store/schema/define.ts";
import { areas } from "../src/store/schema/index.ts";

export type Dialect = "sqlite" | "pg";

export const OUTPUTS: Record<Dialect, string> = {
  sqlite: join(import.meta.dir, "../src/store/schema.sqlite.ts"),
  pg: join(import.meta.dir, "../src/store/schema.pg.ts"),
};

/** How each column kind is written in each engine's drizzle (see ColumnKind). */
const KINDS: Record<Dialect, Record<ColumnKind, (name: string) => string>> = {
  sqlite: {
    text: (n) => `text(${q(n)})`,
    integer: (n) => `integer(${q(n)})`,
    boolean: (n) => `integer(${q(n)}, { mode: "boolean" })`,
    bigint: (n) => `integer(${q(n)})`,
    serial: (n) => `integer(${q(n)})`,
    json: (n) => `text(${q(n)}, { mode: "json" })`,
  },
  pg: {
    text: (n) => `text(${q(n)})`,
    integer: (n) => `integer(${q(n)})`,
    boolean: (n) => `boolean(${q(n)})`,
    bigint: (n) => `bigint(${q(n)}, { mode: "number" })`,
    serial: (n) => `bigserial(${q(n)}, { mode: "number" })`,
    json: (n) => `jsonText(${q(n)})`,
  },
};

const IMPORTS: Record<Dialect, string> = {
  sqlite: `import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";`,
  pg: `import { bigint, bigserial, boolean, customType, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";`,
};

/** PostgreSQL's JSON columns: text holding JSON, as drizzle's SQLite `text({ mode: "json" })` is. */
const PG_JSON_TEXT = `/** A text column holding JSON (drizzle's SQLite \`text({ mode: "json" })\` in PostgreSQL). */
const jsonText = customType<{ data: unknown; driverData: string }>({
  dataType: () => "text",
  toDriver: (value) => JSON.stringify(value),
  fromDriver: (value) => JSON.parse(value),
});
`;

const q = (s: string): string => JSON.stringify(s);

export interface Declared {
  area: string;
  /** The exported name, e.g. `agentSecretGrants`. */
  key: string;
  spec: AnyTable;
}

/** Every declared table, area by area (index.ts's order), each area's tables in name order. */
export function declaredTables(): Declared[] {
  const out: Declared[] = [];
  for (const [area, mod] of Object.entries(areas)) {
    for (const [key, spec] of Object.entries(mod)) out.push({ area, key, spec: spec as AnyTable });
  }
  checkDeclaration(out);
  return out;
}

/** Refuses a declaration drizzle would take but get wrong: a table declared twice, a key or index naming nothing. */
export function checkDeclaration(tables: Declared[]): void {
  const byKey = new Map(tables.map((t) => [t.key, t.spec]));
  const names = new Set<string>();
  for (const { key, spec } of tables) {
    if (names.has(spec.name)) throw new Error(`table ${spec.name} is declared twice`);
    names.add(spec.name);
    for (const [prop, col] of Object.entries(spec.columns)) {
      if (!(col instanceof Column)) throw new Error(`${key}.${prop} is not a column`);
      const ref = col.spec.references;
      if (!ref) continue;
      const [target, column] = ref.target.split(".");
      if (!target || !column || !byKey.get(target)?.columns[column]) throw new Error(`${key}.${prop} references ${ref.target}, which is not declared`);
    }
    for (const c of spec.primaryKey ?? []) if (!spec.columns[c]) throw new Error(`${key}'s primary key names ${c}, not a column of ${key}`);
    for (const ix of spec.indexes) {
      for (const c of ix.columns) if (!spec.columns[c]) throw new Error(`index ${ix.name} names ${c}, not a column of ${key}`);
    }
  }
}

function columnCode(dialect: Dialect, col: ColumnSpec): string {
  let code = KINDS[dialect][col.kind](col.name);
  if (col.type !== null) code += `.$type<${col.type}>()`;
  if (col.primaryKey) code += ".primaryKey()";
  if (col.notNull) code += ".notNull()";
  if (col.unique) code += ".unique()";
  if (col.default !== null) code += `.default(${JSON.stringify(col.default)})`;
  if (col.references) {
    const [target, column] = col.references.target.split(".");
    code += `.references(() => ${target}.${column}, { onDelete: ${q(col.references.onDelete)} })`;
  }
  return code;
}

function indexCode(ix: IndexSpec): string {
  const on = ix.columns.map((c) => `t.${c}`).join(", ");
  const where = ix.where === null ? "" : `.where(sql\`${ix.where}\`)`;
  return `${ix.unique ? "uniqueIndex" : "index"}(${q(ix.name)}).on(${on})${where}`;
}

function tableCode(dialect: Dialect, { key, spec }: Declared): string {
  const fn = dialect === "sqlite" ? "sqliteTable" : "pgTable";
  const columns = Object.entries(spec.columns).map(([prop, col]) => `    ${prop}: ${columnCode(dialect, col.spec)},`);
  const extras = [
    ...(spec.primaryKey ? [`primaryKey({ columns: [${spec.primaryKey.map((c) => `t.${c}`).join(", ")}] })`] : []),
    ...spec.indexes.map(indexCode),
  ];
  const third = extras.length === 0 ? "" : `  (t) => [\n${extras.map((e) => `    ${e},`).join("\n")}\n  ],\n`;
  return `export const ${key} = ${fn}(\n  ${q(spec.name)},\n  {\n${columns.join("\n")}\n  },\n${third});\n`;
}

/** The TypeScript names the declaration's value types use: imported from src/core/model.ts. */
function modelTypes(tables: Declared[]): string[] {
  const names = new Set<string>();
  for (const { spec } of tables) {
    for (const col of Object.values(spec.columns)) {
      const type = col.spec.type?.replace(/"[^"]*"|'[^']*'/g, "") ?? "";
      for (const m of type.matchAll(/\b[A-Z]\w*/g)) if (m[0] !== "Record") names.add(m[0]);
    }
  }
  return [...names].sort();
}

/** The whole file for one engine. */
export function render(dialect: Dialect): string {
  const tables = declaredTables();
  const types = modelTypes(tables);
  const engine = dialect === "sqlite" ? "SQLite" : "PostgreSQL";
  const lines = [
    `// Generated by scripts/gen-schema.ts from src/store/schema/ (the one table declaration) — do not edit; run \`npm run db:schema\`.`,
    `// The ${engine} drizzle tables; migrations/${dialect === "sqlite" ? "sqlite" : "postgres"}/ is generated from this file by drizzle-kit.`,
    `import { sql } from "drizzle-orm";`,
    IMPORTS[dialect],
    `import type {\n${types.map((t) => `  ${t},`).join("\n")}\n} from "../core/model.ts";`,
    "",
  ];
  if (dialect === "pg") lines.push(PG_JSON_TEXT);
  let area = "";
  for (const t of tables) {
    if (t.area !== area) {
      area = t.area;
      lines.push(`// ${area} (src/store/schema/${area}.ts)`, "");
    }
    lines.push(tableCode(dialect, t));
  }
  return lines.join("\n");
}

if (import.meta.main) {
  for (const dialect of ["sqlite", "pg"] as const) {
    writeFileSync(OUTPUTS[dialect], render(dialect));
    console.log(`wrote ${OUTPUTS[dialect]}`);
  }
}
