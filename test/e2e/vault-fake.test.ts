// The fake Vault (test/support/fakeVault.ts) checked against the official client, node-vault: KV v2 reads, AppRole
// login, token renew-self, database creds, lease renew and revoke give node-vault the answers Vault's API
// documents, and credgate's own client (src/vault/stores/hashicorp.ts) reads the same values from it. The database
// engine's leases are real roles of the test PostgreSQL: one logs in while leased and not once revoked.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { Agent } from "node:https";
import { SQL } from "bun";
import nodeVault from "node-vault";
import { parseStoreRef, type StoreRef } from "../../src/core/storeRefs.ts";
import { hashicorpStoreFrom, type HashicorpVault } from "../../src/vault/stores/hashicorp.ts";
import { StoreError } from "../../src/vault/stores/types.ts";
import { databaseServer, type DatabaseServer } from "../support/databaseServer.ts";
import { startFakeVault, type FakeVault } from "../support/fakeVault.ts";
import { loadConfig } from "../../src/runtime/config.ts";
import { untilTrue } from "../support/gateway.ts";

let fake: FakeVault;
let db: DatabaseServer;
let ca: string;
const approle = { roleId: "role-123", secretId: "secret-456", ttlSeconds: 60, maxTtlSeconds: 600 };

beforeAll(async () => {
  db = await databaseServer();
  fake = await startFakeVault({ names: ["127.0.0.1"], approle, database: { mount: "database", server: db, roles: { app: { ttlSeconds: 60, maxTtlSeconds: 120 } } } });
  ca = readFileSync(fake.pki.caFile, "utf8");
  fake.putKv("secret", "team/app", { token: "kv-value-abc123", count: 3 });
  fake.putKv("secret", "odd/na?me%41", { token: "odd-value" });
});
afterAll(async () => {
  await fake?.stop();
});

const official = (token?: string) =>
  nodeVault({ apiVersion: "v1", endpoint: `https://127.0.0.1:${fake.port}`, ...(token ? { token } : {}), requestOptions: { httpsAgent: new Agent({ ca }) } } as any);

function credgateStore(env: Record<string, string>): HashicorpVault {
  const config = loadConfig({}, { CREDGATE_VAULT_ADDR: `https://127.0.0.1:${fake.port}`, ...env });
  const store = hashicorpStoreFrom({ config, fetch: (url, init) => fetch(url, { ...init, tls: { ca } } as RequestInit), now: Date.now });
  if (!store) throw new Error("store not configured");
  return store;
}
const ref = (text: string) => parseStoreRef(text) as StoreRef;
const signal = () => AbortSignal.timeout(10_000);
async function failure(p: Promise<unknown>): Promise<StoreError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof StoreError) return err;
    throw err;
  }
  throw new Error("expected a StoreError");
}

describe("KV version 2", () => {
  test("node-vault and credgate read the same value", async () => {
    const answer = await official(fake.rootToken).read("secret/data/team/app");
    expect(answer.data.data.token).toBe("kv-value-abc123");
    expect(answer.data.metadata.version).toBe(1);
    const store = credgateStore({ CREDGATE_VAULT_TOKEN: fake.rootToken });
    expect(await store.read(ref("vault://secret/team/app#token"), signal())).toBe("kv-value-abc123");
    expect(fake.calls.at(-1)!.vaultRequest).toBe("true");
    // Names are literal: `?` and `%` are part of the path, sent percent-encoded as node-vault's URL would need them.
    expect(await store.read(ref("vault://secret/odd/na?me%41#token"), signal())).toBe("odd-value");
  });

  test("missing secret, missing field, non-string field, KV v1 mount: clear reasons, no value", async () => {
    await expect(official(fake.rootToken).read("secret/data/nope")).rejects.toMatchObject({ response: { statusCode: 404 } });
    const store = credgateStore({ CREDGATE_VAULT_TOKEN: fake.rootToken });
    const missing = await failure(store.read(ref("vault://secret/nope#token"), signal()));
    expect(missing.reason).toBe("not_found");
    expect(missing.message).toBe("HashiCorp Vault has no secret at secret/nope (the mount must be a KV version 2 engine)");
    const field = await failure(store.read(ref("vault://secret/team/app#other"), signal()));
    expect([field.reason, field.message]).toEqual(["field_missing", 'the secret at secret/team/app has no field "other"']);
    const number = await failure(store.read(ref("vault://secret/team/app#count"), signal()));
    expect([number.reason, number.message]).toEqual(["not_a_string", 'the field "count" of secret/team/app is not a string']);
    expect((await failure(store.read(ref("vault://kv1/team/app#token"), signal()))).reason).toBe("not_found");
  });

  test("a token without access: 403 permission denied for both clients", async () => {
    const limited = fake.addToken({ paths: ["secret/data/other/"] });
    await expect(official(limited).read("secret/data/team/app")).rejects.toMatchObject({ response: { statusCode: 403 } });
    const err = await failure(credgateStore({ CREDGATE_VAULT_TOKEN: limited }).read(ref("vault://secret/team/app#token"), signal()));
    expect(err.reason).toBe("permission_denied");
    expect(err.message).toBe("HashiCorp Vault denied credgate's token access to secret/team/app (permission denied)");
    expect(err.message).not.toContain(limited);
  });

  test("sealed: 503 for both clients; credgate says sealed", async () => {
    fake.seal();
    try {
      await expect(official(fake.rootToken).read("secret/data/team/app")).rejects.toMatchObject({ response: { statusCode: 503 } });
      const err = await failure(credgateStore({ CREDGATE_VAULT_TOKEN: fake.rootToken }).read(ref("vault://secret/team/app#token"), signal()));
      expect([err.reason, err.message]).toEqual(["sealed", "HashiCorp Vault is sealed"]);
    } finally {
      fake.unseal();
    }
  });

  test("a Vault that does not answer: timeout, when the caller's signal gives up", async () => {
    fake.hang(true);
    try {
      const err = await failure(credgateStore({ CREDGATE_VAULT_TOKEN: fake.rootToken }).read(ref("vault://secret/team/app#token"), AbortSignal.timeout(300)));
      expect([err.reason, err.message]).toEqual(["timeout", "HashiCorp Vault at 127.0.0.1:" + fake.port + " did not answer in time"]);
    } finally {
      fake.hang(false);
    }
  });

  test("unreachable: a clear reason", async () => {
    const config = loadConfig({}, { CREDGATE_VAULT_ADDR: "https://127.0.0.1:1", CREDGATE_VAULT_TOKEN: "t" });
    const store = hashicorpStoreFrom({ config, fetch: (url, init) => fetch(url, init), now: Date.now })!;
    const err = await failure(store.read(ref("vault://secret/team/app#token"), signal()));
    expect(err.reason).toBe("unreachable");
    expect(err.message).toStartWith("HashiCorp Vault at 127.0.0.1:1 could not be reached");
  });
});

describe("AppRole and renew-self", () => {
  test("node-vault's approleLogin and tokenRenewSelf get Vault's answers", async () => {
    const client = official();
    const login = await client.approleLogin({ role_id: approle.roleId, secret_id: approle.secretId });
    expect(login.auth.lease_duration).toBe(60);
    expect(login.auth.renewable).toBe(true);
    client.token = login.auth.client_token;
    expect((await client.read("secret/data/team/app")).data.data.token).toBe("kv-value-abc123");
    const renewed = await client.tokenRenewSelf();
    expect(renewed.auth.lease_duration).toBe(60);
    await expect(official().approleLogin({ role_id: approle.roleId, secret_id: "wrong" })).rejects.toMatchObject({ response: { statusCode: 400 } });
  });

  test("credgate logs in once for concurrent reads; a wrong secret id is a clear login failure", async () => {
    const before = fake.callsTo("/v1/auth/approle/login").length;
    const store = credgateStore({ CREDGATE_VAULT_ROLE_ID: approle.roleId, CREDGATE_VAULT_SECRET_ID: approle.secretId });
    const values = await Promise.all(Array.from({ length: 10 }, () => store.read(ref("vault://secret/team/app#token"), signal())));
    expect(new Set(values)).toEqual(new Set(["kv-value-abc123"]));
    expect(fake.callsTo("/v1/auth/approle/login").length - before).toBe(1);
    await store.close();
    const wrong = credgateStore({ CREDGATE_VAULT_ROLE_ID: approle.roleId, CREDGATE_VAULT_SECRET_ID: "nope" });
    const err = await failure(wrong.read(ref("vault://secret/team/app#token"), signal()));
    expect(err.reason).toBe("login_failed");
    expect(err.message).not.toContain("nope");
  });
});

describe("credgate's AppRole token over time", () => {
  test("renewed at half its TTL; near its max TTL a new login follows; a revoked token's failed renewal logs in again", async () => {
    const own = await startFakeVault({ names: ["127.0.0.1"], approle: { roleId: "r", secretId: "s", ttlSeconds: 2, maxTtlSeconds: 3 } });
    try {
      own.putKv("secret", "a", { v: "value-a" });
      const config = loadConfig({}, { CREDGATE_VAULT_ADDR: `https://127.0.0.1:${own.port}`, CREDGATE_VAULT_ROLE_ID: "r", CREDGATE_VAULT_SECRET_ID: "s" });
      const ownCa = readFileSync(own.pki.caFile, "utf8");
      const store = hashicorpStoreFrom({ config, fetch: (url, init) => fetch(url, { ...init, tls: { ca: ownCa } } as RequestInit), now: Date.now })!;
      const logins = () => own.callsTo("/v1/auth/approle/login").length;
      const renewals = () => own.callsTo("/v1/auth/token/renew-self").length;
      expect(await store.read(ref("vault://secret/a#v"), signal())).toBe("value-a");
      expect(logins()).toBe(1);
      // 2 s TTL, 3 s max: renewed at 1 s (2 s granted, capped at the max: 2 s left), then at 2 s only 1 s is left: a new login.
      await untilTrue(() => renewals() >= 1, 5_000);
      await untilTrue(() => logins() === 2, 8_000);
      expect(await store.read(ref("vault://secret/a#v"), signal())).toBe("value-a");
      // Every token revoked: the next renewal fails (403), and credgate logs in again instead of reading with a dead token.
      own.revokeTokens();
      const before = logins();
      await untilTrue(() => logins() > before, 8_000);
      expect(own.calls.some((c) => c.path === "/v1/auth/token/renew-self" && c.status === 403)).toBe(true);
      expect(await store.read(ref("vault://secret/a#v"), signal())).toBe("value-a");
      await store.close();
    } finally {
      await own.stop();
    }
  }, 30_000);
});

describe("database secrets engine", () => {
  test("node-vault reads creds, renews and revokes; the role is real, then gone", async () => {
    const client = official(fake.rootToken);
    const creds = await client.read("database/creds/app");
    expect(creds.lease_id).toStartWith("database/creds/app/");
    expect(creds.renewable).toBe(true);
    expect(creds.lease_duration).toBe(60);
    const { username, password } = creds.data;
    expect(await fake.roleExists(username)).toBe(true);
    const login = new SQL({ url: `postgresql://${encodeURIComponent(username)}:${encodeURIComponent(password)}@127.0.0.1:${db.port}/app`, max: 1, tls: false });
    expect((await login`SELECT count(*)::int AS n FROM items`)[0].n).toBeGreaterThan(0);
    await login.close();
    const renewed = await client.write("sys/leases/renew", { lease_id: creds.lease_id, increment: 60 });
    expect(renewed.lease_duration).toBe(60);
    await client.revoke({ lease_id: creds.lease_id });
    expect(await fake.roleExists(username)).toBe(false);
    const again = new SQL({ url: `postgresql://${encodeURIComponent(username)}:${encodeURIComponent(password)}@127.0.0.1:${db.port}/app`, max: 1, tls: false, connectionTimeout: 5 });
    await expect(again`SELECT 1`).rejects.toThrow();
    await again.close().catch(() => {});
  });

  test("credgate's leases: 10 concurrent first uses take one lease; revoked at close", async () => {
    const store = credgateStore({ CREDGATE_VAULT_TOKEN: fake.rootToken });
    const before = fake.leases.length;
    const logins = await Promise.all(Array.from({ length: 10 }, () => store.leases.login("sec_1", "vault-db://database/app", { mount: "database", role: "app" })));
    expect(new Set(logins.map((l) => l.user)).size).toBe(1);
    expect(fake.leases.length - before).toBe(1);
    expect(await fake.roleExists(logins[0]!.user)).toBe(true);
    await store.close();
    expect(await fake.roleExists(logins[0]!.user)).toBe(false);
  });

  test("a released secret's lease is revoked, another's kept; a new reference replaces the lease; an unknown role is a clear failure", async () => {
    const store = credgateStore({ CREDGATE_VAULT_TOKEN: fake.rootToken });
    const { user } = await store.leases.login("sec_2", "vault-db://database/app", { mount: "database", role: "app" });
    const kept = await store.leases.login("sec_4", "vault-db://database/app", { mount: "database", role: "app" });
    await store.leases.release("sec_2", "the secret was deleted");
    expect(await fake.roleExists(user)).toBe(false);
    expect(await fake.roleExists(kept.user)).toBe(true);
    // The same secret with another reference: the old lease goes at once.
    const moved = await store.leases.login("sec_4", "vault-db://database/app#moved", { mount: "database", role: "app" });
    expect(moved.user).not.toBe(kept.user);
    expect(await fake.roleExists(kept.user)).toBe(false);
    // Released while Vault was answering: the new lease is given back at once, the connection refused.
    fake.hang(true);
    const racing = failure(store.leases.login("sec_5", "vault-db://database/app", { mount: "database", role: "app" }));
    await untilTrue(() => fake.calls.some((c) => c.path === "/v1/database/creds/app" && c.status === 0));
    await store.leases.release("sec_5", "the secret was deleted");
    const before = fake.leases.length;
    fake.hang(false);
    expect((await racing).reason).toBe("released");
    expect(fake.leases.length).toBe(before + 1);
    expect(fake.leases.at(-1)!.revoked).toBe(true);
    expect(await fake.roleExists(fake.leases.at(-1)!.username)).toBe(false);
    const err = await failure(store.leases.login("sec_3", "vault-db://database/nope", { mount: "database", role: "nope" }));
    expect(err.message).toBe("HashiCorp Vault answered 400 for database/creds/nope");
    await store.close();
  });
});
