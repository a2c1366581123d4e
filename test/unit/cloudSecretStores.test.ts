// The cloud secret stores (docs/secret-stores.md) against the fakes of test/support/fakeSecretStores.ts, and the
// fakes against the clouds' official clients: @aws-sdk/client-secrets-manager GetSecretValueCommand, Google's
// @google-cloud/secret-manager accessSecretVersion (REST fallback: its gRPC transport cannot be given a loopback
// fake's CA) and @azure/keyvault-secrets SecretClient.getSecret with @azure/identity's ClientSecretCredential,
// each run by Node under connectTo.cjs and NODE_EXTRA_CA_CERTS, read the same values credgate's stores read through
// the real outbound path (CREDGATE_CONNECT_TO, CREDGATE_UPSTREAM_CA_FILE). Then what credgate's stores do on their
// own: JSON fields, binary values, checksums, tokens kept and dropped, and every refusal as a StoreError that holds
// neither a value nor the store's answer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { StoreRef } from "../../src/core/storeRefs.ts";
import { parseStoreRef } from "../../src/core/storeRefs.ts";
import { loadConfig } from "../../src/runtime/config.ts";
import { Outbound } from "../../src/services/outbound.ts";
import { awsSecretsManagerFrom } from "../../src/vault/stores/awsSecretsManager.ts";
import { azureKeyVaultFrom } from "../../src/vault/stores/azureKeyVault.ts";
import { googleSecretManagerFrom } from "../../src/vault/stores/googleSecretManager.ts";
import { StoreError, type SecretStore, type StoreContext } from "../../src/vault/stores/types.ts";
import { GOOGLE_TOKEN_URI } from "../support/fakeClouds.ts";
import { SECRET_STORE_HOSTS, startFakeSecretStores, STORE_ANSWER_CANARY, type FakeSecretStores } from "../support/fakeSecretStores.ts";
import { run } from "../support/gateway.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, type TestPki } from "../support/upstream.ts";

const AWS = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" };
const EMAIL = "credgate@stores-demo.iam.gserviceaccount.com";
const AZURE = { tenantId: "72f988bf-86f1-41af-91ab-2d7cd011db47", clientId: "0e5a2c44-1f7e-4c5b-9a3d-6b1d2e3f4a5b", clientSecret: "Q~store.client-secret~0123456789" };
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const SA_KEY = { type: "service_account", project_id: "stores-demo", private_key_id: "sk-1", private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(), client_email: EMAIL, client_id: "1", token_uri: GOOGLE_TOKEN_URI };

const VALUES = { aws: "sk_live_from_aws_0123456789", gcp: "ghp_from_google_0123456789", azure: "xoxb-from-azure-0123456789" };

let pki: TestPki;
let fake: FakeSecretStores;
let saFile: string;
let connectTo: string;
let stores: { aws: SecretStore; gcp: SecretStore; azure: SecretStore };
let now = Date.now();

function context(env: Record<string, string>): StoreContext {
  const config = loadConfig({ dataDir: "/nonexistent", port: 0, gatewayPort: 0, dbPort: 0 }, { CREDGATE_CONNECT_TO: connectTo, CREDGATE_UPSTREAM_CA_FILE: pki.caFile, ...env });
  const outbound = new Outbound(config);
  return { config, fetch: (url, init) => outbound.fetch(url, init as BunFetchRequestInit), now: () => now };
}

const ref = (s: string) => parseStoreRef(s) as StoreRef;
const read = (store: SecretStore, s: string) => store.read(ref(s), AbortSignal.timeout(10_000));

/** The StoreError a read fails with (the test fails when it succeeds or fails otherwise). */
async function refusal(store: SecretStore, s: string): Promise<StoreError> {
  const err = await read(store, s).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreError);
  const e = err as StoreError;
  expect(`${e.reason} ${e.message}`).not.toContain(STORE_ANSWER_CANARY);
  return e;
}

/** Runs `script` under Node with the fakes reachable and trusted, and returns its stdout (the test fails on a non-zero exit). */
async function node(script: string): Promise<string> {
  const r = await run(["node", "-r", join(import.meta.dir, "../support/connectTo.cjs"), "-e", script], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_EXTRA_CA_CERTS: pki.caFile, CONNECT_TO: connectTo, NODE_PATH: join(import.meta.dir, "../../node_modules") },
    cwd: join(import.meta.dir, "../.."),
    timeoutMs: 60_000,
  });
  if (r.code !== 0) throw new Error(`node exited ${r.code}: ${r.stderr}`);
  return r.stdout.trim();
}

beforeAll(() => {
  pki = makePki(SECRET_STORE_HOSTS);
  fake = startFakeSecretStores(pki, { aws: AWS, gcp: { email: EMAIL, publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString() }, azure: AZURE });
  connectTo = SECRET_STORE_HOSTS.map((h) => `${h}:443:127.0.0.1:${fake.port}`).join(",");
  saFile = join(tempDir(), "credgate-sa.json");
  writeFileSync(saFile, JSON.stringify(SA_KEY));
  fake.aws.set("prod/stripe", { string: VALUES.aws });
  fake.aws.set("prod/db", { string: JSON.stringify({ username: "app", password: VALUES.aws, port: 5432, nested: { a: 1 }, blank: "" }) });
  fake.aws.set("prod/binary-text", { binary: new TextEncoder().encode(VALUES.aws) });
  fake.aws.set("prod/binary-raw", { binary: new Uint8Array([0xff, 0xfe, 0x00, 0x81]) });
  fake.aws.set("prod/plain-text", { string: "not json" });
  fake.google.set("stores-demo/github-token", ["ghp_old_version", VALUES.gcp]);
  fake.google.set("stores-demo/damaged", [VALUES.gcp]);
  fake.corrupt.add("stores-demo/damaged");
  fake.azure.set("prodvault/slack-bot", VALUES.azure);
  stores = {
    aws: awsSecretsManagerFrom(context({ CREDGATE_AWS_ACCESS_KEY_ID: AWS.accessKeyId, CREDGATE_AWS_SECRET_ACCESS_KEY: AWS.secretAccessKey }))!,
    gcp: googleSecretManagerFrom(context({ CREDGATE_GCP_SERVICE_ACCOUNT_FILE: saFile }))!,
    azure: azureKeyVaultFrom(context({ CREDGATE_AZURE_TENANT_ID: AZURE.tenantId, CREDGATE_AZURE_CLIENT_ID: AZURE.clientId, CREDGATE_AZURE_CLIENT_SECRET: AZURE.clientSecret }))!,
  };
});

afterAll(async () => {
  await fake?.stop();
});

describe("the official clients and credgate's stores read the same values from the fakes", () => {
  test("AWS: GetSecretValueCommand and aws-sm:// (both SigV4-verified with the real key)", async () => {
    const before = fake.calls.length;
    const sdk = await node(`
      const { SecretsManagerClient, GetSecretValueCommand } = require("@aws-sdk/client-secrets-manager");
      const c = new SecretsManagerClient({ region: "us-east-1", credentials: ${JSON.stringify(AWS)}, maxAttempts: 1 });
      c.send(new GetSecretValueCommand({ SecretId: "prod/stripe" })).then((r) => console.log(r.SecretString), (e) => { console.error(e); process.exit(1); });`);
    expect(sdk).toBe(VALUES.aws);
    expect(await read(stores.aws, "aws-sm://us-east-1/prod/stripe")).toBe(VALUES.aws);
    const calls = fake.calls.slice(before);
    expect(calls.map((c) => [c.host, c.auth, c.status])).toEqual([
      ["secretsmanager.us-east-1.amazonaws.com", "sigv4", 200],
      ["secretsmanager.us-east-1.amazonaws.com", "sigv4", 200],
    ]);
  });

  test("Google: accessSecretVersion (REST fallback, a self-signed JWT) and gcp-sm:// (a token minted at the token_uri)", async () => {
    const before = fake.calls.length;
    const sdk = await node(`
      const { SecretManagerServiceClient } = require("@google-cloud/secret-manager");
      const c = new SecretManagerServiceClient({ fallback: true, credentials: ${JSON.stringify({ client_email: EMAIL, private_key: SA_KEY.private_key })}, projectId: "stores-demo" });
      c.accessSecretVersion({ name: "projects/stores-demo/secrets/github-token/versions/latest" }).then(([v]) => console.log(Buffer.from(v.payload.data).toString()), (e) => { console.error(e); process.exit(1); });`);
    expect(sdk).toBe(VALUES.gcp);
    expect(await read(stores.gcp, "gcp-sm://projects/stores-demo/secrets/github-token")).toBe(VALUES.gcp);
    expect(await read(stores.gcp, "gcp-sm://projects/stores-demo/secrets/github-token/versions/1")).toBe("ghp_old_version");
    const calls = fake.calls.slice(before).filter((c) => c.host === "secretmanager.googleapis.com");
    expect(calls.map((c) => [c.auth, c.status])).toEqual([
      ["self-signed", 200],
      ["minted", 200],
      ["minted", 200],
    ]);
    // One token for both reads, minted with the service account's assertion for cloud-platform.
    expect(fake.mints.filter((m) => m.issuer === "google").map((m) => m.scope)).toEqual(["https://www.googleapis.com/auth/cloud-platform"]);
  });

  test("Azure: SecretClient.getSecret (challenge first, then a token) and azure-kv:// (the token sent at once, api-version 7.4)", async () => {
    const before = fake.calls.length;
    const sdk = await node(`
      const { ClientSecretCredential } = require("@azure/identity");
      const { SecretClient } = require("@azure/keyvault-secrets");
      const cred = new ClientSecretCredential(${JSON.stringify(AZURE.tenantId)}, ${JSON.stringify(AZURE.clientId)}, ${JSON.stringify(AZURE.clientSecret)}, { authorityHost: "https://login.microsoftonline.com", disableInstanceDiscovery: true });
      new SecretClient("https://prodvault.vault.azure.net", cred).getSecret("slack-bot").then((s) => console.log(s.value), (e) => { console.error(e); process.exit(1); });`);
    expect(sdk).toBe(VALUES.azure);
    expect(await read(stores.azure, "azure-kv://prodvault/slack-bot")).toBe(VALUES.azure);
    const calls = fake.calls.slice(before).filter((c) => c.host === "prodvault.vault.azure.net");
    expect(calls.map((c) => [c.auth, c.status])).toEqual([
      ["none", 401],
      ["minted", 200],
      ["minted", 200],
    ]);
    expect(calls[2]!.path).toBe("/secrets/slack-bot?api-version=7.4");
    expect(fake.mints.filter((m) => m.issuer === "azure").length).toBe(2);
  });
});
