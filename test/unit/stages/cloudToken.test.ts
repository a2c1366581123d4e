// The cloud-token stage (docs/cloud-identities.md#minting) over the real token service on a temporary store,
// minting from the fake Google and Azure (test/support/fakeClouds.ts: they verify the assertion's signature, aud and
// scope, and the client secret) through the real outbound path: the agent's Authorization replaced by Bearer
// <minted>, one mint for concurrent requests, a cached token applied without a promise, the Azure scope from the
// host (or the secret), and 502 credential_unavailable for a host that implies none or a refused mint.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { cloudTokenStage } from "../../../src/gateway/stages/cloudToken.ts";
import { agentCredentials, compiledSecret, signIn, testRequest } from "../../../src/gateway/testing.ts";
import { PASS } from "../../../src/gateway/stage.ts";
import type { InjectionConfig } from "../../../src/core/records/secrets.ts";
import { createTestApi, type TestApi } from "../../support/app.ts";
import { GOOGLE_TOKEN_URI, startFakeClouds, type FakeClouds } from "../../support/fakeClouds.ts";
import { makePki } from "../../support/upstream.ts";
import { outcome } from "./helpers.ts";

const EMAIL = "unit@demo.iam.gserviceaccount.com";
const TENANT = "11111111-2222-3333-4444-555555555555";
const CLIENT = "66666666-7777-8888-9999-000000000000";
const SECRET = "azure-unit-client-secret";
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const KEY = JSON.stringify({ type: "service_account", project_id: "demo", private_key_id: "u1", private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(), client_email: EMAIL, token_uri: GOOGLE_TOKEN_URI });

let clouds: FakeClouds;
let api: TestApi;

beforeAll(async () => {
  const hosts = ["oauth2.googleapis.com", "login.microsoftonline.com"];
  const pki = makePki(hosts);
  clouds = startFakeClouds(pki, { gcp: { email: EMAIL, publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString() }, azure: { tenantId: TENANT, clientId: CLIENT, clientSecret: SECRET }, object: { container: "c", name: "o", content: "x" } });
  clouds.mintDelayMs = 50;
  api = await createTestApi({ CREDGATE_CONNECT_TO: hosts.map((h) => `${h}:443:127.0.0.1:${clouds.port}`).join(","), CREDGATE_UPSTREAM_CA_FILE: pki.caFile });
});

afterAll(async () => {
  await clouds?.stop();
});

function request(host: string, injection: InjectionConfig, value: string): ProxyRequest {
  const secret = compiledSecret({ hostPattern: host, value, injection });
  const rq = testRequest({ tunnel: host, target: "/x", headers: { authorization: "Bearer credgate-managed-gcp" } });
  signIn(rq, agentCredentials({ injectable: [secret] }));
  rq.signing = [{ secret, value }];
  return rq;
}

const stage = () => cloudTokenStage({ tokens: api.core.services.cloudTokens });

describe("cloud-token stage", () => {
  test("Google: concurrent requests mint once; Bearer <minted> replaces the placeholder; then synchronous", async () => {
    const s = stage();
    const rqs = [1, 2, 3].map(() => request("storage.googleapis.com", { gcpServiceAccount: { scopes: ["https://www.googleapis.com/auth/devstorage.read_only"] } }, KEY));
    const verdicts = rqs.map((rq) => s.request!(rq));
    expect(verdicts.every((v) => v instanceof Promise)).toBe(true);
    for (const v of verdicts) expect(await outcome(v)).toBe("pass");
    expect(clouds.google.refused).toEqual([]);
    expect(clouds.google.mints.map((m) => m.scope)).toEqual(["https://www.googleapis.com/auth/devstorage.read_only"]);
    const token = clouds.google.mints[0]!.token;
    for (const rq of rqs) {
      expect(rq.headers.get("authorization")).toBe(`Bearer ${token}`);
      expect(rq.injectionCount).toBe(1);
      expect(rq.injectedValues).toContain(token);
    }
    const again = request("storage.googleapis.com", { gcpServiceAccount: { scopes: ["https://www.googleapis.com/auth/devstorage.read_only"] } }, KEY);
    expect(s.request!(again)).toBe(PASS);
    expect(again.headers.get("authorization")).toBe(`Bearer ${token}`);
  });

  test("Azure: the scope the host implies, or the secret's; one token per scope", async () => {
    const s = stage();
    const blob = request("acct.blob.core.windows.net", { azureClientSecret: { tenantId: TENANT, clientId: CLIENT } }, SECRET);
    expect(await outcome(s.request!(blob))).toBe("pass");
    const vault = request("kv.vault.azure.net", { azureClientSecret: { tenantId: TENANT, clientId: CLIENT } }, SECRET);
    expect(await outcome(s.request!(vault))).toBe("pass");
    const arm = request("custom.example.com", { azureClientSecret: { tenantId: TENANT, clientId: CLIENT, scope: "https://management.azure.com/.default" } }, SECRET);
    expect(await outcome(s.request!(arm))).toBe("pass");
    expect(clouds.azure.refused).toEqual([]);
    expect(clouds.azure.mints.map((m) => m.scope)).toEqual(["https://storage.azure.com/.default", "https://vault.azure.net/.default", "https://management.azure.com/.default"]);
    expect(blob.headers.get("authorization")).toBe(`Bearer ${clouds.azure.mints[0]!.token}`);
  });

  test("Azure without a scope on a host that implies none → 502 credential_unavailable, synchronously, nothing minted", async () => {
    const before = clouds.azure.mints.length + clouds.azure.refused.length;
    const rq = request("custom.example.com", { azureClientSecret: { tenantId: TENANT, clientId: CLIENT } }, SECRET);
    const v = stage().request!(rq);
    expect(v instanceof Promise).toBe(false);
    expect(await outcome(v)).toMatchObject({ decision: "error", status: 502, body: { error: "credential_unavailable" } });
    expect(rq.headers.get("authorization")).toBe("Bearer credgate-managed-gcp");
    expect(clouds.azure.mints.length + clouds.azure.refused.length).toBe(before);
  });

  test("a wrong client secret: the issuer refuses → 502 credential_unavailable, the agent's header untouched", async () => {
    const rq = request("acct.queue.core.windows.net", { azureClientSecret: { tenantId: TENANT, clientId: CLIENT, scope: "https://graph.microsoft.com/.default" } }, "not-the-secret");
    expect(await outcome(stage().request!(rq))).toMatchObject({ decision: "error", status: 502, body: { error: "credential_unavailable" } });
    expect(clouds.azure.refused).toContain("bad client secret");
    expect(rq.headers.get("authorization")).toBe("Bearer credgate-managed-gcp");
  });

  test("a request with no cloud secret passes untouched", () => {
    const rq = testRequest({ tunnel: "api.example.com", target: "/", headers: { authorization: "Bearer x" } });
    signIn(rq, agentCredentials({}));
    expect(stage().request!(rq)).toBe(PASS);
  });
});
