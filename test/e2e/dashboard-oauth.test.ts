// OAuth connect from the dashboard in a real Chromium: the gateway's app_not_connected link opens the connect
// dialog, "Continue to GitHub" leaves for the provider's consent page, and the browser comes back through
// credgate's callback to the app's page with the connection, granted to the agent the link named. The
// provider is the GitHub-shaped test OAuth server (test/support/oauthServer.ts) on loopback: the browser's
// requests to https://github.com are answered from it by the test (Playwright routing), so nothing leaves the
// machine. The gateway then injects the issued token into the agent's request to api.github.com.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import { curlThroughGateway } from "../support/curl.ts";
import { gatewayCa } from "../support/gateway.ts";
import { startOAuthServer, type OAuthTestServer } from "../support/oauthServer.ts";
import { freePort } from "../support/ports.ts";
import type { RunningCredgate } from "../support/process.ts";

const CLIENT_ID = "Iv1.dashboard-e2e";
const CLIENT_SECRET = "dashboard-client-secret-0123456789";

let oauth: OAuthTestServer;
let dash: Dashboard;
let cg: RunningCredgate;
let base = "";

beforeAll(async () => {
  const apiPort = await freePort();
  base = `http://127.0.0.1:${apiPort}`;
  oauth = await startOAuthServer({ clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${base}/v1/apps/github/callback`] }], user: { login: "octo-dash", id: 77 } });
  dash = await startDashboard({
    apiPort,
    env: {
      CREDGATE_OAUTH_GITHUB_CLIENT_ID: CLIENT_ID,
      CREDGATE_OAUTH_GITHUB_CLIENT_SECRET: CLIENT_SECRET,
      CREDGATE_UPSTREAM_CA_FILE: oauth.caFile,
      CREDGATE_CONNECT_TO: `github.com:443:127.0.0.1:${oauth.port},api.github.com:443:127.0.0.1:${oauth.port}`,
    },
  });
  cg = dash.cg;
}, 60_000);

afterAll(async () => {
  // The only other host the page went to is the provider's consent page, answered by the test.
  await dash?.stop(["https://github.com/login/oauth/authorize?"]);
  await oauth?.close();
});

test("the app_not_connected link → GitHub's consent → back on the app's page with the connection granted to the named agent; the gateway injects its token, and keeps to the one repository the agent page allows", async () => {
  const agent = await cg.api("POST", "/v1/agents", { body: { name: "Coder", identifier: "coder" } });
  const token = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.id === agent.body.id).accessToken;
  const { page } = await dash.open();
  // The provider's pages come from the loopback stand-in (its redirect back to credgate included).
  await page.route("https://github.com/**", async (route) => {
    const url = new URL(route.request().url());
    const res = await fetch(new URL(url.pathname + url.search, oauth.url), { redirect: "manual", tls: { ca: oauth.caPem } });
    await route.fulfill({ status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() });
  });
  await dash.signIn(page);

  await page.goto(`${base}/p/${cg.keys.projectId}/apps?connect=github&agent_name=coder`);
  const dialog = page.getByRole("dialog", { name: "Connect GitHub" });
  await dialog.getByRole("button", { name: "Continue to GitHub" }).click();
  await page.waitForURL((u) => u.pathname === `/p/${cg.keys.projectId}/apps/github` && u.searchParams.has("connected"));
  const connectionId = new URL(page.url()).searchParams.get("connected")!;
  expect(connectionId).toMatch(/^[0-9a-f-]{36}$/);
  await page.getByText("GitHub is connected. Granted to agent coder.").waitFor();
  await page.getByRole("row", { name: /octo-dash|GitHub/ }).first().getByText("connected").waitFor();

  const grants = (await cg.api("GET", `/v1/agents/${agent.body.id}/grants`)).body;
  expect(grants.connections.map((c: any) => [c.connectionId, c.provider, c.access])).toEqual([[connectionId, "github", "full"]]);
  const r = await curlThroughGateway(cg, "https://api.github.com/user/repos", { caFile: (await gatewayCa(cg)).file, agentToken: token, headers: ["authorization: Bearer credgate-managed"] });
  expect(r.status).toBe(200);
  expect(oauth.apiRequests.at(-1)!.headers.authorization).toBe(`Bearer ${oauth.issuedAccessTokens().at(-1)}`);

  // The agent's page limits the grant to one repository; the gateway then refuses the others.
  await page.goto(`${base}/p/${cg.keys.projectId}/agents/${agent.body.id}`);
  const label = grants.connections[0].label ?? "github";
  await page.getByRole("button", { name: `Edit access to ${label}` }).click();
  const access = page.getByRole("dialog", { name: `Access to ${label}` });
  await access.getByLabel("Repositories", { exact: true }).fill("acme/api\n");
  await access.getByRole("button", { name: "Save access" }).click();
  await access.waitFor({ state: "detached" });
  await page.getByText("Every tool · 1 resource(s)").waitFor();
  expect((await cg.api("GET", `/v1/agents/${agent.body.id}/grants`)).body.connections[0].resources).toEqual({ repositories: ["acme/api"] });
  const ca = (await gatewayCa(cg)).file;
  const inScope = await curlThroughGateway(cg, "https://api.github.com/repos/acme/api/issues", { caFile: ca, agentToken: token });
  expect(inScope.status).toBe(200);
  const outOfScope = await curlThroughGateway(cg, "https://api.github.com/repos/acme/other/issues", { caFile: ca, agentToken: token });
  expect(outOfScope.status).toBe(403);
  expect(outOfScope.json.error).toBe("resource_access_denied");
}, 60_000);
