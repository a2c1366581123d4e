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
import { createTestApi } from "../support/app.ts";
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

describe("the fakes' refusals read as the official clients expect them", () => {
  test("a missing secret: the SDKs' own error types and codes", async () => {
    const aws = await node(`
      const { SecretsManagerClient, GetSecretValueCommand } = require("@aws-sdk/client-secrets-manager");
      const c = new SecretsManagerClient({ region: "eu-west-1", credentials: ${JSON.stringify(AWS)}, maxAttempts: 1 });
      c.send(new GetSecretValueCommand({ SecretId: "prod/none" })).then(() => process.exit(1), (e) => console.log(e.name, e.$metadata.httpStatusCode));`);
    expect(aws).toBe("ResourceNotFoundException 400");
    const google = await node(`
      const { SecretManagerServiceClient } = require("@google-cloud/secret-manager");
      const c = new SecretManagerServiceClient({ fallback: true, credentials: ${JSON.stringify({ client_email: EMAIL, private_key: SA_KEY.private_key })}, projectId: "stores-demo" });
      c.accessSecretVersion({ name: "projects/stores-demo/secrets/none/versions/latest" }).then(() => process.exit(1), (e) => console.log(e.status, JSON.parse(e.message).error.status));`);
    // This version's REST transport surfaces the HTTP status and Google's error body as the message.
    expect(google).toBe("404 NOT_FOUND");
    const azure = await node(`
      const { ClientSecretCredential } = require("@azure/identity");
      const { SecretClient } = require("@azure/keyvault-secrets");
      const cred = new ClientSecretCredential(${JSON.stringify(AZURE.tenantId)}, ${JSON.stringify(AZURE.clientId)}, ${JSON.stringify(AZURE.clientSecret)}, { disableInstanceDiscovery: true });
      new SecretClient("https://prodvault.vault.azure.net", cred).getSecret("none").then(() => process.exit(1), (e) => console.log(e.statusCode, e.code));`);
    expect(azure).toBe("404 SecretNotFound");
  });
});

describe("AWS Secrets Manager", () => {
  test("#field picks a JSON field (a number as written); SecretBinary that is UTF-8 text is the value", async () => {
    expect(await read(stores.aws, "aws-sm://us-east-1/prod/db#password")).toBe(VALUES.aws);
    expect(await read(stores.aws, "aws-sm://us-east-1/prod/db#port")).toBe("5432");
    expect(await read(stores.aws, "aws-sm://us-east-1/prod/binary-text")).toBe(VALUES.aws);
  });

  test("a missing field, a non-string field, an empty field, a non-JSON secret, binary data: each a clear StoreError", async () => {
    expect(await refusal(stores.aws, "aws-sm://us-east-1/prod/db#token")).toMatchObject({ reason: "field_not_found", message: 'AWS secret "prod/db" has no field "token"' });
    expect(await refusal(stores.aws, "aws-sm://us-east-1/prod/db#nested")).toMatchObject({ reason: "field_not_text" });
    expect(await refusal(stores.aws, "aws-sm://us-east-1/prod/db#blank")).toMatchObject({ reason: "empty_value" });
    expect(await refusal(stores.aws, "aws-sm://us-east-1/prod/plain-text#password")).toMatchObject({ reason: "not_json", message: 'AWS secret "prod/plain-text" is not a JSON object, so it has no field "password"' });
    expect(await refusal(stores.aws, "aws-sm://us-east-1/prod/binary-raw")).toMatchObject({ reason: "binary_value" });
  });

  test("AWS's error types: ResourceNotFoundException, AccessDeniedException, a wrong key (signature refused), an outage", async () => {
    expect(await refusal(stores.aws, "aws-sm://eu-west-1/prod/none")).toMatchObject({ reason: "not_found", message: 'AWS Secrets Manager has no secret "prod/none" in eu-west-1' });
    fake.aws.set("prod/denied", { string: VALUES.aws });
    fake.denied.add("prod/denied");
    const denied = await refusal(stores.aws, "aws-sm://us-east-1/prod/denied");
    expect(denied).toMatchObject({ reason: "access_denied" });
    expect(denied.message).not.toContain(VALUES.aws);
    const wrongKey = awsSecretsManagerFrom(context({ CREDGATE_AWS_ACCESS_KEY_ID: AWS.accessKeyId, CREDGATE_AWS_SECRET_ACCESS_KEY: "not-the-secret-key" }))!;
    expect(await refusal(wrongKey, "aws-sm://us-east-1/prod/stripe")).toMatchObject({ reason: "credentials_refused", message: "AWS refused credgate's AWS credentials (InvalidSignatureException)" });
    const unknownKey = awsSecretsManagerFrom(context({ CREDGATE_AWS_ACCESS_KEY_ID: "AKIANOTAKNOWNKEY0000", CREDGATE_AWS_SECRET_ACCESS_KEY: AWS.secretAccessKey }))!;
    expect(await refusal(unknownKey, "aws-sm://us-east-1/prod/stripe")).toMatchObject({ reason: "credentials_refused", message: "AWS refused credgate's AWS credentials (UnrecognizedClientException)" });
    fake.outage = true;
    try {
      expect(await refusal(stores.aws, "aws-sm://us-east-1/prod/stripe")).toMatchObject({ reason: "store_error", message: 'AWS Secrets Manager answered 503 ServiceUnavailable for "prod/stripe"' });
    } finally {
      fake.outage = false;
    }
  });

  test("a store that cannot be reached (nothing listens): StoreError unreachable, naming the host", async () => {
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = closed.port;
    closed.stop(true);
    const config = loadConfig({ dataDir: "/nonexistent", port: 0, gatewayPort: 0, dbPort: 0 }, {
      CREDGATE_CONNECT_TO: `secretsmanager.us-east-1.amazonaws.com:443:127.0.0.1:${port}`,
      CREDGATE_AWS_ACCESS_KEY_ID: AWS.accessKeyId,
      CREDGATE_AWS_SECRET_ACCESS_KEY: AWS.secretAccessKey,
    });
    const outbound = new Outbound(config);
    const down = awsSecretsManagerFrom({ config, fetch: (url, init) => outbound.fetch(url, init as BunFetchRequestInit), now: Date.now })!;
    const e = await refusal(down, "aws-sm://us-east-1/prod/stripe");
    expect(e.reason).toBe("unreachable");
    expect(e.message).toStartWith("AWS Secrets Manager could not be reached (secretsmanager.us-east-1.amazonaws.com)");
  });

  test("not configured without both halves of the key", () => {
    expect(awsSecretsManagerFrom(context({ CREDGATE_AWS_ACCESS_KEY_ID: AWS.accessKeyId }))).toBeNull();
    expect(awsSecretsManagerFrom(context({}))).toBeNull();
  });
});

describe("Google Secret Manager", () => {
  test("the token is kept until 5 minutes before it expires, then minted again; concurrent reads share one mint", async () => {
    const gcp = googleSecretManagerFrom(context({ CREDGATE_GCP_SERVICE_ACCOUNT_FILE: saFile }))!;
    const mints = () => fake.mints.filter((m) => m.issuer === "google").length;
    const before = mints();
    const values = await Promise.all([1, 2, 3, 4].map(() => read(gcp, "gcp-sm://projects/stores-demo/secrets/github-token")));
    expect(values).toEqual([VALUES.gcp, VALUES.gcp, VALUES.gcp, VALUES.gcp]);
    expect(mints()).toBe(before + 1);
    const start = now;
    try {
      now = start + (3599 - 301) * 1000;
      await read(gcp, "gcp-sm://projects/stores-demo/secrets/github-token");
      expect(mints()).toBe(before + 1);
      now = start + (3599 - 299) * 1000;
      await read(gcp, "gcp-sm://projects/stores-demo/secrets/github-token");
      expect(mints()).toBe(before + 2);
    } finally {
      now = start;
    }
  });

  test("a payload whose CRC-32C does not match, a missing secret or version, a denied one: StoreErrors", async () => {
    expect(await refusal(stores.gcp, "gcp-sm://projects/stores-demo/secrets/damaged")).toMatchObject({ reason: "checksum_mismatch" });
    expect(await refusal(stores.gcp, "gcp-sm://projects/stores-demo/secrets/none")).toMatchObject({ reason: "not_found", message: "Google Secret Manager has no projects/stores-demo/secrets/none/versions/latest" });
    expect(await refusal(stores.gcp, "gcp-sm://projects/stores-demo/secrets/github-token/versions/9")).toMatchObject({ reason: "not_found" });
    fake.google.set("stores-demo/denied", [VALUES.gcp]);
    fake.denied.add("stores-demo/denied");
    expect(await refusal(stores.gcp, "gcp-sm://projects/stores-demo/secrets/denied")).toMatchObject({ reason: "access_denied" });
  });

  test("a service account Google does not know (another key), an unreadable or malformed key file: no token, a clear StoreError", async () => {
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const otherFile = join(tempDir(), "other-sa.json");
    writeFileSync(otherFile, JSON.stringify({ ...SA_KEY, private_key: other }));
    const refused = await refusal(googleSecretManagerFrom(context({ CREDGATE_GCP_SERVICE_ACCOUNT_FILE: otherFile }))!, "gcp-sm://projects/stores-demo/secrets/github-token");
    expect(refused).toMatchObject({ reason: "token_refused", message: "Google answered 400: invalid_grant for credgate's own identity" });
    expect(fake.refusedMints).toContain("bad signature");
    const missing = await refusal(googleSecretManagerFrom(context({ CREDGATE_GCP_SERVICE_ACCOUNT_FILE: join(tempDir(), "absent.json") }))!, "gcp-sm://projects/stores-demo/secrets/github-token");
    expect(missing).toMatchObject({ reason: "service_account_file", message: "CREDGATE_GCP_SERVICE_ACCOUNT_FILE could not be read (ENOENT)" });
    const notKeyFile = join(tempDir(), "not-a-key.json");
    writeFileSync(notKeyFile, JSON.stringify({ type: "authorized_user", client_secret: "x" }));
    expect(await refusal(googleSecretManagerFrom(context({ CREDGATE_GCP_SERVICE_ACCOUNT_FILE: notKeyFile }))!, "gcp-sm://projects/stores-demo/secrets/github-token")).toMatchObject({
      reason: "service_account_file",
      message: "CREDGATE_GCP_SERVICE_ACCOUNT_FILE is not a Google service-account JSON key",
    });
  });
});

describe("Azure Key Vault", () => {
  test("a missing secret, a denied one, a vault in another tenant (its challenge), an outage: StoreErrors without Key Vault's messages", async () => {
    expect(await refusal(stores.azure, "azure-kv://prodvault/none")).toMatchObject({ reason: "not_found", message: "Azure Key Vault has no secret none in Key Vault prodvault (SecretNotFound)" });
    fake.azure.set("prodvault/denied", VALUES.azure);
    fake.denied.add("prodvault/denied");
    expect(await refusal(stores.azure, "azure-kv://prodvault/denied")).toMatchObject({ reason: "access_denied", message: "Azure Key Vault denied credgate's Azure identity access to secret denied in Key Vault prodvault (ForbiddenByRbac)" });
    fake.outage = true;
    try {
      expect(await refusal(stores.azure, "azure-kv://prodvault/slack-bot")).toMatchObject({ reason: "store_error", message: "Azure Key Vault answered 503 ServiceUnavailable for secret slack-bot in Key Vault prodvault" });
    } finally {
      fake.outage = false;
    }
  });

  test("a wrong client secret: Azure AD refuses the token; a name that is not a vault name never reaches a URL", async () => {
    const wrong = azureKeyVaultFrom(context({ CREDGATE_AZURE_TENANT_ID: AZURE.tenantId, CREDGATE_AZURE_CLIENT_ID: AZURE.clientId, CREDGATE_AZURE_CLIENT_SECRET: "wrong" }))!;
    expect(await refusal(wrong, "azure-kv://prodvault/slack-bot")).toMatchObject({ reason: "token_refused", message: "Azure AD answered 401: invalid_client for credgate's own identity" });
    const before = fake.calls.length;
    // Refused when written (core/storeRefs.ts); a reference stored before that rule is refused again at read time.
    const bad: [string, string][] = [["evil.example?x", "slack-bot"], ["a", "slack-bot"], ["prod--vault", "slack-bot"], ["prodvault", "slack_bot"]];
    for (const [vault, secret] of bad) {
      expect(parseStoreRef(`azure-kv://${vault}/${secret}`)).toStartWith("storeRef's Key Vault ");
      const stored = stores.azure.read({ kind: "azure-kv", vault, secret }, AbortSignal.timeout(10_000)).then(() => null, (e: unknown) => e);
      expect(((await stored) as StoreError).reason).toBe("bad_reference");
    }
    expect(fake.calls.length).toBe(before);
  });

  test("a token Key Vault refuses (401) is dropped: the next read mints a new one", async () => {
    const azure = azureKeyVaultFrom(context({ CREDGATE_AZURE_TENANT_ID: AZURE.tenantId, CREDGATE_AZURE_CLIENT_ID: AZURE.clientId, CREDGATE_AZURE_CLIENT_SECRET: AZURE.clientSecret }))!;
    const mints = () => fake.mints.filter((m) => m.issuer === "azure");
    expect(await read(azure, "azure-kv://prodvault/slack-bot")).toBe(VALUES.azure);
    const first = mints().at(-1)!;
    expect(await read(azure, "azure-kv://prodvault/slack-bot")).toBe(VALUES.azure);
    expect(mints().at(-1)).toBe(first);
    fake.revoke(first.token);
    expect(await refusal(azure, "azure-kv://prodvault/slack-bot")).toMatchObject({ reason: "credentials_refused" });
    expect(await read(azure, "azure-kv://prodvault/slack-bot")).toBe(VALUES.azure);
    expect(mints().at(-1)).not.toBe(first);
  });
});

describe("the stores' outbound path in cloud mode (services.stores, the real egress guard)", () => {
  test("a store reached at a loopback address is refused before any request, unless CREDGATE_EGRESS_ALLOW covers it", async () => {
    const env = {
      CREDGATE_MODE: "cloud",
      CREDGATE_CONNECT_TO: connectTo,
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_AWS_ACCESS_KEY_ID: AWS.accessKeyId,
      CREDGATE_AWS_SECRET_ACCESS_KEY: AWS.secretAccessKey,
      CREDGATE_AZURE_TENANT_ID: AZURE.tenantId,
      CREDGATE_AZURE_CLIENT_ID: AZURE.clientId,
      CREDGATE_AZURE_CLIENT_SECRET: AZURE.clientSecret,
    };
    const before = fake.calls.length;
    const mints = fake.mints.length;
    const guarded = await createTestApi(env);
    expect(await guarded.core.services.stores.test("aws-sm://us-east-1/prod/stripe")).toEqual({
      ok: false,
      message: "credgate does not connect to 127.0.0.1 (secretsmanager.us-east-1.amazonaws.com): the destination is an internal or reserved address (CREDGATE_EGRESS_ALLOW)",
    });
    // Azure's token endpoint is judged too: credgate's client secret never leaves for a denied address.
    expect(await guarded.core.services.stores.test("azure-kv://prodvault/slack-bot")).toEqual({
      ok: false,
      message: "credgate does not connect to 127.0.0.1 (login.microsoftonline.com): the destination is an internal or reserved address (CREDGATE_EGRESS_ALLOW)",
    });
    expect(fake.calls.length).toBe(before);
    expect(fake.mints.length).toBe(mints);
    const allowed = await createTestApi({ ...env, CREDGATE_EGRESS_ALLOW: "127.0.0.1/32" });
    expect(await allowed.core.services.stores.test("aws-sm://us-east-1/prod/stripe")).toEqual({ ok: true, message: `Read a value of ${VALUES.aws.length} characters from the store.` });
  });
});
