// The cloud identity variants through the API (docs/cloud-identities.md#variants): gcpServiceAccount's key
// check and default host, azureClientSecret's GUIDs and scope, the vendor-served wildcards only they may hold,
// the stored form, and the key never listed.
import { beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { createTestApi, type TestApi } from "../support/app.ts";
import { expectFlat } from "./helpers.ts";

const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PEM = rsa.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const EC = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const key = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    type: "service_account",
    project_id: "demo-project",
    private_key_id: "k1",
    private_key: PEM,
    client_email: "robot@demo-project.iam.gserviceaccount.com",
    token_uri: "https://oauth2.googleapis.com/token",
    ...over,
  });
const TENANT = "72F988BF-86F1-41AF-91AB-2D7CD011DB47";
const CLIENT = "0e5a2c44-1f7e-4c5b-9a3d-6b1d2e3f4a5b";
const KEY_MESSAGE = "value must be a Google service-account JSON key";

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

let seq = 0;
const gcp = (cfg: unknown, over: Record<string, unknown> = {}) => ({ name: `gcp-${++seq}`, type: "generic", value: key(), injectionConfig: { gcpServiceAccount: cfg }, ...over });
const azure = (cfg: unknown, over: Record<string, unknown> = {}) => ({ name: `az-${++seq}`, type: "generic", value: "az~client.secret_value-0123456789", hostPattern: "*.blob.core.windows.net", injectionConfig: { azureClientSecret: cfg }, ...over });
const post = (body: unknown) => api.call("POST", "/v1/secrets", { body });

describe("gcpServiceAccount", () => {
  test("host defaults to *.googleapis.com; scopes optional, stored once each; the key is never listed", async () => {
    const r = await post(gcp({}));
    expect(r.status).toBe(201);
    expect(r.body.hostPattern).toBe("*.googleapis.com");
    const got = await api.call("GET", `/v1/secrets/${r.body.id}`);
    expect(got.body.injectionConfig).toEqual({ gcpServiceAccount: {} });
    expect(got.text).not.toContain("PRIVATE KEY");
    const scoped = await post(gcp({ scopes: ["https://www.googleapis.com/auth/devstorage.read_only", "https://www.googleapis.com/auth/devstorage.read_only"] }, { hostPattern: "storage.googleapis.com" }));
    expect(scoped.status).toBe(201);
    expect((await api.call("GET", `/v1/secrets/${scoped.body.id}`)).body.injectionConfig).toEqual({
      gcpServiceAccount: { scopes: ["https://www.googleapis.com/auth/devstorage.read_only"] },
    });
    const list = await api.call("GET", "/v1/secrets");
    expect(list.text).not.toContain("BEGIN PRIVATE KEY");
    expect(list.text).not.toContain("robot@demo-project");
  });

  test.each([
    ["not JSON", "-----BEGIN PRIVATE KEY-----"],
    ["another type", key({ type: "authorized_user" })],
    ["no client_email", key({ client_email: undefined })],
    ["an EC key", key({ private_key: EC })],
    ["a broken key", key({ private_key: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" })],
    ["a plain-HTTP token_uri", key({ token_uri: "http://oauth2.googleapis.com/token" })],
    ["no token_uri", key({ token_uri: undefined })],
  ])("value: %s → 400", async (_, value) => {
    expectFlat(await post(gcp({}, { value })), 400, KEY_MESSAGE);
  });

  test.each([
    [{ scopes: [] }, "gcpServiceAccount.scopes must be a non-empty array of scope strings"],
    [{ scopes: "https://www.googleapis.com/auth/cloud-platform" }, "gcpServiceAccount.scopes must be a non-empty array of scope strings"],
    [{ scopes: ["a b"] }, "gcpServiceAccount.scopes must be a non-empty array of scope strings"],
    [{ scope: ["x"] }, "injectionConfig must be exactly one of"],
  ])("%j → 400", async (cfg, message) => {
    const r = await post(gcp(cfg));
    expect(r.status).toBe(400);
    expect(r.body.message ?? r.body.error).toContain(message);
  });

  test("a value edit is checked too", async () => {
    const r = await post(gcp({}));
    expectFlat(await api.call("PATCH", `/v1/secrets/${r.body.id}`, { body: { value: "{}" } }), 400, KEY_MESSAGE);
    expect((await api.call("PATCH", `/v1/secrets/${r.body.id}`, { body: { value: key({ private_key_id: "k2" }) } })).status).toBe(200);
  });
});

describe("azureClientSecret", () => {
  test("GUIDs stored lowercase; scope optional; *.blob.core.windows.net allowed", async () => {
    const r = await post(azure({ tenantId: TENANT, clientId: CLIENT }));
    expect(r.status).toBe(201);
    const got = await api.call("GET", `/v1/secrets/${r.body.id}`);
    expect(got.body.injectionConfig).toEqual({ azureClientSecret: { tenantId: TENANT.toLowerCase(), clientId: CLIENT } });
    expect(got.body.hostPattern).toBe("*.blob.core.windows.net");
    const scoped = await post(azure({ tenantId: TENANT, clientId: CLIENT, scope: "https://management.azure.com/.default" }, { hostPattern: "management.azure.com" }));
    expect((await api.call("GET", `/v1/secrets/${scoped.body.id}`)).body.injectionConfig.azureClientSecret.scope).toBe("https://management.azure.com/.default");
  });

  test.each([
    [{ tenantId: "contoso", clientId: CLIENT }, "azureClientSecret.tenantId must be a GUID"],
    [{ clientId: CLIENT }, "azureClientSecret.tenantId must be a GUID"],
    [{ tenantId: TENANT, clientId: "1234" }, "azureClientSecret.clientId must be a GUID"],
    [{ tenantId: TENANT, clientId: CLIENT, scope: "a b" }, "azureClientSecret.scope must be a scope such as https://management.azure.com/.default"],
    [{ tenantId: TENANT, clientId: CLIENT, scope: 5 }, "azureClientSecret.scope must be a scope such as https://management.azure.com/.default"],
  ])("%j → 400 %s", async (cfg, message) => {
    expectFlat(await post(azure(cfg)), 400, message);
  });

  test("a host pattern is required (no default)", async () => {
    const r = await post(azure({ tenantId: TENANT, clientId: CLIENT }, { hostPattern: undefined }));
    expect(r.status).toBe(400);
  });
});

describe("vendor-served wildcards", () => {
  test("only a cloud identity may cover *.googleapis.com or *.blob.core.windows.net", async () => {
    const header = { name: `h-${++seq}`, type: "generic", value: "x".repeat(20), injectionConfig: { headerName: "authorization" } };
    for (const hostPattern of ["*.googleapis.com", "*.blob.core.windows.net"]) {
      expectFlat(await post({ ...header, hostPattern }), 400, "A wildcard can't cover a public suffix like *.com; use a specific domain, e.g. *.example.com");
    }
    const plain = await post({ ...header, name: `h-${++seq}`, hostPattern: "api.example.com" });
    expectFlat(await api.call("PATCH", `/v1/secrets/${plain.body.id}`, { body: { hostPattern: "*.googleapis.com" } }), 400, "A wildcard can't cover a public suffix like *.com; use a specific domain, e.g. *.example.com");
    const cloud = await post(gcp({}));
    expectFlat(await api.call("PATCH", `/v1/secrets/${cloud.body.id}`, { body: { injectionConfig: { headerName: "authorization" } } }), 400, "A wildcard can't cover a public suffix like *.com; use a specific domain, e.g. *.example.com");
  });
});

describe("container-config", () => {
  test("the cloud placeholders follow the secrets the agent may use (mode and grants); the stub holds no real key", async () => {
    const fresh = await createTestApi();
    const g = await fresh.call("POST", "/v1/secrets", { body: gcp({}) });
    const a = await fresh.call("POST", "/v1/secrets", { body: azure({ tenantId: TENANT, clientId: CLIENT }) });
    const all = (await fresh.call("GET", "/v1/container-config")).body;
    expect(all.env).toMatchObject({
      GOOGLE_APPLICATION_CREDENTIALS: "/tmp/credgate-gcp-credentials.json",
      GOOGLE_CLOUD_PROJECT: "demo-project",
      AZURE_TENANT_ID: TENANT.toLowerCase(),
      AZURE_CLIENT_ID: CLIENT,
      AZURE_CLIENT_SECRET: "credgate-managed",
    });
    const stub = all.credentialStubs.find((s: { containerPath: string }) => s.containerPath === "/tmp/credgate-gcp-credentials.json");
    expect(JSON.parse(stub.content)).toMatchObject({ type: "service_account", client_email: "robot@demo-project.iam.gserviceaccount.com", token_uri: "https://oauth2.googleapis.com/token" });
    expect(JSON.stringify(all)).not.toContain(PEM.split("\n")[1]);
    expect(JSON.stringify(all)).not.toContain("az~client.secret_value");

    const coder = (await fresh.call("POST", "/v1/agents", { body: { name: "Coder", identifier: "coder" } })).body.id;
    const none = (await fresh.call("GET", "/v1/container-config?agent=coder")).body;
    expect(none.env.GOOGLE_APPLICATION_CREDENTIALS).toBeUndefined();
    expect(none.env.AZURE_CLIENT_ID).toBeUndefined();
    expect(none.credentialStubs).toEqual([]);
    expect((await fresh.call("PUT", `/v1/agents/${coder}/grants/secrets/${a.body.id}`)).status).toBe(200);
    const granted = (await fresh.call("GET", "/v1/container-config?agent=coder")).body;
    expect(granted.env.AZURE_CLIENT_ID).toBe(CLIENT);
    expect(granted.env.GOOGLE_APPLICATION_CREDENTIALS).toBeUndefined();
    expect(g.status).toBe(201);
  });
});

test("with several secrets of a cloud, the setup names the one first in precedence (project over organization)", async () => {
  const fresh = await createTestApi();
  await fresh.call("POST", "/v1/org/secrets", { key: fresh.orgKey, body: gcp({}, { value: key({ client_email: "org@org-project.iam.gserviceaccount.com", project_id: "org-project" }) }) });
  await fresh.call("POST", "/v1/org/secrets", { key: fresh.orgKey, body: azure({ tenantId: TENANT, clientId: "aaaaaaaa-0000-0000-0000-000000000000" }) });
  let config = (await fresh.call("GET", "/v1/container-config")).body;
  expect(config.env.GOOGLE_CLOUD_PROJECT).toBe("org-project");
  expect(config.env.AZURE_CLIENT_ID).toBe("aaaaaaaa-0000-0000-0000-000000000000");
  await fresh.call("POST", "/v1/secrets", { body: gcp({}) });
  await fresh.call("POST", "/v1/secrets", { body: azure({ tenantId: TENANT, clientId: CLIENT }) });
  config = (await fresh.call("GET", "/v1/container-config")).body;
  expect(config.env.GOOGLE_CLOUD_PROJECT).toBe("demo-project");
  expect(JSON.parse(config.credentialStubs[0].content).client_email).toBe("robot@demo-project.iam.gserviceaccount.com");
  expect(config.env.AZURE_CLIENT_ID).toBe(CLIENT);
});
