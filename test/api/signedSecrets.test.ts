// The signed and minted secret variants through the API (docs/injection.md#aws-signature-v4,
// docs/injection.md#github-app): validation messages in order, the stored (normalised) form, key ids and app
// ids listed while the key never is, edits, and the test route's refusal for other secrets.
import { beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { sql } from "drizzle-orm";
import { createTestApi, type TestApi } from "../support/app.ts";
import { expectEnvelope, expectFlat } from "./helpers.ts";

const AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSIGNEDTEST";
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PKCS1 = rsa.privateKey.export({ type: "pkcs1", format: "pem" }).toString();
const PKCS8 = rsa.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const EC = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const PEM_MESSAGE = "value must be a PEM private key for a GitHub App";

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

let seq = 0;
const aws = (cfg: unknown, over: Record<string, unknown> = {}) => ({ name: `aws-${++seq}`, type: "generic", value: AWS_SECRET, hostPattern: "*.amazonaws.com", injectionConfig: { awsSigV4: cfg }, ...over });
const app = (cfg: unknown, value = PKCS1) => ({ name: `app-${++seq}`, type: "generic", value, hostPattern: "api.github.com", injectionConfig: { githubApp: cfg } });
const post = (body: unknown) => api.call("POST", "/v1/secrets", { body });

describe("awsSigV4", () => {
  test("created with its key id; region and service optional; stored as given", async () => {
    const r = await post(aws({ accessKeyId: "AKIAIOSFODNN7EXAMPLE", region: "eu-west-1", service: "s3" }));
    expect(r.status).toBe(201);
    expect(r.body.preview).toBe("wJal••••••••TEST");
    const got = await api.call("GET", `/v1/secrets/${r.body.id}`);
    expect(got.body.injectionConfig).toEqual({ awsSigV4: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", region: "eu-west-1", service: "s3" } });
    const bare = await post(aws({ accessKeyId: "AKIAIOSFODNN7EXAMPLE" }));
    expect((await api.call("GET", `/v1/secrets/${bare.body.id}`)).body.injectionConfig).toEqual({ awsSigV4: { accessKeyId: "AKIAIOSFODNN7EXAMPLE" } });
  });

  test.each([
    [{ accessKeyId: "akiaiosfodnn7example" }, "awsSigV4.accessKeyId must be 16-128 characters of A-Z and 0-9"],
    [{ accessKeyId: "AKIASHORT" }, "awsSigV4.accessKeyId must be 16-128 characters of A-Z and 0-9"],
    [{ accessKeyId: 12345678901234567 }, "awsSigV4.accessKeyId must be 16-128 characters of A-Z and 0-9"],
    [{}, "awsSigV4.accessKeyId must be 16-128 characters of A-Z and 0-9"],
    [{ accessKeyId: "AKIAIOSFODNN7EXAMPLE", region: "EU_WEST" }, "awsSigV4.region is not a region name"],
    [{ accessKeyId: "AKIAIOSFODNN7EXAMPLE", region: "x" }, "awsSigV4.region is not a region name"],
    [{ accessKeyId: "AKIAIOSFODNN7EXAMPLE", region: "eu-west-1", service: "S3!" }, "awsSigV4.service is not a service name"],
    [{ accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "x" }, "injectionConfig must be exactly one of: {headerName, valueFormat}, {paramName, paramFormat}, {pathTemplate}, {pathRegex, pathReplacement}, {placeholder, surfaces}, {awsSigV4}, {githubApp}, {database}, {gcpServiceAccount}, {azureClientSecret}"],
    ["AKIAIOSFODNN7EXAMPLE", "injectionConfig must be exactly one of: {headerName, valueFormat}, {paramName, paramFormat}, {pathTemplate}, {pathRegex, pathReplacement}, {placeholder, surfaces}, {awsSigV4}, {githubApp}, {database}, {gcpServiceAccount}, {azureClientSecret}"],
  ])("%j → 400 %s", async (cfg, message) => {
    expectFlat(await post(aws(cfg)), 400, message);
  });

  test("mixed with another variant → the shape message", async () => {
    const r = await post({ ...aws({ accessKeyId: "AKIAIOSFODNN7EXAMPLE" }), injectionConfig: { awsSigV4: { accessKeyId: "AKIAIOSFODNN7EXAMPLE" }, headerName: "x" } });
    expect(r.status).toBe(400);
    expect(r.body.message ?? r.body.error).toContain("injectionConfig must be exactly one of");
  });
});

describe("githubApp", () => {
  test("PKCS#1 and PKCS#8 RSA keys; numeric strings become numbers", async () => {
    for (const key of [PKCS1, PKCS8]) {
      const r = await post(app({ appId: "42", installationId: 7 }, key));
      expect(r.status).toBe(201);
      expect((await api.call("GET", `/v1/secrets/${r.body.id}`)).body.injectionConfig).toEqual({ githubApp: { appId: 42, installationId: 7 } });
    }
  });

  test.each([
    [{ appId: 0, installationId: 1 }, "githubApp.appId must be a positive integer"],
    [{ appId: "abc", installationId: 1 }, "githubApp.appId must be a positive integer"],
    [{ appId: 1.5, installationId: 1 }, "githubApp.appId must be a positive integer"],
    [{ appId: 1 }, "githubApp.installationId must be a positive integer"],
    [{ appId: 1, installationId: -3 }, "githubApp.installationId must be a positive integer"],
    [{ appId: 1, installationId: 2, slug: "x" }, "injectionConfig must be exactly one of: {headerName, valueFormat}, {paramName, paramFormat}, {pathTemplate}, {pathRegex, pathReplacement}, {placeholder, surfaces}, {awsSigV4}, {githubApp}, {database}, {gcpServiceAccount}, {azureClientSecret}"],
  ])("%j → 400 %s", async (cfg, message) => {
    expectFlat(await post(app(cfg)), 400, message);
  });

  test("an EC key, a public key or text that is no key → 400, nothing stored", async () => {
    const before = (await api.call("GET", "/v1/secrets")).body.length;
    for (const value of [EC, rsa.publicKey.export({ type: "spki", format: "pem" }).toString(), "-----BEGIN RSA PRIVATE KEY-----\nnot a key\n-----END RSA PRIVATE KEY-----", "ghp_notakey"]) {
      expectFlat(await post(app({ appId: 1, installationId: 2 }, value)), 400, PEM_MESSAGE);
    }
    expect((await api.call("GET", "/v1/secrets")).body.length).toBe(before);
  });

  test("the multi-line PEM is stored (no printable-ASCII refusal) and never listed, nor stored in clear", async () => {
    const r = await post(app({ appId: 5, installationId: 6 }));
    expect(r.status).toBe(201);
    const list = await api.call("GET", "/v1/secrets");
    expect(list.text).not.toContain("PRIVATE KEY");
    expect(list.body.find((s: { id: string }) => s.id === r.body.id).injectionConfig).toEqual({ githubApp: { appId: 5, installationId: 6 } });
    const rows = await api.core.store.query<{ value_sealed: string }>(sql`SELECT value_sealed FROM secrets WHERE id = ${r.body.id}`);
    expect(rows[0]!.value_sealed).not.toContain("PRIVATE KEY");
  });
});

describe("editing", () => {
  test("switching a header secret to githubApp checks the stored value is a key; a new key value with it passes", async () => {
    const r = await post({ name: "hdr", type: "generic", value: "plain-token-value", hostPattern: "api.github.com", injectionConfig: { headerName: "authorization" } });
    expectFlat(await api.call("PATCH", `/v1/secrets/${r.body.id}`, { body: { injectionConfig: { githubApp: { appId: 1, installationId: 2 } } } }), 400, PEM_MESSAGE);
    expect((await api.call("PATCH", `/v1/secrets/${r.body.id}`, { body: { value: PKCS8, injectionConfig: { githubApp: { appId: 1, installationId: 2 } } } })).status).toBe(200);
    expect((await api.call("GET", `/v1/secrets/${r.body.id}`)).body.injectionConfig).toEqual({ githubApp: { appId: 1, installationId: 2 } });
  });

  test("an AWS secret's region is changed; a bad one is refused with its message", async () => {
    const r = await post(aws({ accessKeyId: "AKIAIOSFODNN7EXAMPLE" }));
    expectFlat(await api.call("PATCH", `/v1/secrets/${r.body.id}`, { body: { injectionConfig: { awsSigV4: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", region: "Mars" } } } }), 400, "awsSigV4.region is not a region name");
    expect((await api.call("PATCH", `/v1/secrets/${r.body.id}`, { body: { injectionConfig: { awsSigV4: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", region: "ap-south-1" } } } })).status).toBe(200);
    expect((await api.call("GET", `/v1/secrets/${r.body.id}`)).body.injectionConfig.awsSigV4.region).toBe("ap-south-1");
  });
});

describe("POST /secrets/{id}/test", () => {
  test("a secret that is neither AWS nor a GitHub App → 400; an unknown id → 404", async () => {
    const r = await post({ name: "hdr2", type: "generic", value: "v", hostPattern: "api.x.com", injectionConfig: { headerName: "x-k" } });
    expectEnvelope(await api.call("POST", `/v1/secrets/${r.body.id}/test`), 400, "Only AWS Signature V4 and GitHub App secrets with a stored value can be tested");
    expectEnvelope(await api.call("POST", `/v1/secrets/${crypto.randomUUID()}/test`), 404, "Secret not found");
  });
});
