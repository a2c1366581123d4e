// `credgate rotate-master-key` (docs/operations.md#rotating-the-master-key): every value sealed under the old master key is opened and sealed
// again under the new one, in ONE transaction. The sealed values are found from the schema itself — every
// text column of every table is searched for the sealed format `v1:…` — so a sealed column added later is
// rotated without anyone listing it here. Columns named `*_sealed` must hold only values that open under the
// old key (a value that does not means the wrong key: nothing is changed); in other text columns, only values
// that open under the old key are touched (GCM authentication tells sealed values from look-alike text).
import { getTableColumns, getTableName, is, sql, Table } from "drizzle-orm";
import type { Sealer } from "../crypto/seal.ts";
import type { Store } from "../store/store.ts";

export interface RotatedColumn {
  table: string;
  column: string;
  values: number;
}

/** The text columns of every table of the store, as (table name, column name). */
export function textColumns(store: Store): { table: Table; tableName: string; column: string }[] {
  const out: { table: Table; tableName: string; column: string }[] = [];
  for (const table of Object.values(store.t)) {
    if (!is(table, Table)) continue;
    for (const column of Object.values(getTableColumns(table))) {
      if (column.dataType === "string") out.push({ table, tableName: getTableName(table), column: column.name });
    }
  }
  return out;
}

export const isSealedColumn = (column: string) => column.endsWith("_sealed");

/** Re-seals every sealed value from `from` to `to` in one transaction; nothing changes when it throws. */
export async function rotateSealedValues(store: Store, from: Sealer, to: Sealer): Promise<RotatedColumn[]> {
  return store.transaction(async () => {
    const rotated: RotatedColumn[] = [];
    for (const { table, tableName, column } of textColumns(store)) {
      // Audit events hold no sealed values, and a changed event would break the audit chain.
      if (table === store.t.auditEvents) continue;
      const col = sql.identifier(column);
      const rows = await store.query<{ v: string }>(sql`SELECT DISTINCT ${col} AS v FROM ${table} WHERE ${col} LIKE ${"v1:%"}`);
      let values = 0;
      for (const { v } of rows) {
        let plaintext: string;
        try {
          plaintext = from.open(v);
        } catch {
          if (isSealedColumn(column)) throw new Error(`a value in ${tableName}.${column} does not open with the current master key; nothing was changed`);
          continue;
        }
        await store.query(sql`UPDATE ${table} SET ${col} = ${to.seal(plaintext)} WHERE ${col} = ${v}`);
        values++;
      }
      if (values > 0) rotated.push({ table: tableName, column, values });
    }
    return rotated;
  });
}
