// The aws-check and aws-sign stages (docs/injection.md#aws-signature-v4), after the real inject stage: every signature they make
// is checked by the independent verifier of the fake AWS endpoint (test/support/fakeAws.ts) with the real key.
// Region and service in their order, the agent's Authorization, X-Amz-Date and security token replaced, the
// payload-hash modes, presigned URLs keeping date and expiry, and 502 for what cannot be re-signed.
import { beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import type { CompiledSecret } from "../../../src/gateway/snapshot.ts";
import { PASS } from "../../../src/gateway/stage.ts";
import { awsCheckStage, awsSignStage } from "../../../src/gateway/stages/awsSign.ts";
import { injectStage } from "../../../src/gateway/stages/inject.ts";
import { agentCredentials, compiledSecret, signIn, testRequest } from "../../../src/gateway/testing.ts";
import { log } from "../../../src/observability/log.ts";
import { VaultResolver } from "../../../src/vault/resolver.ts";
import { verify } from "../../support/fakeAws.ts";
import { FakeConnect, fakeFetch } from "../../support/opConnect.ts";
import { outcome } from "./helpers.ts";

beforeAll(() => log.setQuiet(true));

const KEY = { accessKeyId: "AKIAUNITTEST00000001", secretAccessKey: "unit/test/secret/access/key/0123456789AB" };
const PLACEHOLDER = "AKIAPLACEHOLDER00000";
const inject = injectStage({ vault: new VaultResolver({ host: "http://connect.test", token: "t", fetch: fakeFetch(new FakeConnect("t")) }) });
const checkStage = awsCheckStage();
const stage = awsSignStage();

function secret(extra: { region?: string; service?: string } = {}, hostPattern = "*.amazonaws.com"): CompiledSecret {
  return compiledSecret({ hostPattern, value: KEY.secretAccessKey, injection: { awsSigV4: { accessKeyId: KEY.accessKeyId, ...extra } } });
}

async function signed(host: string, init: { method?: string; target?: string; headers?: Record<string, string>; body?: string; secret?: CompiledSecret } = {}): Promise<{ rq: ProxyRequest; verdict: Awaited<ReturnType<typeof outcome>> }> {
  const rq = testRequest({ tunnel: host, method: init.method ?? "GET", target: init.target ?? "/", headers: init.headers ?? {}, ...(init.body !== undefined ? { body: new TextEncoder().encode(init.body) } : {}) });
  signIn(rq, agentCredentials({ injectable: [init.secret ?? secret()] }));
  expect(await outcome(inject.request!(rq))).toBe("pass");
  const checked = await outcome(checkStage.request!(rq));
  if (checked !== "pass") return { rq, verdict: checked };
  return { rq, verdict: await outcome(stage.request!(rq)) };
}

/** The upstream request as the verifier sees it. */
function check(rq: ProxyRequest, payloadHash: string) {
  const q = rq.upstreamTarget.indexOf("?");
  const headers = new Headers([["host", rq.authority], ...rq.headers]);
  const req = new Request(`https://${rq.authority}${rq.upstreamTarget}`, { method: rq.method, headers });
  return verify(req, q === -1 ? rq.upstreamTarget : rq.upstreamTarget.slice(0, q), q === -1 ? "" : rq.upstreamTarget.slice(q + 1), KEY, payloadHash);
}

const agentAuth = (region: string, service: string) =>
  `AWS4-HMAC-SHA256 Credential=${PLACEHOLDER}/20250101/${region}/${service}/aws4_request, SignedHeaders=host;x-amz-date, Signature=${"0".repeat(64)}`;

describe("aws-sign stage", () => {
  test("the check plans and counts; the signature itself is made by aws-sign, at the time it runs", async () => {
    const rq = testRequest({ tunnel: "s3.us-east-1.amazonaws.com", target: "/b/k", headers: { authorization: agentAuth("us-east-1", "s3"), "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } });
    signIn(rq, agentCredentials({ injectable: [secret()] }));
    expect(await outcome(inject.request!(rq))).toBe("pass");
    expect(checkStage.request!(rq)).toBe(PASS);
    expect(rq.injectionCount).toBe(1);
    expect(rq.headers.get("authorization")).toBe(agentAuth("us-east-1", "s3"));
    expect(stage.request!(rq)).toBe(PASS);
    expect(check(rq, "UNSIGNED-PAYLOAD").keyId).toBe(KEY.accessKeyId);
  });

  test("a header-signed S3 request: re-signed with the real key over host and every x-amz-* header; the agent's date and token replaced", async () => {
    const { rq, verdict } = await signed("bucket.s3.eu-west-1.amazonaws.com", {
      method: "PUT",
      target: "/photos/a%20b.jpg?x-id=PutObject",
      body: "data",
      headers: {
        authorization: agentAuth("eu-west-1", "s3"),
        "x-amz-date": "20250101T000000Z",
        "x-amz-security-token": "placeholder-session",
        "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
        "x-amz-meta-owner": "agent",
        "content-type": "image/jpeg",
      },
    });
    expect(verdict).toBe("pass");
    const v = check(rq, "UNSIGNED-PAYLOAD");
    expect([v.keyId, v.region, v.service]).toEqual([KEY.accessKeyId, "eu-west-1", "s3"]);
    expect(rq.headers.get("authorization")).toContain("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-meta-owner,");
    expect(rq.headers.has("x-amz-security-token")).toBe(false);
    expect(rq.headers.get("x-amz-date")).not.toBe("20250101T000000Z");
    expect(rq.headers.get("content-type")).toBe("image/jpeg");
    expect(rq.injectionCount).toBe(1);
    // The echo guard's values (docs/guards.md#echo-guard): the key, the real key id and the new Signature=, one action.
    const signature = /Signature=([0-9a-f]{64})$/.exec(rq.headers.get("authorization")!)![1]!;
    expect([...rq.injectedValues].sort()).toEqual([KEY.secretAccessKey, KEY.accessKeyId, signature].sort());
  });

  test("region and service: the secret's override, else the agent's scope (bedrock for bedrock-runtime), else the host", async () => {
    const bedrock = await signed("bedrock-runtime.us-west-2.amazonaws.com", { method: "POST", target: "/model/x/invoke", body: "{}", headers: { authorization: agentAuth("us-west-2", "bedrock") } });
    expect(check(bedrock.rq, createHash("sha256").update("{}").digest("hex")).service).toBe("bedrock");
    const fromHost = await signed("dynamodb.ap-south-1.amazonaws.com", { method: "POST", body: "{}", headers: {} });
    const v = check(fromHost.rq, createHash("sha256").update("{}").digest("hex"));
    expect([v.region, v.service]).toEqual(["ap-south-1", "dynamodb"]);
    expect(fromHost.rq.headers.get("x-amz-content-sha256")).toBe(createHash("sha256").update("{}").digest("hex"));
    const overridden = await signed("dynamodb.ap-south-1.amazonaws.com", { headers: { authorization: agentAuth("ap-south-1", "dynamodb") }, secret: secret({ region: "eu-north-1", service: "execute-api" }) });
    const o = check(overridden.rq, createHash("sha256").update("").digest("hex"));
    expect([o.region, o.service]).toEqual(["eu-north-1", "execute-api"]);
    const global = await signed("s3.amazonaws.com", { target: "/bucket/key" });
    expect(check(global.rq, "UNSIGNED-PAYLOAD").region).toBe("us-east-1");
  });

  test("a presigned URL is signed again in query form, keeping its date and expiry; the placeholder key id and token are gone", async () => {
    const date = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
    const target = `/bucket/my%20key.txt?response-content-type=text%2Fplain&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${PLACEHOLDER}%2F${date.slice(0, 8)}%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=${date}&X-Amz-Expires=300&X-Amz-SignedHeaders=host&X-Amz-Security-Token=tok&X-Amz-Signature=${"1".repeat(64)}`;
    const { rq, verdict } = await signed("s3.us-east-1.amazonaws.com", { target });
    expect(verdict).toBe("pass");
    expect(check(rq, "UNSIGNED-PAYLOAD").mode).toBe("presigned");
    expect(rq.upstreamTarget).toStartWith("/bucket/my%20key.txt?response-content-type=text%2Fplain&");
    expect(rq.upstreamTarget).toContain(`X-Amz-Date=${date}&X-Amz-Expires=300`);
    expect(rq.upstreamTarget).not.toContain(PLACEHOLDER);
    expect(rq.upstreamTarget).not.toContain("Security-Token");
    // The echo guard's values: the key, the real key id, the new X-Amz-Signature and the whole new query; one action.
    const query = rq.upstreamTarget.slice(rq.upstreamTarget.indexOf("?") + 1);
    const signature = new URLSearchParams(query).get("X-Amz-Signature")!;
    expect([...rq.injectedValues].sort()).toEqual([KEY.secretAccessKey, KEY.accessKeyId, signature, query].sort());
    expect(rq.injectionCount).toBe(1);
  });

  test.each([
    ["SigV2", { authorization: `AWS ${PLACEHOLDER}:abc=` }],
    ["SigV4a", { authorization: "AWS4-ECDSA-P256-SHA256 Credential=X/20250101/s3/aws4_request, SignedHeaders=host, Signature=00" }],
    ["an unknown payload hash", { "x-amz-content-sha256": "STREAMING-ECDSA-P256-SHA256-PAYLOAD" }],
  ])("%s → 502 credential_unavailable", async (_, headers) => {
    const { verdict, rq } = await signed("s3.us-east-1.amazonaws.com", { headers });
    expect(verdict).toMatchObject({ decision: "error", status: 502, body: { error: "credential_unavailable" } });
    expect(rq.injectionCount).toBe(0);
  });

  test("a host that AWS does not name and a secret without region and service → 502", async () => {
    const { verdict } = await signed("storage.example.test", { secret: secret({}, "storage.example.test") });
    expect(verdict).toMatchObject({ status: 502, body: { error: "credential_unavailable" } });
  });

  test("no AWS secret among the matched: PASS, nothing changed", () => {
    const rq = testRequest({ tunnel: "s3.amazonaws.com", target: "/", headers: { authorization: agentAuth("us-east-1", "s3") } });
    signIn(rq, agentCredentials());
    expect(checkStage.request!(rq)).toBe(PASS);
    expect(stage.request!(rq)).toBe(PASS);
    expect(rq.headers.get("authorization")).toBe(agentAuth("us-east-1", "s3"));
  });
});

test("a presigned URL the signer refuses (an expiry over 7 days) → 502 credential_unavailable, not a gateway error", async () => {
  const date = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  const target = `/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${PLACEHOLDER}%2F${date.slice(0, 8)}%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=${date}&X-Amz-Expires=999999&X-Amz-SignedHeaders=host&X-Amz-Signature=${"1".repeat(64)}`;
  const { verdict } = await signed("s3.us-east-1.amazonaws.com", { target });
  expect(verdict).toMatchObject({ decision: "error", status: 502, body: { error: "credential_unavailable" } });
});
