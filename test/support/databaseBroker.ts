// The database broker under test (docs/databases.md): the real credgate process with its database listener on a
// free port, the test PostgreSQL server (test/support/databaseServer.ts) behind it, and helpers that create
// database secrets and agents through the API and hand out connection URLs to the listener the way an agent
// gets them: `postgresql://<secret name>:<agent token>@127.0.0.1:<db port>/<database>?sslmode=…`.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { DB_FILE } from "../../src/store/sqlite.ts";
import { databaseServer, type DatabaseServer, type DatabaseUserKind } from "./databaseServer.ts";
import { eventually, gatewayCa } from "./gateway.ts";
import { startCredgate, type RunningCredgate, type StartOptions } from "./process.ts";
import { queryStore } from "./storeQuery.ts";

export interface DatabaseSecretOptions {
  /** Which role of the test server the secret holds (its name and password). */
  user: DatabaseUserKind;
  /** The secret's hostPattern: 127.0.0.1 (default), localhost, 127.0.0.2, or a name under db.test (pinned). */
  host?: string;
  databases?: string[];
  tls?: "verify-full" | "require" | "off";
  readOnly?: boolean;
  writes?: "allow" | "approve" | "block";
  /** Overrides the stored password (a wrong one, for upstream failures). */
  password?: string;
  /** Leaves `port` out of the variant (the 5432 default). */
  noPort?: boolean;
  /** Another port than the test server's (nothing listening there, for an unreachable server). */
  port?: number;
}

export interface BrokerUrlOptions {
  token?: string;
  /** `verify-full` checks the listener's certificate against the gateway CA (sslrootcert). Default `verify-full`. */
  sslmode?: "disable" | "require" | "verify-full";
  database?: string;
}

export interface Broker {
  cg: RunningCredgate;
  db: DatabaseServer;
  /** credgate's database listener port (CREDGATE_DB_PORT). */
  dbPort: number;
  /** The gateway CA (what agents trust), as PEM and as a file. */
  ca: { pem: string; file: string };
  /** The default agent's token. */
  token: string;
  /** Creates a project database secret named `name`; its id. */
  secret(name: string, opts: DatabaseSecretOptions): Promise<string>;
  /** A libpq URL to credgate's listener for `secret` (the startup user), with the agent token as password. */
  url(secret: string, opts?: BrokerUrlOptions): string;
  /** node `pg` client settings for the same. */
  pgConfig(secret: string, opts?: BrokerUrlOptions): { host: string; port: number; user: string; password: string; database: string; ssl: false | { ca: string } };
  /** A new agent of the project; its id and token. */
  agent(identifier: string, mode?: "all" | "grants"): Promise<{ id: string; token: string }>;
  /** Request-log rows matching `filter`, once at least `n` exist (logs are written in batches). */
  logs(filter: (row: LogRow) => boolean, n?: number, ms?: number): Promise<LogRow[]>;
  stop(): Promise<void>;
}

export interface LogRow {
  id: string;
  agentId: string;
  method: string;
  host: string;
  path: string;
  status: number;
  decision: string;
  latencyMs: number;
  approvalId: string | null;
  matchedRuleName: string | null;
  createdAt: string;
}

/** Names under db.test that the broker pins to the test server (CREDGATE_RESOLVE), for per-test hosts. */
export const DB_TEST_HOSTS = ["policy.db.test", "rate.db.test", "ask.db.test", "names.db.test"];

export async function startBroker(opts: StartOptions & { db?: DatabaseServer } = {}): Promise<Broker> {
  const db = opts.db ?? (await databaseServer());
  const cg = await startCredgate({
    ...opts,
    env: {
      CREDGATE_UPSTREAM_CA_FILE: db.caFile,
      CREDGATE_RESOLVE: DB_TEST_HOSTS.map((h) => `${h}:${db.port}:127.0.0.1`).join(","),
      CREDGATE_APPROVAL_POLL_SECONDS: "1",
      ...opts.env,
    },
  });
  const dbPort = cg.dbPort;
  const ca = await gatewayCa(cg);
  const token = cg.keys.defaultAgentToken;
  const url = (secret: string, o: BrokerUrlOptions = {}) => {
    const mode = o.sslmode ?? "verify-full";
    const q = new URLSearchParams({ sslmode: mode });
    if (mode === "verify-full") q.set("sslrootcert", ca.file);
    return `postgresql://${encodeURIComponent(secret)}:${encodeURIComponent(o.token ?? token)}@127.0.0.1:${dbPort}/${encodeURIComponent(o.database ?? db.database)}?${q}`;
  };
  return {
    cg,
    db,
    dbPort,
    ca,
    token,
    async secret(name, s) {
      const user = db.users[s.user];
      const database: Record<string, unknown> = { engine: "postgresql", user: user.name };
      if (!s.noPort) database.port = s.port ?? db.port;
      for (const k of ["databases", "tls", "readOnly", "writes"] as const) if (s[k] !== undefined) database[k] = s[k];
      const res = await cg.api("POST", "/v1/secrets", {
        body: { name, type: "generic", value: s.password ?? user.password, hostPattern: s.host ?? db.host, injectionConfig: { database } },
      });
      if (res.status !== 201) throw new Error(`database secret ${name}: ${res.status} ${res.text}`);
      return res.body.id as string;
    },
    url,
    pgConfig(secret, o = {}) {
      const mode = o.sslmode ?? "verify-full";
      return {
        host: "127.0.0.1",
        port: dbPort,
        user: secret,
        password: o.token ?? token,
        database: o.database ?? db.database,
        // node pg verifies whenever ssl is set: `require` is not offered here, only verify-full or none.
        ssl: mode === "disable" ? false : { ca: ca.pem },
      };
    },
    async agent(identifier, mode = "all") {
      const created = await cg.api("POST", "/v1/agents", { body: { name: identifier, identifier, mode } });
      if (created.status !== 201) throw new Error(`agent: ${created.status} ${created.text}`);
      const listed = (await cg.api("GET", "/v1/agents")).body.find((a: { id: string }) => a.id === created.body.id);
      return { id: created.body.id as string, token: listed.accessToken as string };
    },
    async logs(filter, n = 1, ms = 10_000) {
      let last: LogRow[] = [];
      const found = await eventually(async () => {
        const res = await cg.api("GET", "/v1/logs?limit=500");
        last = ((res.body?.data ?? []) as LogRow[]).filter(filter);
        return last.length >= n ? last : null;
      }, ms, 150);
      if (!found) throw new Error(`expected ${n} request-log rows, found ${last.length}: ${JSON.stringify(last)}`);
      return found;
    },
    async stop() {
      await cg.stop();
    },
  };
}

/**
 * Everything a credgate process's store holds, as text, to search for a value that must never be stored in
 * plaintext: the SQLite files' raw bytes (the WAL included), or every row of every table of its PostgreSQL database.
 */
export async function storeText(cg: RunningCredgate): Promise<string> {
  if (!cg.env.CREDGATE_DATABASE_URL) {
    return readdirSync(cg.dataDir)
      .filter((f) => f.startsWith(DB_FILE))
      .map((f) => readFileSync(join(cg.dataDir, f)).toString("latin1"))
      .join("\n");
  }
  const tables = await queryStore<{ name: string }>(cg, sql`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`);
  const out: string[] = [];
  for (const { name } of tables) out.push(JSON.stringify(await queryStore(cg, sql`SELECT * FROM ${sql.identifier(name)}`)));
  return out.join("\n");
}
