// Real PostgreSQL clients for the database broker's tests: Debian's psql and Python psycopg2 (both libpq) as
// child processes, and node's `pg` and `postgres` (porsager) in the test process, each reduced to "run these
// statements, give me rows or the server's SQLSTATE and message".
import { join } from "node:path";
import pg from "pg";
import postgres from "postgres";
import { run, type RunResult } from "./gateway.ts";
import { pgBinary } from "./postgres.ts";

export interface ClientError {
  code: string | undefined;
  message: string;
}

/** psql with no rc file, unaligned tuples-only output, stop on the first error, SQLSTATE in error lines. */
export function psql(url: string, sql: string, opts: { stdin?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<RunResult> {
  return run([pgBinary("psql"), url, "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose", "-c", sql], {
    stdin: opts.stdin === undefined ? undefined : new TextEncoder().encode(opts.stdin),
    env: opts.env,
    timeoutMs: opts.timeoutMs ?? 30_000,
  });
}

export type PsycopgOp = { sql: string; params?: unknown[] } | { copyIn: string; data: string } | { copyOut: string } | { listen: string; notifySql: string };
export type PsycopgResult = { rows?: unknown[][] | null; status?: string; rowcount?: number; data?: string; notifies?: [string, string][]; error?: { pgcode: string | null; message: string } };

/** Runs `ops` on one psycopg2 connection (autocommit) with Debian's python3. */
export async function psycopg2(url: string, ops: PsycopgOp[]): Promise<{ connectError?: { pgcode: string | null; message: string }; results?: PsycopgResult[] }> {
  const r = await run(["/usr/bin/python3", join(import.meta.dir, "psycopg2Client.py"), JSON.stringify({ url, ops })], { timeoutMs: 45_000 });
  if (r.code !== 0) throw new Error(`psycopg2 client failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** A connected node `pg` client. */
export async function pgClient(config: pg.ClientConfig): Promise<pg.Client> {
  const client = new pg.Client(config);
  // A session the server or credgate ends must not crash the test process ('error' without a listener throws).
  client.on("error", () => {});
  await client.connect();
  return client;
}

/** What connecting with node `pg` fails with (throws when it connects). */
export async function pgConnectError(config: pg.ClientConfig): Promise<ClientError> {
  const client = new pg.Client(config);
  client.on("error", () => {});
  try {
    await client.connect();
  } catch (e) {
    const err = e as { code?: string; message: string };
    return { code: err.code, message: err.message };
  }
  await client.end();
  throw new Error("connected, but a refusal was expected");
}

/** What `query` fails with on `client` (throws when it succeeds). */
export async function pgQueryError(client: pg.Client, text: string, values?: unknown[]): Promise<ClientError> {
  try {
    await client.query(text, values);
  } catch (e) {
    const err = e as { code?: string; message: string };
    return { code: err.code, message: err.message };
  }
  throw new Error(`"${text}" succeeded, but a refusal was expected`);
}

/** A porsager `postgres` client (one connection, no prepared-statement cache surprises across tests). */
export function porsager(url: string, opts: postgres.Options<Record<string, postgres.PostgresType>> = {}): postgres.Sql {
  return postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 20, ...opts });
}

/** What a porsager query (or connection) fails with. */
export async function porsagerError(query: Promise<unknown>): Promise<ClientError> {
  try {
    await query;
  } catch (e) {
    const err = e as { code?: string; message: string };
    return { code: err.code, message: err.message };
  }
  throw new Error("the query succeeded, but a refusal was expected");
}
