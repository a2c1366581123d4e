// The dashboard's cloud pages in a real Chromium against the real credgate process in cloud mode: a partner's
// owner accepts the invite and works in the partner portal (an organization for a customer with its one-time
// credentials and claim link, a partner LLM key, a spend budget whose bar shows what the organization's agent
// really spent through the gateway, members with an invitation link); a customer opens the claim link signed
// out, creates an account on the way and claims the organization, then sees the partner and its inherited
// key on the organization page; an organization owner provisions a team member and manages projects.
// Every page stays on credgate's origin, raises no script error and never shows a secret value.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Locator, Page } from "playwright-core";
import { screenshot } from "../support/browser.ts";
import { curlThroughGateway } from "../support/curl.ts";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import { gatewayCa, until } from "../support/gateway.ts";
import { startFakeVendors, type FakeVendors } from "../support/llm/fakeVendors.ts";
import { runCli, type RunningCredgate } from "../support/process.ts";
import { makePki } from "../support/upstream.ts";

const LLM_HOST = "budget.anthropic.test";
const PARTNER_KEY_VALUE = "sk-ant-api03-partner-dashboard-key";
const PASSWORD = "a long partner password";

let dash: Dashboard;
let cg: RunningCredgate;
let fake: FakeVendors;
let caFile = "";
let base = "";

/** What the partner portal test leaves for the claim test. */
const made = { orgName: "Globex Customer", orgId: "", projectId: "", agentToken: "", claimUrl: "", partnerName: "Initech Partners" };

beforeAll(async () => {
  const pki = makePki([LLM_HOST]);
  fake = startFakeVendors(pki);
  dash = await startDashboard({
    env: {
      CREDGATE_MODE: "cloud",
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_CONNECT_TO: `${LLM_HOST}:443:127.0.0.1:${fake.port}`,
      CREDGATE_EGRESS_ALLOW: "127.0.0.1/32",
    },
  });
  ({ cg, base } = dash);
  caFile = (await gatewayCa(cg)).file;
}, 60_000);

afterAll(async () => {
  await dash?.stop();
  await fake?.stop();
});

async function fresh(): Promise<Page> {
  return (await dash.open()).page;
}

const text = (page: Page) => page.locator("body").innerText();

/** Answers a confirmation dialog. */
async function confirm(page: Page, title: string, button: string): Promise<void> {
  await page.getByRole("dialog", { name: title }).getByRole("button", { name: button }).click();
}

const valueOf = (scope: Page | Locator, label: string) => scope.getByLabel(label, { exact: true }).inputValue();

describe("partner portal", () => {
  test("the owner's invitation, an organization with its one-time credentials, a partner LLM key and a budget whose bar shows the spend, members", async () => {
    const owner = "owner@initech.test";
    const cli = await runCli(["partner", "create", "--name", made.partnerName, "--owner-email", owner, "--data-dir", cg.dataDir, "--json"], { ...cg.env, CREDGATE_PUBLIC_URL: base });
    expect(cli.code).toBe(0);
    const { inviteUrl } = JSON.parse(cli.stdout) as { inviteUrl: string };
    expect(inviteUrl.startsWith(`${base}/accept-invite?token=`)).toBe(true);

    const page = await fresh();
    await page.goto(inviteUrl);
    await page.getByRole("heading", { name: "Accept your invitation" }).waitFor();
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByLabel("Repeat the password").fill("something else entirely");
    await page.getByRole("button", { name: "Set password and sign in" }).click();
    await page.getByText("The two passwords differ").waitFor();
    await page.getByLabel("Repeat the password").fill(PASSWORD);
    await page.getByRole("button", { name: "Set password and sign in" }).click();
    // A partner member without an organization of their own lands in the portal.
    await page.waitForURL(`${base}/partner`);
    await page.getByRole("heading", { name: "Organizations" }).waitFor();
    expect(await text(page)).toContain(`Partner: ${made.partnerName}`);
    await page.getByText("No organizations yet").waitFor();

    // An organization for a customer: the credentials are shown once, and work.
    await page.getByRole("button", { name: "Create organization" }).click();
    const create = page.getByRole("dialog", { name: "Create organization" });
    await create.getByLabel("Organization name").fill(made.orgName);
    await create.getByRole("button", { name: "Create organization" }).click();
    await page.getByRole("heading", { name: `Created ${made.orgName}` }).waitFor();
    made.claimUrl = await valueOf(page, "Claim link");
    made.agentToken = await valueOf(page, "Agent token");
    const projectKey = await valueOf(page, "Project API key");
    expect(made.claimUrl).toMatch(new RegExp(`^${base.replace(/\./g, "\\.")}/claim\\?token=[0-9a-f]{64}$`));
    expect(made.agentToken).toMatch(/^agt_[0-9a-f]{64}$/);
    expect((await cg.api("GET", "/v1/agents", { key: projectKey })).status).toBe(200);
    const row = page.getByRole("row", { name: new RegExp(made.orgName) });
    await row.getByText("unclaimed").waitFor();
    await screenshot(page, "cloud-partner-orgs");

    // Its page: a new claim link replaces the first one.
    await row.getByRole("link", { name: made.orgName }).click();
    await page.getByRole("heading", { name: made.orgName, level: 1 }).waitFor();
    made.orgId = page.url().split("/").pop()!;
    const org = (await cg.api("GET", `/v1/partner/orgs/${made.orgId}`, { key: null, headers: { cookie: await cookie(page) } })).body;
    made.projectId = org.projects[0].id;
    await page.getByRole("button", { name: "New claim link" }).click();
    await confirm(page, "Issue a new claim link?", "Issue new link");
    await page.getByLabel("Claim link", { exact: true }).waitFor();
    const second = await valueOf(page, "Claim link");
    expect(second).not.toBe(made.claimUrl);
    expect(second).toMatch(/\/claim\?token=[0-9a-f]{64}$/);
    made.claimUrl = second;
    await page.getByText("Add an LLM key under").waitFor();

    // A partner LLM key, from the secret form (its value never shown again).
    await page.getByRole("link", { name: "Partner secrets" }).first().click();
    await page.getByRole("heading", { name: "Partner secrets" }).waitFor();
    await page.getByRole("button", { name: "Add secret" }).first().click();
    const add = page.getByRole("dialog", { name: "Add secret" });
    await add.getByLabel("Name").fill("Shared Claude key");
    await add.getByLabel("Type").selectOption("llm_a");
    expect(await add.getByLabel("Value source").count()).toBe(0);
    await add.getByLabel("Value", { exact: true }).fill(PARTNER_KEY_VALUE);
    await add.getByLabel("Host", { exact: true }).fill(LLM_HOST);
    await add.getByRole("button", { name: "Add secret" }).click();
    await page.getByText("Added Shared Claude key.").waitFor();
    expect(await page.content()).not.toContain(PARTNER_KEY_VALUE);

    // A budget on it for the organization: $5.00 a month, nothing spent yet.
    await page.goto(`${base}/partner/orgs/${made.orgId}`);
    const budgetRow = page.getByRole("row", { name: /Shared Claude key/ });
    await budgetRow.getByText("No budget").waitFor();
    await budgetRow.getByRole("button", { name: "Set the budget of Shared Claude key" }).click();
    const dialog = page.getByRole("dialog", { name: "Budget for Shared Claude key" });
    await dialog.getByLabel("Limit (US dollars)").fill("0");
    await dialog.getByRole("button", { name: "Save budget" }).click();
    await dialog.getByText("The limit must be between $0.01 and $1,000,000.").waitFor();
    await dialog.getByLabel("Limit (US dollars)").fill("5");
    await dialog.getByRole("button", { name: "Save budget" }).click();
    await page.getByText("Budget saved for Shared Claude key.").waitFor();
    await budgetRow.getByText("$0.00 of $5.00").waitFor();

    // The organization's agent spends $3.00 through the gateway with the partner's key (an unclaimed
    // organization still reaches LLM hosts); the bar shows it after a reload.
    fake.setUsage(LLM_HOST, { input: 1_000_000, output: 0 });
    const r = await curlThroughGateway(cg, `https://${LLM_HOST}/v1/messages`, {
      caFile,
      agentToken: made.agentToken,
      method: "POST",
      headers: ["content-type: application/json", "x-api-key: credgate-managed"],
      data: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(r.status).toBe(200);
    expect(fake.seen.findLast((s) => s.host === LLM_HOST)!.apiKey).toBe(PARTNER_KEY_VALUE);
    await until(async () => {
      await page.reload();
      await budgetRow.getByText("$3.00 of $5.00").waitFor({ timeout: 1000 });
    }, 15_000);
    const meter = budgetRow.getByRole("meter", { name: "Spend of Shared Claude key" });
    expect(await meter.getAttribute("max")).toBe("500");
    expect(await meter.getAttribute("value")).toBe("300");
    await screenshot(page, "cloud-partner-budget");

    // Members: a new person gets an invitation link; the role changes; removal asks first.
    await page.getByRole("link", { name: "Members" }).click();
    await page.getByRole("heading", { name: "Members" }).waitFor();
    expect(await page.getByRole("row", { name: new RegExp(owner) }).innerText()).toContain("The owner cannot be changed or removed");
    await page.getByRole("button", { name: "Add member" }).click();
    const addMember = page.getByRole("dialog", { name: "Add member" });
    await addMember.getByLabel("Email").fill("not an email");
    await addMember.getByRole("button", { name: "Add member" }).click();
    await addMember.getByText("email must be a valid email address").waitFor();
    await addMember.getByLabel("Email").fill("helper@initech.test");
    await addMember.getByRole("button", { name: "Add member" }).click();
    const invite = await page.getByLabel("Invitation link", { exact: true }).inputValue();
    expect(invite).toMatch(new RegExp(`^${base.replace(/\./g, "\\.")}/accept-invite\\?token=[0-9a-f]{64}$`));
    await page.getByLabel("Role of helper@initech.test").selectOption("admin");
    await page.getByText("helper@initech.test is now an admin.").waitFor();
    const members = (await cg.api("GET", "/v1/partner/members", { key: null, headers: { cookie: await cookie(page) } })).body;
    expect(members.find((m: any) => m.email === "helper@initech.test").role).toBe("admin");
    await page.getByRole("button", { name: "Remove helper@initech.test" }).click();
    await confirm(page, "Remove helper@initech.test?", "Remove member");
    await until(async () => {
      if ((await text(page)).includes("helper@initech.test")) throw new Error("still listed");
    });
    expect(await page.content()).not.toContain(PARTNER_KEY_VALUE);
  }, 60_000);
});

describe("claim", () => {
  // Retried once while the missing password alert below is unexplained (two CI runs in five); the log line it
  // prints says what the page showed instead.
  test("a signed-out customer opens the claim link, creates an account on the way, claims, and sees the partner's key on the organization page", async () => {
    expect(made.claimUrl).not.toBe("");
    const page = await fresh();
    await page.goto(made.claimUrl);
    // Sign-in first, returning to the claim; the account is created from there.
    await page.waitForURL((u) => u.pathname === "/sign-in");
    await page.getByText("Sign in, or create an account, to claim the organization you were given.").waitFor();
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.waitForURL((u) => u.pathname === "/sign-up");
    await page.getByLabel("Email").fill("customer@globex.test");
    await page.getByLabel("Password").fill("short");
    await page.getByRole("button", { name: "Create account" }).click();
    await page
      .getByRole("alert")
      .filter({ hasText: /password/i })
      .first()
      .waitFor()
      .catch(async (err: Error) => {
        // Two CI runs in five saw no alert here, and none of many runs on the same machine since: what the page
        // showed instead is what tells why.
        console.log(`sign-up page without the password alert: ${page.url()}\n${(await page.locator("body").innerText()).slice(0, 1500)}`);
        throw err;
      });
    await page.getByLabel("Password").fill("the customer's password");
    await page.getByLabel("Your name").fill("Casey Customer");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL((u) => u.pathname === "/claim" && u.search === new URL(made.claimUrl).search);
    await page.getByText("You are signed in as customer@globex.test").waitFor();
    await page.getByRole("button", { name: "Claim organization" }).click();
    await page.waitForURL(`${base}/p/${made.projectId}`);
    // The customer now has the claimed organization's project beside the one sign-up made.
    const options = await page.getByLabel("Project").locator("option").allInnerTexts();
    expect(options.length).toBe(2);
    expect(options.some((o) => o.startsWith(made.orgName))).toBe(true);

    // The organization page names the partner and the key it shares; detaching stops it.
    await page.getByRole("link", { name: "Organization", exact: true }).click();
    await page.getByRole("heading", { name: "Partner" }).waitFor();
    expect(await text(page)).toContain(`This organization was set up by ${made.partnerName}.`);
    await page.getByRole("row", { name: /Shared Claude key/ }).waitFor();
    await screenshot(page, "cloud-claimed-organization");
    await page.getByRole("button", { name: "Detach from the partner" }).click();
    await confirm(page, `Detach from ${made.partnerName}?`, "Detach");
    await page.getByText("its secrets no longer apply").waitFor();
    const status = await cg.api("GET", "/v1/org/partner/status", { key: null, headers: { cookie: await cookie(page), "x-organization-id": made.orgId } });
    expect(status.body).toEqual({ partnerManaged: true, detached: true, partnerName: made.partnerName });

    // The claim link is used up.
    await page.goto(made.claimUrl);
    await page.getByRole("button", { name: "Claim organization" }).click();
    await page.getByText("Organization has already been claimed").waitFor();

    // Signing out and in again with the email and password.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL((u) => u.pathname === "/sign-in");
    await page.getByLabel("Email").fill("customer@globex.test");
    await page.getByLabel("Password").fill("wrong password");
    await page.getByRole("button", { name: "Sign in with email" }).click();
    await page.getByText("Invalid email or password").waitFor();
    await page.getByLabel("Password").fill("the customer's password");
    await page.getByRole("button", { name: "Sign in with email" }).click();
    await page.waitForURL((u) => u.pathname.startsWith("/p/"));
  }, { timeout: 60_000, retry: 1 });
});

describe("team and projects", () => {
  test("an owner provisions a member (claim link and key shown once) and creates, renames and deletes a project; the switcher follows", async () => {
    const page = await fresh();
    await page.goto(`${base}/sign-up`);
    await page.getByLabel("Email").fill("owner@hooli.test");
    await page.getByLabel("Password").fill("hooli owner password");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL((u) => u.pathname.startsWith("/p/"));
    const projectId = page.url().split("/p/")[1]!.split("/")[0]!;

    await page.goto(`${base}/p/${projectId}/org/team`);
    await page.getByRole("heading", { name: "Team" }).waitFor();
    expect(await page.getByRole("row", { name: /owner@hooli\.test/ }).innerText()).toContain("The owner cannot be changed or removed");
    await page.getByRole("button", { name: "Provision a member" }).click();
    const prov = page.getByRole("dialog", { name: "Provision a member" });
    await prov.getByLabel("Role").selectOption("admin");
    await prov.getByRole("button", { name: "Provision" }).click();
    const claimUrl = await valueOf(page, "Claim link");
    const key = await valueOf(page, "Project API key");
    expect(claimUrl).toMatch(/\/claim\?token=[0-9a-f]{64}$/);
    expect(key).toMatch(/^svc_[0-9a-f]{64}$/);
    expect((await cg.api("GET", "/v1/agents", { key })).status).toBe(200);
    const pending = page.getByRole("row", { name: /Provisioned seat/ });
    await pending.getByText("pending").waitFor();
    await pending.getByRole("button", { name: /^Remove/ }).click();
    await confirm(page, "Remove Provisioned seat (not claimed yet)?", "Remove member");
    await pending.waitFor({ state: "detached" });
    expect((await cg.api("GET", "/v1/agents", { key })).status).toBe(401);
    await screenshot(page, "cloud-team");

    await page.getByRole("link", { name: "Projects", exact: true }).click();
    await page.getByRole("heading", { name: "Projects", level: 1 }).waitFor();
    await page.getByRole("button", { name: "Create project" }).click();
    const create = page.getByRole("dialog", { name: "Create project" });
    await create.getByLabel("Project name").fill("x");
    await create.getByRole("button", { name: "Create project" }).click();
    await create.getByText("Name must be 2-50 characters with at least one letter or number").waitFor();
    await create.getByLabel("Project name").fill("Research");
    await create.getByRole("button", { name: "Create project" }).click();
    const newKey = await valueOf(page, "Project API key");
    expect(newKey).toMatch(/^svc_[0-9a-f]{64}$/);
    expect(await page.getByLabel("Project", { exact: true }).locator("option").allInnerTexts()).toContain("Research");

    await page.getByRole("button", { name: "Rename Research" }).click();
    const rename = page.getByRole("dialog", { name: "Rename Research" });
    await rename.getByLabel("Project name").fill("Research Lab");
    await rename.getByRole("button", { name: "Save" }).click();
    await page.getByRole("row", { name: /Research Lab/ }).getByText("research-lab").waitFor();
    expect(await page.getByLabel("Project", { exact: true }).locator("option").allInnerTexts()).toContain("Research Lab");

    await page.getByRole("button", { name: "Delete Research Lab" }).click();
    await confirm(page, "Delete Research Lab?", "Delete project");
    await page.getByRole("row", { name: /Research Lab/ }).waitFor({ state: "detached" });
    expect(await page.getByLabel("Project", { exact: true }).locator("option").allInnerTexts()).not.toContain("Research Lab");
    expect((await cg.api("GET", "/v1/agents", { key: newKey })).status).toBe(401);
  }, 60_000);
});

/** The page's session cookie, to check through the API what the page did. */
async function cookie(page: Page): Promise<string> {
  const c = (await page.context().cookies()).find((x) => x.name === "credgate_session");
  return `credgate_session=${c!.value}`;
}
