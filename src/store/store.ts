// The store as services see it: one drizzle database typed once, the tables, and the few operations that
// differ between engines (transactions, the request-log batch insert, change notifications, startup lock).
// Services are written once against this; sqlite.ts and postgres.ts implement it.
import type { SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type * as tables from "./schema.pg.ts";

/**
 * The tables of the one table declaration (src/store/schema/, docs/architecture.md#storage), typed as drizzle
 * builds them for `Db`'s query builder (the PostgreSQL file generated from it). With SQLite they are the
 * SQLite file generated from the same declaration: the same names, columns, nullability, keys and indexes
 * (test/unit/schemaParity.test.ts), the same value types (the declaration's).
 */
export type Tables = typeof tables;

/** The query builder services use: the same calls build SQLite or PostgreSQL statements. */
export type Db = PgDatabase<PgQueryResultHKT, Record<string, never>>;

export type Engine = "sqlite" | "postgres";

/** A whole row (every column present, null where empty): the SQLite insert binds each column by name. */
export type RequestLogInsert = Omit<Tables["requestLogs"]["$inferSelect"], "seq">;
/** A spend record as the gateway queues it (docs/budgets.md#spend-report). */
export type SpendRecordInsert = Omit<Tables["spendRecords"]["$inferSelect"], "seq">;

/** A budget window's key in `budget_windows`: the budget and the window's start (epoch seconds, 0 for `total`). */
export interface BudgetWindowKey {
  budgetId: string;
  start: number;
}

export interface Store {
  readonly engine: Engine;
  /** The handle for the current async context: the open transaction's inside `transaction`, else the root. */
  readonly db: Db;
  readonly t: Tables;
  /**
   * Runs `work` in one transaction; every statement `work` makes through `db` (in any service) is part of it.
   * Nested calls join the outer transaction. Statements of other requests never run inside it.
   */
  transaction<T>(work: () => Promise<T>): Promise<T>;
  /** Runs `fn` once the current transaction commits (dropped on rollback); at once outside a transaction. */
  afterCommit(fn: () => void): void;
  /**
   * Runs `work` inside the current transaction just before it commits (after everything else it does, so locks
   * `work` takes are held only for the commit); outside a transaction, in a transaction of its own, now.
   */
  beforeCommit(work: () => Promise<void>): Promise<void>;
  /** Like `transaction`, holding the database-wide startup lock (PostgreSQL advisory lock): migrations, bootstrap. */
  exclusive<T>(work: () => Promise<T>): Promise<T>;
  /**
   * Inside a transaction: serialises it with every other transaction that locks the same key, until commit
   * (PostgreSQL: a transaction-level advisory lock; SQLite transactions are serial already).
   */
  lockKey(key: string): Promise<void>;
  /**
   * Inside a transaction: locks the opening rows (holder '') of these budget windows until commit, in one
   * order (budget id by code unit, then window start), so two transactions locking overlapping windows never
   * wait on each other in a circle (docs/budgets.md#admission). PostgreSQL: SELECT … FOR UPDATE; SQLite
   * transactions are serial already. Windows without an opening row are skipped.
   */
  lockBudgetWindows(windows: readonly BudgetWindowKey[]): Promise<void>;
  /** True when the engine gave up on a transaction that may simply be run again (PostgreSQL: a deadlock victim, a serialisation failure). */
  isRetryable(err: unknown): boolean;
  /** Inserts request-log rows in one batch; returns each row's `seq`, in order. */
  insertRequestLogs(rows: RequestLogInsert[]): Promise<number[]>;
  /** Inserts spend records in one batch (as request logs: a prepared statement, not a query built per batch). */
  insertSpendRecords(rows: SpendRecordInsert[]): Promise<void>;
  /**
   * Inserts request-log rows in one batch whose `seq` nobody needs (the bulk of them): the fastest way the engine
   * takes rows (PostgreSQL: COPY). All or nothing, like `insertRequestLogs`.
   */
  appendRequestLogs(rows: RequestLogInsert[]): Promise<void>;
  /** Raw SQL for store-level statements and tests: rows as objects keyed by column name. */
  query<R = Record<string, unknown>>(statement: SQL): Promise<R[]>;
  /**
   * A statement written for both engines, parameters `$1`, `$2`, … in order of first use: for the few statements
   * run so often that building them through drizzle would cost more than running them (the budget ledger's).
   */
  execute<R = Record<string, unknown>>(text: string, params: unknown[]): Promise<R[]>;
  /** Cross-instance notifications (PostgreSQL LISTEN/NOTIFY); null with SQLite (one process owns the file). */
  readonly notifier: Notifier | null;
  /** True when `err` means the database cannot be reached (the API answers 503, the gateway keeps serving). */
  isUnavailable(err: unknown): boolean;
  close(): Promise<void>;
}

export interface Notifier {
  publish(channel: string, payload: string): Promise<void>;
  /** `onReady` runs once subscribed, and again after every reconnect (missed notifications: reload everything). */
  subscribe(channel: string, onPayload: (payload: string) => void, onReady: () => void): Promise<() => Promise<void>>;
}
