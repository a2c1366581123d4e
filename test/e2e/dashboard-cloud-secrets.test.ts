// The secret form for the cloud identities in a real Chromium against the real credgate process
// (docs/cloud-identities.md#variants): a Google service account (its JSON key in its own field, the host left empty
// for *.googleapis.com) and an Azure client secret are created, the validation messages showing at their fields,
// listed by account and app (never the key or the secret), and an Azure secret edited to a scope of its own.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import type { RunningCredgate } from "../support/process.ts";

const PEM = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const KEY = JSON.stringify({ type: "service_account", project_id: "dash", private_key: PEM, client_email: "dash@dash.iam.gserviceaccount.com", token_uri: "https://oauth2.googleapis.com/token" });
const TENANT = "11111111-2222-3333-4444-555555555555";
const CLIENT = "66666666-7777-8888-9999-000000000000";
const CLIENT_SECRET = "dashboard~azure.client-secret_0123456789";

let dash: Dashboard;
let cg: RunningCredgate;

beforeAll(async () => {
  dash = await startDashboard();
  cg = dash.cg;
}, 60_000);

afterAll(async () => {
  await dash?.stop();
});

describe("cloud identities in the dashboard", () => {
  test("create a Google service account and an Azure client secret, list them, edit the Azure scope", async () => {
    const { page } = await dash.projectSecrets();

    // Google: a key that is no service-account key first — the message shows at its field.
    await page.getByRole("button", { name: "Add secret" }).first().click();
    let d = page.getByRole("dialog", { name: "Add secret" });
    await d.getByLabel("Name").fill("GCP prod");
    await d.getByLabel("Inject as").selectOption("gcpServiceAccount");
    expect(await d.getByLabel("Value", { exact: true }).isVisible()).toBe(false);
    await d.getByLabel("Service-account key (JSON)").fill('{"type":"authorized_user"}');
    await d.getByRole("button", { name: "Add secret" }).click();
    await d.getByText("value must be a Google service-account JSON key").waitFor();
    await d.getByLabel("Service-account key (JSON)").fill(KEY);
    await d.getByLabel("Scopes").fill("https://www.googleapis.com/auth/devstorage.read_only");
    await d.getByRole("button", { name: "Add secret" }).click();
    await page.getByText("Added GCP prod.").waitFor();

    // Azure: a tenant that is no GUID first.
    await page.getByRole("button", { name: "Add secret" }).first().click();
    d = page.getByRole("dialog", { name: "Add secret" });
    await d.getByLabel("Name").fill("Azure storage");
    await d.getByLabel("Host", { exact: true }).fill("*.blob.core.windows.net");
    await d.getByLabel("Inject as").selectOption("azureClientSecret");
    await d.getByLabel("Tenant ID").fill("contoso");
    await d.getByLabel("Client ID").fill(CLIENT);
    await d.getByLabel("Client secret").fill(CLIENT_SECRET);
    await d.getByRole("button", { name: "Add secret" }).click();
    await d.getByText("azureClientSecret.tenantId must be a GUID").waitFor();
    await d.getByLabel("Tenant ID").fill(TENANT);
    await d.getByRole("button", { name: "Add secret" }).click();
    await page.getByText("Added Azure storage.").waitFor();

    await page.getByText("Google service account (https://www.googleapis.com/auth/devstorage.read_only)").waitFor();
    await page.getByText(`Azure app ${CLIENT}, tenant ${TENANT}`).waitFor();
    const html = await page.content();
    expect(html).not.toContain(CLIENT_SECRET);
    expect(html).not.toContain(PEM.split("\n")[1]!);
    const stored = Object.fromEntries((await cg.api("GET", "/v1/secrets")).body.map((s: any) => [s.name, [s.hostPattern, s.injectionConfig]]));
    expect(stored).toEqual({
      "GCP prod": ["*.googleapis.com", { gcpServiceAccount: { scopes: ["https://www.googleapis.com/auth/devstorage.read_only"] } }],
      "Azure storage": ["*.blob.core.windows.net", { azureClientSecret: { tenantId: TENANT, clientId: CLIENT } }],
    });

    // Edited: a scope of its own, keeping the stored secret.
    await page.getByRole("button", { name: "Edit Azure storage" }).click();
    d = page.getByRole("dialog", { name: "Edit Azure storage" });
    expect(await d.getByLabel("Tenant ID").inputValue()).toBe(TENANT);
    await d.getByLabel("Scope", { exact: true }).fill("https://storage.azure.com/.default");
    await d.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved Azure storage.").waitFor();
    await page.getByText(`Azure app ${CLIENT}, tenant ${TENANT} (https://storage.azure.com/.default)`).waitFor();
  }, 60_000);
});
