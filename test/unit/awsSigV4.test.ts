// The header signature credgate computes itself (src/crypto/awsSigV4.ts) against @smithy/signature-v4, the AWS
// SDK's signer, over requests chosen to reach every canonicalisation rule: S3's raw path and the other services'
// normalised, re-encoded one; query keys and values that need encoding, repeated keys, empty values, the
// signature parameter left out; header values with inner and outer whitespace. Both must sign alike.
import { describe, expect, test } from "bun:test";
import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";
import { AwsSigner, parseQuery } from "../../src/crypto/awsSigV4.ts";

const KEY = { accessKeyId: "AKIADIFFERENTIAL0001", secretAccessKey: "differential/test+key=0123456789abcdefGHIJ" };
const ours = new AwsSigner(KEY);

async function smithy(method: string, path: string, query: string, headers: Record<string, string>, region: string, service: string, date: Date): Promise<string> {
  const signer = new SignatureV4({ credentials: KEY, region, service, sha256: Hash.bind(null, "sha256"), uriEscapePath: service !== "s3", applyChecksum: false });
  const bag: Record<string, string | string[]> = {};
  for (const { key, value } of parseQuery(query)) {
    const had = bag[key];
    bag[key] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  }
  const signed = await signer.sign({ method, protocol: "https:", hostname: headers.host!, path, query: bag, headers: { ...headers }, body: undefined }, { signingDate: date });
  return signed.headers.authorization!;
}

const CASES: [string, string, string, string, Record<string, string>][] = [
  ["s3", "GET", "/bucket/my%20key+with%2Bplus/ünï", "list-type=2&prefix=a%2Fb&delimiter=%2F&x-id=ListObjectsV2", { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" }],
  ["s3", "PUT", "/b/./../a//double", "", { "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "x-amz-decoded-content-length": "1234", "x-amz-meta-Note": "  two   spaces  " }],
  ["s3", "GET", "/b/k", "uploads&b=2&a=1&a=0&c=&X-Amz-Signature=zzz", { "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" }],
  ["dynamodb", "POST", "/", "", { "x-amz-content-sha256": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", "x-amz-target": "DynamoDB_20120810.ListTables" }],
  ["bedrock", "POST", "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke", "", { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" }],
  ["execute-api", "GET", "/stage/./a/../b/%E2%82%AC/", "q=%20space&q=%2Bplus&emoji=%F0%9F%98%80&tilde=~&star=*", {}],
  ["sts", "GET", "", "Action=GetCallerIdentity&Version=2011-06-15", {}],
];

describe("header signatures match the AWS SDK's signer", () => {
  for (const [service, method, path, query, extra] of CASES) {
    test(`${service} ${method} ${path || "(empty)"}?${query}`, async () => {
      const date = new Date(Date.UTC(2025, 2, 1, 12, 34, 56));
      const headers = { host: `${service}.eu-west-1.amazonaws.com:8443`, ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k.toLowerCase(), v])) };
      const mine = ours.signHeaders(method, path, parseQuery(query), headers, { region: "eu-west-1", service }, date).authorization;
      expect(mine).toBe(await smithy(method, path, query, { ...headers, "x-amz-date": "20250301T123456Z" }, "eu-west-1", service, date));
    });
  }

  test("the derived key follows the day: signatures on two days differ, each matching the SDK's", async () => {
    const headers = { host: "s3.amazonaws.com", "x-amz-content-sha256": "UNSIGNED-PAYLOAD" };
    const days = [new Date(Date.UTC(2025, 0, 1, 23, 59, 59)), new Date(Date.UTC(2025, 0, 2, 0, 0, 1))];
    const sigs = days.map((d) => ours.signHeaders("GET", "/b", [], headers, { region: "us-east-1", service: "s3" }, d).authorization);
    expect(sigs[0]).not.toBe(sigs[1]);
    for (let i = 0; i < 2; i++) expect(sigs[i]).toBe(await smithy("GET", "/b", "", { ...headers }, "us-east-1", "s3", days[i]!));
  });
});
