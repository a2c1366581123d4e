// The github-app stage (docs/injection.md#github-app) over the real token service on a temporary store, minting
// from a fake GitHub (a third party, its wire format: test/support/fakeGithub.ts) reached through the real
// outbound path (CREDGATE_CONNECT_TO): Bearer on the API, Basic x-access-token on github.com, a cached token
// applied without a promise, one mint for concurrent requests, and 502 credential_unavailable when GitHub refuses.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { githubAppStage } from "../../../src/gateway/stages/githubApp.ts";
import { agentCredentials, compiledSecret, signIn, testRequest } from "../../../src/gateway/testing.ts";
import { PASS } from "../../../src/gateway/stage.ts";
import { createTestApi, type TestApi } from "../../support/app.ts";
import { startFakeGithub, type FakeGithub } from "../../support/fakeGithub.ts";
import { makePki } from "../../support/upstream.ts";
import { outcome } from "./helpers.ts";

const APP = { appId: 11, installationId: 22 };
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PEM = privateKey.export({ type: "pkcs1", format: "pem" }).toString();

let github: FakeGithub;
let api: TestApi;

beforeAll(async () => {
  const pki = makePki(["api.github.com", "github.com"]);
  github = startFakeGithub(pki, { appId: APP.appId, publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString() }, () => undefined);
  github.mintDelayMs = 50;
  api = await createTestApi({ CREDGATE_CONNECT_TO: `api.github.com:443:127.0.0.1:${github.port}`, CREDGATE_UPSTREAM_CA_FILE: pki.caFile });
});

afterAll(async () => {
  await github?.stop();
});

function request(host: string, app = APP): ProxyRequest {
  const secret = compiledSecret({ hostPattern: host, value: PEM, injection: { githubApp: app } });
  const rq = testRequest({ tunnel: host, target: "/repos/a/b", headers: { authorization: "Bearer placeholder" } });
  signIn(rq, agentCredentials({ injectable: [secret] }));
  rq.signing = [{ secret, value: PEM }];
  return rq;
}

describe("github-app stage", () => {
  test("concurrent requests mint once; the API gets Bearer, github.com gets Basic x-access-token; a cached token applies synchronously", async () => {
    const stage = githubAppStage({ tokens: api.core.services.githubApps });
    const before = github.mints.length;
    const rqs = [request("api.github.com"), request("api.github.com"), request("github.com")];
    const verdicts = rqs.map((rq) => stage.request!(rq));
    expect(verdicts.every((v) => v instanceof Promise)).toBe(true);
    for (const v of verdicts) expect(await outcome(v)).toBe("pass");
    expect(github.mints.length - before).toBe(1);
    const token = github.mints.at(-1)!.token;
    expect(rqs[0]!.headers.get("authorization")).toBe(`Bearer ${token}`);
    expect(rqs[2]!.headers.get("authorization")).toBe(`Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`);
    expect(rqs[0]!.injectionCount).toBe(1);
    expect(rqs[2]!.injectionCount).toBe(1);
    expect(rqs[2]!.injectedValues).toContain(token);
    // Now cached: no promise, no mint.
    const again = request("api.github.com");
    expect(stage.request!(again)).toBe(PASS);
    expect(again.headers.get("authorization")).toBe(`Bearer ${token}`);
    expect(github.mints.length - before).toBe(1);
  });

  test("a request with no GitHub App secret passes untouched", () => {
    const stage = githubAppStage({ tokens: api.core.services.githubApps });
    const rq = testRequest({ tunnel: "api.github.com", target: "/x", headers: { authorization: "Bearer placeholder" } });
    signIn(rq, agentCredentials());
    expect(stage.request!(rq)).toBe(PASS);
    expect(rq.headers.get("authorization")).toBe("Bearer placeholder");
  });

  test("GitHub refuses the mint → 502 credential_unavailable, the agent's header untouched", async () => {
    const stage = githubAppStage({ tokens: api.core.services.githubApps });
    github.failMintsWith = 500;
    try {
      const rq = request("api.github.com", { appId: APP.appId, installationId: 99 });
      expect(await outcome(stage.request!(rq))).toEqual({
        decision: "error",
        status: 502,
        headers: expect.any(Object),
        body: { error: "credential_unavailable", message: "credgate could not obtain the credential for api.github.com, so the request was not forwarded." },
      });
      expect(rq.headers.get("authorization")).toBe("Bearer placeholder");
      expect(rq.injectionCount).toBe(0);
    } finally {
      github.failMintsWith = null;
    }
  });
});
