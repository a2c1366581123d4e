// Secret-store secrets through the API (docs/injection.md#secret-stores): valueSource vault with storeRef, the
// exact 400s (missing, unknown scheme, bad shape, store not configured), no preview, organization secrets too,
// the update transitions between inline, 1Password and a store, the test endpoint reading once (never the value),
// and migrate export skipping store secrets.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestApi, type TestApi } from "../support/app.ts";
import { expectFlat } from "./helpers.ts";

const VALUE = "sk_store_value_0123456789abcdef";
let dir: string;
let api: TestApi;
let bare: TestApi;

const generic = (over: Record<string, unknown> = {}) => ({
  name: "Stripe",
  type: "generic",
  valueSource: "vault",
  storeRef: "cmd://stripe",
  hostPattern: "api.stripe.test",
  injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" },
  ...over,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "credgate-store-api-"));
  const script = join(dir, "print.sh");
  writeFileSync(script, `#!/bin/sh\nif [ "$1" = fail ]; then echo "${VALUE}" >&2; exit 3; fi\necho "  ${VALUE}  "\n`);
  chmodSync(script, 0o755);
  api = await createTestApi({
    CREDGATE_SECRET_COMMANDS: JSON.stringify({ stripe: [script], broken: [script, "fail"], missing: [join(dir, "nope")] }),
    CREDGATE_OP_CONNECT_HOST: "http://127.0.0.1:1",
    CREDGATE_OP_CONNECT_TOKEN: "t",
  });
  bare = await createTestApi();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("creating", () => {
  test("cmd:// configured → 201 with storeRef and no preview; list and read carry storeRef, never a value", async () => {
    const res = await api.call("POST", "/v1/secrets", { body: generic() });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ valueSource: "vault", storeRef: "cmd://stripe", opRef: null });
    expect(res.body.preview).toBeUndefined();
    const one = await api.call("GET", `/v1/secrets/${res.body.id}`);
    expect(one.body).toMatchObject({ valueSource: "vault", storeRef: "cmd://stripe", opRef: null });
    expect(one.text).not.toContain(VALUE);
  });

  test("organization secrets may use a store too", async () => {
    const res = await api.call("POST", "/v1/org/secrets", { key: api.orgKey, body: generic({ name: "org" }) });
    expect(res.status).toBe(201);
    expect(res.body.storeRef).toBe("cmd://stripe");
  });

  test("the exact 400s, in order", async () => {
    const cases: [Record<string, unknown>, string, TestApi][] = [
      [generic({ storeRef: undefined }), "storeRef is required when valueSource is vault", api],
      [generic({ storeRef: "https://vault/x" }), "storeRef must start with vault://, vault-db://, aws-sm://, gcp-sm://, azure-kv:// or cmd://", api],
      [generic({ storeRef: "aws-sm://nowhere/x" }), "storeRef must look like aws-sm://<region>/<name>[#<json field>]", api],
      [generic({ storeRef: "cmd://other" }), 'Secret command "other" is not configured', api],
      [generic({ storeRef: "cmd://stripe" }), 'Secret command "stripe" is not configured', bare],
      [generic({ storeRef: "vault://secret/app#token" }), "HashiCorp Vault is not configured", bare],
      [generic({ storeRef: "aws-sm://eu-west-1/prod/stripe" }), "AWS Secrets Manager is not configured", bare],
      [generic({ storeRef: "gcp-sm://projects/acme-prod/secrets/s" }), "Google Secret Manager is not configured", bare],
      [generic({ storeRef: "azure-kv://acme-kv/s" }), "Azure Key Vault is not configured", bare],
    ];
    for (const [body, message, on] of cases) expectFlat(await on.call("POST", "/v1/secrets", { body }), 400, message);
  });
});

describe("updating", () => {
  test("a new value makes it inline (storeRef cleared); a storeRef alone makes it a store secret again; external_vault clears storeRef", async () => {
    const { body: s } = await api.call("POST", "/v1/secrets", { body: generic({ name: "moves" }) });
    const read = async () => (await api.call("GET", `/v1/secrets/${s.id}`)).body;
    expect((await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { value: "inline-value-123" } })).status).toBe(200);
    expect(await read()).toMatchObject({ valueSource: "inline", storeRef: null, opRef: null });
    expect((await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { storeRef: "cmd://broken" } })).status).toBe(200);
    expect(await read()).toMatchObject({ valueSource: "vault", storeRef: "cmd://broken", opRef: null });
    expect(api.core.services.secrets.openValue(await api.core.services.secrets.find({ scope: "project", projectId: api.projectId, organizationId: api.organizationId }, s.id))).toBeNull();
    expect((await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { valueSource: "external_vault", opRef: "op://V/I/f" } })).status).toBe(200);
    expect(await read()).toMatchObject({ valueSource: "external_vault", storeRef: null, opRef: "op://V/I/f" });
    expect((await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { valueSource: "vault" } })).status).toBe(400);
    expectFlat(await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { valueSource: "vault" } }), 400, "storeRef is required when valueSource is vault");
    expectFlat(await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { storeRef: "cmd://nobody" } }), 400, 'Secret command "nobody" is not configured');
    expectFlat(await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { storeRef: "nope://x" } }), 400, "storeRef must start with vault://, vault-db://, aws-sm://, gcp-sm://, azure-kv:// or cmd://");
    expect((await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { valueSource: "vault", storeRef: "cmd://stripe" } })).status).toBe(200);
    expect(await read()).toMatchObject({ valueSource: "vault", storeRef: "cmd://stripe", opRef: null });
  });

  test("vault-db:// without Vault configured names the store", async () => {
    const vaulted = await createTestApi({ CREDGATE_SECRET_COMMANDS: '{"x":["true"]}' });
    // The check after the store's: with no Vault configured the store message comes first.
    expectFlat(await vaulted.call("POST", "/v1/secrets", { body: generic({ storeRef: "vault-db://database/ro" }) }), 400, "HashiCorp Vault is not configured");
  });
});

describe("testing", () => {
  test("reads once, bypassing the cache: ok with the length, never the value; a failing command says its status, not its stderr", async () => {
    const { body: ok } = await api.call("POST", "/v1/secrets", { body: generic({ name: "t-ok" }) });
    const good = await api.call("POST", `/v1/secrets/${ok.id}/test`);
    expect(good.status).toBe(200);
    expect(good.body).toEqual({ ok: true, message: `Read a value of ${VALUE.length} characters from the store.` });
    const { body: bad } = await api.call("POST", "/v1/secrets", { body: generic({ name: "t-bad", storeRef: "cmd://broken" }) });
    const failed = await api.call("POST", `/v1/secrets/${bad.id}/test`);
    expect(failed.status).toBe(200);
    expect(failed.body.ok).toBe(false);
    expect(failed.body.message).toBe(`The command for "broken" exited with status 3; it wrote ${VALUE.length} characters to standard error (not shown).`);
    expect(failed.text).not.toContain(VALUE);
    const { body: gone } = await api.call("POST", "/v1/secrets", { body: generic({ name: "t-missing", storeRef: "cmd://missing" }) });
    expect((await api.call("POST", `/v1/secrets/${gone.id}/test`)).body.ok).toBe(false);
  });
});

describe("migrate export", () => {
  test("store secrets are skipped like external-vault ones: never sent, listed in skipped", async () => {
    const { body: s } = await api.call("POST", "/v1/secrets", { body: generic({ name: "not-exported" }) });
    const { payload, skipped } = await api.core.services.migration.collect({ projectId: api.projectId, organizationId: api.organizationId });
    expect(payload.secrets.map((x) => x.name)).not.toContain("not-exported");
    expect(skipped).toContainEqual({ type: "generic", name: "not-exported", reason: "Sourced from an external vault — re-add this secret after migrating" });
    expect(JSON.stringify(payload)).not.toContain(VALUE);
    expect(s.storeRef).toBe("cmd://stripe");
  });
});

describe("the release hook (services.storeRefChanges)", () => {
  test("a tracked secret deleted or moved to another reference is released once; a rename is not a release", async () => {
    const released: [string, string][] = [];
    const stop = api.core.services.storeRefChanges.onReleased((id, ref) => void released.push([id, ref]));
    const changes = api.core.services.storeRefChanges;
    const releasedOf = async (id: string) => {
      for (let i = 0; i < 500 && !released.some(([r]) => r === id); i++) await Bun.sleep(10);
      return released.filter(([r]) => r === id);
    };
    try {
      const make = async (name: string) => (await api.call("POST", "/v1/secrets", { body: generic({ name }) })).body.id as string;
      const [a, b, c, d] = [await make("lease-a"), await make("lease-b"), await make("lease-c"), await make("lease-d")];
      for (const id of [a, b, c, d]) changes.track(id, "cmd://stripe");
      // A rename of a, then b deleted: once b is released, a's check (begun first) has found the same reference.
      expect((await api.call("PATCH", `/v1/secrets/${a}`, { body: { name: "lease-a2" } })).status).toBe(200);
      expect((await api.call("DELETE", `/v1/secrets/${b}`)).status).toBe(204);
      expect(await releasedOf(b)).toEqual([[b, "cmd://stripe"]]);
      expect(released.filter(([r]) => r === a)).toEqual([]);
      // a moved to another reference: released with the reference it held.
      expect((await api.call("PATCH", `/v1/secrets/${a}`, { body: { storeRef: "cmd://broken" } })).status).toBe(200);
      expect(await releasedOf(a)).toEqual([[a, "cmd://stripe"]]);
      // Released once: a's delete (untracked now) says nothing, c's delete after it does.
      expect((await api.call("DELETE", `/v1/secrets/${a}`)).status).toBe(204);
      expect((await api.call("DELETE", `/v1/secrets/${c}`)).status).toBe(204);
      expect(await releasedOf(c)).toEqual([[c, "cmd://stripe"]]);
      expect(released.filter(([r]) => r === a)).toHaveLength(1);
      // Untracked: nothing to give back.
      changes.untrack(d);
      expect((await api.call("DELETE", `/v1/secrets/${d}`)).status).toBe(204);
    } finally {
      stop();
    }
  });
});

describe("cloud mode: a storeRef names something under the organization's prefix", () => {
  // Every store is configured with credgate's own (operator's) identity; no request is made when writing.
  const STORES = {
    CREDGATE_MODE: "cloud",
    CREDGATE_VAULT_ADDR: "https://vault.example:8200",
    CREDGATE_VAULT_TOKEN: "hvs.operator",
    CREDGATE_AWS_ACCESS_KEY_ID: "AKIAOPERATOR0000000",
    CREDGATE_AWS_SECRET_ACCESS_KEY: "operator-secret-key",
    CREDGATE_GCP_SERVICE_ACCOUNT_FILE: "/nonexistent/credgate-sa.json",
    CREDGATE_AZURE_TENANT_ID: "tenant",
    CREDGATE_AZURE_CLIENT_ID: "client",
    CREDGATE_AZURE_CLIENT_SECRET: "operator-client-secret",
  };
  const dbSecret = (storeRef: string) => ({ name: "db", type: "generic", valueSource: "vault", storeRef, hostPattern: "db.example.com", injectionConfig: { database: { engine: "postgresql" } } });
  const refsFor = (org: string) => [`vault://secret/${org}/stripe#key`, `aws-sm://us-east-1/${org}/stripe#key`, `gcp-sm://projects/acme-prod/secrets/${org}-stripe`, `gcp-sm://projects/acme-prod/secrets/${org}-stripe/versions/3`, `azure-kv://acme-kv/${org}-stripe`];

  test("its own prefix → 201 (project and organization secrets); another organization's, none, or a look-alike → the exact 400, on create and PATCH", async () => {
    const cloud = await createTestApi(STORES);
    const other = await createTestApi(STORES);
    const org = cloud.organizationId;
    const victim = other.organizationId;
    expect(org).toMatch(/^[a-z]{16}$/);
    const MESSAGE = `In cloud mode a storeRef must name a secret under this organization's prefix "${org}"`;
    for (const [i, ref] of refsFor(org).entries()) {
      expect((await cloud.call("POST", "/v1/secrets", { body: generic({ name: `own-${i}`, storeRef: ref }) })).status).toBe(201);
      expect((await cloud.call("POST", "/v1/org/secrets", { key: cloud.orgKey, body: generic({ name: `org-own-${i}`, storeRef: ref }) })).status).toBe(201);
    }
    expect((await cloud.call("POST", "/v1/secrets", { body: dbSecret(`vault-db://database/${org}-orders`) })).status).toBe(201);
    const refused = [
      ...refsFor(victim),
      `vault-db://database/${victim}-orders`,
      // No prefix at all, the prefix as the whole name, the prefix without its separator, the prefix further down.
      "vault://secret/stripe#key", `vault://secret/other/${org}/x#key`, `vault://${org}/stripe#key`,
      "aws-sm://us-east-1/prod/stripe", `aws-sm://us-east-1/${org}`, `aws-sm://us-east-1/${org}-stripe`, `aws-sm://us-east-1/${org}/`, `aws-sm://us-east-1/arn:aws:secretsmanager:us-east-1:123456789012:secret:${victim}/x`,
      `gcp-sm://projects/${org}/secrets/stripe`, `gcp-sm://projects/acme-prod/secrets/${org}`, `gcp-sm://projects/acme-prod/secrets/${org}_stripe`,
      `azure-kv://${org.slice(0, 20)}/stripe`, `azure-kv://acme-kv/${org}`, `azure-kv://acme-kv/${org}stripe`,
    ];
    for (const ref of refused) {
      const body = ref.startsWith("vault-db://") ? dbSecret(ref) : generic({ name: "theirs", storeRef: ref });
      const r = await cloud.call("POST", "/v1/secrets", { body });
      expect({ ref, status: r.status, body: r.body }).toEqual({ ref, status: 400, body: { error: MESSAGE } });
    }
    expectFlat(await cloud.call("POST", "/v1/org/secrets", { key: cloud.orgKey, body: generic({ name: "org-theirs", storeRef: refsFor(victim)[1] }) }), 400, MESSAGE);
    // PATCH: a store secret moved to another organization's name, an inline one made a store secret with it.
    const { body: own } = await cloud.call("POST", "/v1/secrets", { body: generic({ name: "moving", storeRef: refsFor(org)[0] }) });
    expectFlat(await cloud.call("PATCH", `/v1/secrets/${own.id}`, { body: { storeRef: refsFor(victim)[0] } }), 400, MESSAGE);
    const { body: inline } = await cloud.call("POST", "/v1/secrets", { body: generic({ name: "inline", valueSource: undefined, storeRef: undefined, value: "inline-value-123" }) });
    expectFlat(await cloud.call("PATCH", `/v1/secrets/${inline.id}`, { body: { valueSource: "vault", storeRef: refsFor(victim)[2] } }), 400, MESSAGE);
    expect((await cloud.call("GET", `/v1/secrets/${own.id}`)).body.storeRef).toBe(refsFor(org)[0]);
    expect((await cloud.call("PATCH", `/v1/secrets/${own.id}`, { body: { storeRef: refsFor(org)[1] } })).status).toBe(200);
    // The not-configured and shape messages still come first.
    expectFlat(await cloud.call("POST", "/v1/secrets", { body: generic({ name: "cmd", storeRef: "cmd://stripe" }) }), 400, 'Secret command "stripe" is not configured');
  });

  test("self-hosted: any name, as before", async () => {
    const own = await createTestApi({ ...STORES, CREDGATE_MODE: "self-hosted" });
    for (const ref of ["vault://secret/stripe#key", "aws-sm://us-east-1/prod/stripe", "gcp-sm://projects/acme-prod/secrets/stripe", "azure-kv://acme-kv/stripe"]) {
      expect((await own.call("POST", "/v1/secrets", { body: generic({ name: ref, storeRef: ref }) })).status).toBe(201);
    }
  });
});
