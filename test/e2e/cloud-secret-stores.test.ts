// Secrets whose values live in AWS Secrets Manager, Google Secret Manager and Azure Key Vault, through the real
// binary (docs/secret-stores.md): the stores are the fakes of test/support/fakeSecretStores.ts (SigV4 verified with
// the real key, Google's JWT-bearer assertion verified with the service account's public key, Azure's client
// credentials, a bearer at each store), reached over credgate's egress path (CREDGATE_CONNECT_TO,
// CREDGATE_UPSTREAM_CA_FILE); curl sends an agent's request through the gateway to a real TLS upstream, which receives
// the store's value. A wrong identity, a missing secret or an outage past the cache time → 502 credential_unavailable
// naming the secret and never the store's answer, nothing forwarded; POST /v1/secrets/{id}/test reads once; a store
// without credentials is refused when the secret is written. SQLite only: the store values live in memory, not the database.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeAws, type FakeAws } from "../support/fakeAws.ts";
import { GOOGLE_TOKEN_URI } from "../support/fakeClouds.ts";
import { SECRET_STORE_HOSTS, startFakeSecretStores, STORE_ANSWER_CANARY, type FakeSecretStores } from "../support/fakeSecretStores.ts";
import { gatewayCa, resolveEntries, run, until } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.stores.test";
const AWS = { accessKeyId: "AKIAE2ESTORES0000001", secretAccessKey: "e2e/secret+access/key0123456789abcdefgh" };
const EMAIL = "credgate-e2e@stores-e2e.iam.gserviceaccount.com";
const AZURE = { tenantId: "3c1a2b44-5d6e-4f70-8a9b-0c1d2e3f4a5b", clientId: "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a", clientSecret: "Q~e2e.store-client~secret0123" };
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const saKey = (pem: string) => JSON.stringify({ type: "service_account", project_id: "stores-e2e", private_key_id: "e2e-1", private_key: pem, client_email: EMAIL, client_id: "1", token_uri: GOOGLE_TOKEN_URI });
const VALUES = {
  aws: `sk_aws_${crypto.randomUUID().replace(/-/g, "")}`,
  gcp: `ghp_gcp_${crypto.randomUUID().replace(/-/g, "")}`,
  azure: `xoxb-azure-${crypto.randomUUID().replace(/-/g, "")}`,
};
const CACHE_SECONDS = 6;
/** An AWS key for S3 kept in Secrets Manager (the awsSigV4 variant signs with it), distinct from credgate's own. */
const S3_KEY = { accessKeyId: "AKIAS3KEYINSTORE0001", secretAccessKey: `s3/${crypto.randomUUID()}` };
const S3_HOST = "s3.us-east-1.amazonaws.com";

let pki: TestPki;
let fake: FakeSecretStores;
let s3: FakeAws;
let up: TestUpstream;
let good: RunningCredgate;
let wrong: RunningCredgate;
let bare: RunningCredgate;
const caFiles = new Map<RunningCredgate, string>();

beforeAll(async () => {
  pki = makePki([HOST, S3_HOST, ...SECRET_STORE_HOSTS]);
  up = startUpstream(pki);
  s3 = startFakeAws(pki, S3_KEY);
  s3.objects.set("reports/q3.txt", new TextEncoder().encode("quarterly numbers: 42\n"));
  fake = startFakeSecretStores(pki, { aws: AWS, gcp: { email: EMAIL, publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString() }, azure: AZURE });
  fake.aws.set("prod/stripe", { string: VALUES.aws });
  fake.aws.set("prod/db", { string: JSON.stringify({ username: "app", password: VALUES.aws }) });
  fake.aws.set("ci/s3", { string: JSON.stringify({ access_key_id: S3_KEY.accessKeyId, secret_access_key: S3_KEY.secretAccessKey }) });
  fake.google.set("stores-e2e/github-token", [VALUES.gcp]);
  fake.azure.set("prodvault/slack-bot", VALUES.azure);
  for (const s of ["outage-aws", "outage-gcp", "outage-azure"]) {
    fake.aws.set(s, { string: VALUES.aws });
    fake.google.set(`stores-e2e/${s}`, [VALUES.gcp]);
    fake.azure.set(`prodvault/${s}`, VALUES.azure);
  }
  const dir = tempDir();
  writeFileSync(join(dir, "sa.json"), saKey(privateKey.export({ type: "pkcs8", format: "pem" }).toString()));
  const stranger = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  writeFileSync(join(dir, "stranger-sa.json"), saKey(stranger));
  const env = {
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_RESOLVE: resolveEntries([HOST], up.port),
    CREDGATE_CONNECT_TO: [...SECRET_STORE_HOSTS.map((h) => `${h}:443:127.0.0.1:${fake.port}`), `${S3_HOST}:443:127.0.0.1:${s3.port}`].join(","),
    CREDGATE_STORE_CACHE_SECONDS: String(CACHE_SECONDS),
  };
  [good, wrong, bare] = await Promise.all([
    startCredgate({
      env: {
        ...env,
        CREDGATE_AWS_ACCESS_KEY_ID: AWS.accessKeyId,
        CREDGATE_AWS_SECRET_ACCESS_KEY: AWS.secretAccessKey,
        CREDGATE_GCP_SERVICE_ACCOUNT_FILE: join(dir, "sa.json"),
        CREDGATE_AZURE_TENANT_ID: AZURE.tenantId,
        CREDGATE_AZURE_CLIENT_ID: AZURE.clientId,
        CREDGATE_AZURE_CLIENT_SECRET: AZURE.clientSecret,
      },
    }),
    startCredgate({
      env: {
        ...env,
        CREDGATE_AWS_ACCESS_KEY_ID: AWS.accessKeyId,
        CREDGATE_AWS_SECRET_ACCESS_KEY: "not-the-secret-access-key",
        CREDGATE_GCP_SERVICE_ACCOUNT_FILE: join(dir, "stranger-sa.json"),
        CREDGATE_AZURE_TENANT_ID: AZURE.tenantId,
        CREDGATE_AZURE_CLIENT_ID: AZURE.clientId,
        CREDGATE_AZURE_CLIENT_SECRET: "not-the-client-secret",
      },
    }),
    // Half an AWS identity is no identity: not configured.
    startCredgate({ env: { ...env, CREDGATE_AWS_ACCESS_KEY_ID: AWS.accessKeyId } }),
  ]);
  for (const cg of [good, wrong, bare]) caFiles.set(cg, (await gatewayCa(cg)).file);
}, 90_000);

afterAll(async () => {
  await Promise.all([good?.stop(), wrong?.stop(), bare?.stop()]);
  await up?.stop();
  await s3?.stop();
  await fake?.stop();
});

async function storeSecret(on: RunningCredgate, name: string, storeRef: string): Promise<{ status: number; id: string; body: Record<string, unknown> }> {
  const r = await on.api("POST", "/v1/secrets", {
    body: { name, type: "generic", valueSource: "vault", storeRef, hostPattern: HOST, pathPattern: `/${name}/*`, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
  });
  return { status: r.status, id: r.body?.id, body: r.body };
}

/** curl through the gateway (CONNECT + MITM) as the default agent. */
async function curl(on: RunningCredgate, path: string): Promise<{ status: number; body: string }> {
  const proxy = `http://x:${on.keys.defaultAgentToken}@127.0.0.1:${on.gatewayPort}`;
  const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", caFiles.get(on)!, "-H", "Authorization: Bearer credgate-managed", "-w", "\n%{http_code}", `https://${HOST}:${up.port}${path}`]);
  expect(r.code).toBe(0);
  const cut = r.stdout.lastIndexOf("\n");
  return { status: Number(r.stdout.slice(cut + 1)), body: r.stdout.slice(0, cut) };
}

const seenAt = (path: string) => up.seen.filter((s) => s.url === path);

/** The agent's 502: credential_unavailable naming the secret, nothing of the store's answer or a value; nothing forwarded. */
function expectUnavailable(r: { status: number; body: string }, secretName: string, path: string): void {
  expect(r.status).toBe(502);
  const body = JSON.parse(r.body);
  expect(body).toMatchObject({ error: "credential_unavailable", secret_name: secretName });
  expect(body.message).toStartWith(`credgate could not obtain the credential for ${HOST}`);
  for (const leak of [STORE_ANSWER_CANARY, VALUES.aws, VALUES.gcp, VALUES.azure]) expect(r.body).not.toContain(leak);
  expect(seenAt(path)).toHaveLength(0);
}

const CASES = [
  { store: "AWS Secrets Manager", name: "aws", ref: "aws-sm://us-east-1/prod/stripe", value: () => VALUES.aws, host: "secretsmanager.us-east-1.amazonaws.com" },
  { store: "AWS Secrets Manager (#field)", name: "awsfield", ref: "aws-sm://us-east-1/prod/db#password", value: () => VALUES.aws, host: "secretsmanager.us-east-1.amazonaws.com" },
  { store: "Google Secret Manager", name: "gcp", ref: "gcp-sm://projects/stores-e2e/secrets/github-token", value: () => VALUES.gcp, host: "secretmanager.googleapis.com" },
  { store: "Azure Key Vault", name: "azure", ref: "azure-kv://prodvault/slack-bot", value: () => VALUES.azure, host: "prodvault.vault.azure.net" },
];

describe("the value is read from the store and injected; the store is asked once within the cache time", () => {
  for (const c of CASES) {
    test(c.store, async () => {
      const created = await storeSecret(good, c.name, c.ref);
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ valueSource: "vault", storeRef: c.ref });
      expect(JSON.stringify(created.body)).not.toContain(c.value());
      const before = fake.calls.filter((x) => x.host === c.host).length;
      const first = await curl(good, `/${c.name}/1`);
      expect(first.status).toBe(200);
      expect(seenAt(`/${c.name}/1`)[0]!.headers.authorization).toBe(`Bearer ${c.value()}`);
      const second = await curl(good, `/${c.name}/2`);
      expect(second.status).toBe(200);
      expect(seenAt(`/${c.name}/2`)[0]!.headers.authorization).toBe(`Bearer ${c.value()}`);
      const calls = fake.calls.filter((x) => x.host === c.host).slice(before);
      expect(calls.map((x) => [x.auth, x.status])).toEqual([[c.host.startsWith("secretsmanager") ? "sigv4" : "minted", 200]]);
      const tested = await good.api("POST", `/v1/secrets/${created.id}/test`);
      expect(tested.status).toBe(200);
      expect(tested.body).toEqual({ ok: true, message: `Read a value of ${c.value().length} characters from the store.` });
      // The test read bypasses the cache.
      expect(fake.calls.filter((x) => x.host === c.host).length).toBe(before + 2);
    });
  }
});

describe("a store value feeds the signing variants", () => {
  test("an awsSigV4 secret whose secret key is a field of an AWS Secrets Manager secret: the agent's S3 request is signed with it", async () => {
    const created = await good.api("POST", "/v1/secrets", {
      body: { name: "s3-from-store", type: "generic", valueSource: "vault", storeRef: "aws-sm://us-east-1/ci/s3#secret_access_key", hostPattern: S3_HOST, injectionConfig: { awsSigV4: { accessKeyId: S3_KEY.accessKeyId } } },
    });
    expect(created.status).toBe(201);
    const proxy = `http://x:${good.keys.defaultAgentToken}@127.0.0.1:${good.gatewayPort}`;
    const before = s3.seen.length;
    const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", caFiles.get(good)!, "-H", "Authorization: AWS4-HMAC-SHA256 Credential=AKIAPLACEHOLDER/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00", `https://${S3_HOST}/reports/q3.txt`]);
    expect(r.stdout).toBe("quarterly numbers: 42\n");
    const seen = s3.seen.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ keyId: S3_KEY.accessKeyId, service: "s3", region: "us-east-1", failure: null });
  });
});

describe("failures → 502 credential_unavailable naming the secret, never the store's answer", () => {
  test("wrong credentials at each store: the agent's 502, and the test endpoint says who refused", async () => {
    const expected: Record<string, string> = {
      aws: "AWS refused credgate's AWS credentials (InvalidSignatureException)",
      gcp: "Google answered 400: invalid_grant for credgate's own identity",
      azure: "Azure AD answered 401: invalid_client for credgate's own identity",
    };
    for (const c of CASES.filter((x) => x.name !== "awsfield")) {
      const created = await storeSecret(wrong, `wrong-${c.name}`, c.ref);
      expect(created.status).toBe(201);
      expectUnavailable(await curl(wrong, `/wrong-${c.name}/1`), `wrong-${c.name}`, `/wrong-${c.name}/1`);
      const tested = await wrong.api("POST", `/v1/secrets/${created.id}/test`);
      expect(tested.status).toBe(200);
      expect(tested.body).toEqual({ ok: false, message: expected[c.name] });
      expect(tested.text).not.toContain(STORE_ANSWER_CANARY);
    }
  });

  test("a secret the store does not have: 502 for the agent, the test endpoint names what is missing", async () => {
    const missing = [
      { name: "missing-aws", ref: "aws-sm://eu-west-1/prod/absent", message: 'AWS Secrets Manager has no secret "prod/absent" in eu-west-1' },
      { name: "missing-field", ref: "aws-sm://us-east-1/prod/db#token", message: 'AWS secret "prod/db" has no field "token"' },
      { name: "missing-gcp", ref: "gcp-sm://projects/stores-e2e/secrets/absent/versions/3", message: "Google Secret Manager has no projects/stores-e2e/secrets/absent/versions/3" },
      { name: "missing-azure", ref: "azure-kv://othervault/absent", message: "Azure Key Vault has no secret absent in Key Vault othervault (SecretNotFound)" },
    ];
    for (const m of missing) {
      const created = await storeSecret(good, m.name, m.ref);
      expect(created.status).toBe(201);
      expectUnavailable(await curl(good, `/${m.name}/1`), m.name, `/${m.name}/1`);
      const tested = await good.api("POST", `/v1/secrets/${created.id}/test`);
      expect(tested.body).toEqual({ ok: false, message: m.message });
    }
  });

  test("an outage within the cache time is invisible; past it, 502 until the store is back", async () => {
    const refs = [
      { name: "outage-aws", ref: "aws-sm://us-east-1/outage-aws" },
      { name: "outage-gcp", ref: "gcp-sm://projects/stores-e2e/secrets/outage-gcp" },
      { name: "outage-azure", ref: "azure-kv://prodvault/outage-azure" },
    ];
    for (const r of refs) expect((await storeSecret(good, r.name, r.ref)).status).toBe(201);
    for (const r of refs) expect((await curl(good, `/${r.name}/warm`)).status).toBe(200);
    fake.outage = true;
    try {
      for (const r of refs) expect((await curl(good, `/${r.name}/cached`)).status).toBe(200);
      for (const r of refs) {
        const failed = await until(
          async () => {
            const path = `/${r.name}/down-${crypto.randomUUID()}`;
            const answer = await curl(good, path);
            if (answer.status !== 502) throw new Error(`${r.name}: still ${answer.status}`);
            return { answer, path };
          },
          (CACHE_SECONDS + 10) * 1000,
          500,
        );
        expectUnavailable(failed.answer, r.name, failed.path);
      }
    } finally {
      fake.outage = false;
    }
    for (const r of refs) {
      await until(async () => {
        const answer = await curl(good, `/${r.name}/back-${crypto.randomUUID()}`);
        if (answer.status !== 200) throw new Error(`${r.name}: still ${answer.status}`);
      }, 15_000, 500);
    }
  });
});

describe("a store without credgate's credentials is refused when the secret is written", () => {
  test("400 <store> is not configured, for each of the three (AWS with only an access key id)", async () => {
    for (const [ref, message] of [
      ["aws-sm://us-east-1/prod/stripe", "AWS Secrets Manager is not configured"],
      ["gcp-sm://projects/stores-e2e/secrets/github-token", "Google Secret Manager is not configured"],
      ["azure-kv://prodvault/slack-bot", "Azure Key Vault is not configured"],
    ] as const) {
      const r = await storeSecret(bare, `bare-${ref.slice(0, 3)}`, ref);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error: message });
    }
  });

  test("a reference of the wrong shape: 400 naming the scheme's form", async () => {
    const r = await storeSecret(good, "bad-shape", "gcp-sm://stores-e2e/github-token");
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: "storeRef must look like gcp-sm://projects/<project>/secrets/<secret>[/versions/<version>]" });
  });
});

describe("logs", () => {
  test("no value, credential, token or store answer in any process's output; the failures are logged by reason", () => {
    const minted = fake.mints.map((m) => m.token);
    expect(minted.length).toBeGreaterThan(0);
    for (const cg of [good, wrong, bare]) {
      const out = cg.output();
      for (const leak of [STORE_ANSWER_CANARY, VALUES.aws, VALUES.gcp, VALUES.azure, AWS.secretAccessKey, AZURE.clientSecret, ...minted]) expect(out).not.toContain(leak);
    }
    expect(good.output()).toContain('"reason":"not_found"');
    expect(wrong.output()).toContain('"reason":"credentials_refused"');
    expect(wrong.output()).toContain('"reason":"token_refused"');
  });
});
