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
      [generic({ storeRef: "gcp-sm://projects/p/secrets/s" }), "Google Secret Manager is not configured", bare],
      [generic({ storeRef: "azure-kv://kv/s" }), "Azure Key Vault is not configured", bare],
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
