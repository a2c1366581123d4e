// Applies the embedded drizzle-kit migrations not yet applied, recording them the way drizzle's own migrator
// does (`__drizzle_migrations`: hash, created_at = the migration's timestamp), so data dirs and databases
// migrated by earlier versions continue where they stopped.
import { createHash } from "node:crypto";
import type { EmbeddedMigration } from "../../migrations/types.ts";

export interface MigrationTarget {
  /** The `created_at` of the newest applied migration, or null on an empty database. */
  lastApplied(): Promise<number | null>;
  /** Runs one statement of a migration. */
  run(statement: string): Promise<void>;
  record(hash: string, when: number): Promise<void>;
}

/** Runs the pending migrations in order; the caller provides the transaction and any lock. */
export async function applyPending(target: MigrationTarget, migrations: EmbeddedMigration[]): Promise<number> {
  const last = await target.lastApplied();
  let applied = 0;
  for (const m of migrations) {
    if (last !== null && m.when <= last) continue;
    for (const statement of m.sql.split("--> statement-breakpoint")) {
      if (statement.trim()) await target.run(statement);
    }
    await target.record(createHash("sha256").update(m.sql).digest("hex"), m.when);
    applied++;
  }
  return applied;
}
