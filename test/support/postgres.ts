// A throwaway PostgreSQL server for the Postgres-mode runs of the suites: initdb + pg_ctl from the Debian
// `postgresql` package, in a temp dir, on a free loopback port, started once per test process (as the
// `postgres` user when the tests run as root: PostgreSQL refuses root). Each caller gets a fresh database.
// With CREDGATE_TEST_ENGINE unset (or `sqlite`), `testDatabaseEnv` adds nothing: the embedded store is used.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { PostgresStore } from "../../src/store/postgres.ts";
import { freePort } from "./ports.ts";

/** The master key every Postgres-mode test process uses (required with CREDGATE_DATABASE_URL). */
export const TEST_MASTER_KEY = Buffer.alloc(32, 7).toString("base64");

export function testEngine(): "sqlite" | "postgres" {
  return process.env.CREDGATE_TEST_ENGINE === "postgres" ? "postgres" : "sqlite";
}

/** The path of a PostgreSQL program (`initdb`, `pg_ctl`, `psql`, `pgbench`): on PATH, else the newest Debian install. */
export function pgBinary(name: string): string {
  const onPath = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim();
  if (onPath) return onPath;
  const base = "/usr/lib/postgresql";
  const versions = existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(join(base, v, "bin", name))) return join(base, v, "bin", name);
  throw new Error(`${name} not found: install the Debian postgresql package (.ci/run does)`);
}

export interface PostgresServer {
  port: number;
  /** Superuser URL of the server's `postgres` database. */
  adminUrl: string;
  urlOf(database: string): string;
  stop(): void;
  start(): void;
  /** The server's temp dir (its socket dir; the data dir is `<dir>/data`). */
  dir: string;
}

/** What a caller adds to a new server before its first start (test/support/databaseServer.ts). */
export interface ServerSetup {
  /** Runs after initdb, before the first start, as the test process's user; `owner` is the server's uid/gid when the tests run as root. */
  prepare?(data: string, owner: { uid: number; gid: number } | null): void;
  /** Extra `-c name=value` settings. */
  settings?: Record<string, string>;
}

let server: Promise<PostgresServer> | null = null;

/** Starts (once per process) and returns the shared server. */
export function postgresServer(): Promise<PostgresServer> {
  server ??= startServer();
  return server;
}

/** A new, independent PostgreSQL server (for tests that stop and restart it). */
export async function startServer(setup: ServerSetup = {}): Promise<PostgresServer> {
  const dir = mkdtempSync(join(tmpdir(), "credgate-pg-"));
  const asRoot = userInfo().uid === 0;
  const as = (cmd: string[]) => (asRoot ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd);
  let owner: { uid: number; gid: number } | null = null;
  if (asRoot) {
    const uid = Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout.trim());
    const gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim());
    if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error("the postgres user does not exist: install the Debian postgresql package");
    owner = { uid, gid };
    chownSync(dir, uid, uid);
  }
  chmodSync(dir, 0o700);
  const data = join(dir, "data");
  const run = (cmd: string[]) => {
    const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${cmd.join(" ")} failed: ${r.stderr || r.stdout}`);
  };
  run(as([pgBinary("initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]));
  const port = await freePort();
  const pgCtl = pgBinary("pg_ctl");
  setup.prepare?.(data, owner);
  const settings = Object.entries(setup.settings ?? {})
    .map(([k, v]) => ` -c ${k}=${v}`)
    .join("");
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300${settings}`;
  const start = () => run(as([pgCtl, "-D", data, "-o", options, "-l", join(dir, "log"), "-w", "-t", "30", "start"]));
  const stop = () => {
    spawnSync(as([pgCtl, "-D", data, "-m", "immediate", "-w", "stop"])[0]!, as([pgCtl, "-D", data, "-m", "immediate", "-w", "stop"]).slice(1));
  };
  start();
  process.on("exit", () => {
    stop();
    rmSync(dir, { recursive: true, force: true });
  });
  // A test process that is killed runs no exit handler: a watcher stops the server once its creator is gone.
  const stopCmd = as([pgCtl, "-D", data, "-m", "immediate", "-w", "stop"]).map((a) => `'${a}'`).join(" ");
  const watcher = Bun.spawn(["sh", "-c", `while kill -0 ${process.pid} 2>/dev/null; do sleep 2; done; ${stopCmd} >/dev/null 2>&1; rm -rf '${dir}'`], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "ignore",
  });
  watcher.unref();
  const urlOf = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return { port, adminUrl: urlOf("postgres"), urlOf, stop, start, dir };
}

let databases = 0;
let template: Promise<string> | null = null;

/**
 * A database migrated once per server, that every fresh database is copied from: migrating each test's database
 * anew cost more than the copy. credgate's own start then finds every migration applied.
 */
function migratedTemplate(pg: PostgresServer): Promise<string> {
  template ??= (async () => {
    const name = "credgate_template";
    const admin = new SQL(pg.adminUrl);
    try {
      await admin.unsafe(`CREATE DATABASE "${name}"`);
    } finally {
      await admin.close();
    }
    // Opening the store applies the migrations; closing it leaves no session that would block the copies.
    await (await PostgresStore.open(pg.urlOf(name))).close();
    return name;
  })();
  return template;
}

/** A fresh database on the shared server, with credgate's schema migrated and no rows; its URL. */
export async function freshDatabase(): Promise<string> {
  const pg = await postgresServer();
  const from = await migratedTemplate(pg);
  const name = `t${process.pid}_${++databases}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new SQL(pg.adminUrl);
  try {
    await admin.unsafe(`CREATE DATABASE "${name}" TEMPLATE "${from}"`);
  } finally {
    await admin.close();
  }
  return pg.urlOf(name);
}

/** The environment that points a credgate (in-process or a real process) at its own store for this engine. */
export async function testDatabaseEnv(): Promise<Record<string, string>> {
  if (testEngine() !== "postgres") return {};
  return { CREDGATE_DATABASE_URL: await freshDatabase(), CREDGATE_MASTER_KEY: TEST_MASTER_KEY };
}
