// The dashboard's Budgets pages in a real Chromium against the real process (docs/budgets.md#budgets-for-every-scope,
// docs/budgets.md#spend-report): real spend first (the Anthropic SDK through the gateway to a fake vendor), then
// an agent budget added in the browser (the API's messages under the fields it names), its spend against the
// limit and when it resets, edited and deleted; the spend chart and the per-agent and per-model totals; the
// organization's budgets and its spend per project on its tab.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { windowOf } from "../../src/core/budgetWindows.ts";
import { screenshot } from "../support/browser.ts";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import { gatewayCa, until } from "../support/gateway.ts";
import { startFakeVendors, type FakeVendors } from "../support/llm/fakeVendors.ts";
import { sdk } from "../support/llm/sdk.ts";
import type { RunningCredgate } from "../support/process.ts";
import { makePki } from "../support/upstream.ts";
import { clearOfMidnight } from "../support/windowEdge.ts";

// Budget windows start at 00:00 UTC: no test runs across one.
beforeEach(clearOfMidnight);

let dash: Dashboard;
let cg: RunningCredgate;
let fake: FakeVendors;
let base = "";
let projectId = "";

beforeAll(async () => {
  const pki = makePki(["api.anthropic.com"]);
  fake = startFakeVendors(pki);
  dash = await startDashboard({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_CONNECT_TO: `api.anthropic.com:443:127.0.0.1:${fake.port}` } });
  ({ cg, base } = dash);
  projectId = cg.keys.projectId;
  expect((await cg.api("POST", "/v1/secrets", { body: { name: "Anthropic", type: "llm_a", value: "sk-ant-api03-dashboard" } })).status).toBe(201);
  // Two calls of the default agent: sonnet reporting 10,000 in and 1,000 out costs 4.5 cents each.
  fake.setUsage("api.anthropic.com", { input: 10_000, output: 1_000 });
  const caFile = (await gatewayCa(cg)).file;
  for (const call of ["json", "stream"] as const) {
    const [r] = await sdk([cg], caFile, cg.keys.defaultAgentToken, { sdk: "anthropic", call, baseURL: "https://api.anthropic.com", model: "claude-sonnet-4-5", maxTokens: 1000 });
    expect(r!.error).toBeUndefined();
  }
  await until(async () => {
    if ((await cg.api("GET", "/v1/spend")).body.data[0]?.requests !== 2) throw new Error("spend not recorded yet");
  }, 15_000);
}, 90_000);

afterAll(async () => {
  await dash?.stop();
  await fake?.stop();
});

describe("the project's Budgets page", () => {
  test("spend chart and totals; add an agent budget (errors under their fields), see spent vs limit and the reset, edit, delete", async () => {
    const { page } = await dash.signedIn();
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Budgets" }).click();
    await page.getByRole("heading", { name: "Budgets", level: 1 }).waitFor();
    await page.getByText("No budgets yet").waitFor();

    // The spend of this month: one bar (today), $0.09 in total; per agent and per model.
    const chart = page.getByRole("img", { name: /LLM spend per day/ });
    await chart.waitFor();
    expect(await chart.getAttribute("aria-label")).toContain("$0.09 in total");
    expect(await chart.locator("rect.bar").count()).toBe(1);
    const agentRow = page.getByRole("table", { name: "Spend per agent" }).getByRole("row").filter({ hasText: "Default Agent" });
    expect(await agentRow.innerText()).toMatch(/Default Agent\s+2\s+20,000\s+2,000\s+\$0\.09/);
    await page.getByRole("table", { name: "Spend per model" }).getByRole("row").filter({ hasText: "claude-sonnet-4-5" }).waitFor();

    await page.getByRole("button", { name: "Add budget" }).first().click();
    const dialog = page.getByRole("dialog", { name: "Add a budget" });
    await dialog.getByLabel("Applies to").selectOption("agent");
    await dialog.getByLabel("Agent", { exact: true }).selectOption({ label: "Default Agent" });
    await dialog.getByLabel("Limit (USD)").fill("0");
    await dialog.getByRole("button", { name: "Add budget" }).click();
    await dialog.getByText("limitCents must be a positive integer").waitFor();
    await dialog.getByLabel("Limit (USD)").fill("0.20");
    await dialog.getByLabel("Alert at (% of the limit)").fill("50, 150");
    await dialog.getByRole("button", { name: "Add budget" }).click();
    await dialog.getByText("alertPercents must be integers from 1 to 100").waitFor();
    await dialog.getByLabel("Alert at (% of the limit)").fill("50, 90");
    await dialog.getByRole("button", { name: "Add budget" }).click();
    await page.getByText("Budget added.").waitFor();

    // The agent's spend today (9 cents) against 20, the window's end, the alert points.
    const row = page.getByRole("table", { name: "Budgets of the project and its agents" }).getByRole("row").filter({ hasText: "Agent Default Agent" });
    expect(await row.innerText()).toContain("$0.09 of $0.20");
    expect(await row.innerText()).toContain("Daily");
    expect(await row.innerText()).toContain("50 %, 90 %");
    expect(await row.innerText()).toContain(await page.evaluate((iso) => new Date(iso).toLocaleString(), new Date(windowOf("day", Date.now()).end!).toISOString()));
    const meter = row.getByRole("meter");
    expect(await meter.getAttribute("value")).toBe("9");
    await screenshot(page, "budgets");

    await row.getByRole("button", { name: /^Edit the daily budget/ }).click();
    const edit = page.getByRole("dialog", { name: /^Edit Agent Default Agent's daily budget/ });
    await edit.getByLabel("Limit (USD)").fill("0.05");
    await edit.getByRole("button", { name: "Save" }).click();
    await page.getByText("Budget saved.").waitFor();
    expect(await row.innerText()).toContain("$0.09 of $0.05");
    await row.getByText("limit reached").waitFor();
    const [stored] = (await cg.api("GET", "/v1/budgets")).body;
    expect({ limitCents: stored.limitCents, alertPercents: stored.alertPercents, scope: stored.scope, period: stored.period }).toEqual({ limitCents: 5, alertPercents: [50, 90], scope: "agent", period: "day" });

    await row.getByRole("button", { name: /^Delete the daily budget/ }).click();
    await page.getByRole("dialog", { name: "Delete this budget?" }).getByRole("button", { name: "Delete budget" }).click();
    await page.getByText("Budget deleted.").waitFor();
    await page.getByText("No budgets yet").waitFor();
    expect((await cg.api("GET", "/v1/budgets")).body).toEqual([]);
  }, 120_000);
});

describe("the organization's Budgets tab", () => {
  test("an organization budget for one key type, monthly; spend per project", async () => {
    const { page } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/org`);
    await page.getByRole("navigation", { name: "Organization" }).getByRole("link", { name: "Budgets" }).click();
    await page.getByRole("heading", { name: "Organization budgets", level: 1 }).waitFor();
    await page.getByText("No organization budget yet").waitFor();
    await page.getByRole("button", { name: "Add budget" }).first().click();
    const dialog = page.getByRole("dialog", { name: "Add a budget" });
    expect(await dialog.getByLabel("Applies to").count()).toBe(0);
    await dialog.getByLabel("Period").selectOption("month");
    await dialog.getByLabel("Key type").selectOption("llm_a");
    await dialog.getByLabel("Limit (USD)").fill("$10");
    await dialog.getByRole("button", { name: "Add budget" }).click();
    await page.getByText("Budget added.").waitFor();
    const row = page.getByRole("table", { name: "Budgets of the organization" }).getByRole("row").filter({ hasText: "Organization" });
    expect(await row.innerText()).toContain("$0.09 of $10.00");
    expect(await row.innerText()).toContain("Monthly");
    const [org] = (await cg.api("GET", "/v1/org/budgets", { key: cg.keys.orgApiKey })).body;
    expect({ scope: org.scope, secretType: org.secretType, limitCents: org.limitCents, period: org.period }).toEqual({ scope: "organization", secretType: "llm_a", limitCents: 1000, period: "month" });
    const perProject = page.getByRole("table", { name: "Spend per project" }).getByRole("row").filter({ hasText: "$0.09" });
    await perProject.waitFor();
    await screenshot(page, "org-budgets");
  }, 120_000);
});
