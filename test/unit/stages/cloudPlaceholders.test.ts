// The cloud-placeholders stage (docs/cloud-identities.md#placeholders): for an agent that may use a Google Cloud or
// Azure secret, the Google token endpoint, the GCE metadata server, the Azure AD token endpoint and the Azure
// managed-identity endpoint answered with placeholders; a CONNECT to a metadata host marked local (so the egress
// guard lets it open) only for such an agent; every other request passes synchronously, untouched.
import { describe, expect, test } from "bun:test";
import { cloudPlaceholdersStage } from "../../../src/gateway/stages/cloudPlaceholders.ts";
import { egressStage } from "../../../src/gateway/stages/egress.ts";
import { agentCredentials, compiledSecret, signIn, testRequest, testTunnel } from "../../../src/gateway/testing.ts";
import { PASS } from "../../../src/gateway/stage.ts";
import type { AgentCredentials } from "../../../src/gateway/snapshot.ts";
import { outcome } from "./helpers.ts";
import { VaultResolver } from "../../../src/vault/resolver.ts";

const KEY = JSON.stringify({ type: "service_account", project_id: "proj-1", client_email: "bot@proj-1.iam.gserviceaccount.com", private_key: "unused here", token_uri: "https://oauth2.googleapis.com/token" });
const CLIENT = "66666666-7777-8888-9999-000000000000";
const gcp = compiledSecret({ hostPattern: "*.googleapis.com", value: KEY, injection: { gcpServiceAccount: {} } });
const azure = compiledSecret({ hostPattern: "*.blob.core.windows.net", value: "s", injection: { azureClientSecret: { tenantId: CLIENT, clientId: CLIENT } } });
const both = agentCredentials({ injectable: [gcp, azure] });
const none = agentCredentials({ injectable: [compiledSecret({ hostPattern: "api.example.com", value: "v", injection: { headerName: "x-key" } })] });

// No vault or store here: every key of these tests is inline (a key kept in a store: test/e2e/secret-stores-variants.test.ts).
const stage = cloudPlaceholdersStage({ vault: new VaultResolver({ host: null, token: null, fetch: () => Promise.reject(new Error("no fetch in this test")) }) });

async function ask(creds: AgentCredentials, init: Parameters<typeof testRequest>[0]) {
  const rq = testRequest(init);
  signIn(rq, creds);
  return outcome(stage.request!(rq));
}

describe("cloud-placeholders stage", () => {
  test("the Google token endpoint: JWT-bearer and refresh grants answered; another grant goes on", async () => {
    const jwt = await ask(both, { tunnel: "oauth2.googleapis.com", method: "POST", target: "/token", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b.c" });
    expect(jwt).toMatchObject({ decision: "allowed", status: 200, body: { access_token: "credgate-managed-gcp", expires_in: 3599, token_type: "Bearer" } });
    const legacy = await ask(both, { tunnel: "www.googleapis.com", method: "POST", target: "/oauth2/v4/token", body: '{"grant_type":"refresh_token","refresh_token":"x"}' });
    expect(legacy).toMatchObject({ status: 200, body: { access_token: "credgate-managed-gcp" } });
    expect(await ask(both, { tunnel: "oauth2.googleapis.com", method: "POST", target: "/token", body: "grant_type=authorization_code&code=x" })).toBe("pass");
  });

  test("GCE metadata: project, email, token; Metadata-Flavor required and answered; anything else 404", async () => {
    const h = { "metadata-flavor": "Google" };
    const project = await ask(both, { target: "http://metadata.google.internal/computeMetadata/v1/project/project-id", headers: h });
    expect(project).toMatchObject({ status: 200, headers: { "metadata-flavor": "Google" } });
    const email = testRequest({ target: "http://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/email", headers: h });
    signIn(email, both);
    const reply = (await stage.request!(email)).response as Response;
    expect(await reply.text()).toBe("bot@proj-1.iam.gserviceaccount.com");
    expect(await ask(both, { target: "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token", headers: h })).toMatchObject({ status: 200, body: { access_token: "credgate-managed-gcp" } });
    expect(await ask(both, { target: "http://metadata.google.internal/computeMetadata/v1/project/project-id" })).toMatchObject({ status: 403 });
    expect(await ask(both, { target: "http://metadata.google.internal/computeMetadata/v1/instance/attributes/startup-script", headers: h })).toMatchObject({ status: 404 });
    expect(await ask(both, { target: "http://169.254.169.254/latest/meta-data/", headers: h })).toMatchObject({ status: 404 });
  });

  test("Azure: the AD token endpoint and the managed-identity endpoint (400 without Metadata: true)", async () => {
    expect(await ask(both, { tunnel: "login.microsoftonline.com", method: "POST", target: `/${CLIENT}/oauth2/v2.0/token`, body: "grant_type=client_credentials" })).toMatchObject({ status: 200, body: { access_token: "credgate-managed-azure", expires_in: 3599 } });
    const mi = await ask(both, { target: "http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https://vault.azure.net", headers: { metadata: "true" } });
    expect(mi).toMatchObject({ status: 200, body: { access_token: "credgate-managed-azure", client_id: CLIENT, resource: "https://vault.azure.net", token_type: "Bearer" } });
    expect(await ask(both, { target: "http://169.254.169.254/metadata/identity/oauth2/token" })).toMatchObject({ status: 400, body: { error: "invalid_request" } });
  });

  test("an agent that may use no cloud secret: everything passes, and a CONNECT to a metadata host stays the egress guard's", async () => {
    expect(await ask(none, { target: "http://169.254.169.254/computeMetadata/v1/project/project-id", headers: { "metadata-flavor": "Google" } })).toBe("pass");
    expect(await ask(none, { tunnel: "login.microsoftonline.com", method: "POST", target: `/${CLIENT}/oauth2/v2.0/token`, body: "x" })).toBe("pass");
    const tunnel = testTunnel({ authority: "169.254.169.254:80" });
    signIn(tunnel, none);
    expect(stage.connect!(tunnel)).toBe(PASS);
    expect(tunnel.local).toBe(false);
    const refused = await egressStage({ egress: { check: () => ({ kind: "denied", address: "169.254.169.254" }) } as never }).connect!(tunnel);
    expect(refused.response).not.toBeNull();
  });

  test("a CONNECT to a metadata host by an agent with a cloud secret is local: the egress guard lets it open without a lookup", async () => {
    for (const authority of ["169.254.169.254:80", "metadata.google.internal:80"]) {
      const tunnel = testTunnel({ authority });
      signIn(tunnel, both);
      stage.connect!(tunnel);
      expect(tunnel.local).toBe(true);
      const egress = egressStage({ egress: { check: () => { throw new Error("not looked up"); } } as never });
      expect(egress.connect!(tunnel)).toBe(PASS);
    }
  });

  test("with two Google secrets, the metadata email is the winning one's (the later in application order)", async () => {
    const org = compiledSecret({ hostPattern: "*.googleapis.com", value: KEY.replace(/bot@proj-1/g, "org@proj-0"), injection: { gcpServiceAccount: {} } });
    const creds = agentCredentials({ injectable: [org, gcp] });
    const rq = testRequest({ target: "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/email", headers: { "metadata-flavor": "Google" } });
    signIn(rq, creds);
    expect(await ((await stage.request!(rq)).response as Response).text()).toBe("bot@proj-1.iam.gserviceaccount.com");
  });

  test("every other request: synchronous PASS", () => {
    const rq = testRequest({ tunnel: "storage.googleapis.com", target: "/storage/v1/b" });
    signIn(rq, both);
    expect(stage.request!(rq)).toBe(PASS);
  });
});
