// MCP servers in the dashboard, in a real Chromium against the real credgate process (docs/mcp.md): add a server
// that needs a login, press Connect, approve on the authorization server's consent page — the MCP SDK's own
// authorization server with dynamic registration (test/support/mcpAuthServer.ts) — and come back through
// credgate's callback to the server's page, connected, its tools listed with the token credgate received; then
// grant an agent chosen tools. The gateway's use of the server is tested with the gateway's MCP stages.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import { startMcpAuthServer, type McpAuthServer } from "../support/mcpAuthServer.ts";
import type { RunningCredgate } from "../support/process.ts";

let as: McpAuthServer;
let dash: Dashboard;
let cg: RunningCredgate;
let base = "";

beforeAll(async () => {
  as = await startMcpAuthServer();
  dash = await startDashboard();
  ({ cg, base } = dash);
}, 60_000);

afterAll(async () => {
  // The only other place the page went is the authorization server's consent page.
  await dash?.stop([as.issuer]);
  await as?.close();
});

test("add an MCP server, Connect → the authorization server's consent → back connected with its tools; grant an agent chosen tools", async () => {
  const agent = (await cg.api("POST", "/v1/agents", { body: { name: "Coder", identifier: "coder", mode: "grants" } })).body;
  const { page } = await dash.signedIn();

  await page.getByRole("link", { name: "MCP servers" }).click();
  await page.getByRole("button", { name: "Add MCP server" }).click();
  const add = page.getByRole("dialog", { name: "Add MCP server" });
  await add.getByLabel("Name", { exact: true }).fill("Files");
  await add.getByLabel("URL", { exact: true }).fill(as.mcp.url);
  await add.getByRole("button", { name: "Add MCP server" }).click();
  await page.getByRole("heading", { name: "Files" }).waitFor();
  const serverId = new URL(page.url()).pathname.split("/").at(-1)!;
  await page.getByText("Connect the server to list its tools.").waitFor();

  await page.getByRole("button", { name: "Connect", exact: true }).click();
  await page.waitForURL((u) => `${u.origin}/` === as.issuer && u.pathname === "/authorize");
  expect(new URL(page.url()).searchParams.get("resource")).toBe(as.mcp.url);
  await page.getByRole("button", { name: "Approve" }).click();
  await page.waitForURL((u) => u.pathname === `/p/${cg.keys.projectId}/mcp-servers/${serverId}` && u.searchParams.get("status") === "success");
  await page.getByText("Files is connected.").waitFor();
  await page.getByRole("row", { name: /read_file/ }).waitFor();

  const server = (await cg.api("GET", `/v1/mcp-servers/${serverId}`)).body;
  expect(server).toMatchObject({ status: "connected", authKind: "oauth", error: null });
  expect(as.registrations.map((r) => r.redirect_uris)).toEqual([[`${base}/v1/mcp-servers/callback`]]);
  expect(as.mcp.authorizations).toContain(`Bearer ${as.accessTokens[0]}`);

  // A callback whose state is not credgate's comes back to the project's MCP servers, saying why.
  await page.goto(`${base}/v1/mcp-servers/callback?code=x&state=forged`);
  await page.waitForURL((u) => u.pathname === `/p/${cg.keys.projectId}/mcp-servers`);
  await page.getByText("The login did not complete: Invalid state parameter").waitFor();
  await page.goto(`${base}/p/${cg.keys.projectId}/mcp-servers/${serverId}`);

  await page.getByRole("button", { name: "Edit access of Coder" }).click();
  const dialog = page.getByRole("dialog", { name: "Access of Coder to Files" });
  await dialog.getByLabel("Access").selectOption("custom");
  await dialog.getByLabel("read_file").selectOption("allow");
  await dialog.getByLabel("write_file").selectOption("ask");
  // A rule for a tool that is not granted is refused, next to the field; then a good one is saved.
  await dialog.getByLabel("Argument rules").fill('{"delete_repository": {"/path": "*"}}');
  await dialog.getByRole("button", { name: "Save access" }).click();
  await dialog.getByText("arguments names tools that are not granted: delete_repository").waitFor();
  await dialog.getByLabel("Argument rules").fill('{"write_file": {"/path": "/tmp/*"}}');
  await dialog.getByRole("button", { name: "Save access" }).click();
  await dialog.waitFor({ state: "detached" });
  await page.getByRole("cell", { name: "1 allowed · 1 need approval" }).waitFor();
  const grants = (await cg.api("GET", `/v1/agents/${agent.id}/grants`)).body;
  expect(grants.mcpServers).toEqual([{ mcpServerId: serverId, name: "Files", access: "custom", allow: ["read_file"], ask: ["write_file"], arguments: { write_file: { "/path": "/tmp/*" } } }]);
}, 90_000);
