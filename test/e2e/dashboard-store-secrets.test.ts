// The secret form's "Secret store" source in a real Chromium against the real credgate process
// (docs/injection.md#secret-stores, docs/injection.md#testing-a-store-reference): a cmd:// secret is created (the
// reference's messages show at its field first), listed with its reference, tested (a real command runs once, the
// page shows its answer and never the value), switched to an inline value and back; an organization secret may use
// a store too.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import type { RunningCredgate } from "../support/process.ts";

const VALUE = `sk_dash_store_${crypto.randomUUID().replace(/-/g, "")}`;
let dir: string;
let dash: Dashboard;
let cg: RunningCredgate;
let base = "";
const runs = () => (existsSync(join(dir, "count")) ? readFileSync(join(dir, "count"), "utf8").split("\n").filter(Boolean).length : 0);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "credgate-dash-store-"));
  const script = join(dir, "print.sh");
  writeFileSync(script, `#!/bin/sh\necho run >> "${dir}/count"\necho "${VALUE}"\n`);
  chmodSync(script, 0o755);
  dash = await startDashboard({ env: { CREDGATE_SECRET_COMMANDS: JSON.stringify({ stripe: [script] }) } });
  ({ cg, base } = dash);
}, 60_000);

afterAll(async () => {
  await dash?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("secret-store secrets in the dashboard", () => {
  test("create with a reference, list, test, switch to inline and back", async () => {
    const { page } = await dash.projectSecrets();

    await page.getByRole("button", { name: "Add secret" }).first().click();
    let d = page.getByRole("dialog", { name: "Add secret" });
    await d.getByLabel("Name").fill("Stripe");
    await d.getByLabel("Value source").selectOption("vault");
    expect(await d.getByLabel("Value", { exact: true }).isVisible()).toBe(false);
    await d.getByLabel("Host", { exact: true }).fill("api.stripe.test");
    await d.getByLabel("Header", { exact: true }).fill("authorization");
    await d.getByLabel("Value format").fill("Bearer {value}");
    // The reference's messages show at its field: unknown scheme, then a command the instance does not have.
    await d.getByLabel("Store reference").fill("https://vault.example/secret");
    await d.getByRole("button", { name: "Add secret" }).click();
    await d.getByText("storeRef must start with vault://, vault-db://, aws-sm://, gcp-sm://, azure-kv:// or cmd://").waitFor();
    await d.getByLabel("Store reference").fill("cmd://other");
    await d.getByRole("button", { name: "Add secret" }).click();
    await d.getByText('Secret command "other" is not configured').waitFor();
    await d.getByLabel("Store reference").fill("cmd://stripe");
    await d.getByRole("button", { name: "Add secret" }).click();
    await page.getByText("Added Stripe.").waitFor();
    // No preview: credgate holds no value.
    expect(await page.getByText("Stored value:").count()).toBe(0);

    // Listed with where the value lives.
    await page.getByText("cmd://stripe").waitFor();
    expect((await cg.api("GET", "/v1/secrets")).body.find((s: any) => s.name === "Stripe")).toMatchObject({ valueSource: "vault", storeRef: "cmd://stripe" });

    // Tested: the command runs once; the page says it read a value, never which.
    expect(runs()).toBe(0);
    await page.getByRole("button", { name: "Test Stripe" }).click();
    await page.getByText(`Stripe: Read a value of ${VALUE.length} characters from the store.`).waitFor();
    expect(runs()).toBe(1);
    expect(await page.content()).not.toContain(VALUE);

    // Edited: the reference shows; switching to a stored value clears it, and back.
    await page.getByRole("button", { name: "Edit Stripe" }).click();
    d = page.getByRole("dialog", { name: "Edit Stripe" });
    expect(await d.getByLabel("Store reference").inputValue()).toBe("cmd://stripe");
    await d.getByLabel("Value source").selectOption("inline");
    await d.getByLabel("Value", { exact: true }).fill("sk_inline_dashboard_0123456789");
    await d.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved Stripe.").waitFor();
    await page.getByText("Stored (encrypted)").waitFor();
    expect(await page.getByRole("button", { name: "Test Stripe" }).count()).toBe(0);
    await page.getByRole("button", { name: "Edit Stripe" }).click();
    d = page.getByRole("dialog", { name: "Edit Stripe" });
    await d.getByLabel("Value source").selectOption("vault");
    await d.getByLabel("Store reference").fill("cmd://stripe");
    await d.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved Stripe.").waitFor();
    await page.getByText("cmd://stripe").waitFor();
    expect((await cg.api("GET", "/v1/secrets")).body.find((s: any) => s.name === "Stripe")).toMatchObject({ valueSource: "vault", storeRef: "cmd://stripe", opRef: null });
  }, 60_000);
});
