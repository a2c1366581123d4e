// Postgres mode at start and when the change-event connection drops (docs/operations.md#several-instances-on-postgresql, docs/gateway.md#order-of-checks): the master key is
// required; an unreachable database is one clear line; a LISTEN connection that was cut reconnects and
// reloads everything, so a change made while it was down still reaches the gateway.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { curlThroughGateway } from "../support/curl.ts";
import { gatewayCa, resolveEntries, until } from "../support/gateway.ts";
import { startServer, TEST_MASTER_KEY, type PostgresServer } from "../support/postgres.ts";
import { freePort } from "../support/ports.ts";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

let pg: PostgresServer;

beforeAll(async () => {
  pg = await startServer();
}, 30_000);

afterAll(() => pg?.stop());

async function database(name: string): Promise<string> {
  const admin = new SQL(pg.adminUrl);
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.close();
  }
  return pg.urlOf(name);
}

describe("starting in Postgres mode", () => {
  test("without CREDGATE_MASTER_KEY: exit 1 with one line naming it, nothing created", async () => {
    const url = await database("nokey");
    const r = await runCli(["serve", "--data-dir", tempDir(), "--port", String(await freePort()), "--gateway-port", String(await freePort())], { CREDGATE_DATABASE_URL: url, CREDGATE_MASTER_KEY: "" });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("CREDGATE_MASTER_KEY is required with CREDGATE_DATABASE_URL");
    const tables = new SQL(url);
    try {
      expect(await tables.unsafe("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")).toHaveLength(0);
    } finally {
      await tables.close();
    }
  });

  test("a database that cannot be reached: exit 1 with one line naming CREDGATE_DATABASE_URL, no password shown", async () => {
    const port = await freePort();
    const r = await runCli(["serve", "--data-dir", tempDir(), "--port", String(await freePort()), "--gateway-port", String(await freePort())], {
      CREDGATE_DATABASE_URL: `postgres://credgate:hunter2-secret@127.0.0.1:${port}/credgate`,
      CREDGATE_MASTER_KEY: TEST_MASTER_KEY,
    });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain(`cannot reach PostgreSQL at 127.0.0.1:${port} (CREDGATE_DATABASE_URL)`);
    expect(r.stderr + r.stdout).not.toContain("hunter2-secret");
  });

  test("a URL that is not postgres:// → exit 1 with one line", async () => {
    const r = await runCli(["serve", "--data-dir", tempDir()], { CREDGATE_DATABASE_URL: "mysql://x@y/z", CREDGATE_MASTER_KEY: TEST_MASTER_KEY });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe("credgate: CREDGATE_DATABASE_URL must be a postgres:// or postgresql:// URL");
  });
});

describe("the change-event connection drops", () => {
  let cg: RunningCredgate;
  let up: TestUpstream;

  afterAll(async () => {
    await cg?.stop();
    await up?.stop();
  });

  test("a change the instance was never told about is picked up once its LISTEN connection comes back: it reloads everything", async () => {
    const url = await database("listen_drop");
    const pki = makePki(["drop.multi.test"]);
    up = startUpstream(pki);
    cg = await startCredgate({
      env: { CREDGATE_DATABASE_URL: url, CREDGATE_MASTER_KEY: TEST_MASTER_KEY, CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries(["drop.multi.test"], up.port) },
    });
    const caFile = (await gatewayCa(cg)).file;
    // What the upstream received (its echo in the body is redacted by the echo guard, docs/guards.md#echo-guard).
    const injected = async () => {
      const before = up.seen.length;
      await curlThroughGateway(cg, `https://drop.multi.test:${up.port}/`, { caFile });
      return up.seen.slice(before).at(-1)?.headers["x-secret"];
    };
    const created = await cg.api("POST", "/v1/secrets", { body: { name: "Cached", type: "generic", value: "cached-value", hostPattern: "drop.multi.test", injectionConfig: { headerName: "x-secret" } } });
    expect(created.status).toBe(201);
    expect(await injected()).toBe("cached-value");
    // A write no event announces (as if its notification had been lost): the secret moves to another host.
    const sql = new SQL(url);
    try {
      await sql.unsafe("UPDATE secrets SET host_pattern = 'elsewhere.multi.test'");
      expect(await injected()).toBe("cached-value"); // still the view in memory: nothing said it changed
      // The LISTEN connection is cut; when it comes back the instance cannot know what it missed.
      const cut = await sql.unsafe("SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE datname = 'listen_drop' AND query ILIKE 'LISTEN%'");
      expect(cut.length).toBeGreaterThan(0);
    } finally {
      await sql.close();
    }
    await until(() => {
      if (!cg.output().includes("change events reconnected")) throw new Error("not reconnected yet");
    }, 15_000);
    expect(await until(async () => {
      const v = await injected();
      if (v !== undefined) throw new Error(`still ${v}`);
      return v;
    }, 5_000)).toBeUndefined();
  }, 60_000);
});
