// The shared store for several instances: PostgreSQL through drizzle's bun-sql driver (Bun's built-in client,
// compiled into the executable). Transactions follow the async context, so services calling services inside
// one transaction all use its connection. Change notifications travel as LISTEN/NOTIFY.
import { AsyncLocalStorage } from "node:async_hooks";
import { SQL as BunSQL } from "bun";
import { sql, type SQL } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sql";
import { postgresMigrations } from "../../migrations/postgres/index.ts";
import type { EmbeddedMigration } from "../../migrations/types.ts";
import { applyPending } from "./migrate.ts";
import * as schema from "./schema.pg.ts";
import type { BudgetWindowKey, Db, Notifier, RequestLogInsert, SpendRecordInsert, Store, Tables } from "./store.ts";

interface TxContext {
  tx: Db;
  before: (() => Promise<void>)[];
  after: (() => void)[];
  /** False once the transaction ended: see #current. */
  open: boolean;
}

/** pg_advisory_xact_lock key of migrations and bootstrap ("credgate" in ASCII). */
const STARTUP_LOCK = 0x6372656467617465n;

const REQUEST_LOG_INSERT = `INSERT INTO request_logs (id, organization_id, project_id, agent_id, method, host, path, provider, status,
  latency_ms, injection_count, decision, matched_rule_logical_id, matched_rule_name, approval_id, cost_nanos, created_at, request_id, mcp_server_id)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
    $9::int[], $10::int[], $11::int[], $12::text[], $13::text[], $14::text[], $15::text[], $16::bigint[], $17::text[], $18::text[], $19::text[])
  RETURNING id, seq`;

const SPEND_RECORD_INSERT = `INSERT INTO spend_records (organization_id, project_id, agent_id, secret_type, model, input_tokens, output_tokens, cost_nanos, created_at)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[], $9::text[])`;

const REQUEST_LOG_COPY = `COPY request_logs (id, organization_id, project_id, agent_id, method, host, path, provider, status, latency_ms,
  injection_count, decision, matched_rule_logical_id, matched_rule_name, approval_id, cost_nanos, created_at, request_id, mcp_server_id) FROM STDIN`;

/** COPY's text format: `\N` for null; backslash, tab, newline and carriage return escaped in free text. */
const SPECIAL = /[\\\t\n\r]/;
const escapeChar: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" };
function text(v: string | null): string {
  if (v === null) return "\\N";
  return SPECIAL.test(v) ? v.replace(/[\\\t\n\r]/g, (c) => escapeChar[c]!) : v;
}
/** Ids, timestamps, enums and numbers: never holding a special character, only possibly null. */
const plain = (v: string | number | null): string => (v === null ? "\\N" : String(v));

/** One row in COPY's text format: the columns of REQUEST_LOG_COPY, tab-separated. */
export function copyLine(r: RequestLogInsert): string {
  return `${r.id}\t${r.organizationId}\t${r.projectId}\t${r.agentId}\t${text(r.method)}\t${text(r.host)}\t${text(r.path)}\t${text(r.provider)}\t${r.status}\t${r.latencyMs}\t${r.injectionCount}\t${r.decision}\t${plain(r.matchedRuleLogicalId)}\t${text(r.matchedRuleName)}\t${plain(r.approvalId)}\t${plain(r.costNanos)}\t${r.createdAt}\t${text(r.requestId)}\t${plain(r.mcpServerId)}\n`;
}

/** Error codes of Bun's PostgreSQL client (and the socket below it) that mean the server cannot be reached. */
const UNAVAILABLE_CODES = new Set([
  "ERR_POSTGRES_CONNECTION_CLOSED",
  "ERR_POSTGRES_CONNECTION_REFUSED",
  "ERR_POSTGRES_CONNECTION_TIMEOUT",
  "ERR_POSTGRES_IDLE_TIMEOUT",
  "ERR_POSTGRES_LIFETIME_TIMEOUT",
  "ERR_POSTGRES_SERVER_ERROR_CONNECTION",
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ConnectionRefused",
  "ConnectionClosed",
]);
/** SQLSTATE classes of a server that is shutting down or not accepting connections (57P*, 08*). */
const UNAVAILABLE_STATES = /^(57P0[1-3]|08\w{3})$/;

export class PostgresStore implements Store {
  readonly engine = "postgres" as const;
  readonly t: Tables = schema;
  readonly client: BunSQL;
  readonly notifier: Notifier;
  readonly #root: Db;
  readonly #context = new AsyncLocalStorage<TxContext>();

  private constructor(url: string) {
    // A bounded connect timeout: with the server gone the API answers 503 within seconds, never hangs.
    this.client = new BunSQL({ url, max: 10, connectionTimeout: 5, idleTimeout: 30, onclose: () => {} });
    this.#root = drizzle({ client: this.client });
    const client = this.client;
    this.notifier = {
      publish: (channel, payload) => client.notify(channel, payload),
      async subscribe(channel, onPayload, onReady) {
        const subscription = await client.listen(channel, onPayload, onReady);
        return () => subscription.unlisten();
      },
    };
  }

  static async open(url: string, migrations: EmbeddedMigration[] = postgresMigrations): Promise<PostgresStore> {
    const store = new PostgresStore(url);
    try {
      await store.exclusive(() => store.#migrate(migrations));
    } catch (err) {
      await store.client.close();
      if (!store.isUnavailable(err)) throw err;
      // One line an operator can act on, without the URL's password.
      const where = URL.canParse(url) ? new URL(url).host : "the configured host";
      throw new Error(`cannot reach PostgreSQL at ${where} (CREDGATE_DATABASE_URL): ${(err as Error).message}`);
    }
    return store;
  }

  /**
   * The open transaction of the current async context. Work begun inside a transaction that goes on after it
   * ended (a timer, an unawaited promise) still carries its context: it is outside any transaction, not in a
   * finished one (whose connection takes no more statements, whose afterCommit would never run).
   */
  #current(): TxContext | undefined {
    const ctx = this.#context.getStore();
    return ctx?.open ? ctx : undefined;
  }

  get db(): Db {
    return this.#current()?.tx ?? this.#root;
  }

  async transaction<T>(work: () => Promise<T>): Promise<T> {
    if (this.#current()) return work();
    const ctx: TxContext = { tx: this.#root, before: [], after: [], open: true };
    let result: T;
    try {
      result = await this.#root.transaction((tx) => {
        ctx.tx = tx;
        return this.#context.run(ctx, async () => {
          const value = await work();
          for (let i = 0; i < ctx.before.length; i++) await ctx.before[i]!();
          return value;
        });
      });
    } finally {
      ctx.open = false;
    }
    for (const fn of ctx.after) fn();
    return result;
  }

  async beforeCommit(work: () => Promise<void>): Promise<void> {
    const ctx = this.#current();
    if (ctx) ctx.before.push(work);
    else await this.transaction(work);
  }

  afterCommit(fn: () => void): void {
    const ctx = this.#current();
    if (ctx) ctx.after.push(fn);
    else fn();
  }

  exclusive<T>(work: () => Promise<T>): Promise<T> {
    return this.transaction(async () => {
      await this.db.execute(sql`SELECT pg_advisory_xact_lock(${STARTUP_LOCK})`);
      return work();
    });
  }

  async lockKey(key: string): Promise<void> {
    await this.db.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`);
  }

  async lockBudgetWindows(windows: readonly BudgetWindowKey[]): Promise<void> {
    if (windows.length === 0) return;
    // Row locks taken in ORDER BY order: budget id by code unit (COLLATE "C"), then window start.
    const params: unknown[] = [];
    const match = windows.map((w) => `(budget_id = $${params.push(w.budgetId)} AND window_start = $${params.push(w.start)})`).join(" OR ");
    await this.execute(`SELECT 1 FROM budget_windows WHERE holder = '' AND (${match}) ORDER BY budget_id COLLATE "C", window_start FOR UPDATE`, params);
  }

  isRetryable(err: unknown): boolean {
    // The server's error is the cause of drizzle's (DrizzleQueryError); its SQLSTATE is in `errno` (Bun.SQL).
    for (let e = err as { code?: unknown; errno?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
      for (const code of [e.errno, e.code]) if (code === "40P01" || code === "40001") return true;
    }
    return false;
  }

  /**
   * One statement per batch, each column one array parameter (unnest): building a drizzle multi-row insert
   * cost ~30 µs per row of the gateway's CPU; this costs a few.
   */
  async insertRequestLogs(rows: RequestLogInsert[]): Promise<number[]> {
    if (rows.length === 0) return [];
    const column = <K extends keyof RequestLogInsert>(k: K) => rows.map((r) => r[k] ?? null);
    const inserted = (await this.client.unsafe(REQUEST_LOG_INSERT, [
      column("id"),
      column("organizationId"),
      column("projectId"),
      column("agentId"),
      column("method"),
      column("host"),
      column("path"),
      column("provider"),
      column("status"),
      column("latencyMs"),
      column("injectionCount"),
      column("decision"),
      column("matchedRuleLogicalId"),
      column("matchedRuleName"),
      column("approvalId"),
      column("costNanos"),
      column("createdAt"),
      column("requestId"),
      column("mcpServerId"),
    ])) as { id: string; seq: string | number }[];
    // RETURNING carries no order guarantee: match by id.
    const seqOf = new Map(inserted.map((r) => [r.id, Number(r.seq)]));
    return rows.map((r) => seqOf.get(r.id)!);
  }

  async insertSpendRecords(rows: SpendRecordInsert[]): Promise<void> {
    if (rows.length === 0) return;
    const column = <K extends keyof SpendRecordInsert>(k: K) => rows.map((r) => r[k]);
    await this.client.unsafe(SPEND_RECORD_INSERT, [
      column("organizationId"),
      column("projectId"),
      column("agentId"),
      column("secretType"),
      column("model"),
      column("inputTokens"),
      column("outputTokens"),
      column("costNanos"),
      column("createdAt"),
    ]);
  }

  /**
   * COPY … FROM STDIN: the fewest server cycles per row (measured: ~14 µs against ~20 µs for a multi-row INSERT
   * or unnest), and no RETURNING. One statement, so the batch is stored whole or not at all.
   */
  async appendRequestLogs(rows: RequestLogInsert[]): Promise<void> {
    if (rows.length === 0) return;
    let data = "";
    for (const r of rows) data += copyLine(r);
    const copy = this.client.unsafe(REQUEST_LOG_COPY);
    const writer = copy.writable().getWriter();
    // Settles with the server's answer; a failure also reaches the writer, so it is awaited on both paths.
    const stored = Promise.resolve(copy).then(
      () => null,
      (err: unknown) => err,
    );
    try {
      await writer.write(data);
      await writer.close();
    } catch (err) {
      await stored;
      throw err;
    }
    const failed = await stored;
    if (failed) throw failed;
  }

  async query<R>(statement: SQL): Promise<R[]> {
    return (await this.db.execute(statement)) as unknown as R[];
  }

  async execute<R>(text: string, params: unknown[]): Promise<R[]> {
    // Through drizzle, so that it joins the open transaction (a round trip costs far more than the building here).
    const parts = text.split(/\$(\d+)/);
    const chunks = parts.map((part, i) => (i % 2 === 0 ? sql.raw(part) : sql`${params[Number(part) - 1]}`));
    return (await this.db.execute(sql.join(chunks))) as unknown as R[];
  }

  isUnavailable(err: unknown): boolean {
    for (let e = err as { code?: unknown; errno?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
      if (typeof e.code === "string" && (UNAVAILABLE_CODES.has(e.code) || UNAVAILABLE_STATES.test(e.code))) return true;
      if (typeof e.errno === "string" && UNAVAILABLE_STATES.test(e.errno)) return true;
    }
    return false;
  }

  async close(): Promise<void> {
    await this.client.close({ timeout: 5 });
  }

  async #migrate(migrations: EmbeddedMigration[]): Promise<number> {
    const db = this.db;
    await db.execute(sql`CREATE SCHEMA IF NOT EXISTS drizzle`);
    await db.execute(sql`CREATE TABLE IF NOT EXISTS drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`);
    return applyPending(
      {
        lastApplied: async () => {
          const rows = (await db.execute(sql`SELECT created_at AS at FROM drizzle.__drizzle_migrations ORDER BY created_at DESC LIMIT 1`)) as unknown as { at: string }[];
          return rows[0] ? Number(rows[0].at) : null;
        },
        run: async (statement) => void (await db.execute(sql.raw(statement))),
        record: async (hash, when) => void (await db.execute(sql`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES (${hash}, ${when})`)),
      },
      migrations,
    );
  }
}
