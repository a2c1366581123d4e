// The cleartext stage (docs/guards.md#cleartext-rule): a plain-HTTP request that received a credential goes
// only to a loopback or private address, or to a host in CREDGATE_PLAINTEXT_HOSTS; otherwise 403
// insecure_transport, decision blocked. HTTPS, and requests with nothing injected, pass.
import { expect, test } from "bun:test";
import { EgressGuard } from "../../../src/gateway/egressGuard.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { awsCheckStage } from "../../../src/gateway/stages/awsSign.ts";
import { cleartextStage } from "../../../src/gateway/stages/cleartext.ts";
import { egressStage } from "../../../src/gateway/stages/egress.ts";
import { injectStage } from "../../../src/gateway/stages/inject.ts";
import { agentCredentials, compiledSecret, signIn, testRequest } from "../../../src/gateway/testing.ts";
import { loadConfig } from "../../../src/runtime/config.ts";
import { Outbound } from "../../../src/services/outbound.ts";
import { VaultResolver } from "../../../src/vault/resolver.ts";
import { outcome } from "./helpers.ts";

const config = loadConfig({ dataDir: "/nonexistent", port: 0, gatewayPort: 0 }, { CREDGATE_RESOLVE: "public.example.test:80:203.0.113.7,lan.example.test:80:10.0.0.7" });
const egress = egressStage({ egress: new EgressGuard(config, new Outbound(config)) });
const inject = injectStage({ vault: new VaultResolver({ host: null, token: null, fetch: fetch }) });
const stage = cleartextStage({ plaintextHosts: ["listed.example.test"] });

/** A request as it reaches the stage: its address judged by the egress stage, its credential injected (or not). */
async function reaching(url: string, secretHost: string | null = "*.example.test"): Promise<ProxyRequest> {
  const rq = testRequest({ target: url });
  signIn(rq, agentCredentials({ injectable: secretHost ? [compiledSecret({ hostPattern: secretHost })] : [] }));
  expect(await outcome(egress.request!(rq))).toBe("pass");
  expect(await outcome(inject.request!(rq))).toBe("pass");
  expect(rq.injectionCount).toBe(secretHost ? 1 : 0);
  return rq;
}

test("plain HTTP to a public address with a credential → 403 insecure_transport, decision blocked", async () => {
  expect(await outcome(stage.request!(await reaching("http://public.example.test/x")))).toEqual({
    decision: "blocked",
    status: 403,
    headers: expect.objectContaining({ "x-should-retry": "false" }),
    body: {
      error: "insecure_transport",
      message: "credgate does not send credentials over plain HTTP to public.example.test. Use https://, or list the host in CREDGATE_PLAINTEXT_HOSTS.",
      host: "public.example.test",
    },
  });
});

test("a private or loopback address, a listed host, HTTPS, or nothing injected: passes", async () => {
  for (const rq of [
    await reaching("http://lan.example.test/x"),
    await reaching("http://127.0.0.1:8080/x", "127.0.0.1"),
    await reaching("http://public.example.test/x", null),
  ]) {
    expect(await outcome(stage.request!(rq))).toBe("pass");
  }
  const listed = testRequest({ target: "http://listed.example.test/x" });
  signIn(listed, agentCredentials({ injectable: [compiledSecret({ hostPattern: "listed.example.test" })] }));
  expect(await outcome(inject.request!(listed))).toBe("pass");
  expect(listed.injectionCount).toBe(1);
  expect(await outcome(stage.request!(listed))).toBe("pass");
  const https = testRequest({ tunnel: "public.example.test", target: "/x" });
  signIn(https, agentCredentials({ injectable: [compiledSecret({ hostPattern: "*.example.test" })] }));
  expect(await outcome(inject.request!(https))).toBe("pass");
  expect(await outcome(stage.request!(https))).toBe("pass");
});

test("an AWS secret's signature (planned by aws-check, made by aws-sign later) counts: plain HTTP to a public address → 403", async () => {
  const rq = testRequest({ target: "http://public.example.test/bucket/key" });
  const aws = compiledSecret({ hostPattern: "*.example.test", value: "aws-secret-access-key", injection: { awsSigV4: { accessKeyId: "AKIACLEARTEXT0000001", region: "us-east-1", service: "s3" } } });
  signIn(rq, agentCredentials({ injectable: [aws] }));
  expect(await outcome(egress.request!(rq))).toBe("pass");
  expect(await outcome(inject.request!(rq))).toBe("pass");
  expect(await outcome(awsCheckStage().request!(rq))).toBe("pass");
  expect(rq.injectionCount).toBe(1);
  expect(await outcome(stage.request!(rq))).toMatchObject({ decision: "blocked", status: 403, body: { error: "insecure_transport" } });
});
