// The secret form for signed and minted credentials in a real Chromium against the real credgate process
// (docs/injection.md#aws-signature-v4, docs/injection.md#github-app, docs/injection.md#testing-a-signed-or-minted-secret):
// an AWS key and a GitHub App are created, listed with their key id and app id (never the secret parts), edited,
// and tested — the test reaches the fake AWS STS (which verifies the signature with the real key) and the fake
// GitHub (which verifies the app's JWT) through credgate's egress path; the validation messages show at their fields.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import type { RunningCredgate } from "../support/process.ts";
import { makePki } from "../support/upstream.ts";
import { startFakeAws, type FakeAws } from "../support/fakeAws.ts";
import { startFakeGithub, type FakeGithub } from "../support/fakeGithub.ts";

const AWS = { accessKeyId: "AKIADASHBOARD0000001", secretAccessKey: "dashboard/secret+access/key0123456789ABC" };
const APP_ID = 4242;
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PEM = privateKey.export({ type: "pkcs8", format: "pem" }).toString();

let dash: Dashboard;
let cg: RunningCredgate;
let aws: FakeAws;
let github: FakeGithub;

beforeAll(async () => {
  const pki = makePki(["sts.amazonaws.com", "sts.us-west-2.amazonaws.com", "api.github.com"]);
  aws = startFakeAws(pki, AWS);
  github = startFakeGithub(pki, { appId: APP_ID, publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString() }, () => undefined);
  dash = await startDashboard({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_CONNECT_TO: `sts.amazonaws.com:443:127.0.0.1:${aws.port},sts.us-west-2.amazonaws.com:443:127.0.0.1:${aws.port},api.github.com:443:127.0.0.1:${github.port}`,
    },
  });
  cg = dash.cg;
}, 60_000);

afterAll(async () => {
  await dash?.stop();
  await aws?.stop();
  await github?.stop();
});

describe("signed and minted secrets in the dashboard", () => {
  test("create, list, edit and test an AWS key and a GitHub App", async () => {
    const { page } = await dash.projectSecrets();

    // AWS: a bad key id first — the message shows at its field.
    await page.getByRole("button", { name: "Add secret" }).first().click();
    let d = page.getByRole("dialog", { name: "Add secret" });
    await d.getByLabel("Name").fill("AWS prod");
    await d.getByLabel("Host", { exact: true }).fill("*.amazonaws.com");
    await d.getByLabel("Inject as").selectOption("awsSigV4");
    expect(await d.getByLabel("Value", { exact: true }).isVisible()).toBe(false);
    await d.getByLabel("Access key ID").fill("akia-lowercase");
    await d.getByLabel("Secret access key").fill(AWS.secretAccessKey);
    await d.getByRole("button", { name: "Add secret" }).click();
    await d.getByText("awsSigV4.accessKeyId must be 16-128 characters of A-Z and 0-9").waitFor();
    await d.getByLabel("Access key ID").fill(AWS.accessKeyId);
    await d.getByRole("button", { name: "Add secret" }).click();
    await page.getByText("Added AWS prod.").waitFor();

    // GitHub App: the PEM is pasted into its own field.
    await page.getByRole("button", { name: "Add secret" }).first().click();
    d = page.getByRole("dialog", { name: "Add secret" });
    await d.getByLabel("Name").fill("Deploy bot");
    await d.getByLabel("Host", { exact: true }).fill("api.github.com");
    await d.getByLabel("Inject as").selectOption("githubApp");
    await d.getByLabel("App ID").fill(String(APP_ID));
    await d.getByLabel("Installation ID").fill("777");
    await d.getByLabel("Private key (PEM)").fill("not a key");
    await d.getByRole("button", { name: "Add secret" }).click();
    await d.getByText("value must be a PEM private key for a GitHub App").waitFor();
    await d.getByLabel("Private key (PEM)").fill(PEM);
    await d.getByRole("button", { name: "Add secret" }).click();
    await page.getByText("Added Deploy bot.").waitFor();

    // Listed with the key id and the app's ids; the secret parts are nowhere in the page.
    await page.getByText(`AWS SigV4, key ${AWS.accessKeyId}`).waitFor();
    await page.getByText(`GitHub App ${APP_ID}, installation 777`).waitFor();
    const html = await page.content();
    expect(html).not.toContain(AWS.secretAccessKey);
    expect(html).not.toContain("PRIVATE KEY-----\nMII");
    const stored = Object.fromEntries((await cg.api("GET", "/v1/secrets")).body.map((s: any) => [s.name, s.injectionConfig]));
    expect(stored).toEqual({ "AWS prod": { awsSigV4: { accessKeyId: AWS.accessKeyId } }, "Deploy bot": { githubApp: { appId: APP_ID, installationId: 777 } } });

    // Edited: a region, keeping the stored key.
    await page.getByRole("button", { name: "Edit AWS prod" }).click();
    d = page.getByRole("dialog", { name: "Edit AWS prod" });
    expect(await d.getByLabel("Access key ID").inputValue()).toBe(AWS.accessKeyId);
    await d.getByLabel("Region").fill("us-west-2");
    await d.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved AWS prod.").waitFor();
    await page.getByText(`AWS SigV4, key ${AWS.accessKeyId} (us-west-2)`).waitFor();

    // Tested against the issuers: STS verifies the signature with the real key; GitHub the app's JWT.
    const stsBefore = aws.seen.length;
    await page.getByRole("button", { name: "Test AWS prod" }).click();
    await page.getByText("AWS prod: AWS accepted the key: account 123456789012").waitFor();
    expect(aws.seen.slice(stsBefore).map((s) => [s.failure, s.service, s.region])).toEqual([[null, "sts", "us-west-2"]]);
    const mintsBefore = github.mints.length;
    await page.getByRole("button", { name: "Test Deploy bot" }).click();
    await page.getByText(`Deploy bot: GitHub minted an installation token for installation 777 of app ${APP_ID}.`).waitFor();
    expect(github.mints.length).toBe(mintsBefore + 1);
    expect(github.refused).toEqual([]);
  }, 60_000);
});
