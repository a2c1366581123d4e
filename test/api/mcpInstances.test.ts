// Two credgate instances on one PostgreSQL database and the MCP login (docs/mcp.md#the-login): the browser starts
// the login on one instance and comes back to the other (the state and the sealed client are the database's and
// the master key's, not a process's); the first instance's gateway snapshot then holds the token the second
// stored, and a token due for refresh is refreshed once even when both instances' gateways ask at once.
// PostgreSQL only: SQLite serves one instance.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { startMcpAuthServer, type McpAuthServer } from "../support/mcpAuthServer.ts";
import { testEngine, TEST_MASTER_KEY } from "../support/postgres.ts";
import { GatewaySnapshot } from "../../src/gateway/snapshot.ts";
import { until } from "../support/gateway.ts";
import { attachNotifyTransport } from "../../src/events/notifyTransport.ts";

const PUBLIC = "https://credgate.test";
const onPostgres = testEngine() === "postgres";
let one: TestApi;
let two: TestApi;
let as: McpAuthServer;

beforeAll(async () => {
  if (!onPostgres) return;
  one = await createTestApi({ CREDGATE_PUBLIC_URL: PUBLIC });
  two = await createTestApi({ CREDGATE_PUBLIC_URL: PUBLIC, CREDGATE_DATABASE_URL: one.core.services.deps.config.databaseUrl!, CREDGATE_MASTER_KEY: TEST_MASTER_KEY });
  // What `serve` does: each instance hears the other's changes (LISTEN/NOTIFY).
  for (const api of [one, two]) await attachNotifyTransport(api.core.services.deps.events, api.core.store.notifier!, api.core.services.deps.instanceId);
  as = await startMcpAuthServer({ expiresIn: 30, refreshedExpiresIn: 3600 });
});

afterAll(async () => {
  await as?.close();
  await two?.core.close();
  await one?.core.close();
});

describe.skipIf(!onPostgres)("two instances", () => {
  test("the login started on one instance ends on the other; both see the token; one refresh for both", async () => {
    const created = await one.call("POST", "/v1/mcp-servers", { body: { name: "Shared", url: as.mcp.url } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const start = await one.call("GET", `/v1/mcp-servers/${id}/authorize`);
    expect(start.status).toBe(302);
    const nonce = /credgate_oauth_state=([^;]+)/.exec(start.headers.get("set-cookie")!)![1]!;
    const page = await fetch(start.headers.get("location")!);
    const formId = /name="id" value="([^"]+)"/.exec(await page.text())![1]!;
    const back = await fetch(new URL("/consent", as.issuer), { method: "POST", body: new URLSearchParams({ id: formId, decision: "approve" }), redirect: "manual" });
    const redirect = new URL(back.headers.get("location")!);
    const done = await two.call("GET", `/v1/mcp-servers/callback${redirect.search}`, { key: null, headers: { cookie: `credgate_oauth_state=${nonce}` } });
    expect(done.headers.get("location")).toBe(`${PUBLIC}/mcp-servers/${id}?status=success`);

    // Instance one's gateway holds the token instance two stored.
    const snapshot = await GatewaySnapshot.create(one.core.services);
    const agents = (await one.call("GET", "/v1/agents")).body as { isDefault: boolean; accessToken: string }[];
    const entry = (await snapshot.agentForToken(agents.find((a) => a.isDefault)!.accessToken))!;
    const first = as.accessTokens[0]!;
    await until(async () => {
      const s = (await snapshot.credentials(entry)).mcpServers.find((m) => m.id === id);
      if (s?.auth?.value !== `Bearer ${first}`) throw new Error("not yet");
    });

    // The token is due (30 s): both instances' gateways ask for a fresh one at once.
    const [a, b] = await Promise.all([one.core.services.mcpAuth.fresh(id), two.core.services.mcpAuth.fresh(id)]);
    expect(a).not.toBeNull();
    expect(b).toEqual(a!);
    expect(as.accessTokens).toHaveLength(2);
    const stored = (await two.core.services.mcpServers.byId(id))!;
    expect(stored.status).toBe("connected");
    // Whichever instance stored it, instance one's gateway hears of it (LISTEN/NOTIFY) and injects the new token.
    await until(async () => {
      const s = (await snapshot.credentials(entry)).mcpServers.find((m) => m.id === id);
      if (s?.auth?.value !== `Bearer ${as.accessTokens[1]}`) throw new Error("not yet");
    });
  });
});
