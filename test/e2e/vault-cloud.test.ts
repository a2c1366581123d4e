// HashiCorp Vault on a cloud instance (docs/secret-stores.md#cloud-mode): credgate's one Vault token is the
// operator's and serves every organization, so each organization reads only under its own prefix. A real credgate
// process in cloud mode reads the fake Vault (test/support/fakeVault.ts) over TLS through the egress path; its
// database secrets engine really creates and drops PostgreSQL roles in the test's server (as in
// vault-database.test.ts).
//   - Read time: a secret whose storeRef was repointed (straight in the store, as a row written before the rule) at
//     another organization's Vault path → 502 credential_unavailable naming it; Vault is never asked for that path,
//     the upstream receives nothing, and the test endpoint refuses it too.
//   - Deleting a whole project, or a whole organization (a partner's, through the partner API), revokes the Vault
//     database leases its secrets held: the cascade deletes them without per-secret API calls.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { startBroker, type Broker } from "../support/databaseBroker.ts";
import { pgConnectError, psql } from "../support/databaseClients.ts";
import { databaseServer, type DatabaseServer } from "../support/databaseServer.ts";
import { curlThroughGateway } from "../support/curl.ts";
import { startFakeVault, type FakeVault } from "../support/fakeVault.ts";
import { eventually, gatewayCa, resolveEntries, untilTrue } from "../support/gateway.ts";
import { runCli } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.tenant.test";
const VAULT_HOST = "vault.test";
const VICTIM = "zyxwvutsrqponmlk";
const OWN_VALUE = `sk_own_${crypto.randomUUID().replace(/-/g, "")}`;
const VICTIM_VALUE = `sk_victim_${crypto.randomUUID().replace(/-/g, "")}`;
const ROLE = { ttlSeconds: 300, maxTtlSeconds: 3600 };

let db: DatabaseServer;
let pki: TestPki;
let up: TestUpstream;
let fake: FakeVault;
let broker: Broker;
let caFile: string;
/** The fake Vault's database roles: a test adds its organization's (`<org id>-<role>`) once it knows the id. */
const roles: Record<string, typeof ROLE> = {};

beforeAll(async () => {
  db = await databaseServer();
  pki = makePki([VAULT_HOST, HOST]);
  up = startUpstream(pki);
  fake = await startFakeVault({ names: [VAULT_HOST], pki, database: { mount: "database", server: db, roles } });
  const cas = join(tempDir(), "upstream-cas.pem");
  writeFileSync(cas, readFileSync(db.caFile, "utf8") + readFileSync(pki.caFile, "utf8"));
  broker = await startBroker({
    db,
    env: {
      CREDGATE_MODE: "cloud",
      CREDGATE_EGRESS_ALLOW: "127.0.0.1/32",
      CREDGATE_UPSTREAM_CA_FILE: cas,
      CREDGATE_RESOLVE: `${resolveEntries([VAULT_HOST], fake.port)},${resolveEntries([HOST], up.port)}`,
      CREDGATE_VAULT_ADDR: `https://${VAULT_HOST}:${fake.port}`,
      CREDGATE_VAULT_TOKEN: fake.rootToken,
    },
  });
  caFile = (await gatewayCa(broker.cg)).file;
}, 60_000);

afterAll(async () => {
  await broker?.stop();
  await fake?.stop();
  await up?.stop();
});

const api = (key: string) => (method: string, path: string, body?: unknown) => broker.cg.api(method, path, { key, body });

/** A database secret of the project behind `key` whose user and password come from a lease of `role`. */
async function leasedSecret(key: string, name: string, role: string): Promise<string> {
  const r = await api(key)("POST", "/v1/secrets", {
    name,
    type: "generic",
    valueSource: "vault",
    storeRef: `vault-db://database/${role}`,
    hostPattern: db.host,
    injectionConfig: { database: { engine: "postgresql", port: db.port } },
  });
  if (r.status !== 201) throw new Error(`leased secret ${name}: ${r.status} ${r.text}`);
  return r.body.id as string;
}

/** A new agent of the project behind `key`, and its token. */
async function agentOf(key: string, name: string): Promise<string> {
  const created = await api(key)("POST", "/v1/agents", { name, identifier: name, mode: "all" });
  if (created.status !== 201) throw new Error(`agent: ${created.status} ${created.text}`);
  return (await api(key)("GET", "/v1/agents")).body.find((a: { id: string }) => a.id === created.body.id).accessToken as string;
}

/** The user a psql session through the broker logs in upstream as (a fresh leased role). */
async function leasedUser(secret: string, token: string): Promise<string> {
  const r = await psql(broker.url(secret, { token }), "SELECT current_user");
  expect(r.stderr).toBe("");
  return r.stdout.trim();
}

describe("read time: a reference outside the organization's prefix is never read", () => {
  test("a row repointed at another organization's Vault path → 502 credential_unavailable, Vault not asked, nothing forwarded; the test endpoint refuses it", async () => {
    const org = broker.cg.keys.organizationId;
    fake.putKv("secret", `${org}/stripe`, { key: OWN_VALUE });
    fake.putKv("secret", `${VICTIM}/stripe`, { key: VICTIM_VALUE });
    const created = await broker.cg.api("POST", "/v1/secrets", {
      body: { name: "stripe", type: "generic", valueSource: "vault", storeRef: `vault://secret/${org}/stripe#key`, hostPattern: HOST, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
    });
    expect(created.status).toBe(201);
    const own = await curlThroughGateway(broker.cg, `https://${HOST}:${up.port}/own`, { caFile });
    expect(own.status).toBe(200);
    expect(up.seen.find((s) => s.url === "/own")!.headers.authorization).toBe(`Bearer ${OWN_VALUE}`);

    // As a row written before the rule: the store itself is changed, then a rename (which does not touch the
    // reference, so it is not checked again) announces the secret, and the gateway rebuilds its view.
    const id = created.body.id as string;
    await queryStore(broker.cg, sql`UPDATE secrets SET store_ref = ${`vault://secret/${VICTIM}/stripe#key`} WHERE id = ${id}`, true);
    expect((await broker.cg.api("PATCH", `/v1/secrets/${id}`, { body: { name: "stripe2" } })).status).toBe(200);
    const refused = await eventually(async () => {
      const r = await curlThroughGateway(broker.cg, `https://${HOST}:${up.port}/victim`, { caFile });
      return r.status === 502 ? r : null;
    }, 10_000, 200);
    expect(refused?.json).toMatchObject({ error: "credential_unavailable", secret_name: "stripe2" });
    expect(refused!.text).not.toContain(VICTIM_VALUE);
    const again = await curlThroughGateway(broker.cg, `https://${HOST}:${up.port}/again`, { caFile });
    expect(again.status).toBe(502);
    expect(up.seen.filter((s) => s.url === "/victim" || s.url === "/again")).toEqual([]);
    expect(JSON.stringify(up.seen)).not.toContain(VICTIM_VALUE);
    expect(fake.callsTo(`/v1/secret/data/${VICTIM}/stripe`).length).toBe(0);

    const tested = await broker.cg.api("POST", `/v1/secrets/${id}/test`);
    expect(tested.body).toEqual({ ok: false, message: `In cloud mode a storeRef must name a secret under this organization's prefix "${org}"` });
    expect(fake.callsTo(`/v1/secret/data/${VICTIM}/stripe`).length).toBe(0);
    expect(broker.cg.output()).toContain("secret store reference outside the organization's prefix: not read");
    expect(broker.cg.output()).not.toContain(VICTIM_VALUE);
  }, 60_000);
});

describe("deleting a whole project or organization revokes its Vault database leases", () => {
  test("a project deleted (DELETE /v1/projects/{id}): its secret's lease is revoked, the role dropped", async () => {
    const org = broker.cg.keys.organizationId;
    roles[`${org}-reports`] = ROLE;
    const made = await broker.cg.api("POST", "/v1/projects", { key: broker.cg.keys.orgApiKey, body: { name: "Doomed project" } });
    expect(made.status).toBe(201);
    const key = made.body.apiKey as string;
    await leasedSecret(key, "reports", `${org}-reports`);
    const user = await leasedUser("reports", await agentOf(key, "reporter"));
    expect(user).toStartWith(`v-approle-${org}-reports-`.slice(0, 63));
    expect(await fake.roleExists(user)).toBe(true);
    const lease = fake.leases.find((l) => l.username === user)!;

    expect((await broker.cg.api("DELETE", `/v1/projects/${made.body.id}`, { key: broker.cg.keys.orgApiKey })).status).toBe(204);
    await untilTrue(async () => lease.revoked && !(await fake.roleExists(user)), 10_000);
    const direct = await pgConnectError({ host: db.host, port: db.port, user, password: lease.password, database: db.database, ssl: false });
    expect(direct.code).toBe("28000");
  }, 60_000);

  test("an organization deleted by its partner (DELETE /v1/partner/orgs/{id}): its project's and its own secrets' leases are revoked", async () => {
    const cli = await runCli(["partner", "create", "--name", "Lease Partner", "--owner-email", "owner@lease-partner.test", "--data-dir", broker.cg.dataDir, "--json"], {
      ...broker.cg.env,
      CREDGATE_PUBLIC_URL: `http://localhost:${broker.cg.apiPort}`,
    });
    expect(cli.code).toBe(0);
    const partner = api(JSON.parse(cli.stdout).partnerKey as string);
    const made = (await partner("POST", "/v1/partner/orgs", { name: "Leasing customer" })).body;
    const org = made.organizationId as string;
    roles[`${org}-app`] = ROLE;
    roles[`${org}-shared`] = ROLE;
    await leasedSecret(made.projectApiKey, "app", `${org}-app`);
    // An organization secret, used by the organization's project's agent.
    const shared = await api(made.orgApiKey)("POST", "/v1/org/secrets", {
      name: "shared",
      type: "generic",
      valueSource: "vault",
      storeRef: `vault-db://database/${org}-shared`,
      hostPattern: db.host,
      injectionConfig: { database: { engine: "postgresql", port: db.port } },
    });
    expect(shared.status).toBe(201);
    const token = await agentOf(made.projectApiKey, "leaser");
    const users = [await leasedUser("app", token), await leasedUser("shared", token)];
    for (const user of users) expect(await fake.roleExists(user)).toBe(true);
    const leases = users.map((u) => fake.leases.find((l) => l.username === u)!);

    expect((await partner("DELETE", `/v1/partner/orgs/${org}`)).status).toBe(204);
    await untilTrue(async () => leases.every((l) => l.revoked) && !(await fake.roleExists(users[0]!)) && !(await fake.roleExists(users[1]!)), 10_000);
  }, 60_000);
});
