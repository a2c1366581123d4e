// Variants that take a value, fed from a secret store (docs/injection.md#secret-stores): through the real process,
// an AWS secret access key read by a `cmd://` reference re-signs an agent's placeholder SigV4 request (a fake AWS of
// our own verifies the signature with the real key), and a database password read by one logs the broker in to
// Debian's PostgreSQL as the real user (node `pg` as the agent, holding only its agent token).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import pg from "pg";
import { startBroker, type Broker } from "../support/databaseBroker.ts";
import { databaseServer } from "../support/databaseServer.ts";
import { startFakeAws, type FakeAws } from "../support/fakeAws.ts";
import { gatewayCa, resolveEntries, run } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki } from "../support/upstream.ts";

const REAL = { accessKeyId: "AKIASTOREKEY00000001", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSTORESECRET" };
const PLACEHOLDER_KEY_ID = "AKIAPLACEHOLDER00000";
const S3 = "s3.us-east-1.amazonaws.com";

let cg: RunningCredgate;
let aws: FakeAws;
let broker: Broker;

beforeAll(async () => {
  const pki = makePki([S3]);
  aws = startFakeAws(pki, REAL);
  const db = await databaseServer();
  [cg, broker] = await Promise.all([
    startCredgate({
      env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([S3], aws.port), CREDGATE_SECRET_COMMANDS: JSON.stringify({ aws: ["printf", "%s", REAL.secretAccessKey] }) },
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
});
