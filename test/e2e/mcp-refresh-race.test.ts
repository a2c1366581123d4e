// The refresh race of an MCP server's OAuth login (docs/mcp.md#the-login, docs/operations.md#gateway-workers-and-caches):
// concurrent agent requests to the server while its access token is due, through the two gateway workers of one
// instance and (PostgreSQL) through two instances on one database. The authorization server is the MCP SDK's own
// (test/support/mcpAuthServer.ts): it rotates refresh tokens and, like Auth0, revokes the whole grant when a spent
// refresh token is presented again — a second refresh would leave the server's tokens dead. The refresh token must
// reach it exactly once across every instance and process, every request be served with the one new token, the
// server stay connected and the grant alive.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { run } from "../support/gateway.ts";
import { startMcpAuthServer, type McpAuthServer } from "../support/mcpAuthServer.ts";
import { freePort } from "../support/ports.ts";
import { startCredgate, startSecondInstance, type RunningCredgate } from "../support/process.ts";

let as: McpAuthServer;
let first: RunningCredgate;
let second: RunningCredgate | null = null;
let publicUrl: string;

beforeAll(async () => {
  // A 30 s token is due for refresh (60 s ahead) as soon as it is issued; the refreshed one lasts an hour.
  as = await startMcpAuthServer({ expiresIn: 30, refreshedExpiresIn: 3600 });
  const apiPort = await freePort();
  publicUrl = `http://127.0.0.1:${apiPort}`;
  const env = { CREDGATE_GATEWAY_WORKERS: "2", CREDGATE_PUBLIC_URL: publicUrl };
  first = await startCredgate({ apiPort, env });
  second = await startSecondInstance(first, env);
}, 60_000);

afterAll(async () => {
  await second?.stop();
  await first?.stop();
  await as?.close();
});

/** The login as a browser would do it: credgate's authorize, the consent page approved, credgate's callback. */
async function login(serverId: string): Promise<void> {
  const start = await fetch(`${first.apiUrl}/v1/mcp-servers/${serverId}/authorize`, { headers: { authorization: `Bearer ${first.keys.projectApiKey}` }, redirect: "manual" });
  expect(start.status).toBe(302);
  const nonce = /credgate_oauth_state=([^;]+)/.exec(start.headers.get("set-cookie")!)![1]!;
  const page = await fetch(start.headers.get("location")!);
  const formId = /name="id" value="([^"]+)"/.exec(await page.text())![1]!;
  const back = await fetch(new URL("/consent", as.issuer), { method: "POST", body: new URLSearchParams({ id: formId, decision: "approve" }), redirect: "manual" });
  const done = await fetch(back.headers.get("location")!, { headers: { cookie: `credgate_oauth_state=${nonce}` }, redirect: "manual" });
  expect(done.headers.get("location")).toBe(`${publicUrl}/mcp-servers/${serverId}?status=success`);
}

/** One Node process, undici ProxyAgents to every gateway, every MCP `initialize` at once over several tunnels. */
const AGENT_SCRIPT = `
const { ProxyAgent, request } = require("undici");
(async () => {
  const { proxies, url, count } = JSON.parse(process.env.WORK);
  const agents = proxies.map((uri) => new ProxyAgent({ uri }));
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "race", version: "1" } } });
  const out = await Promise.all(Array.from({ length: count }, async (_, i) => {
    const res = await request(url, { dispatcher: agents[i % agents.length], method: "POST", body,
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" } });
    return { status: res.statusCode, body: await res.body.text() };
  }));
  for (const a of agents) await a.close();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });`;

test("an MCP server's due token, asked for at once by every gateway process: one refresh at the authorization server, every request served with the new token", async () => {
  const created = await first.api("POST", "/v1/mcp-servers", { body: { name: "Raced", url: as.mcp.url } });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  await login(id);
  expect(as.accessTokens).toHaveLength(1);

  const gateways = second ? [first, second] : [first];
  const count = 12 * gateways.length;
  const seenBefore = as.mcp.authorizations.length;
  // The winning refresh's answer comes late: every process has asked by then.
  as.delayRefreshAnswers(700);
  const r = await run(["node", "-e", AGENT_SCRIPT], {
    env: {
      WORK: JSON.stringify({ proxies: gateways.map((g) => `http://x:${first.keys.defaultAgentToken}@127.0.0.1:${g.gatewayPort}`), url: as.mcp.url, count }),
      NODE_PATH: join(import.meta.dir, "../../node_modules"),
    },
    timeoutMs: 60_000,
  }).finally(() => as.delayRefreshAnswers(0));
  if (r.code !== 0) throw new Error(`agent client failed (${r.code}): ${r.stderr}`);
  const answers = JSON.parse(r.stdout) as { status: number; body: string }[];
  expect(answers.map((a) => a.status)).toEqual(Array(count).fill(200));

  // The refresh token reached the authorization server once for every instance and process.
  expect(as.tokenRequests.filter((t) => t.grant === "refresh_token")).toHaveLength(1);
  expect(as.revokedGrants).toEqual([]);
  expect(as.accessTokens).toHaveLength(2);
  const fresh = as.accessTokens[1]!;
  expect(as.accessTokenLive(fresh)).toBe(true);
  const seen = as.mcp.authorizations.slice(seenBefore);
  expect(seen).toHaveLength(count);
  expect(new Set(seen)).toEqual(new Set([`Bearer ${fresh}`]));
  const server = await first.api("GET", `/v1/mcp-servers/${id}`);
  expect(server.body).toMatchObject({ status: "connected", error: null });
}, 60_000);
