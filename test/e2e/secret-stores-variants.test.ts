// Variants that take a value, fed from a secret store (docs/injection.md#secret-stores): through the real process,
// an AWS secret access key read by a `cmd://` reference re-signs an agent's placeholder SigV4 request (a fake AWS of
// our own verifies the signature with the real key), and a database password read by one logs the broker in to
// Debian's PostgreSQL as the real user (node `pg` as the agent, holding only its agent token); and a Google
// service-account key read by one names its real account and project on the GCE metadata server, as
// google-auth-library reads them (the first ask reads the store, the next ones the cache).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { startBroker, type Broker } from "../support/databaseBroker.ts";
import { databaseServer } from "../support/databaseServer.ts";
import { startFakeAws, type FakeAws } from "../support/fakeAws.ts";
import { gatewayCa, resolveEntries, run } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki } from "../support/upstream.ts";
import { tempDir } from "../support/tmp.ts";

const REAL = { accessKeyId: "AKIASTOREKEY00000001", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSTORESECRET" };
const PLACEHOLDER_KEY_ID = "AKIAPLACEHOLDER00000";
const S3 = "s3.us-east-1.amazonaws.com";
const GCP_EMAIL = "stored-robot@stored-project.iam.gserviceaccount.com";
const GCP_KEY = JSON.stringify({
  type: "service_account",
  project_id: "stored-project",
  private_key_id: "k-stored-1",
  private_key: generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  client_email: GCP_EMAIL,
  client_id: "1",
  token_uri: "https://oauth2.googleapis.com/token",
});

let cg: RunningCredgate;
let aws: FakeAws;
let broker: Broker;

beforeAll(async () => {
  const pki = makePki([S3]);
  aws = startFakeAws(pki, REAL);
  const db = await databaseServer();
  const keyFile = join(tempDir(), "gcp-key.json");
  writeFileSync(keyFile, GCP_KEY);
  [cg, broker] = await Promise.all([
    startCredgate({
      env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([S3], aws.port), CREDGATE_SECRET_COMMANDS: JSON.stringify({ aws: ["printf", "%s", REAL.secretAccessKey], gcpkey: ["cat", keyFile] }) },
    }),
    startBroker({ db, env: { CREDGATE_SECRET_COMMANDS: JSON.stringify({ pg: ["printf", "%s\\n", db.users.scram.password] }) } }),
  ]);
}, 60_000);

afterAll(async () => {
  await cg?.stop();
  await broker?.stop();
  await aws?.stop();
});

describe("a store value in the variants that take one", () => {
  test("AWS Signature V4: the key read by cmd:// signs the agent's request again; the fake AWS verifies it", async () => {
    const created = await cg.api("POST", "/v1/secrets", {
      body: { name: "aws from store", type: "generic", valueSource: "vault", storeRef: "cmd://aws", hostPattern: "*.amazonaws.com", injectionConfig: { awsSigV4: { accessKeyId: REAL.accessKeyId } } },
    });
    expect(created.status).toBe(201);
    const ca = await gatewayCa(cg);
    const now = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
    const from = aws.seen.length;
    const r = await run([
      "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`, "--cacert", ca.file, "-X", "PUT", "--data-binary", "from a store",
      "-H", `authorization: AWS4-HMAC-SHA256 Credential=${PLACEHOLDER_KEY_ID}/${now.slice(0, 8)}/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${"a".repeat(64)}`,
      "-H", `x-amz-date: ${now}`, "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", `https://${S3}:${aws.port}/b1/store/object.txt`,
    ]);
    expect(r.stdout).toBe("200");
    const seen = aws.seen[from]!;
    expect({ failure: seen.failure, keyId: seen.keyId }).toEqual({ failure: null, keyId: REAL.accessKeyId });
    expect(cg.output()).not.toContain(REAL.secretAccessKey);
  });

  test("a database password read by cmd:// (trailing newline trimmed) logs the broker in as the real user", async () => {
    const created = await broker.cg.api("POST", "/v1/secrets", {
      body: {
        name: "orders",
        type: "generic",
        valueSource: "vault",
        storeRef: "cmd://pg",
        hostPattern: broker.db.host,
        injectionConfig: { database: { engine: "postgresql", user: broker.db.users.scram.name, port: broker.db.port } },
      },
    });
    expect(created.status).toBe(201);
    const client = new pg.Client(broker.pgConfig("orders"));
    await client.connect();
    try {
      const { rows } = await client.query("SELECT current_user AS who");
      expect(rows).toEqual([{ who: broker.db.users.scram.name }]);
    } finally {
      await client.end();
    }
  });

  test("a Google service-account key read by cmd://: the GCE metadata server names its real account and project to google-auth-library", async () => {
    const created = await cg.api("POST", "/v1/secrets", { body: { name: "gcp from store", type: "generic", valueSource: "vault", storeRef: "cmd://gcpkey", injectionConfig: { gcpServiceAccount: {} } } });
    expect(created.status).toBe(201);
    const proxy = `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`;
    const script = `
      const { GoogleAuth } = require("google-auth-library");
      (async () => {
        const auth = new GoogleAuth({ scopes: ["https://www.googleapis.com/auth/cloud-platform"] });
        const client = await auth.getClient();
        const project = await auth.getProjectId();
        const creds = await auth.getCredentials();
        console.log(JSON.stringify({ kind: client.constructor.name, project, email: creds.client_email }));
      })().catch((e) => { console.error(e.message); process.exit(1); });`;
    const env = { HTTP_PROXY: proxy, HTTPS_PROXY: proxy, NO_PROXY: "", GCE_METADATA_HOST: "metadata.google.internal", GOOGLE_APPLICATION_CREDENTIALS: undefined, GOOGLE_CLOUD_PROJECT: undefined };
    // The first asks read the key from the store; the second run's are answered from the cache.
    for (let i = 0; i < 2; i++) {
      const r = await run(["node", "-e", script], { env, timeoutMs: 60_000 });
      expect(r.stderr).toBe("");
      expect(JSON.parse(r.stdout)).toEqual({ kind: "Compute", project: "stored-project", email: GCP_EMAIL });
    }
    expect(cg.output().split("\n").filter((l) => l.includes("secret store reference resolved") && l.includes("cmd://gcpkey")).length).toBe(1);
    expect(cg.output()).not.toContain("k-stored-1");
  }, 90_000);
});
