// The PostgreSQL server behind credgate's database broker in the tests (docs/databases.md): Debian's PostgreSQL
// (initdb + pg_ctl via test/support/postgres.ts) in a temp dir on a free loopback port, with TLS on (a server
// certificate for localhost, *.db.test and 127.0.0.1 signed by a throwaway test CA, whose PEM file credgate gets as
// CREDGATE_UPSTREAM_CA_FILE) and one login role per authentication method a server may ask of credgate:
//   scram_user  — SCRAM-SHA-256 (the server offers SCRAM-SHA-256-PLUS too over TLS), with or without TLS
//   md5_user    — MD5 (its password stored as an MD5 hash), with or without TLS
//   clear_user  — cleartext `password`, over TLS only (a plain connection finds no pg_hba line)
//   clear_plain_user — cleartext `password` without TLS only (a careless server: credgate must not answer it)
//   members of vault_leased — SCRAM-SHA-256: the login roles a fake Vault's database engine creates per lease
// A database `app` holds a table `items` to read and write and a writing function `add_item(text)` (a write
// inside a SELECT). The superuser `postgres` connects from loopback without a password (`admin`).
//
// The server also listens on 127.0.0.2, a name its certificate does not carry (`untrustedHost`): verify-full
// fails there while `require` succeeds. `otherCaFile` is a second CA that did not sign the server's certificate.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { SQL } from "bun";
import { startServer, type PostgresServer } from "./postgres.ts";
import { tempDir } from "./tmp.ts";

export type DatabaseUserKind = "scram" | "md5" | "cleartext" | "cleartextPlain";

export interface DatabaseUser {
  name: string;
  password: string;
  /** The method pg_hba.conf asks of this role. */
  method: "scram-sha-256" | "md5" | "password";
  /** Whether the role may connect without TLS, and with it. */
  plain: boolean;
  tls: boolean;
}

export interface ConnectOptions {
  database?: string;
  /** libpq sslmode; `verify-full` and `verify-ca` check against the test CA (sslrootcert). Default `require`. */
  sslmode?: "disable" | "require" | "verify-ca" | "verify-full";
  host?: string;
}

export interface DatabaseServer {
  host: "127.0.0.1";
  /** Loopback address the server listens on whose name is not in its certificate. */
  untrustedHost: "127.0.0.2";
  port: number;
  /** PEM file of the CA that signed the server's certificate (credgate's CREDGATE_UPSTREAM_CA_FILE). */
  caFile: string;
  caPem: string;
  /** PEM file of another CA, which did not sign the server's certificate. */
  otherCaFile: string;
  users: Record<DatabaseUserKind, DatabaseUser>;
  /** The database every role may read and write (table `items`, function `add_item`). */
  database: "app";
  /** A second database (for `databases` allow-lists). */
  otherDatabase: "other";
  /** Runs SQL as the superuser in `database` (default `app`); the rows. */
  admin<T = Record<string, unknown>>(sql: string, database?: string): Promise<T[]>;
  /** A database named `name` with the same `items` table, function and grants as `app`. */
  createDatabase(name: string): Promise<void>;
  /** A libpq URL that connects `user` directly to the server (TLS per `sslmode`; with TLS, `sslrootcert` = the test CA). */
  connectUrl(user: DatabaseUserKind, opts?: ConnectOptions): string;
  /** The same for node's `pg` (whose URL `sslmode=require` verifies like verify-full): `require` does not verify. */
  clientConfig(user: DatabaseUserKind, opts?: ConnectOptions): { host: string; port: number; user: string; password: string; database: string; ssl: false | { ca: string; rejectUnauthorized: boolean; checkServerIdentity?: () => undefined } };
  /** The server's log file (connections and authentications are logged). */
  logFile: string;
  /** The data dir (its postmaster.pid names the server's process). */
  dataDir: string;
  stop(): void;
  start(): void;
}

/**
 * Writes a throwaway CA and a server certificate it signs into `dir`: for localhost, 127.0.0.1 and any name
 * under db.test (tests give each database secret its own host name, pinned to 127.0.0.1 with CREDGATE_RESOLVE).
 */
function makeCertificates(dir: string): void {
  const sh = (cmd: string) => {
    const r = spawnSync("sh", ["-c", cmd], { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  };
  const ca = (name: string) =>
    sh(`openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ${name}.key -out ${name}.crt -days 3 -subj "/CN=credgate test ${name}" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign`);
  ca("ca");
  ca("otherca");
  writeFileSync(
    join(dir, "server.ext"),
    "subjectAltName=DNS:localhost,DNS:*.db.test,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
  );
  sh(`openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj /CN=localhost`);
  sh(`openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 3 -sha256 -extfile server.ext`);
}

function hbaConf(): string {
  const net = "127.0.0.0/8";
  return [
    "# credgate test server (test/support/databaseServer.ts)",
    "local all postgres trust",
    `host all postgres ${net} trust`,
    `host all scram_user ${net} scram-sha-256`,
    `host all md5_user ${net} md5`,
    `hostssl all clear_user ${net} password`,
    `hostnossl all clear_plain_user ${net} password`,
    // Roles a fake Vault's database secrets engine creates are members of vault_leased (test/support/fakeVault.ts).
    `host all +vault_leased ${net} scram-sha-256`,
    "",
  ].join("\n");
}

const sqlString = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** A new server (several tests may start their own; most share `databaseServer()`). */
export async function startDatabaseServer(): Promise<DatabaseServer> {
  const certs = tempDir("credgate-dbcerts-");
  makeCertificates(certs);
  const pg: PostgresServer = await startServer({
    prepare(data, owner) {
      for (const f of ["server.crt", "server.key"]) {
        copyFileSync(join(certs, f), join(data, f));
        chmodSync(join(data, f), 0o600);
        if (owner) chownSync(join(data, f), owner.uid, owner.gid);
      }
      const hba = join(data, "pg_hba.conf");
      writeFileSync(hba, hbaConf());
      if (owner) chownSync(hba, owner.uid, owner.gid);
    },
    settings: {
      ssl: "on",
      listen_addresses: "127.0.0.1,127.0.0.2",
      log_connections: "on",
    },
  });
  const password = (kind: string) => `${kind}-pw-${randomBytes(12).toString("hex")}`;
  const users: Record<DatabaseUserKind, DatabaseUser> = {
    scram: { name: "scram_user", password: password("scram"), method: "scram-sha-256", plain: true, tls: true },
    md5: { name: "md5_user", password: password("md5"), method: "md5", plain: true, tls: true },
    cleartext: { name: "clear_user", password: password("clear"), method: "password", plain: false, tls: true },
    cleartextPlain: { name: "clear_plain_user", password: password("clearplain"), method: "password", plain: true, tls: false },
  };
  const admin = async <T,>(text: string, database = "app"): Promise<T[]> => {
    const sql = new SQL({ url: pg.urlOf(database), max: 1, tls: false });
    try {
      return (await sql.unsafe(text)) as T[];
    } finally {
      await sql.close();
    }
  };
  const roles = [...Object.values(users).map((u) => u.name), "vault_leased"];
  await admin(
    [
      `CREATE ROLE vault_leased NOLOGIN`,
      `CREATE ROLE scram_user LOGIN PASSWORD ${sqlString(users.scram.password)}`,
      // An MD5 role needs its password stored as an MD5 hash: a SCRAM verifier cannot answer an MD5 challenge.
      `SET password_encryption = 'md5'`,
      `CREATE ROLE md5_user LOGIN PASSWORD ${sqlString(users.md5.password)}`,
      `RESET password_encryption`,
      `CREATE ROLE clear_user LOGIN PASSWORD ${sqlString(users.cleartext.password)}`,
      `CREATE ROLE clear_plain_user LOGIN PASSWORD ${sqlString(users.cleartextPlain.password)}`,
    ].join(";\n"),
    "postgres",
  );
  const createDatabase = async (name: string) => {
    await admin(`CREATE DATABASE "${name}"`, "postgres");
    await admin(
      [
        `CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL, n int NOT NULL DEFAULT 0)`,
        `INSERT INTO items (name, n) SELECT 'item ' || g, g FROM generate_series(1, 100) g`,
        `CREATE FUNCTION add_item(text) RETURNS int LANGUAGE sql VOLATILE AS $$ INSERT INTO items (name) VALUES ($1) RETURNING id $$`,
        `GRANT ALL ON SCHEMA public TO ${roles.join(", ")}`,
        `GRANT ALL ON ALL TABLES IN SCHEMA public TO ${roles.join(", ")}`,
        `GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ${roles.join(", ")}`,
      ].join(";\n"),
      name,
    );
  };
  await createDatabase("app");
  await createDatabase("other");
  const caFile = join(certs, "ca.crt");
  return {
    host: "127.0.0.1",
    untrustedHost: "127.0.0.2",
    port: pg.port,
    caFile,
    caPem: readFileSync(caFile, "utf8"),
    otherCaFile: join(certs, "otherca.crt"),
    users,
    database: "app",
    otherDatabase: "other",
    admin,
    createDatabase,
    connectUrl(kind, opts = {}) {
      const u = users[kind];
      const q = new URLSearchParams({ sslmode: opts.sslmode ?? "require" });
      if (opts.sslmode !== "disable") q.set("sslrootcert", caFile);
      return `postgresql://${u.name}:${encodeURIComponent(u.password)}@${opts.host ?? "127.0.0.1"}:${pg.port}/${opts.database ?? "app"}?${q}`;
    },
    clientConfig(kind, opts = {}) {
      const u = users[kind];
      const mode = opts.sslmode ?? "require";
      const host = opts.host ?? "127.0.0.1";
      return {
        host,
        port: pg.port,
        user: u.name,
        password: u.password,
        database: opts.database ?? "app",
        ssl: mode === "disable" ? false : { ca: readFileSync(caFile, "utf8"), rejectUnauthorized: mode !== "require", ...(mode === "verify-ca" ? { checkServerIdentity: () => undefined } : {}) },
      };
    },
    logFile: join(pg.dir, "log"),
    dataDir: join(pg.dir, "data"),
    stop: pg.stop,
    start: pg.start,
  };
}

let shared: Promise<DatabaseServer> | null = null;

/** The test process's shared server, started on first use. */
export function databaseServer(): Promise<DatabaseServer> {
  shared ??= startDatabaseServer();
  return shared;
}
