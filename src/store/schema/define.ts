// The vocabulary of the one table declaration (docs/architecture.md#storage): tables, columns of six
// dialect-neutral kinds, keys, indexes and foreign keys. It describes; it builds nothing. scripts/gen-schema.ts
// turns the declaration into drizzle tables for each engine (src/store/schema.sqlite.ts, schema.pg.ts), from
// which drizzle-kit generates each engine's migrations.

/**
 * What a column holds, and how each engine stores it:
 * - `text`, `integer`: the same type on both engines.
 * - `boolean`: SQLite integer 0/1, PostgreSQL boolean.
 * - `bigint`: SQLite integer (64-bit already), PostgreSQL bigint; read as a JS number on both.
 * - `serial`: the append-order key: SQLite's rowid (integer primary key), PostgreSQL bigserial.
 * - `json`: text holding JSON on both engines, so both store and return the same values.
 */
export type ColumnKind = "text" | "integer" | "boolean" | "bigint" | "serial" | "json";

export type OnDelete = "cascade" | "set null";

export interface ColumnSpec {
  readonly kind: ColumnKind;
  /** The SQL column name. */
  readonly name: string;
  /** The TypeScript type of the value (names from src/core/model.ts; tsc checks it in the generated files), when narrower than the kind's. */
  readonly type: string | null;
  readonly notNull: boolean;
  readonly primaryKey: boolean;
  readonly unique: boolean;
  readonly default: string | number | boolean | null;
  /** `table.column`, by the tables' exported names. */
  readonly references: { readonly target: string; readonly onDelete: OnDelete } | null;
}

/** A column under declaration: each call returns a new column with one more property set. */
export class Column {
  constructor(readonly spec: ColumnSpec) {}

  private with(change: Partial<ColumnSpec>): Column {
    return new Column({ ...this.spec, ...change });
  }

  /** The value's TypeScript type, e.g. `"AgentMode"` or `"Record<string, string>"` (kept as written). */
  type(type: string): Column {
    return this.with({ type });
  }
  notNull(): Column {
    return this.with({ notNull: true });
  }
  primaryKey(): Column {
    return this.with({ primaryKey: true });
  }
  unique(): Column {
    return this.with({ unique: true });
  }
  default(value: string | number | boolean): Column {
    return this.with({ default: value });
  }
  /** A foreign key to `table.column` (the tables' exported names, e.g. `"organizations.id"`). */
  references(target: string, onDelete: OnDelete): Column {
    return this.with({ references: { target, onDelete } });
  }
}

function column(kind: ColumnKind, name: string): Column {
  const spec = { kind, name, type: null, notNull: false, primaryKey: false, unique: false, default: null, references: null };
  return new Column(spec);
}

export const text = (name: string): Column => column("text", name);
export const integer = (name: string): Column => column("integer", name);
export const boolean = (name: string): Column => column("boolean", name);
export const bigint = (name: string): Column => column("bigint", name);
export const serial = (name: string): Column => column("serial", name);
export const json = (name: string): Column => column("json", name);

export interface IndexSpec<K extends string = string> {
  readonly name: string;
  readonly unique: boolean;
  /** Columns by their property names, in index order. */
  readonly columns: readonly K[];
  /** A partial index's condition, in SQL both engines read alike. */
  readonly where: string | null;
}

/** An index on columns by property name; `where` makes it partial. */
export function index<K extends string>(name: string, columns: readonly K[], where: string | null = null): IndexSpec<K> {
  return { name, unique: false, columns, where };
}
export function uniqueIndex<K extends string>(name: string, columns: readonly K[], where: string | null = null): IndexSpec<K> {
  return { name, unique: true, columns, where };
}

export interface TableSpec<C extends Record<string, Column> = Record<string, Column>> {
  /** The SQL table name. */
  readonly name: string;
  /** Columns by property name, in declaration order. */
  readonly columns: C;
  /** A composite primary key, by property names. */
  readonly primaryKey: readonly (keyof C & string)[] | null;
  readonly indexes: readonly IndexSpec<keyof C & string>[];
}

/** Any declared table, as the generator reads it. */
export interface AnyTable {
  readonly name: string;
  readonly columns: Readonly<Record<string, Column>>;
  readonly primaryKey: readonly string[] | null;
  readonly indexes: readonly IndexSpec[];
}

export function table<C extends Record<string, Column>>(
  name: string,
  columns: C,
  keys: { primaryKey?: readonly (keyof C & string)[]; indexes?: readonly IndexSpec<keyof C & string>[] } = {},
): TableSpec<C> {
  return { name, columns, primaryKey: keys.primaryKey ?? null, indexes: keys.indexes ?? [] };
}
