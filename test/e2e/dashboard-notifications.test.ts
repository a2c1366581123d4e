// The dashboard's notification channels and remembered approvals in a real Chromium against the real process
// (docs/policy.md#notifications, #remembered-approvals): a webhook channel added in the browser shows its signing
// secret once — and a receiver of our own verifies the deliveries with that very secret —, a test send, disable,
// the delivery log, delete; the organization's channels; "Approve for 15 min" on a held request, the agent's next
// request passing without a hold, the remembered approval listed and ended by a click.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { screenshot } from "../support/browser.ts";
import { curlThroughGateway } from "../support/curl.ts";
import { gatewayCa, until, untilTrue } from "../support/gateway.ts";
import { startReceiver, type Receiver } from "../support/notifyReceivers.ts";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import type { RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const UP = "api.dash-notify.test";
const HOOK = "hooks.dash-notify.test";

let dash: Dashboard;
let cg: RunningCredgate;
let up: TestUpstream;
let hook: Receiver;
let caFile = "";
let base = "";
let projectId = "";

beforeAll(async () => {
  const pki = makePki([UP, HOOK]);
  up = startUpstream(pki);
  hook = startReceiver(pki, "webhook");
  dash = await startDashboard({
    env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: `${UP}:${up.port}:127.0.0.1,${HOOK}:${hook.port}:127.0.0.1`, CREDGATE_APPROVAL_POLL_SECONDS: "2" },
  });
  ({ cg, base } = dash);
  caFile = (await gatewayCa(cg)).file;
  projectId = cg.keys.projectId;
  const rule = await cg.api("POST", "/v1/policy/rules", { body: { name: "Sends need a person", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: UP }] } });
  expect(rule.status).toBe(201);
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
}, 60_000);

afterAll(async () => {
  await dash?.stop();
  await up?.stop();
  await hook?.stop();
});

const send = (path: string) => curlThroughGateway(cg, `https://${UP}:${up.port}${path}`, { caFile, method: "POST", data: "{}", maxTime: 60 });

describe("channels", () => {
  test("add a webhook (secret shown once, and it verifies the deliveries), test it, disable, read the log, delete", async () => {
    const { page } = await dash.signedIn();
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Notifications" }).click();
    await page.getByRole("heading", { name: "Notifications", level: 1 }).waitFor();
    await page.getByText("No channels yet.").waitFor();
    await page.getByRole("button", { name: "Add channel" }).click();
    const dialog = page.getByRole("dialog", { name: "Add a notification channel" });
    // A URL the API refuses: its message under the field.
    await dialog.getByLabel("URL").fill("http://hooks.example.com/x");
    await dialog.getByRole("button", { name: "Add channel" }).click();
    await dialog.getByText("url must be an https:// URL").waitFor();
    await dialog.getByLabel("URL").fill(hook.url(HOOK, "/dash"));
    await dialog.getByRole("button", { name: "Add channel" }).click();
    const secretField = dialog.getByRole("textbox", { name: "Signing secret" });
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    expect(secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    hook.secret("/dash", secret);
    await screenshot(page, "notifications-secret");
    await dialog.getByRole("button", { name: "Done" }).click();
    expect(await page.locator("body").innerText()).not.toContain(secret);

    const row = page.getByRole("row").filter({ hasText: `https://${HOOK}:${hook.port}/…` });
    await row.getByRole("button", { name: /^Send a test/ }).click();
    await page.getByText("Test delivered (HTTP 204).").waitFor();
    expect(hook.arrivals.filter((a) => a.path === "/dash").map((a) => a.verified)).toEqual([true]);

    // A held request's notification, verified with the secret the page showed.
    const held = send("/dash-held");
    const pending = await until(async () => {
      const found = (await cg.api("GET", "/v1/approvals/pending")).body.requests[0];
      if (!found) throw new Error("not held yet");
      return found;
    });
    await untilTrue(() => hook.arrivals.some((a) => a.path === "/dash" && a.body.includes(pending.id)));
    expect(hook.arrivals.filter((a) => a.path === "/dash").every((a) => a.verified === true)).toBe(true);
    await cg.api("POST", `/v1/approvals/${pending.id}/decision`, { body: { decision: "deny" } });
    expect((await held).json.error).toBe("manual_approval_denied");
    await page.getByRole("button", { name: "Refresh" }).click();
    const log = page.getByRole("table", { name: "Deliveries of the project's channels" });
    await log.getByRole("row").filter({ hasText: "approval.requested" }).filter({ hasText: "delivered" }).waitFor();
    await screenshot(page, "notifications");

    await row.getByRole("button", { name: /^Disable/ }).click();
    await page.getByText("Channel disabled").waitFor();
    await row.getByText("disabled", { exact: true }).waitFor();
    expect((await cg.api("GET", "/v1/notifications/channels")).body[0].enabled).toBe(false);
    await row.getByRole("button", { name: /^Enable/ }).click();
    await row.getByText("enabled", { exact: true }).waitFor();

    await row.getByRole("button", { name: /^Delete/ }).click();
    await page.getByRole("dialog", { name: "Delete this channel?" }).getByRole("button", { name: "Delete channel" }).click();
    await page.getByText("Channel deleted.").waitFor();
    expect((await cg.api("GET", "/v1/notifications/channels")).body).toEqual([]);
  }, 60_000);

  test("the organization's channels have their own tab", async () => {
    const { page } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/org`);
    await page.getByRole("navigation", { name: "Organization" }).getByRole("link", { name: "Notifications" }).click();
    await page.getByRole("heading", { name: "Organization notifications" }).waitFor();
    await page.getByRole("button", { name: "Add channel" }).click();
    const dialog = page.getByRole("dialog", { name: "Add a notification channel" });
    await dialog.getByLabel("Kind").selectOption("ntfy");
    await dialog.getByLabel("URL").fill("https://ntfy.example.com/credgate-org");
    await dialog.getByLabel("Events").selectOption(["approval.requested"]);
    await dialog.getByRole("button", { name: "Add channel" }).click();
    await page.getByText("ntfy topic added.").waitFor();
    const org = await cg.api("GET", "/v1/org/notifications/channels", { key: cg.keys.orgApiKey });
    expect(org.body).toEqual([expect.objectContaining({ kind: "ntfy", url: "https://ntfy.example.com/credgate-org", events: ["approval.requested"] })]);
    expect((await cg.api("GET", "/v1/notifications/channels")).body).toEqual([]);
    await cg.api("DELETE", `/v1/org/notifications/channels/${org.body[0].id}`, { key: cg.keys.orgApiKey });
  }, 30_000);
});

describe("remembered approvals", () => {
  test("Approve for 15 min: the next request passes without a hold; the remembered approval is listed and ended by a click", async () => {
    const { page } = await dash.signedIn();
    await page.goto(`${base}/p/${projectId}/approvals`);
    await page.getByText("No requests are waiting.").waitFor();
    const first = send("/remember-1");
    const card = page.getByRole("article", { name: `Approval request POST ${UP}/remember-1` });
    await card.waitFor({ timeout: 15_000 });
    await card.getByRole("button", { name: `Approve for 15 minutes: POST ${UP}/remember-1 and later ones like it` }).click();
    expect((await first).status).toBe(200);
    await page.getByText("Later requests like it pass without asking until").waitFor();
    const remembered = page.getByRole("table", { name: "Remembered approvals" });
    const entry = remembered.getByRole("row").filter({ hasText: "Sends need a person" });
    await entry.waitFor();
    expect(await entry.innerText()).toContain("Default Agent");
    expect(await entry.innerText()).toContain("owner@localhost");

    const next = await send("/remember-2");
    expect(next.status).toBe(200);
    expect(next.json.url).toBe("/remember-2");
    await screenshot(page, "approvals-remembered");

    await entry.getByRole("button", { name: /^End the remembered approval/ }).click();
    await page.getByRole("dialog", { name: "End this remembered approval?" }).getByRole("button", { name: "End it" }).click();
    await page.getByText("Ended: those requests are held for approval again.").waitFor();
    await entry.waitFor({ state: "detached" });
    expect((await cg.api("GET", "/v1/approvals/remembered")).body).toEqual([]);

    const third = send("/remember-3");
    await page.getByRole("button", { name: `Deny POST ${UP}/remember-3` }).click({ timeout: 15_000 });
    expect((await third).json.error).toBe("manual_approval_denied");
  }, 60_000);
});
