// The web dashboard in a real Chromium against the real credgate process: sign-in and return-to, the
// gateway's guidance links opening the right dialog prefilled (and surviving a reload), a secret created in
// the browser and injected by the gateway, a held request appearing live and approved by a click (the held
// curl then completes), logs, policy, apps, agents and the organization — with no console errors, no request
// to any other host, no API key in web storage and no secret value in the page.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { curlThroughGateway } from "../support/curl.ts";
import { screenshot } from "../support/browser.ts";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import { gatewayCa, resolveEntries, until, untilTrue } from "../support/gateway.ts";
import type { RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.dash.test";
const SECRET_VALUE = "dash-secret-value-0123456789";

let dash: Dashboard;
let cg: RunningCredgate;
let up: TestUpstream;
let caFile = "";
let base = "";
let projectId = "";

beforeAll(async () => {
  const pki = makePki([HOST]);
  up = startUpstream(pki);
  dash = await startDashboard({
    env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([HOST], up.port), CREDGATE_GATEWAY_WORKERS: "1" },
  });
  ({ cg, base } = dash);
  caFile = (await gatewayCa(cg)).file;
  projectId = cg.keys.projectId;
}, 60_000);

afterAll(async () => {
  // Whatever each page did, it stayed on credgate's origin and raised no script error.
  await dash?.stop();
  await up?.stop();
});

const text = (page: Page) => page.locator("body").innerText();

async function storage(page: Page): Promise<string> {
  return page.evaluate("JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])") as Promise<string>;
}

describe("serving", () => {
  test("page paths answer the shell with a strict CSP and no framing; unknown /v1 stays the JSON 404", async () => {
    for (const path of ["/", `/p/${projectId}/secrets?create=generic&host=${HOST}`, "/claim?token=abc", "/app-connect/github?status=success", "/sign-up", "/accept-invite?token=abc", "/partner", "/partner/orgs/abcdefghijklmnop"]) {
      const r = await fetch(base + path);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(r.headers.get("x-frame-options")).toBe("DENY");
      expect(r.headers.get("content-security-policy")).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
      );
      expect(r.headers.get("referrer-policy")).toBe("no-referrer");
    }
    const unknown = await fetch(`${base}/v1/p/${projectId}/secrets`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: { message: `Unrecognized request URL (GET: /v1/p/${projectId}/secrets).`, type: "not_found_error" } });
    // The gateway port serves no dashboard.
    expect((await fetch(`${cg.gatewayUrl}/p/${projectId}/secrets`)).status).toBe(404);
  }, 30_000);
});

describe("sign-in", () => {
  test("an unauthenticated deep link lands on sign-in and returns there; a wrong key shows the API's message; sign-out ends the session", async () => {
    const w = await dash.open();
    const { page } = w;
    const wanted = `/p/${projectId}/logs?decision=allowed`;
    await page.goto(base + wanted);
    await page.waitForURL(`${base}/sign-in?next=${encodeURIComponent(wanted)}`);
    await page.getByLabel("API key").fill(`svc_${"0".repeat(64)}`);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "Invalid API key or token." }).waitFor();
    await page.getByLabel("API key").fill(cg.keys.projectApiKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(base + wanted);
    await page.getByRole("heading", { name: "Logs", level: 1 }).waitFor();
    expect(await page.getByLabel("Decision").inputValue()).toBe("allowed");

    // The key went to the API once; the page keeps only the HttpOnly cookie.
    const st = await storage(page);
    expect(st).not.toContain("svc_");
    expect(await page.evaluate("document.cookie")).toBe("");
    const cookies = await w.context.cookies();
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite])).toEqual([["credgate_session", true, "Lax"]]);
    expect(await page.content()).not.toContain(cg.keys.projectApiKey);

    // The project switcher names the project; the navigation marks the page; the header says the session is
    // the project key's (that project only), not the person's.
    expect(await page.getByLabel("Project").inputValue()).toBe(projectId);
    expect(await page.locator("#session-scope").innerText()).toBe("Project key session");
    expect(await page.locator("#session-scope").getAttribute("title")).toContain("reaches that project only");
    expect(await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Logs" }).getAttribute("aria-current")).toBe("page");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/sign-in`);
    expect(await w.context.cookies()).toEqual([]);
    await page.goto(`${base}/p/${projectId}/agents`);
    await page.waitForURL(`${base}/sign-in?next=${encodeURIComponent(`/p/${projectId}/agents`)}`);
  }, 30_000);
});

describe("secrets", () => {
  test("the guidance link opens the create dialog prefilled (also after a reload); the API's error shows at the Host field; the gateway injects the new secret", async () => {
    const { page } = await dash.signedIn();
    const link = `/p/${projectId}/secrets?create=generic&host=${encodeURIComponent(HOST)}`;
    await page.goto(base + link);
    const dialog = page.getByRole("dialog", { name: "Add secret" });
    await dialog.waitFor();
    expect(await dialog.getByLabel("Host", { exact: true }).inputValue()).toBe(HOST);
    expect(await dialog.getByLabel("Type").inputValue()).toBe("generic");
    await page.reload();
    await dialog.waitFor();
    expect(await dialog.getByLabel("Host", { exact: true }).inputValue()).toBe(HOST);
    await screenshot(page, "secrets-create");

    await dialog.getByLabel("Name").fill("Dash key");
    await dialog.getByLabel("Value", { exact: true }).fill(SECRET_VALUE);
    await dialog.getByLabel("Header", { exact: true }).fill("x-api-key");
    await dialog.getByLabel("Host", { exact: true }).fill(`https://${HOST}`);
    await dialog.getByRole("button", { name: "Add secret" }).click();
    const hostError = dialog.getByText("Enter a hostname, not a URL (remove http:// or https://)");
    await hostError.waitFor();
    expect(await dialog.getByLabel("Host", { exact: true }).getAttribute("aria-invalid")).toBe("true");
    await dialog.getByLabel("Host", { exact: true }).fill(HOST);
    await dialog.getByRole("button", { name: "Add secret" }).click();
    await dialog.waitFor({ state: "detached" });
    await page.getByText("Added Dash key.").waitFor();
    // The masked preview, never the value; closing the dialog dropped the deep-link parameters.
    expect(await text(page)).toContain("dash••••••••6789");
    expect(await page.content()).not.toContain(SECRET_VALUE);
    expect(new URL(page.url()).search).toBe("");
    const row = page.getByRole("row").filter({ hasText: "Dash key" });
    expect(await row.innerText()).toContain("Header x-api-key: {value}");

    const r = await curlThroughGateway(cg, `https://${HOST}:${up.port}/injected`, { caFile });
    expect(r.status).toBe(200);
    expect(up.seen.find((s) => s.url === "/injected")?.headers["x-api-key"]).toBe(SECRET_VALUE);

    // Edit: a new path pattern; an empty value keeps the stored one.
    await row.getByRole("button", { name: "Edit Dash key" }).click();
    const edit = page.getByRole("dialog", { name: "Edit Dash key" });
    await edit.getByLabel("Path", { exact: true }).fill("/only/*");
    await edit.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved Dash key.").waitFor();
    const secrets = (await cg.api("GET", "/v1/secrets")).body;
    expect(secrets.find((s: any) => s.name === "Dash key")).toMatchObject({ pathPattern: "/only/*", hostPattern: HOST, injectionConfig: { headerName: "x-api-key" } });
    await screenshot(page, "secrets");
  }, 30_000);

  test("every injection variant and the LLM types from the form", async () => {
    const { page } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/secrets`);
    const add = async (fill: (d: ReturnType<Page["getByRole"]>) => Promise<void>) => {
      await page.getByRole("button", { name: "Add secret" }).first().click();
      const d = page.getByRole("dialog", { name: "Add secret" });
      await fill(d);
      await d.getByRole("button", { name: "Add secret" }).click();
      await d.waitFor({ state: "detached" });
    };
    await add(async (d) => {
      await d.getByLabel("Name").fill("Query");
      await d.getByLabel("Value", { exact: true }).fill("query-value");
      await d.getByLabel("Host", { exact: true }).fill("q.dash.test");
      await d.getByLabel("Inject as").selectOption("query");
      await d.getByLabel("Parameter", { exact: true }).fill("api_key");
    });
    await add(async (d) => {
      await d.getByLabel("Name").fill("Template");
      await d.getByLabel("Value", { exact: true }).fill("tmplvalue");
      await d.getByLabel("Host", { exact: true }).fill("t.dash.test");
      await d.getByLabel("Inject as").selectOption("pathTemplate");
      await d.getByLabel("Path template").fill("/bot{value}");
    });
    await add(async (d) => {
      await d.getByLabel("Name").fill("Regex");
      await d.getByLabel("Value", { exact: true }).fill("regexvalue");
      await d.getByLabel("Host", { exact: true }).fill("r.dash.test");
      await d.getByLabel("Inject as").selectOption("pathRegex");
      await d.getByLabel("Path regex").fill("^/proj/[^/]+/");
      await d.getByLabel("Replacement").fill("/proj/{value}/");
    });
    await add(async (d) => {
      await d.getByLabel("Name").fill("Placeholder");
      await d.getByLabel("Value", { exact: true }).fill("placeholder-real-value");
      await d.getByLabel("Host", { exact: true }).fill("p.dash.test");
      await d.getByLabel("Inject as").selectOption("placeholder");
      await d.getByLabel("Placeholder", { exact: true }).fill("CG_DASH_PLACEHOLDER");
      // Every surface is offered, all checked; two are unticked.
      for (const label of ["Header values", "Query string", "URL path", "Request body", "WebSocket messages"]) expect(await d.getByLabel(label).isChecked()).toBe(true);
      await d.getByLabel("Query string").uncheck();
      await d.getByLabel("WebSocket messages").uncheck();
    });
    await add(async (d) => {
      await d.getByLabel("Name").fill("Claude");
      await d.getByLabel("Type").selectOption("llm_a");
      await d.getByLabel("Value", { exact: true }).fill("sk-ant-api03-dashboard-key");
    });
    const byName = Object.fromEntries((await cg.api("GET", "/v1/secrets")).body.map((s: any) => [s.name, s]));
    expect(byName.Query.injectionConfig).toEqual({ paramName: "api_key", paramFormat: "{value}" });
    expect(byName.Template.injectionConfig).toEqual({ pathTemplate: "/bot{value}" });
    expect(byName.Regex.injectionConfig).toEqual({ pathRegex: "^/proj/[^/]+/", pathReplacement: "/proj/{value}/" });
    expect(byName.Claude).toMatchObject({ type: "llm_a", hostPattern: "api.anthropic.com", metadata: { authMode: "api-key" } });
    expect(byName.Placeholder.injectionConfig).toEqual({ placeholder: "CG_DASH_PLACEHOLDER", surfaces: ["header", "path", "body"] });
    await page.getByText("Placeholder CG_DASH_PLACEHOLDER (header, path, body)").waitFor();
    // Editing shows what is stored; no surface at all, or a placeholder in use, is refused with the API's message at its field.
    await page.getByRole("button", { name: "Edit Placeholder" }).click();
    const edit = page.getByRole("dialog", { name: "Edit Placeholder" });
    expect(await edit.getByLabel("Placeholder", { exact: true }).inputValue()).toBe("CG_DASH_PLACEHOLDER");
    expect(await edit.getByLabel("Query string").isChecked()).toBe(false);
    expect(await edit.getByLabel("Request body").isChecked()).toBe(true);
    for (const label of ["Header values", "URL path", "Request body"]) await edit.getByLabel(label).uncheck();
    await edit.getByRole("button", { name: "Save changes" }).click();
    await edit.getByText("surfaces must be a non-empty list of: header, query, path, body, websocket").waitFor();
    await edit.getByLabel("Request body").check();
    await edit.getByRole("button", { name: "Save changes" }).click();
    await edit.waitFor({ state: "detached" });
    expect((await cg.api("GET", `/v1/secrets/${byName.Placeholder.id}`)).body.injectionConfig).toEqual({ placeholder: "CG_DASH_PLACEHOLDER", surfaces: ["body"] });
    await page.getByRole("button", { name: "Add secret" }).first().click();
    const taken = page.getByRole("dialog", { name: "Add secret" });
    await taken.getByLabel("Name").fill("Second placeholder");
    await taken.getByLabel("Value", { exact: true }).fill("another-value");
    await taken.getByLabel("Host", { exact: true }).fill("p.dash.test");
    await taken.getByLabel("Inject as").selectOption("placeholder");
    await taken.getByLabel("Placeholder", { exact: true }).fill("CG_DASH_PLACEHOLDER_2");
    await taken.getByRole("button", { name: "Add secret" }).click();
    await taken.getByText('placeholder is already used by secret "Placeholder"').waitFor();
    await screenshot(page, "secrets-placeholder");
    await taken.getByRole("button", { name: "Cancel" }).click();
    // An external vault reference needs a vault server: the API's message is shown.
    await page.getByRole("button", { name: "Add secret" }).first().click();
    const d = page.getByRole("dialog", { name: "Add secret" });
    await d.getByLabel("Name").fill("Vault");
    await d.getByLabel("Value source").selectOption("external_vault");
    expect(await d.getByLabel("Value", { exact: true }).isVisible()).toBe(false);
    await d.getByLabel("Vault reference").fill("op://v/i/f");
    await d.getByLabel("Host", { exact: true }).fill("v.dash.test");
    await d.getByLabel("Header", { exact: true }).fill("x-key");
    await d.getByRole("button", { name: "Add secret" }).click();
    await d.getByText("External vault is not configured on this server").waitFor();
    await d.getByRole("button", { name: "Cancel" }).click();
    // Deleting asks first.
    await page.getByRole("button", { name: "Delete Regex" }).click();
    await page.getByRole("dialog", { name: "Delete Regex?" }).getByRole("button", { name: "Delete secret" }).click();
    await page.getByText("Deleted Regex.").waitFor();
    expect((await cg.api("GET", "/v1/secrets")).body.some((s: any) => s.name === "Regex")).toBe(false);
  }, 30_000);
});

describe("approvals", () => {
  test("a request held at the gateway appears without a reload and is approved by a click; the held curl then completes", async () => {
    const rule = await cg.api("POST", "/v1/policy/rules", { body: { name: "Ask for sends", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HOST, pathPattern: "/send" }] } });
    expect(rule.status).toBe(201);
    expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
    const { page } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/approvals`);
    await page.getByText("No requests are waiting.").waitFor();
    const before = page.url();

    const held = curlThroughGateway(cg, `https://${HOST}:${up.port}/send?to=bob`, { caFile, method: "POST", headers: ["content-type: application/json"], data: '{"to":"bob@example.com","token":"abc"}' });
    const card = page.getByRole("article", { name: `Approval request POST ${HOST}/send?to=bob` });
    await card.waitFor({ timeout: 15_000 });
    expect(page.url()).toBe(before);
    const shown = await card.innerText();
    expect(shown).toContain("Default Agent");
    await card.getByText("Body preview (redacted)").click();
    expect(await card.locator("pre").first().innerText()).toContain('"token":"***"');
    await screenshot(page, "approvals");
    expect(up.seen.some((s) => s.url === "/send?to=bob")).toBe(false);

    await card.getByRole("button", { name: `Approve POST ${HOST}/send?to=bob` }).click();
    const r = await held;
    expect(r.status).toBe(200);
    expect(up.seen.some((s) => s.url === "/send?to=bob")).toBe(true);
    await card.waitFor({ state: "detached" });
    await page.getByText(`Approved: POST ${HOST}/send?to=bob`).waitFor();
    // History (from the request logs, written in batches).
    await page.getByRole("row").filter({ hasText: "approved" }).first().waitFor({ timeout: 15_000 });

    // Deny: the agent gets 403 manual_approval_denied.
    const denied = curlThroughGateway(cg, `https://${HOST}:${up.port}/send?to=eve`, { caFile, method: "POST", data: "x" });
    await page.getByRole("button", { name: `Deny POST ${HOST}/send?to=eve` }).click({ timeout: 15_000 });
    const d = await denied;
    expect(d.status).toBe(403);
    expect(d.json.error).toBe("manual_approval_denied");
    await cg.api("DELETE", `/v1/policy/rules/${rule.body.id}`);
    await cg.api("POST", "/v1/policy/publish");
  }, 60_000);
});

describe("agents", () => {
  test("create, the connect panel, regenerate (shown once), grants, rename and the guidance link to the agent", async () => {
    const { page, context } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/agents`);
    await page.getByRole("button", { name: "Create agent" }).click();
    const d = page.getByRole("dialog", { name: "Create agent" });
    await d.getByLabel("Name").fill("Research bot");
    await d.getByLabel("Identifier").fill("Bad_Id");
    await d.getByRole("button", { name: "Create agent" }).click();
    await d.getByText("Identifier must be 1-50 characters").waitFor();
    await d.getByLabel("Identifier").fill("research-bot");
    await d.getByRole("button", { name: "Create agent" }).click();
    await page.getByRole("heading", { name: "Research bot", level: 1 }).waitFor();
    const agentUrl = page.url();
    const agentId = agentUrl.split("/").pop()!;

    // Connect your agent: proxy URL (token masked), CA download and the run line.
    const panel = page.getByRole("region", { name: "Connect your agent" });
    expect(await panel.innerText()).toContain(`http://x:agt_••••••••@localhost:${cg.gatewayPort}`);
    expect(await panel.innerText()).toContain("credgate run --agent research-bot -- <your command>");
    expect(await panel.getByRole("link", { name: "Download the gateway CA (PEM)" }).getAttribute("href")).toBe("/v1/gateway/ca");
    await panel.getByRole("button", { name: "Copy proxy URL" }).click();
    const agents = (await cg.api("GET", "/v1/agents")).body;
    const token = agents.find((a: any) => a.id === agentId).accessToken;
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(`http://x:${token}@localhost:${cg.gatewayPort}`);
    await screenshot(page, "agent");

    // Grants: the agent is in "granted only" mode; granting the secret makes the gateway inject it.
    expect((await cg.api("POST", "/v1/secrets", { body: { name: "Agent key", type: "generic", value: "agent-secret-value-42", hostPattern: HOST, pathPattern: "/agent/*", injectionConfig: { headerName: "x-agent-key" } } })).status).toBe(201);
    await page.reload();
    await page.getByRole("checkbox", { name: "Grant Agent key" }).check();
    await until(async () => expect((await cg.api("GET", `/v1/agents/${agentId}/grants`)).body.secrets.map((s: any) => s.name)).toEqual(["Agent key"]));

    // Regenerate: the new token is shown once, and the old one stops working.
    await page.getByRole("button", { name: "Regenerate token" }).click();
    await page.getByRole("dialog", { name: "Regenerate the token?" }).getByRole("button", { name: "Regenerate" }).click();
    const shown = page.getByRole("dialog", { name: "New agent token" });
    const fresh = await shown.getByLabel("Agent token").inputValue();
    expect(fresh).toMatch(/^agt_[0-9a-f]{64}$/);
    await shown.getByRole("button", { name: "Copy token" }).click();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(fresh);
    await shown.getByRole("button", { name: "Done" }).click();
    const ok = await curlThroughGateway(cg, `https://${HOST}:${up.port}/agent/fresh`, { caFile, agentToken: fresh });
    expect(ok.status).toBe(200);
    expect(up.seen.find((s) => s.url === "/agent/fresh")?.headers["x-agent-key"]).toBe("agent-secret-value-42");
    // The old token: the CONNECT is refused with 407, so curl fails.
    await expect(curlThroughGateway(cg, `https://${HOST}:${up.port}/agent/old`, { caFile, agentToken: token })).rejects.toThrow("407");
    expect(up.seen.some((s) => s.url === "/agent/old")).toBe(false);

    // Rename and mode.
    await page.getByLabel("Name").fill("Research bot 2");
    await page.getByLabel("Credentials").selectOption("all");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByRole("heading", { name: "Research bot 2", level: 1 }).waitFor();
    expect((await cg.api("GET", `/v1/agents/${agentId}`)).body).toMatchObject({ name: "Research bot 2", mode: "all" });

    // The guidance link (access_restricted → manage_url) opens this page in a fresh tab and after a reload.
    const other = await context.newPage();
    await other.goto(agentUrl);
    await other.getByRole("heading", { name: "Research bot 2", level: 1 }).waitFor();
    await other.reload();
    await other.getByRole("heading", { name: "Research bot 2", level: 1 }).waitFor();
    await other.close();

    // Make default.
    await page.getByRole("button", { name: "Make default" }).click();
    await until(async () => expect((await cg.api("GET", `/v1/agents/${agentId}`)).body.isDefault).toBe(true));
  }, 60_000);
});

describe("apps", () => {
  test("the app_not_connected link opens the connect dialog with the app's fields; the connection is granted to the named agent, then renamed and deleted", async () => {
    const { page } = await dash.signedIn();
    const agent = await cg.api("POST", "/v1/agents", { body: { name: "Mailer", identifier: "mailer" } });
    await page.goto(`${base}/p/${projectId}/apps?connect=resend&agent_name=mailer`);
    const d = page.getByRole("dialog", { name: "Connect Resend" });
    await d.waitFor();
    await page.reload();
    await d.waitFor();
    expect(await d.innerText()).toContain("granted to agent mailer");
    await d.getByRole("button", { name: "Connect Resend" }).click();
    await d.getByText("API Key is required").waitFor();
    await d.getByLabel("API Key").fill("re_dashboard_key");
    await d.getByRole("button", { name: "Connect Resend" }).click();
    await page.getByText("Resend is connected as Resend. Granted to agent Mailer.").waitFor();
    expect(await page.content()).not.toContain("re_dashboard_key");
    const grants = (await cg.api("GET", `/v1/agents/${agent.body.id}/grants`)).body;
    expect(grants.connections.map((c: any) => [c.provider, c.access])).toEqual([["resend", "full"]]);
    await screenshot(page, "apps");

    const row = page.getByRole("row").filter({ hasText: "resend" });
    await row.getByRole("button", { name: "Rename Resend" }).click();
    const rename = page.getByRole("dialog", { name: "Rename Resend" });
    await rename.getByLabel("Label").fill("");
    await rename.getByRole("button", { name: "Rename" }).click();
    await rename.getByText("Label is required").waitFor();
    await rename.getByLabel("Label").fill("Team mail");
    await rename.getByRole("button", { name: "Rename" }).click();
    await page.getByRole("row").filter({ hasText: "Team mail" }).waitFor();
    expect((await cg.api("GET", "/v1/connections")).body.map((c: any) => c.label)).toEqual(["Team mail"]);

    // The app's page: BYOC for an OAuth app, and the blocklist.
    await page.goto(`${base}/p/${projectId}/apps/github`);
    await page.getByRole("heading", { name: "GitHub", level: 1 }).waitFor();
    await page.getByLabel("Client ID").fill("gh-client");
    await page.getByLabel("Client Secret").fill("gh-secret");
    await page.getByRole("button", { name: "Save OAuth client" }).click();
    await page.getByText("Configured", { exact: true }).waitFor();
    expect((await cg.api("GET", "/v1/apps/github/config")).body).toMatchObject({ settings: { clientId: "gh-client" }, hasCredentials: true, enabled: true });
    const blockRegion = page.getByRole("region", { name: "Blocklist" });
    // A predefined host, activated with one click, and a custom one.
    await blockRegion.getByRole("button", { name: "Block GitHub Gists" }).click();
    await blockRegion.getByRole("button", { name: "Unblock GitHub Gists" }).waitFor();
    await blockRegion.getByLabel("Name").fill("Status");
    await blockRegion.getByLabel("Host", { exact: true }).fill("https://status.github.com");
    await blockRegion.getByRole("button", { name: "Block host" }).click();
    await blockRegion.getByText("Enter a hostname, not a URL (remove http:// or https://)").waitFor();
    await blockRegion.getByLabel("Host", { exact: true }).fill("status.github.com");
    await blockRegion.getByRole("button", { name: "Block host" }).click();
    await blockRegion.getByRole("button", { name: "Remove Status" }).waitFor();
    const entries = (await cg.api("GET", "/v1/apps/github/blocklist")).body;
    expect(entries.find((e: any) => e.hostId === "gist")).toMatchObject({ enabled: true, custom: false });
    expect(entries.find((e: any) => e.hostPattern === "status.github.com")).toMatchObject({ enabled: true, custom: true, name: "Status" });

    // OAuth connect leaves for the provider through /v1/apps/github/authorize with the session and project.
    await page.getByRole("button", { name: "Connect GitHub" }).click();
    const oauth = page.getByRole("dialog", { name: "Connect GitHub" });
    // The real authorize answer (with the session cookie) is fetched; its redirect to GitHub's consent page is
    // checked but not followed, so the browser never leaves for a third-party host.
    let consent = "";
    await page.route(/\/v1\/apps\/github\/authorize/, async (route) => {
      const res = await route.fetch({ maxRedirects: 0 });
      consent = res.headers()["location"] ?? "";
      await route.fulfill({ status: 200, contentType: "text/plain", body: "consent page stand-in" });
    });
    const [request] = await Promise.all([page.waitForRequest((r) => r.url().includes("/v1/apps/github/authorize")), oauth.getByRole("button", { name: "Continue to GitHub" }).click()]);
    expect(new URL(request.url()).searchParams.get("_project")).toBe(projectId);
    await untilTrue(() => consent !== "");
    expect(consent).toStartWith("https://github.com/login/oauth/authorize?client_id=gh-client&");
    expect(new URL(consent).searchParams.get("redirect_uri")).toBe(`${base}/v1/apps/github/callback`);
    await page.unroute(/\/v1\/apps\/github\/authorize/);
    await page.goto(`${base}/app-connect/github?status=error&message=Authorization+was+denied`);
    await page.waitForURL(`${base}/p/${projectId}/apps/github?error=Authorization+was+denied`);
    await page.getByText("GitHub could not be connected: Authorization was denied").waitFor();

    await page.goto(`${base}/p/${projectId}/apps`);
    await page.getByRole("button", { name: "Delete Team mail" }).click();
    await page.getByRole("dialog", { name: "Delete Team mail?" }).getByRole("button", { name: "Delete connection" }).click();
    await page.getByText("Deleted Team mail.").waitFor();
    expect((await cg.api("GET", "/v1/connections")).body).toEqual([]);
  }, 60_000);
});

describe("connection access", () => {
  test("a granted connection limited to chosen tools (allowed, needing approval, blocked) from the agent page; what the agent receives shows it", async () => {
    const connected = await cg.api("POST", "/v1/apps/cloudflare/connect", { body: { fields: { apiToken: "cf-dashboard-token" }, label: "Ops account" } });
    expect(connected.status).toBe(200);
    const connectionId = connected.body.connection.id;
    const agent = await cg.api("POST", "/v1/agents", { body: { name: "Ops bot", identifier: "ops-bot" } });
    const { page } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/agents/${agent.body.id}`);
    const effective = page.getByRole("table", { name: "Effective credentials" });
    await effective.getByRole("row", { name: /Ops account/ }).getByText("not granted").waitFor();
    await page.getByLabel("Grant Ops account").check();
    await page.getByRole("button", { name: "Edit access to Ops account" }).click();
    const d = page.getByRole("dialog", { name: "Access to Ops account" });
    await d.getByLabel("Access").selectOption("custom");
    // Every tool starts blocked; saving none is the API's refusal, shown in the dialog.
    await d.getByRole("button", { name: "Save access" }).click();
    await d.getByText("Custom access needs at least one allowed or approval tool — detach instead.").waitFor();
    const def = (await cg.api("GET", "/v1/apps/cloudflare/permission-definition")).body;
    const read = def.groups.find((g: any) => g.category === "read").tools[0];
    const write = def.groups.find((g: any) => g.category === "write").tools[0];
    await d.getByLabel(read.name, { exact: true }).selectOption("allow");
    await d.getByLabel(write.name, { exact: true }).selectOption("ask");
    await d.getByRole("button", { name: "Save access" }).click();
    await d.waitFor({ state: "detached" });
    const grants = (await cg.api("GET", `/v1/agents/${agent.body.id}/grants`)).body;
    expect(grants.connections.find((c: any) => c.connectionId === connectionId)).toMatchObject({ access: "custom", allow: [read.id], ask: [write.id] });
    await page.getByText("1 allowed, 1 need approval").waitFor();
    await effective.getByRole("row", { name: /Ops account/ }).getByText("limited by policy").waitFor();
    // Back to every tool.
    await page.getByRole("button", { name: "Edit access to Ops account" }).click();
    expect(await d.getByLabel(read.name, { exact: true }).inputValue()).toBe("allow");
    await d.getByLabel("Access").selectOption("full");
    expect(await d.getByLabel(read.name, { exact: true }).isVisible()).toBe(false);
    await d.getByRole("button", { name: "Save access" }).click();
    await d.waitFor({ state: "detached" });
    expect((await cg.api("GET", `/v1/agents/${agent.body.id}/grants`)).body.connections.find((c: any) => c.connectionId === connectionId)).toMatchObject({ access: "full", allow: [], ask: [] });
    await effective.getByRole("row", { name: /Ops account/ }).getByText("usable").waitFor();
    await cg.api("DELETE", `/v1/connections/${connectionId}`);
  }, 30_000);
});

describe("policy", () => {
  test("a rule created in the browser is only enforced after publish, which shows the diff; reorder and last publish", async () => {
    const { page } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/policy`);
    const addRule = async (name: string, targets: string) => {
      await page.getByRole("button", { name: "Add rule" }).click();
      const d = page.getByRole("dialog", { name: "Add rule" });
      await d.getByLabel("Name").fill(name);
      await d.getByLabel("Hosts").fill(targets);
      await d.getByRole("button", { name: "Add rule" }).click();
      await d.waitFor({ state: "detached" });
    };
    await addRule("Block admin", `${HOST} /admin/*`);
    await addRule("Block deletes", `${HOST} /items/* DELETE`);
    expect((await curlThroughGateway(cg, `https://${HOST}:${up.port}/admin/users`, { caFile })).status).toBe(200);

    await page.getByRole("button", { name: "Move Block deletes up" }).click();
    await until(async () => expect((await cg.api("GET", "/v1/policy/rules")).body.map((r: any) => r.name).filter((n: string) => n.startsWith("Block"))).toEqual(["Block deletes", "Block admin"]));

    await page.getByRole("button", { name: "Review and publish" }).click();
    const d = page.getByRole("dialog", { name: "Publish policy" });
    expect(await d.innerText()).toContain("Added: Block admin — block");
    expect(await d.innerText()).toContain("Added: Block deletes — block");
    await screenshot(page, "policy-publish");
    await d.getByRole("button", { name: "Publish" }).click();
    await page.getByText(/Published generation \d+/).waitFor();
    await page.getByText(/Last published: generation \d+/).waitFor();
    const blocked = await curlThroughGateway(cg, `https://${HOST}:${up.port}/admin/users`, { caFile });
    expect(blocked.status).toBe(403);
    expect(blocked.json).toMatchObject({ error: "blocked_by_policy", rule_name: "Block admin" });

    // A modifier on a block rule: the API's 422 message is shown.
    await page.getByRole("button", { name: "Edit Block admin" }).click();
    const e = page.getByRole("dialog", { name: "Edit Block admin" });
    await e.getByLabel("Hosts").fill("");
    await e.getByRole("button", { name: "Save rule" }).click();
    await e.getByText("A rule must name at least one target.").waitFor();
    await e.getByRole("button", { name: "Cancel" }).click();
    for (const name of ["Block admin", "Block deletes"]) {
      await page.getByRole("button", { name: `Delete ${name}` }).click();
      await page.getByRole("dialog", { name: `Delete ${name}?` }).getByRole("button", { name: "Delete rule" }).click();
      await page.getByRole("button", { name: `Delete ${name}` }).waitFor({ state: "detached" });
    }
    await page.getByRole("button", { name: "Review and publish" }).click();
    expect(await page.getByRole("dialog", { name: "Publish policy" }).innerText()).toContain("Removed: Block admin");
    await page.getByRole("dialog", { name: "Publish policy" }).getByRole("button", { name: "Publish" }).click();
    await page.getByText(/Published generation \d+ \(\d+ rules\)/).waitFor();
  }, 60_000);
});

describe("logs and overview", () => {
  test("the logs list gateway requests, filter by decision and page with the cursor; the overview shows counts and the chart", async () => {
    // 55 requests in one curl run (one tunnel), so there is a second page of 50.
    const urls = Array.from({ length: 55 }, (_, i) => `https://${HOST}:${up.port}/page/${i}`);
    const { run } = await import("../support/gateway.ts");
    const r = await run(["curl", "-sS", "-o", "/dev/null", "--proxy", `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`, "--cacert", caFile, ...urls]);
    expect(r.code).toBe(0);
    await until(async () => expect((await cg.api("GET", `/v1/logs?host=${HOST}:${up.port}&limit=500`)).body.data.filter((l: any) => l.path.startsWith("/page/")).length).toBe(55), 15_000);

    const { page } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/logs?host=${HOST}:${up.port}`);
    const rows = page.getByRole("table", { name: "Request logs" }).getByRole("row");
    await untilTrue(async () => (await rows.count()) === 51); // header + 50
    // Newest first, as the API lists them (two requests of one millisecond are ordered by id, so the first row is
    // whichever the API puts first, not always the last one sent).
    const newest = (await cg.api("GET", `/v1/logs?host=${HOST}:${up.port}&limit=1`)).body.data[0];
    expect(newest.path).toMatch(/^\/page\/5[0-4]$/);
    expect(await rows.nth(1).innerText()).toContain(`GET ${HOST}:${up.port}${newest.path}`);
    await page.getByRole("button", { name: "Load more" }).click();
    await untilTrue(async () => (await rows.count()) > 51);
    await screenshot(page, "logs");

    await page.getByLabel("Decision").selectOption("blocked");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await untilTrue(async () => new URL(page.url()).searchParams.get("decision") === "blocked");
    // Only blocked requests are listed now (the /admin/users request after the publish).
    await untilTrue(async () => {
      const texts = await rows.allInnerTexts();
      return texts.length > 1 && texts.slice(1).every((t) => t.includes("blocked"));
    });
    expect(await rows.nth(1).innerText()).toContain(`GET ${HOST}:${up.port}/admin/users`);
    // An invalid filter shows the API's message.
    await page.getByLabel("Status").fill("42");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.getByText("status must be between 100 and 599").waitFor();

    await page.getByRole("link", { name: "Overview" }).click();
    await page.waitForURL(`${base}/p/${projectId}`);
    const counts = (await cg.api("GET", "/v1/counts")).body;
    await page.getByRole("link", { name: `${counts.agents} Agents` }).waitFor();
    const chart = page.getByRole("img", { name: /Gateway requests per hour, last 24 hours\. \d+ in total/ });
    await chart.waitFor();
    expect(await chart.getAttribute("aria-label")).toMatch(/Allowed: [1-9]\d*/);
    expect(await page.locator("svg rect.bar.allowed").count()).toBeGreaterThan(0);
    await screenshot(page, "overview");
  }, 60_000);
});

describe("organization", () => {
  test("a project key's session is not shown the organization key; an organization key's session is, and says so", async () => {
    const { page } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/org`);
    await page.getByText("This session was signed in with a project key, which never reaches the organization key.").waitFor();
    expect(await page.getByRole("button", { name: "Show key" }).count()).toBe(0);
    expect(await page.content()).not.toContain(cg.keys.orgApiKey);
    const org = await dash.signedIn(cg.keys.orgApiKey);
    expect(await org.page.locator("#session-scope").innerText()).toBe("Organization key session");
    await org.page.goto(`${base}/p/${projectId}/org`);
    await org.page.getByRole("button", { name: "Show key" }).click();
    expect(await org.page.getByRole("textbox", { name: "Organization API key" }).inputValue()).toBe(cg.keys.orgApiKey);
  }, 30_000);

  test("settings, the org API key, organization secrets and policy pages", async () => {
    const { page } = await dash.signedIn(cg.keys.orgApiKey);
    await page.goto(`${base}/p/${projectId}/org`);
    await page.getByLabel("Organization name").fill("Acme Robots");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText("Saved.").waitFor();
    expect((await cg.api("GET", "/v1/org/settings", { key: cg.keys.orgApiKey })).body.name).toBe("Acme Robots");
    await page.getByRole("button", { name: "Show key" }).click();
    expect(await page.getByRole("textbox", { name: "Organization API key" }).inputValue()).toBe(cg.keys.orgApiKey);
    expect(await storage(page)).not.toContain("svc_");
    await screenshot(page, "organization");

    await page.getByRole("link", { name: "Secrets" }).last().click();
    await page.getByRole("heading", { name: "Organization secrets", level: 1 }).waitFor();
    await page.getByRole("button", { name: "Add secret" }).first().click();
    const d = page.getByRole("dialog", { name: "Add secret" });
    // 1Password is for project secrets only; a secret store serves organization secrets too (docs/injection.md#secret-stores).
    expect(await d.getByLabel("Value source").locator("option").evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value))).toEqual(["inline", "vault"]);
    await d.getByLabel("Name").fill("Org key");
    await d.getByLabel("Value", { exact: true }).fill("org-secret-value-xyz123");
    await d.getByLabel("Host", { exact: true }).fill("org.dash.test");
    await d.getByLabel("Header", { exact: true }).fill("x-org");
    await d.getByRole("button", { name: "Add secret" }).click();
    await page.getByText("Added Org key.").waitFor();
    expect((await cg.api("GET", "/v1/org/secrets", { key: cg.keys.orgApiKey })).body.map((s: any) => s.name)).toEqual(["Org key"]);
    // Inherited in the project's list, read-only there.
    await page.goto(`${base}/p/${projectId}/secrets`);
    const row = page.getByRole("row").filter({ hasText: "Org key" });
    expect(await row.innerText()).toContain("Managed by the organization");

    await page.goto(`${base}/p/${projectId}/org/policy`);
    await page.getByRole("heading", { name: "Organization policy", level: 1 }).waitFor();
    await page.getByText("Not published yet").waitFor();
  }, 30_000);
});

describe("usability", () => {
  test("keyboard: the skip link and the navigation work without a mouse; a phone-sized screen still shows the navigation", async () => {
    const w = await dash.open({ viewport: { width: 390, height: 800 } });
    const { page } = w;
    await page.goto(`${base}/sign-in`);
    await page.getByLabel("API key").waitFor();
    await page.keyboard.press("Tab");
    await page.keyboard.type(cg.keys.projectApiKey);
    await page.keyboard.press("Enter");
    await page.waitForURL(`${base}/p/${projectId}`);
    // After the sign-in the new page's heading has the focus; on a fresh load the first Tab is the skip link.
    await untilTrue(async () => (await page.evaluate("document.activeElement.tagName")) === "H1");
    await page.reload();
    await page.getByRole("heading", { level: 1 }).waitFor();
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Skip to content");
    const nav = page.getByRole("navigation", { name: "Main" });
    expect(await nav.isVisible()).toBe(true);
    await nav.getByRole("link", { name: "Approvals" }).focus();
    await page.keyboard.press("Enter");
    await page.waitForURL(`${base}/p/${projectId}/approvals`);
    // The link itself says "Approvals" too: wait for the focus to move to the new page's heading.
    await untilTrue(async () => (await page.evaluate("document.activeElement.tagName")) === "H1");
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Approvals");
    await screenshot(page, "phone-approvals");
  }, 30_000);
});

describe("cloud pages on a self-hosted instance", () => {
  test("sign-up, invitations, the partner portal and the team say they belong to credgate cloud; sign-in offers no account", async () => {
    const w = await dash.open();
    const { page } = w;
    await page.goto(`${base}/sign-in`);
    await page.getByLabel("API key").waitFor();
    expect(await page.getByLabel("Email").count()).toBe(0);
    expect(await page.getByRole("link", { name: "Create an account" }).count()).toBe(0);
    await page.goto(`${base}/sign-up`);
    await page.getByText("Accounts with a password belong to credgate cloud.").waitFor();
    await page.goto(`${base}/accept-invite?token=abc`);
    await page.getByText("Invitations belong to credgate cloud").waitFor();
    await dash.signIn(page);
    await page.goto(`${base}/partner`);
    await page.getByText("The partner portal belongs to credgate cloud.").waitFor();
    await page.goto(`${base}/p/${projectId}/org/team`);
    await page.getByText("team members belong to credgate cloud").waitFor();
    // The organization's tabs offer no team or projects here.
    await page.goto(`${base}/p/${projectId}/org`);
    const tabs = page.getByRole("navigation", { name: "Organization" });
    await tabs.getByRole("link", { name: "Policy" }).waitFor();
    expect(await tabs.getByRole("link").allInnerTexts()).toEqual(["Settings", "Secrets", "Policy", "Notifications", "Budgets", "Audit log"]);
  }, 30_000);
});

// Last: its blocked request would otherwise be the newest row the logs test reads.
describe("policy targets", () => {
  test("a rule picks a secret, an app's tools and agents by name; the gateway blocks only the requests that secret goes into", async () => {
    const secret = await cg.api("POST", "/v1/secrets", { body: { name: "Policy probe", type: "generic", value: "policy-probe-value", hostPattern: HOST, pathPattern: "/probe/*", injectionConfig: { headerName: "x-probe" } } });
    expect(secret.status).toBe(201);
    const agent = await cg.api("POST", "/v1/agents", { body: { name: "Policy bot", identifier: "policy-bot", mode: "all" } });
    const token = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.id === agent.body.id).accessToken;
    const { page } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/policy`);
    await page.getByRole("button", { name: "Add rule" }).click();
    const d = page.getByRole("dialog", { name: "Add rule" });
    await d.getByLabel("Name").fill("No probe for the bot");
    await d.getByLabel("Secrets").selectOption([{ label: `Policy probe (${HOST})` }]);
    await d.getByLabel("App tools").selectOption([{ label: "Resend · Send email (write)" }]);
    await d.getByLabel("Agents (none chosen: all)").selectOption([{ label: "Policy bot" }]);
    await d.getByRole("button", { name: "Add rule" }).click();
    await d.waitFor({ state: "detached" });
    const rule = (await cg.api("GET", "/v1/policy/rules")).body.find((r: any) => r.name === "No probe for the bot");
    expect(rule.targets).toEqual([
      { kind: "app", provider: "resend", tools: ["send_email"] },
      { kind: "secret", secretId: secret.body.id },
    ]);
    expect(rule.identities).toEqual([{ type: "agent", id: agent.body.id }]);
    // The list names the targets.
    await page.getByRole("row", { name: /No probe for the bot/ }).getByText("Resend: Send email; secret Policy probe").waitFor();
    // Editing shows the choices as they are; saving unchanged keeps them.
    await page.getByRole("button", { name: "Edit No probe for the bot" }).click();
    const e = page.getByRole("dialog", { name: "Edit No probe for the bot" });
    expect(await e.getByLabel("Secrets").evaluate((el: any) => [...el.selectedOptions].map((o: any) => o.textContent))).toEqual([`Policy probe (${HOST})`]);
    await e.getByRole("button", { name: "Save rule" }).click();
    await e.waitFor({ state: "detached" });
    expect((await cg.api("GET", `/v1/policy/rules/${rule.id}`)).body.targets).toEqual(rule.targets);

    await page.getByRole("button", { name: "Review and publish" }).click();
    await page.getByRole("dialog", { name: "Publish policy" }).getByRole("button", { name: "Publish" }).click();
    await page.getByText(/Published generation \d+/).waitFor();
    const probe = await curlThroughGateway(cg, `https://${HOST}:${up.port}/probe/x`, { caFile, agentToken: token });
    expect(probe.status).toBe(403);
    expect(probe.json).toMatchObject({ error: "blocked_by_policy", rule_name: "No probe for the bot" });
    // Other paths of the host (the secret is not injected there), and other agents, pass.
    expect((await curlThroughGateway(cg, `https://${HOST}:${up.port}/other`, { caFile, agentToken: token })).status).toBe(200);
    expect((await curlThroughGateway(cg, `https://${HOST}:${up.port}/probe/x`, { caFile })).status).toBe(200);

    await page.getByRole("button", { name: "Delete No probe for the bot" }).click();
    await page.getByRole("dialog", { name: "Delete No probe for the bot?" }).getByRole("button", { name: "Delete rule" }).click();
    await page.getByRole("button", { name: "Delete No probe for the bot" }).waitFor({ state: "detached" });
    await page.getByRole("button", { name: "Review and publish" }).click();
    await page.getByRole("dialog", { name: "Publish policy" }).getByRole("button", { name: "Publish" }).click();
    await page.getByText(/Published generation \d+/).waitFor();
    expect(await page.content()).not.toContain("policy-probe-value");
  }, 60_000);
});
