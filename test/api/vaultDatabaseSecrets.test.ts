// A database secret whose password is a Vault database lease (docs/vault.md#database-leases): with a
// vault-db:// storeRef, injectionConfig.database.user is optional (the lease gives the user; one given is ignored);
// without it, the user stays required, on create and when an edit leaves the lease. The snapshot's credential
// carries the parsed lease reference and no password reference.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { GatewaySnapshot } from "../../src/gateway/snapshot.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { expectFlat } from "./helpers.ts";

const USER_REQUIRED = "injectionConfig.database.user is required";
let api: TestApi;
beforeAll(async () => {
  // Nothing listens there: the API only checks that the store is configured.
  api = await createTestApi({ CREDGATE_VAULT_ADDR: "https://vault.invalid:8200", CREDGATE_VAULT_TOKEN: "hvs.test-token" });
});
afterAll(async () => {
  await api?.core.close();
});

let seq = 0;
const leased = (database: Record<string, unknown>, over: Record<string, unknown> = {}) => ({
  name: `leased-${++seq}`,
  type: "generic",
  valueSource: "vault",
  storeRef: "vault-db://database/app",
  hostPattern: "db.example.com",
  injectionConfig: { database },
  ...over,
});

describe("database.user with vault-db://", () => {
  test("optional with a lease: stored without a user; the snapshot credential has the lease, no password reference", async () => {
    const r = await api.call("POST", "/v1/secrets", { body: leased({ engine: "postgresql" }, { name: "leased-main" }) });
    expect(r.status).toBe(201);
    expect(r.body.storeRef).toBe("vault-db://database/app");
    const got = (await api.call("GET", `/v1/secrets/${r.body.id}`)).body;
    expect(got.injectionConfig.database).toEqual({ engine: "postgresql", port: 5432, tls: "verify-full", readOnly: false, writes: "allow" });
    const snapshot = await GatewaySnapshot.create(api.core.services);
    const token = (await api.call("GET", "/v1/agents")).body.find((a: { isDefault: boolean }) => a.isDefault).accessToken;
    const creds = await snapshot.credentials((await snapshot.agentForToken(token))!);
    expect(creds.databases.get("leased-main")).toMatchObject({ user: "", password: null, valueRef: null, lease: { ref: "vault-db://database/app", mount: "database", role: "app" } });
  });

  test("a user given with a lease is accepted and ignored by the broker", async () => {
    const r = await api.call("POST", "/v1/secrets", { body: leased({ engine: "postgresql", user: "whoever" }, { name: "leased-user" }) });
    expect(r.status).toBe(201);
    const snapshot = await GatewaySnapshot.create(api.core.services);
    const token = (await api.call("GET", "/v1/agents")).body.find((a: { isDefault: boolean }) => a.isDefault).accessToken;
    const creds = await snapshot.credentials((await snapshot.agentForToken(token))!);
    expect(creds.databases.get("leased-user")!.user).toBe("");
  });

  test("required otherwise: an inline password, a vault:// password, and an edit that leaves the lease", async () => {
    expectFlat(await api.call("POST", "/v1/secrets", { body: { name: "inline-db", type: "generic", value: "pw-0123456789", hostPattern: "db.example.com", injectionConfig: { database: { engine: "postgresql" } } } }), 400, USER_REQUIRED);
    expectFlat(await api.call("POST", "/v1/secrets", { body: leased({ engine: "postgresql" }, { storeRef: "vault://secret/db#password" }) }), 400, USER_REQUIRED);
    const created = await api.call("POST", "/v1/secrets", { body: leased({ engine: "postgresql" }) });
    expect(created.status).toBe(201);
    expectFlat(await api.call("PATCH", `/v1/secrets/${created.body.id}`, { body: { value: "pw-0123456789" } }), 400, USER_REQUIRED);
    expectFlat(await api.call("PATCH", `/v1/secrets/${created.body.id}`, { body: { storeRef: "vault://secret/db#password" } }), 400, USER_REQUIRED);
    // With the user added in the same edit, the switch goes through.
    const ok = await api.call("PATCH", `/v1/secrets/${created.body.id}`, { body: { value: "pw-0123456789", injectionConfig: { database: { engine: "postgresql", user: "app" } } } });
    expect(ok.status).toBe(200);
  });
});
