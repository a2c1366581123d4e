// vault-db:// database secrets through the real broker (docs/vault.md#database-leases): a real credgate
// process whose database secret names a role of Vault's database secrets engine, played by the fake Vault
// (test/support/fakeVault.ts) reached over TLS through credgate's egress path (CREDGATE_RESOLVE pins vault.test,
// CREDGATE_UPSTREAM_CA_FILE trusts its CA). The fake's engine really creates a PostgreSQL role per lease in the
// test's server and really drops it on revocation. Agents connect with psql and node pg and their token; the
// upstream login is the lease's fresh role: one lease for ten concurrent first connections, renewed at half its
// TTL, revoked when the secret is deleted or points at another role, and when credgate stops (SIGTERM, with two
// gateway workers); Vault unavailable → the broker's refusal naming the secret.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startBroker, DB_TEST_HOSTS, type Broker } from "../support/databaseBroker.ts";
import { pgClient, pgConnectError, pgQueryError, psql } from "../support/databaseClients.ts";
import { databaseServer, type DatabaseServer } from "../support/databaseServer.ts";
import { startFakeVault, type FakeLease, type FakeVault } from "../support/fakeVault.ts";
import { eventually, resolveEntries, untilTrue } from "../support/gateway.ts";
import { makePki, type TestPki } from "../support/upstream.ts";
import { tempDir } from "../support/tmp.ts";
import { freshDatabase, TEST_MASTER_KEY, testEngine } from "../support/postgres.ts";
import { startCredgate } from "../support/process.ts";
import { freePort } from "../support/ports.ts";

const VAULT_HOST = "vault.test";

let db: DatabaseServer;
let pki: TestPki;
let fake: FakeVault;
let broker: Broker;
let env: Record<string, string>;

beforeAll(async () => {
  db = await databaseServer();
  pki = makePki([VAULT_HOST]);
  fake = await startFakeVault({
    names: [VAULT_HOST],
    pki,
    database: {
      mount: "database",
      server: db,
      roles: {
        app: { ttlSeconds: 300, maxTtlSeconds: 3600 },
        burst: { ttlSeconds: 300, maxTtlSeconds: 3600 },
        other: { ttlSeconds: 300, maxTtlSeconds: 3600 },
        short: { ttlSeconds: 4, maxTtlSeconds: 3600 },
        capped: { ttlSeconds: 4, maxTtlSeconds: 6 },
        stop: { ttlSeconds: 300, maxTtlSeconds: 3600 },
      },
    },
  });
  // One CA file for both upstreams credgate verifies: the database server's and the fake Vault's.
  const caFile = join(tempDir(), "upstream-cas.pem");
  writeFileSync(caFile, readFileSync(db.caFile, "utf8") + readFileSync(pki.caFile, "utf8"));
  env = {
    CREDGATE_UPSTREAM_CA_FILE: caFile,
    CREDGATE_RESOLVE: `${DB_TEST_HOSTS.map((h) => `${h}:${db.port}:127.0.0.1`).join(",")},${resolveEntries([VAULT_HOST], fake.port)}`,
    CREDGATE_VAULT_ADDR: `https://${VAULT_HOST}:${fake.port}`,
    CREDGATE_VAULT_TOKEN: fake.rootToken,
  };
  broker = await startBroker({ db, env });
}, 60_000);

afterAll(async () => {
  await broker?.stop();
  await fake?.stop();
});

/** A project database secret whose user and password come from a lease of `role`. */
async function leasedSecret(on: Broker, name: string, role: string): Promise<string> {
  const res = await on.cg.api("POST", "/v1/secrets", {
    body: {
      name,
      type: "generic",
      valueSource: "vault",
      storeRef: `vault-db://database/${role}`,
      hostPattern: db.host,
      injectionConfig: { database: { engine: "postgresql", port: db.port } },
    },
  });
  if (res.status !== 201) throw new Error(`leased secret ${name}: ${res.status} ${res.text}`);
  return res.body.id as string;
}

const leasesOf = (role: string): FakeLease[] => fake.leases.filter((l) => l.role === role);

describe("vault-db:// leases", () => {
  test("psql through the broker logs in upstream as a fresh leased role, which exists while leased; the password is never shown", async () => {
    await leasedSecret(broker, "leased", "app");
    const r = await psql(broker.url("leased"), "SELECT current_user, (SELECT count(*) FROM items) > 0");
    expect(r.stderr).toBe("");
    const [user, readable] = r.stdout.trim().split("|");
    expect(user).toStartWith("v-approle-app-");
    expect(readable).toBe("t");
    expect(leasesOf("app").map((l) => l.username)).toEqual([user!]);
    expect(await fake.roleExists(user!)).toBe(true);
    // The lease was taken with credgate's token, with Vault's request header.
    const creds = fake.callsTo("/v1/database/creds/app", "GET");
    expect(creds.length).toBe(1);
    expect(creds[0]!.vaultRequest).toBe("true");
    // A second connection reuses the lease.
    const again = await psql(broker.url("leased"), "SELECT current_user");
    expect(again.stdout.trim()).toBe(user!);
    expect(leasesOf("app").length).toBe(1);
    expect(broker.cg.output()).toContain(user!);
    expect(broker.cg.output()).not.toContain(leasesOf("app")[0]!.password);
  });

  test("the leak guard knows the leased password: a statement carrying it is refused, the session goes on", async () => {
    await leasedSecret(broker, "guarded", "app");
    const client = await pgClient(broker.pgConfig("guarded"));
    try {
      const user = (await client.query("SELECT current_user AS u")).rows[0].u as string;
      const password = fake.leases.find((l) => l.username === user)!.password;
      const refused = await pgQueryError(client, `SELECT '${password}'`);
      expect(refused).toEqual({ code: "42501", message: "credgate: the statement carries a credgate secret" });
      expect((await client.query("SELECT 1 AS one")).rows[0].one).toBe(1);
    } finally {
      await client.end();
    }
  });

  test("ten concurrent first connections (node pg) take one lease", async () => {
    await leasedSecret(broker, "burst", "burst");
    const clients = await Promise.all(Array.from({ length: 10 }, () => pgClient(broker.pgConfig("burst"))));
    try {
      const users = await Promise.all(clients.map(async (c) => (await c.query("SELECT current_user AS u")).rows[0].u as string));
      expect(new Set(users).size).toBe(1);
      expect(leasesOf("burst").length).toBe(1);
      expect(fake.callsTo("/v1/database/creds/burst").length).toBe(1);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  test("renewed at half its TTL (4 s lease): the role outlives its first TTL, same user, VALID UNTIL moved", async () => {
    await leasedSecret(broker, "short", "short");
    const first = await psql(broker.url("short"), "SELECT current_user");
    const user = first.stdout.trim();
    const lease = leasesOf("short")[0]!;
    const issuedUntil = lease.issuedAt + 4000;
    await untilTrue(() => lease.renewals >= 2, 15_000);
    expect(fake.callsTo("/v1/sys/leases/renew", "PUT").length).toBeGreaterThanOrEqual(2);
    expect(Date.now()).toBeGreaterThan(issuedUntil);
    expect(lease.revoked).toBe(false);
    const [row] = await db.admin<{ until: Date }>(`SELECT rolvaliduntil AS until FROM pg_roles WHERE rolname = '${user}'`, "postgres");
    expect(new Date(row!.until).getTime()).toBeGreaterThan(issuedUntil);
    const later = await psql(broker.url("short"), "SELECT current_user");
    expect(later.stdout.trim()).toBe(user);
    expect(leasesOf("short").length).toBe(1);
  });

  test("a lease whose max TTL nears is replaced on the next connection", async () => {
    await leasedSecret(broker, "capped", "capped");
    const first = (await psql(broker.url("capped"), "SELECT current_user")).stdout.trim();
    // Renewed at 2 s, answered with the 4 s left to its 6 s max TTL... then less: retired.
    await untilTrue(() => leasesOf("capped")[0]!.renewals >= 1 && leasesOf("capped")[0]!.expiresAt - leasesOf("capped")[0]!.issuedAt <= 6000, 10_000);
    const next = await eventually(async () => {
      const u = (await psql(broker.url("capped"), "SELECT current_user")).stdout.trim();
      return u !== first && u.startsWith("v-approle-capped-") ? u : null;
    }, 15_000, 500);
    expect(next).toStartWith("v-approle-capped-");
    expect(next).not.toBe(first);
    expect(leasesOf("capped").length).toBe(2);
  });

  test("the secret pointed at another role: the old lease is revoked (role dropped); new connections use the new role", async () => {
    const id = await leasedSecret(broker, "moving", "app");
    const before = (await psql(broker.url("moving"), "SELECT current_user")).stdout.trim();
    expect(await fake.roleExists(before)).toBe(true);
    const patched = await broker.cg.api("PATCH", `/v1/secrets/${id}`, { body: { storeRef: "vault-db://database/other" } });
    expect(patched.status).toBe(200);
    await untilTrue(async () => !(await fake.roleExists(before)), 10_000);
    const after = await eventually(async () => {
      const u = (await psql(broker.url("moving"), "SELECT current_user")).stdout.trim();
      return u.startsWith("v-approle-other-") ? u : null;
    });
    expect(after).toStartWith("v-approle-other-");
  });

  test("the secret deleted: the lease is revoked, the role dropped and cannot log in; the next connection is refused", async () => {
    const id = await leasedSecret(broker, "doomed", "app");
    const user = (await psql(broker.url("doomed"), "SELECT current_user")).stdout.trim();
    const lease = fake.leases.find((l) => l.username === user)!;
    expect((await broker.cg.api("DELETE", `/v1/secrets/${id}`)).status).toBe(204);
    await untilTrue(async () => lease.revoked && !(await fake.roleExists(user)), 10_000);
    expect(fake.callsTo("/v1/sys/leases/revoke", "PUT").length).toBeGreaterThan(0);
    // The lease's own login is dead at the server.
    const direct = await pgConnectError({ host: db.host, port: db.port, user, password: lease.password, database: db.database, ssl: false });
    expect(direct.code).toBe("28000");
    const refused = await pgConnectError(broker.pgConfig("doomed"));
    expect(refused).toEqual({ code: "28000", message: 'credgate: no database credential "doomed" for this agent' });
  });

  test("Vault sealed: the broker's refusal names the secret and Vault's state", async () => {
    await leasedSecret(broker, "sealed", "app");
    fake.seal();
    try {
      const refused = await pgConnectError(broker.pgConfig("sealed"));
      expect(refused).toEqual({ code: "08006", message: 'credgate: could not connect to the database: no lease from HashiCorp Vault for "sealed": HashiCorp Vault is sealed' });
    } finally {
      fake.unseal();
    }
    const r = await psql(broker.url("sealed"), "SELECT current_user");
    expect(r.stdout.trim()).toStartWith("v-approle-app-");
  });

  test("the test endpoint takes a lease and revokes it at once", async () => {
    const id = await leasedSecret(broker, "tested", "other");
    const before = leasesOf("other").length;
    const tested = await broker.cg.api("POST", `/v1/secrets/${id}/test`);
    expect(tested.status).toBe(200);
    const taken = leasesOf("other").slice(before);
    expect(taken.length).toBe(1);
    // What happened, with the lease's user (no secret); never "a value" of the user name's length, never the password.
    expect(tested.body).toEqual({ ok: true, message: `HashiCorp Vault gave a lease for user ${taken[0]!.username} (database/creds/other); credgate revoked it at once.` });
    expect(taken[0]!.revoked).toBe(true);
    expect(await fake.roleExists(taken[0]!.username)).toBe(false);
    expect(tested.text).not.toContain(taken[0]!.password);
  });

  test("a role Vault does not know: the refusal says what Vault answered, nothing of its body", async () => {
    await leasedSecret(broker, "unknown-role", "nope");
    const refused = await pgConnectError(broker.pgConfig("unknown-role"));
    expect(refused).toEqual({ code: "08006", message: 'credgate: could not connect to the database: no lease from HashiCorp Vault for "unknown-role": HashiCorp Vault answered 400 for database/creds/nope' });
  });
});

describe("vault:// password", () => {
  test("a database secret whose password is a KV v2 field: the broker logs in as its user with it, no lease", async () => {
    fake.putKv("secret", "db/scram", { password: db.users.scram.password });
    const res = await broker.cg.api("POST", "/v1/secrets", {
      body: { name: "kv-password", type: "generic", valueSource: "vault", storeRef: "vault://secret/db/scram#password", hostPattern: db.host, injectionConfig: { database: { engine: "postgresql", port: db.port, user: db.users.scram.name } } },
    });
    expect(res.status).toBe(201);
    const leases = fake.leases.length;
    const r = await psql(broker.url("kv-password"), "SELECT current_user");
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe(db.users.scram.name);
    expect(fake.leases.length).toBe(leases);
    expect(fake.callsTo("/v1/secret/data/db/scram", "GET").length).toBe(1);
  });
});

describe("Vault down", () => {
  test("nothing listens at CREDGATE_VAULT_ADDR: the refusal names the secret and says Vault cannot be reached", async () => {
    const closed = await freePort();
    const own = await startBroker({ db, env: { ...env, CREDGATE_VAULT_ADDR: `https://${VAULT_HOST}:${closed}`, CREDGATE_RESOLVE: `${env.CREDGATE_RESOLVE},${resolveEntries([VAULT_HOST], closed)}` } });
    try {
      await leasedSecret(own, "down", "app");
      const refused = await pgConnectError(own.pgConfig("down"));
      expect(refused).toEqual({ code: "08006", message: `credgate: could not connect to the database: no lease from HashiCorp Vault for "down": HashiCorp Vault at ${VAULT_HOST}:${closed} could not be reached` });
    } finally {
      await own.stop();
    }
  }, 60_000);
});

describe("two instances on one PostgreSQL store", () => {
  // The lease lives in the instance whose broker took it; the delete comes through the other instance's API and
  // reaches it as a change event (LISTEN/NOTIFY): only a shared store has another instance.
  test.skipIf(testEngine() !== "postgres")("a delete through the other instance revokes the lease", async () => {
    const shared = { ...env, CREDGATE_DATABASE_URL: await freshDatabase(), CREDGATE_MASTER_KEY: TEST_MASTER_KEY };
    const [a, b] = await Promise.all([startBroker({ db, env: shared }), startCredgate({ env: shared })]);
    try {
      const id = await leasedSecret(a, "shared", "app");
      const user = (await psql(a.url("shared"), "SELECT current_user")).stdout.trim();
      expect(await fake.roleExists(user)).toBe(true);
      expect((await b.api("DELETE", `/v1/secrets/${id}`)).status).toBe(204);
      await untilTrue(async () => !(await fake.roleExists(user)), 10_000);
      expect(fake.leases.find((l) => l.username === user)!.revoked).toBe(true);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  }, 90_000);
});

describe("stop", () => {
  test("SIGTERM (two gateway workers): the broker's leases are revoked, their roles dropped", async () => {
    const own = await startBroker({ db, env: { ...env, CREDGATE_GATEWAY_WORKERS: "2" } });
    let stopped = false;
    try {
      await leasedSecret(own, "stopping", "stop");
      const user = (await psql(own.url("stopping"), "SELECT current_user")).stdout.trim();
      expect(user).toStartWith("v-approle-stop-");
      expect(await fake.roleExists(user)).toBe(true);
      expect(await own.cg.stop("SIGTERM")).toBe(0);
      stopped = true;
      expect(await fake.roleExists(user)).toBe(false);
      expect(fake.leases.find((l) => l.username === user)!.revoked).toBe(true);
    } finally {
      if (!stopped) await own.stop();
    }
  }, 90_000);
});
