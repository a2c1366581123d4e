// The organization's audit log page in a real Chromium against the real credgate process
// (docs/operations.md#audit-log): reached from the organization tabs, newest first with actor, action, target,
// address and changes (a secret's value reads <redacted>, never the value), filtered by action through the URL
// (a reload keeps the filter), and paged with "Load more" — with no console errors and no request elsewhere.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import type { RunningCredgate } from "../support/process.ts";

const SECRET_VALUE = "audit-page-secret-value-0123456789";
const NEW_VALUE = "audit-page-secret-value-rotated-987";

let dash: Dashboard;
let cg: RunningCredgate;
let base = "";

beforeAll(async () => {
  dash = await startDashboard();
  ({ cg, base } = dash);
}, 60_000);

afterAll(async () => {
  await dash?.stop();
});

test("the audit log: tab, events with their changes, redaction, an action filter in the URL, Load more", async () => {
  const secret = await cg.api("POST", "/v1/secrets", { body: { name: "Stripe", type: "generic", value: SECRET_VALUE, hostPattern: "api.stripe.com", injectionConfig: { headerName: "authorization" } } });
  expect(secret.status).toBe(201);
  expect((await cg.api("PATCH", `/v1/secrets/${secret.body.id}`, { body: { name: "Stripe live", value: NEW_VALUE } })).status).toBe(200);
  for (let i = 0; i < 55; i++) expect((await cg.api("POST", "/v1/agents", { body: { name: `Agent ${i}`, identifier: `agent-${i}`, mode: "all" } })).status).toBe(201);

  const { page } = await dash.signedIn(cg.keys.orgApiKey);
  const projectId = cg.keys.projectId;

  await page.goto(`${base}/p/${projectId}/org`);
  await page.getByRole("navigation", { name: "Organization" }).getByRole("link", { name: "Audit log" }).click();
  await page.waitForURL(`${base}/p/${projectId}/org/audit`);
  await page.getByRole("heading", { name: "Audit log", level: 1 }).waitFor();
  const table = page.getByRole("table", { name: "Audit log" });
  await table.waitFor();
  // Newest first: the last agent, 50 to a page; the sign-in itself is the newest event.
  const firstRows = await table.locator("tbody tr").allInnerTexts();
  expect(firstRows.length).toBe(50);
  expect(firstRows[0]).toContain("POST /v1/auth/login");
  expect(firstRows[1]).toContain("POST /v1/agents");
  expect(firstRows[1]).toContain("Agent 54");
  expect(firstRows[1]).toContain("project key");
  expect(firstRows[1]).toContain("owner@localhost");
  expect(firstRows[1]).toContain("127.0.0.1");

  await page.getByRole("button", { name: "Load more" }).click();
  await page.getByText("End of the audit log.").waitFor();
  const all = await table.locator("tbody tr").allInnerTexts();
  expect(all.length).toBe(58);
  const patch = all.find((r) => r.includes("PATCH /v1/secrets/{secretId}"))!;
  expect(patch).toContain("name: Stripe → Stripe live");
  expect(patch).toContain("valueSealed: <redacted> → <redacted>");
  expect(patch).toContain(secret.body.id);

  await page.getByLabel("Action").fill("PATCH /v1/secrets/{secretId}");
  await page.getByRole("button", { name: "Apply filters" }).click();
  await page.waitForURL((url) => url.searchParams.get("action") === "PATCH /v1/secrets/{secretId}");
  // The filtered page replaces the table: wait until the new one has its one row.
  for (let i = 0; i < 200 && (await table.locator("tbody tr").count()) !== 1; i++) await Bun.sleep(25);
  expect(await table.locator("tbody tr").innerText()).toContain("PATCH /v1/secrets/{secretId}");
  await page.reload();
  await page.getByRole("table", { name: "Audit log" }).waitFor();
  expect(await page.getByRole("table", { name: "Audit log" }).locator("tbody tr").count()).toBe(1);
  expect(await page.getByLabel("Action").inputValue()).toBe("PATCH /v1/secrets/{secretId}");

  const html = await page.content();
  expect(html).not.toContain(SECRET_VALUE);
  expect(html).not.toContain(NEW_VALUE);
}, 90_000);
