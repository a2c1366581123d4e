// AWS Signature V4 through the real binary (docs/injection.md#aws-signature-v4): agents run the AWS SDK for
// JavaScript, boto3, the aws CLI and curl with placeholder credentials; a fake AWS endpoint of our own verifies
// every signature (header, presigned, each chunk of a signed chunked upload, the trailer) with the real key, so
// a request reaches its S3/STS logic only when credgate re-signed it correctly. The placeholder key id must
// never arrive.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki } from "../support/upstream.ts";
import { gatewayCa, resolveEntries, run, startRawUpstream, untilTrue, type RawUpstream } from "../support/gateway.ts";
import { startFakeAws, type FakeAws } from "../support/fakeAws.ts";
import { tempDir } from "../support/tmp.ts";

const REAL = { accessKeyId: "AKIAREALKEY000000001", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYREALSECRET" };
const PLACEHOLDER_KEY_ID = "AKIAPLACEHOLDER00000";
const HOSTS = ["s3.us-east-1.amazonaws.com", "s3.eu-west-1.amazonaws.com", "photos.s3.eu-west-1.amazonaws.com", "sts.amazonaws.com", "s3.amazonaws.com", "custom.example.test"];
/** An origin that answers with raw bytes: it puts the signature it received in its reason phrase. */
const REFLECTOR = "reflector.s3.us-west-2.amazonaws.com";

let cg: RunningCredgate;
let aws: FakeAws;
let reflector: RawUpstream;
let upstreamCaFile = "";
let ca: { file: string };
let proxy: string;

beforeAll(async () => {
  const pki = makePki([...HOSTS, REFLECTOR]);
  upstreamCaFile = pki.caFile;
  aws = startFakeAws(pki, REAL);
  reflector = await startRawUpstream(pki);
  cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: `${resolveEntries(HOSTS, aws.port)},${resolveEntries([REFLECTOR], reflector.port)}` } });
  ca = await gatewayCa(cg);
  proxy = `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`;
  const created = await cg.api("POST", "/v1/secrets", {
    body: { name: "aws", type: "generic", value: REAL.secretAccessKey, hostPattern: "*.amazonaws.com", injectionConfig: { awsSigV4: { accessKeyId: REAL.accessKeyId } } },
  });
  expect(created.status).toBe(201);
  // A host AWS does not name: region and service come from the secret.
  const custom = await cg.api("POST", "/v1/secrets", {
    body: { name: "aws custom", type: "generic", value: REAL.secretAccessKey, hostPattern: "custom.example.test", injectionConfig: { awsSigV4: { accessKeyId: REAL.accessKeyId, region: "eu-central-1", service: "s3" } } },
  });
  expect(custom.status).toBe(201);
}, 30_000);

afterAll(async () => {
  await cg?.stop();
  await aws?.stop();
  reflector?.close();
});

const agentEnv = () => ({
  AWS_ACCESS_KEY_ID: PLACEHOLDER_KEY_ID,
  AWS_SECRET_ACCESS_KEY: "credgate-managed",
  AWS_SESSION_TOKEN: "credgate-placeholder-session",
  AWS_EC2_METADATA_DISABLED: "true",
  AWS_CONFIG_FILE: "/dev/null",
  AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
  HTTPS_PROXY: proxy,
  https_proxy: proxy,
  AWS_CA_BUNDLE: ca.file,
  NODE_EXTRA_CA_CERTS: ca.file,
});

/** Every request the fake saw since `from` verified, with the real key id and no trace of the placeholder. */
function expectAllVerified(from: number): void {
  const seen = aws.seen.slice(from);
  expect(seen.length).toBeGreaterThan(0);
  for (const s of seen) {
    expect(s.failure).toBeNull();
    expect(s.keyId).toBe(REAL.accessKeyId);
    expect(s.url).not.toContain(PLACEHOLDER_KEY_ID);
  }
}

describe("the AWS SDK for JavaScript v3", () => {
  test("S3 PutObject (small and 6 MB streamed), GetObject, ListObjectsV2, and STS GetCallerIdentity", async () => {
    const from = aws.seen.length;
    const script = `
      const { S3Client, PutObjectCommand, GetObjectCommand, ListObjectsV2Command } = require("@aws-sdk/client-s3");
      const { STSClient, GetCallerIdentityCommand } = require("@aws-sdk/client-sts");
      const { NodeHttpHandler } = require("@smithy/node-http-handler");
      const { HttpsProxyAgent } = require("https-proxy-agent");
      const { Readable } = require("node:stream");
      const crypto = require("node:crypto");
      const agent = new HttpsProxyAgent(process.env.HTTPS_PROXY);
      const requestHandler = new NodeHttpHandler({ httpsAgent: agent });
      const port = process.env.AWS_PORT;
      (async () => {
        const s3 = new S3Client({ region: "us-east-1", endpoint: "https://s3.us-east-1.amazonaws.com:" + port, forcePathStyle: true, requestHandler });
        await s3.send(new PutObjectCommand({ Bucket: "b1", Key: "small.txt", Body: "hello from the sdk" }));
        const big = crypto.randomBytes(6 * 1024 * 1024);
        const stream = Readable.from((function* () { for (let i = 0; i < big.length; i += 65536) yield big.subarray(i, i + 65536); })());
        await s3.send(new PutObjectCommand({ Bucket: "b1", Key: "dir/big.bin", Body: stream, ContentLength: big.length }));
        const got = await s3.send(new GetObjectCommand({ Bucket: "b1", Key: "dir/big.bin" }));
        const back = Buffer.from(await got.Body.transformToByteArray());
        const small = await (await s3.send(new GetObjectCommand({ Bucket: "b1", Key: "small.txt" }))).Body.transformToString();
        const list = await s3.send(new ListObjectsV2Command({ Bucket: "b1" }));
        const sts = new STSClient({ region: "us-east-1", endpoint: "https://sts.amazonaws.com:" + port, requestHandler });
        const id = await sts.send(new GetCallerIdentityCommand({}));
        console.log(JSON.stringify({ same: back.equals(big), small, keys: list.Contents.map((c) => c.Key), account: id.Account, userId: id.UserId }));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const r = await run(["node", "-e", script], { env: { ...agentEnv(), AWS_PORT: String(aws.port) }, timeoutMs: 60_000 });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    // The fake STS answers the key id as the UserId: the echo guard redacts the real key id (docs/guards.md#echo-guard).
    expect(out).toEqual({ same: true, small: "hello from the sdk", keys: ["dir/big.bin", "small.txt"], account: "123456789012", userId: "credgate-redacted" });
    expectAllVerified(from);
    const puts = aws.seen.slice(from).filter((s) => s.method === "PUT");
    expect(puts.map((s) => s.bodyBytes >= 6 * 1024 * 1024)).toEqual([false, true]);
    // The SDK's region and signing names came through; STS, global, signs in us-east-1.
    expect(aws.seen.slice(from).find((s) => s.service === "sts")?.region).toBe("us-east-1");
  }, 90_000);
});

describe("boto3 and the aws CLI", () => {
  test("boto3 (Debian's /usr/bin/python3): put, get, list on a virtual-hosted bucket in eu-west-1, and STS", async () => {
    const from = aws.seen.length;
    const script = `
import boto3, json, os
from botocore.config import Config
port = os.environ["AWS_PORT"]
cfg = Config(proxies={"https": os.environ["HTTPS_PROXY"]}, s3={"addressing_style": "virtual"})
s3 = boto3.client("s3", region_name="eu-west-1", endpoint_url="https://s3.eu-west-1.amazonaws.com:" + port, config=cfg)
s3.put_object(Bucket="photos", Key="cat.jpg", Body=b"meow" * 1000)
body = s3.get_object(Bucket="photos", Key="cat.jpg")["Body"].read()
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="photos")["Contents"]]
sts = boto3.client("sts", region_name="us-east-1", endpoint_url="https://sts.amazonaws.com:" + port, config=cfg)
print(json.dumps({"len": len(body), "keys": keys, "account": sts.get_caller_identity()["Account"]}))
`;
    const r = await run(["/usr/bin/python3", "-c", script], { env: { ...agentEnv(), AWS_PORT: String(aws.port) }, timeoutMs: 60_000 });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ len: 4000, keys: ["cat.jpg"], account: "123456789012" });
    expectAllVerified(from);
    expect(aws.seen.slice(from).filter((s) => s.service === "s3").every((s) => s.region === "eu-west-1" && s.host.startsWith("photos."))).toBe(true);
  }, 60_000);

  test("the aws CLI: s3 cp up and down, s3api list-objects-v2, sts get-caller-identity", async () => {
    const from = aws.seen.length;
    const dir = tempDir();
    const file = join(dir, "up.bin");
    const data = randomBytes(300_000);
    writeFileSync(file, data);
    const endpoint = `https://s3.us-east-1.amazonaws.com:${aws.port}`;
    const env = { ...agentEnv(), AWS_DEFAULT_REGION: "us-east-1" };
    const up = await run(["aws", "--endpoint-url", endpoint, "s3", "cp", file, "s3://cli-bucket/up.bin"], { env, timeoutMs: 60_000 });
    expect(up.stderr).toBe("");
    expect(up.code).toBe(0);
    const down = await run(["aws", "--endpoint-url", endpoint, "s3", "cp", "s3://cli-bucket/up.bin", "-"], { env, timeoutMs: 60_000 });
    expect(down.code).toBe(0);
    expect(Buffer.from(down.stdoutBytes).equals(data)).toBe(true);
    const list = await run(["aws", "--endpoint-url", endpoint, "s3api", "list-objects-v2", "--bucket", "cli-bucket"], { env, timeoutMs: 60_000 });
    expect(JSON.parse(list.stdout).Contents.map((c: { Key: string }) => c.Key)).toEqual(["up.bin"]);
    const who = await run(["aws", "--endpoint-url", `https://sts.amazonaws.com:${aws.port}`, "sts", "get-caller-identity"], { env, timeoutMs: 60_000 });
    expect(JSON.parse(who.stdout).Account).toBe("123456789012");
    expectAllVerified(from);
  }, 120_000);
});

describe("presigned URLs and signed chunked uploads", () => {
  test("a URL presigned by boto3 with the placeholder key, fetched with curl, is re-signed keeping its date and expiry", async () => {
    aws.objects.set("b1/presigned.txt", new TextEncoder().encode("presigned content"));
    const script = `
import boto3, os
from botocore.config import Config
s3 = boto3.client("s3", region_name="us-east-1", endpoint_url="https://s3.us-east-1.amazonaws.com:" + os.environ["AWS_PORT"], config=Config(signature_version="s3v4"))
print(s3.generate_presigned_url("get_object", Params={"Bucket": "b1", "Key": "presigned.txt"}, ExpiresIn=600))
`;
    const url = (await run(["/usr/bin/python3", "-c", script], { env: { ...agentEnv(), AWS_PORT: String(aws.port) } })).stdout.trim();
    expect(url).toContain(`X-Amz-Credential=${PLACEHOLDER_KEY_ID}`);
    const agentDate = new URL(url).searchParams.get("X-Amz-Date");
    const from = aws.seen.length;
    const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", ca.file, url]);
    expect(r.stdout).toBe("presigned content");
    expectAllVerified(from);
    const seen = aws.seen[from]!;
    expect(seen.mode).toBe("presigned");
    expect(new URL(`https://h${seen.url}`).searchParams.get("X-Amz-Date")).toBe(agentDate);
    expect(new URL(`https://h${seen.url}`).searchParams.get("X-Amz-Expires")).toBe("600");
    expect(seen.url).not.toContain("X-Amz-Security-Token");
  }, 30_000);

  test("an expired presigned URL stays expired", async () => {
    const old = new Date(Date.now() - 3600_000).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
    const q = `X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${PLACEHOLDER_KEY_ID}%2F${old.slice(0, 8)}%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=${old}&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=${"0".repeat(64)}`;
    const from = aws.seen.length;
    const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", ca.file, `https://s3.us-east-1.amazonaws.com:${aws.port}/b1/presigned.txt?${q}`]);
    expect(r.stdout).toContain("Request has expired");
    expect(aws.seen[from]!.keyId).toBe("");
  });

  for (const trailer of [false, true]) {
    test(`STREAMING-AWS4-HMAC-SHA256-PAYLOAD${trailer ? "-TRAILER" : ""}: every chunk signature is recomputed while the body streams`, async () => {
      const data = randomBytes(3 * 1024 * 1024 + 123);
      const chunkSize = 64 * 1024;
      // The agent's chunk signatures are its own (made with the placeholder key): credgate replaces each.
      const parts: Buffer[] = [];
      for (let i = 0; i < data.length; i += chunkSize) {
        const c = data.subarray(i, i + chunkSize);
        parts.push(Buffer.from(`${c.length.toString(16)};chunk-signature=${randomBytes(32).toString("hex")}\r\n`), c, Buffer.from("\r\n"));
      }
      parts.push(Buffer.from(`0;chunk-signature=${randomBytes(32).toString("hex")}\r\n`));
      if (trailer) parts.push(Buffer.from(`x-amz-checksum-sha256:${createHash("sha256").update(data).digest("base64")}\r\nx-amz-trailer-signature:${randomBytes(32).toString("hex")}\r\n\r\n`));
      else parts.push(Buffer.from("\r\n"));
      const file = join(tempDir(), "chunked.body");
      writeFileSync(file, Buffer.concat(parts));
      const date = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
      const mode = trailer ? "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER" : "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
      const from = aws.seen.length;
      const r = await run([
        "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", proxy, "--cacert", ca.file, "-X", "PUT", "--data-binary", `@${file}`,
        "-H", `authorization: AWS4-HMAC-SHA256 Credential=${PLACEHOLDER_KEY_ID}/${date.slice(0, 8)}/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${"a".repeat(64)}`,
        "-H", `x-amz-date: ${date}`, "-H", `x-amz-content-sha256: ${mode}`, "-H", "content-encoding: aws-chunked", "-H", `x-amz-decoded-content-length: ${data.length}`,
        ...(trailer ? ["-H", "x-amz-trailer: x-amz-checksum-sha256"] : []), "-H", "content-type:",
        `https://s3.us-east-1.amazonaws.com:${aws.port}/b1/chunked-${trailer}.bin`,
      ], { timeoutMs: 60_000 });
      expect(aws.seen[from]?.failure ?? null).toBeNull();
      expect(r.stdout).toBe("200");
      expectAllVerified(from);
      const seen = aws.seen[from]!;
      expect(seen.chunkSignatures).toBe(Math.ceil(data.length / chunkSize) + 1);
      if (trailer) expect(seen.trailers["x-amz-checksum-sha256"]).toBe(createHash("sha256").update(data).digest("base64"));
      expect(Buffer.from(aws.objects.get(`b1/chunked-${trailer}.bin`)!).equals(data)).toBe(true);
    }, 60_000);
  }

  test("a 192 MB signed chunked upload streams through with bounded memory: the gateway's RSS grows by far less than the body", async () => {
    const chunkSize = 1024 * 1024;
    const chunk = randomBytes(chunkSize);
    const count = 192;
    const line = (n: number) => Buffer.from(`${n.toString(16)};chunk-signature=${randomBytes(32).toString("hex")}\r\n`);
    const parts: Buffer[] = [];
    for (let i = 0; i < count; i++) parts.push(line(chunkSize), chunk, Buffer.from("\r\n"));
    parts.push(line(0), Buffer.from("\r\n"));
    const file = join(tempDir(), "big.body");
    writeFileSync(file, Buffer.concat(parts));
    parts.length = 0;
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${cg.proc.pid}/status`, "utf8"))![1]) * 1024;
    const before = rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 25);
    const date = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
    const from = aws.seen.length;
    const r = await run([
      "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", proxy, "--cacert", ca.file, "-X", "PUT", "--data-binary", `@${file}`,
      "-H", `authorization: AWS4-HMAC-SHA256 Credential=${PLACEHOLDER_KEY_ID}/${date.slice(0, 8)}/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${"b".repeat(64)}`,
      "-H", `x-amz-date: ${date}`, "-H", "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "-H", "content-encoding: aws-chunked",
      "-H", `x-amz-decoded-content-length: ${count * chunkSize}`, "-H", "content-type:", `https://s3.us-east-1.amazonaws.com:${aws.port}/b1/big.bin`,
    ], { timeoutMs: 120_000 });
    clearInterval(sampler);
    console.log(`[aws-chunked 192 MB] gateway RSS before ${(before / 2 ** 20).toFixed(0)} MiB, peak ${(peak / 2 ** 20).toFixed(0)} MiB`);
    expect(aws.seen[from]?.failure ?? null).toBeNull();
    expect(r.stdout).toBe("200");
    expect(aws.seen[from]!.chunkSignatures).toBe(count + 1);
    expect(aws.objects.get("b1/big.bin")!.length).toBe(count * chunkSize);
    aws.objects.delete("b1/big.bin");
    // Bounded, not proportional: one chunk held at a time, plus what the collector has not yet reclaimed (a plain
    // streamed upload of the same size shows about 30 MiB of that on this machine).
    expect(peak - before).toBeLessThan(80 * 2 ** 20);
  }, 120_000);

  test("region and service from the secret on a host AWS does not name; an unsigned agent request is signed too", async () => {
    const from = aws.seen.length;
    const r = await run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", proxy, "--cacert", ca.file, "-X", "PUT", "--data-binary", "plain", `https://custom.example.test:${aws.port}/bucket/unsigned.txt`]);
    expect(r.stdout).toBe("200");
    expectAllVerified(from);
    expect(aws.seen[from]).toMatchObject({ region: "eu-central-1", service: "s3", payloadHash: "UNSIGNED-PAYLOAD" });
  });

  test("requests credgate cannot re-sign (SigV2, SigV4a, an aws-chunked body that does not decode) get 502 credential_unavailable and reach nothing", async () => {
    const from = aws.seen.length;
    const url = `https://s3.us-east-1.amazonaws.com:${aws.port}/b1/x`;
    const curl = (...args: string[]) => run(["curl", "-sS", "--proxy", proxy, "--cacert", ca.file, ...args, url]);
    for (const r of [
      await curl("-H", `authorization: AWS ${PLACEHOLDER_KEY_ID}:c2lnbmF0dXJl`),
      await curl("-H", "authorization: AWS4-ECDSA-P256-SHA256 Credential=X/20250101/s3/aws4_request, SignedHeaders=host, Signature=00"),
      await curl("-X", "PUT", "--data-binary", "not chunked at all", "-H", "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
    ]) {
      const body = JSON.parse(r.stdout);
      expect(body.error).toBe("credential_unavailable");
      expect(body.message).toStartWith("credgate could not obtain the credential for s3.us-east-1.amazonaws.com, so the request was not forwarded.");
    }
    expect(aws.seen.length).toBe(from);
  });
});

test("the clients above used every payload-hash mode credgate keeps", () => {
  const modes = new Set(aws.seen.filter((s) => s.failure === null).map((s) => (/^[0-9a-f]{64}$/.test(s.payloadHash) ? "hex" : s.payloadHash)));
  for (const m of ["UNSIGNED-PAYLOAD", "hex", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"]) expect(modes).toContain(m);
});

test("a request held for approval is signed when it is released, not when it arrived", async () => {
  const rule = await cg.api("POST", "/v1/policy/rules", {
    body: { name: "Ask before deleting", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: "s3.us-east-1.amazonaws.com", pathPattern: "/held/*", method: "DELETE" }] },
  });
  expect(rule.status).toBe(201);
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
  aws.objects.set("held/doomed.txt", new TextEncoder().encode("x"));
  const from = aws.seen.length;
  const held = run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", proxy, "--cacert", ca.file, "-X", "DELETE", `https://s3.us-east-1.amazonaws.com:${aws.port}/held/doomed.txt`], { timeoutMs: 60_000 });
  let pending: { id: string } | undefined;
  for (let i = 0; i < 300 && !pending; i++) {
    pending = (await cg.api("GET", "/v1/approvals/pending")).body?.requests?.[0];
    if (!pending) await Bun.sleep(50);
  }
  expect(pending).toBeDefined();
  // Held across a second boundary, so that a signature made on arrival would carry an earlier x-amz-date.
  const heldSecond = Math.floor(Date.now() / 1000);
  await untilTrue(() => Math.floor(Date.now() / 1000) > heldSecond, 5000);
  const approvedAt = Math.floor(Date.now() / 1000);
  expect((await cg.api("POST", `/v1/approvals/${pending!.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
  const code = (await held).stdout;
  const seen = aws.seen.slice(from);
  expect(seen.length).toBe(1);
  expect(seen[0]!.failure).toBeNull();
  // The fake answers 400 NotImplemented to DELETE: what matters is that the signature verified, and when it was made.
  expect(code).toBe("400");
  const signedAt = seen[0]!.signedAt;
  expect(signedAt).toBeGreaterThanOrEqual(approvedAt);
}, 60_000);

/** `YYYYMMDDTHHMMSSZ`, now. */
const amzNow = () => new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");

/** curl -i output: the status line, the headers and the body of the last answer. */
function answerOf(stdout: string): { statusLine: string; head: string; body: string } {
  const end = stdout.lastIndexOf("\r\n\r\n");
  // The CONNECT answer comes first.
  const head = stdout.slice(stdout.lastIndexOf("\r\n\r\n", end - 1) + 4, end);
  return { statusLine: head.split("\r\n")[0]!, head, body: stdout.slice(end + 4) };
}

describe("the echo guard covers what was signed with the real key (docs/guards.md#echo-guard)", () => {
  test("a presigned GET good for 7 days, reflected by the origin: the agent gets neither its signature, its query nor the real key id, and what it got opens nothing", async () => {
    const now = amzNow();
    const q = `X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${PLACEHOLDER_KEY_ID}%2F${now.slice(0, 8)}%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=${now}&X-Amz-Expires=604800&X-Amz-SignedHeaders=host&X-Amz-Signature=${"0".repeat(64)}`;
    const from = aws.seen.length;
    const r = await run(["curl", "-sS", "-i", "--proxy", proxy, "--cacert", ca.file, `https://s3.us-east-1.amazonaws.com:${aws.port}/b1/reflect/week.txt?${q}`]);
    expect(r.code).toBe(0);
    const seen = aws.seen[from]!;
    // The origin verified the URL credgate signed with the real key.
    expect({ failure: seen.failure, mode: seen.mode, keyId: seen.keyId }).toEqual({ failure: null, mode: "presigned", keyId: REAL.accessKeyId });
    const realQuery = seen.url.slice(seen.url.indexOf("?") + 1);
    const realSignature = new URLSearchParams(realQuery).get("X-Amz-Signature")!;
    expect(realSignature).toMatch(/^[0-9a-f]{64}$/);
    const got = answerOf(r.stdout);
    expect(got.statusLine).toMatch(/^HTTP\/(1\.1|2) 200/);
    for (const leaked of [realSignature, realQuery, REAL.accessKeyId, encodeURIComponent(realQuery)]) expect(r.stdout).not.toContain(leaked);
    expect(got.head).toContain("x-reflected-url: /b1/reflect/week.txt?credgate-redacted");
    const reflected = JSON.parse(got.body);
    expect(reflected.url).toBe("/b1/reflect/week.txt?credgate-redacted");
    // As an attacker: the URL the agent holds, straight at the origin, without the gateway.
    const replay = await run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", upstreamCaFile, "--resolve", `s3.us-east-1.amazonaws.com:${aws.port}:127.0.0.1`, `https://s3.us-east-1.amazonaws.com:${aws.port}${reflected.url}`]);
    expect(replay.stdout).toBe("403");
  });

  test("a header-signed PUT with UNSIGNED-PAYLOAD, reflected: the Signature= and the real key id never reach the agent, and no replay with another body verifies", async () => {
    const now = amzNow();
    const url = `https://s3.us-east-1.amazonaws.com:${aws.port}/b1/reflect/put.txt`;
    const from = aws.seen.length;
    const r = await run([
      "curl", "-sS", "-i", "--proxy", proxy, "--cacert", ca.file, "-X", "PUT", "--data-binary", "the agent's body",
      "-H", `authorization: AWS4-HMAC-SHA256 Credential=${PLACEHOLDER_KEY_ID}/${now.slice(0, 8)}/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${"a".repeat(64)}`,
      "-H", `x-amz-date: ${now}`, "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", url,
    ]);
    expect(r.code).toBe(0);
    const seen = aws.seen[from]!;
    expect({ failure: seen.failure, mode: seen.mode, keyId: seen.keyId, payloadHash: seen.payloadHash }).toEqual({ failure: null, mode: "header", keyId: REAL.accessKeyId, payloadHash: "UNSIGNED-PAYLOAD" });
    const realSignature = /Signature=([0-9a-f]{64})/.exec(seen.authorization!)![1]!;
    const got = answerOf(r.stdout);
    expect(got.statusLine).toMatch(/^HTTP\/(1\.1|2) 200/);
    for (const leaked of [realSignature, REAL.accessKeyId]) expect(r.stdout).not.toContain(leaked);
    const reflected = JSON.parse(got.body);
    expect(reflected.authorization).toContain("Signature=credgate-redacted");
    expect(got.head).toContain("Signature=credgate-redacted");
    // As an attacker: the Authorization and date the agent saw, on a PUT of another body, straight at the origin.
    const replay = await run([
      "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", upstreamCaFile, "--resolve", `s3.us-east-1.amazonaws.com:${aws.port}:127.0.0.1`,
      "-X", "PUT", "--data-binary", "the attacker's body", "-H", `authorization: ${reflected.authorization}`, "-H", `x-amz-date: ${reflected.amzDate}`, "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", url,
    ]);
    expect(replay.stdout).toBe("403");
    expect(aws.objects.has("b1/reflect/put.txt")).toBe(false);
  });

  test("the signature in the reason phrase, a header and the body of an origin's raw answer is redacted, header-signed and presigned", async () => {
    reflector.respond((head, sock) => {
      const sig = /Signature=([0-9a-f]{64})/.exec(head)?.[1] ?? "none";
      sock.end(`HTTP/1.1 200 ${sig}\r\nx-signature: ${sig}\r\ncontent-length: ${sig.length + 5}\r\nconnection: close\r\n\r\nsig: ${sig}`);
    });
    const now = amzNow();
    const presigned = `X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${PLACEHOLDER_KEY_ID}%2F${now.slice(0, 8)}%2Fus-west-2%2Fs3%2Faws4_request&X-Amz-Date=${now}&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=${"0".repeat(64)}`;
    for (const target of [`/obj.txt`, `/obj.txt?${presigned}`]) {
      const before = reflector.heads.length;
      const r = await run(["curl", "-sS", "-i", "--http1.1", "--proxy", proxy, "--cacert", ca.file, `https://${REFLECTOR}:${reflector.port}${target}`]);
      expect(r.code).toBe(0);
      const sig = /Signature=([0-9a-f]{64})/.exec(reflector.heads[before]!)![1]!;
      expect(sig).not.toBe("0".repeat(64));
      expect(r.stdout).not.toContain(sig);
      const got = answerOf(r.stdout);
      expect({ statusLine: got.statusLine, body: got.body }).toEqual({ statusLine: "HTTP/1.1 200 credgate-redacted", body: "sig: credgate-redacted" });
      expect(got.head).toContain("x-signature: credgate-redacted");
    }
  });
});
