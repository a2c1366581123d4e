// MCP servers through the real credgate process (docs/gateway.md#mcp-servers), with the official SDK's own client
// and server transports and server-everything's tools, over HTTPS: the server's token injected (the agent holds
// none), tools/list cut to the grant (Streamable HTTP's SSE answers and the HTTP+SSE transport's stream), calls
// outside the grant or against its argument globs answered -32010 without reaching the server, an `ask` tool
// held while the SDK client's request is open and decided through the API (approve, deny, remembered per
// arguments), refusals on the HTTP+SSE session's stream, h2 agents, one log row per call and the metric.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { gatewayCa, resolveEntries, run, until } from "../support/gateway.ts";
import { proxiedFetch, startMcpServer, type McpTestServer } from "../support/mcp.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, type TestPki } from "../support/upstream.ts";

const HOST = "mcp.e2e.test";
const TOKEN = "mcp-server-token-0123456789";
let pki: TestPki;
let mcp: McpTestServer;
let cg: RunningCredgate;
let ca: { pem: string; file: string };
let serverId: string;
let agent: { id: string; token: string };

const urlOf = (path: string) => new URL(`https://${HOST}:${mcp.port}${path}`);
const proxyOf = (token: string) => `http://x:${token}@127.0.0.1:${cg.gatewayPort}`;

beforeAll(async () => {
  pki = makePki([HOST]);
  mcp = await startMcpServer(pki, { token: TOKEN });
  cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([HOST], mcp.port) } });
  ca = await gatewayCa(cg);
  const created = await cg.api("POST", "/v1/mcp-servers", { body: { name: "everything", url: `https://${HOST}:${mcp.port}/mcp`, auth: { bearer: TOKEN } } });
  expect(created.status).toBe(201);
  serverId = created.body.id;
  const a = await cg.api("POST", "/v1/agents", { body: { name: "MCP agent", identifier: "mcp-agent", mode: "grants" } });
  expect(a.status).toBe(201);
  const listed = ((await cg.api("GET", "/v1/agents")).body as { id: string; accessToken: string }[]).find((x) => x.id === a.body.id)!;
  agent = { id: a.body.id, token: listed.accessToken };
  const grant = await cg.api("PUT", `/v1/agents/${agent.id}/grants/mcp-servers/${serverId}`, {
    body: { access: "custom", allow: ["echo"], ask: ["get-sum"], arguments: { echo: { "/message": "hello*" } } },
  });
  expect(grant.status).toBe(200);
}, 60_000);

afterAll(async () => {
  await cg?.stop();
  await mcp?.stop();
});

async function streamable(token: string, path = "/mcp"): Promise<Client> {
  const client = new Client({ name: "e2e-agent", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(urlOf(path), { fetch: proxiedFetch(proxyOf(token), ca.pem) }));
  return client;
}

async function legacySse(token: string, path = "/mcp/sse"): Promise<Client> {
  const client = new Client({ name: "e2e-agent", version: "1.0.0" });
  const f = proxiedFetch(proxyOf(token), ca.pem);
  await client.connect(new SSEClientTransport(urlOf(path), { fetch: f, eventSourceInit: { fetch: f } as never }));
  return client;
}

async function rpcError(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof McpError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error("the call succeeded");
}

async function pendingApproval(path: string): Promise<{ id: string; method: string; path: string; bodyPreview: string }> {
  return until(async () => {
    const list = (await cg.api("GET", "/v1/approvals/pending")).body as { requests: { id: string; method: string; path: string; bodyPreview: string }[] };
    const found = list.requests.find((r) => r.method === "MCP" && r.path === path);
    if (!found) throw new Error("not pending yet");
    return found;
  }, 15_000);
}

describe("Streamable HTTP with the SDK's client", () => {
  test("the agent lists only its tools, calls a granted one with the server's token it never held", async () => {
    const client = await streamable(agent.token);
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(["echo", "get-sum"]);
    const seenBefore = mcp.seen.length;
    const result = await client.callTool({ name: "echo", arguments: { message: "hello world" } });
    expect(result.content).toEqual([{ type: "text", text: "Echo: hello world" }]);
    expect(mcp.seen.slice(seenBefore).every((s) => s.authorization === `Bearer ${TOKEN}`)).toBe(true);
    await client.close();
  });

  test("a tool outside the grant and arguments against the glob: -32010, and the server never sees them", async () => {
    const client = await streamable(agent.token);
    const callsBefore = mcp.calls.length;
    expect(await rpcError(client.callTool({ name: "get-env", arguments: {} }))).toMatchObject({ code: -32010, message: expect.stringContaining("credgate: tool get-env is not granted to this agent") });
    expect(await rpcError(client.callTool({ name: "echo", arguments: { message: "goodbye" } }))).toMatchObject({ code: -32010, message: expect.stringContaining("credgate: tool echo arguments are not allowed: /message") });
    expect(mcp.calls.length).toBe(callsBefore);
    // The session goes on.
    expect((await client.callTool({ name: "echo", arguments: { message: "hello again" } })).content).toEqual([{ type: "text", text: "Echo: hello again" }]);
    await client.close();
  });

  test("an ask tool is held while the client's request is open: approved, it runs; denied, -32011", async () => {
    const client = await streamable(agent.token);
    const call = client.callTool({ name: "get-sum", arguments: { a: 2, b: 3 } }, undefined, { timeout: 60_000 });
    const held = await pendingApproval("get-sum");
    expect(JSON.parse(held.bodyPreview)).toEqual({ a: 2, b: 3 });
    expect(mcp.calls).not.toContain("get-sum");
    expect((await cg.api("POST", `/v1/approvals/${held.id}/decision`, { body: { decision: "approve", remember: { minutes: 5 } } })).status).toBe(200);
    expect(JSON.stringify((await call).content)).toContain("5");
    // Remembered for these arguments only.
    expect(JSON.stringify((await client.callTool({ name: "get-sum", arguments: { b: 3, a: 2 } })).content)).toContain("5");
    const other = rpcError(client.callTool({ name: "get-sum", arguments: { a: 10, b: 1 } }, undefined, { timeout: 60_000 }));
    const second = await pendingApproval("get-sum");
    expect((await cg.api("POST", `/v1/approvals/${second.id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    expect(await other).toMatchObject({ code: -32011, message: expect.stringContaining("credgate: the call to get-sum was not approved") });
    await client.close();
  });

  test("an agent in mode all has every tool; the default agent sees server-everything's whole list", async () => {
    const client = await streamable(cg.keys.defaultAgentToken);
    expect((await client.listTools()).tools.length).toBeGreaterThan(5);
    expect((await client.callTool({ name: "get-env", arguments: {} })).content).toBeDefined();
    await client.close();
  });

  test("each call is a log row (method MCP, the tool as path), refusals blocked; the metric counts them", async () => {
    const rows = await until(async () => {
      const data = (await cg.api("GET", `/v1/logs?agentId=${agent.id}&limit=500`)).body.data as { method: string; path: string; decision: string; mcpServerId: string | null }[];
      if (!data.some((r) => r.method === "MCP" && r.path === "get-env")) throw new Error("not logged yet");
      return data;
    }, 15_000);
    expect(rows.find((r) => r.method === "MCP" && r.path === "get-env")).toMatchObject({ decision: "blocked", mcpServerId: serverId });
    expect(rows.filter((r) => r.method === "MCP").every((r) => r.mcpServerId === serverId)).toBe(true);
    // What is not a tools/call (initialize, tools/list, the GET stream) keeps its HTTP method, path and no server.
    expect(rows.some((r) => r.method === "POST" && r.path === "/mcp" && r.mcpServerId === null)).toBe(true);
    expect(rows.some((r) => r.method === "MCP" && r.path === "echo" && r.decision === "allowed")).toBe(true);
    expect(rows.some((r) => r.method === "MCP" && r.path === "get-sum" && r.decision === "approval_approved")).toBe(true);
    const metrics = await (await fetch(`${cg.apiUrl}/metrics`, { headers: { authorization: `Bearer ${cg.keys.orgApiKey}` } })).text();
    expect(metrics).toMatch(/credgate_mcp_calls_total\{server="everything",tool="get-env",decision="blocked"\} [1-9]/);
  });
});

describe("the older HTTP+SSE transport", () => {
  test("the stream's tools/list is cut; a refusal arrives on the session's stream; a granted call works", async () => {
    const client = await legacySse(agent.token);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["echo", "get-sum"]);
    expect((await client.callTool({ name: "echo", arguments: { message: "hello sse" } })).content).toEqual([{ type: "text", text: "Echo: hello sse" }]);
    const callsBefore = mcp.calls.length;
    expect(await rpcError(client.callTool({ name: "get-env", arguments: {} }))).toMatchObject({ code: -32010 });
    expect(mcp.calls.length).toBe(callsBefore);
    await client.close();
  });

  test("an ask tool decided while the session's SSE stream is open: denied → -32011 on the stream; approved → the server's answer", async () => {
    const client = await legacySse(agent.token);
    const denied = rpcError(client.callTool({ name: "get-sum", arguments: { a: 40, b: 2 } }, undefined, { timeout: 60_000 }));
    const first = await pendingApproval("get-sum");
    expect(JSON.parse(first.bodyPreview)).toEqual({ a: 40, b: 2 });
    expect((await cg.api("POST", `/v1/approvals/${first.id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    expect(await denied).toMatchObject({ code: -32011, message: expect.stringContaining("credgate: the call to get-sum was not approved") });
    const approved = client.callTool({ name: "get-sum", arguments: { a: 40, b: 2 } }, undefined, { timeout: 60_000 });
    const second = await pendingApproval("get-sum");
    expect((await cg.api("POST", `/v1/approvals/${second.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
    expect(JSON.stringify((await approved).content)).toContain("42");
    await client.close();
  });
});

describe("an attacker with one agent token, with curl", () => {
  const post = (path: string, body: string | Uint8Array, headers: string[] = []) =>
    run(
      ["curl", "-sS", "--max-time", "20", "--proxy", proxyOf(agent.token), "--cacert", ca.file, "-X", "POST", "-H", "content-type: application/json", ...(headers.some((h) => h.startsWith("accept:")) ? [] : ["-H", "accept: application/json, text/event-stream"]), ...headers.flatMap((h) => ["-H", h]), "--data-binary", "@-", "-w", "\n%{http_code}", `https://${HOST}:${mcp.port}${path}`],
      { stdin: typeof body === "string" ? new TextEncoder().encode(body) : body },
    );
  const answer = (out: { stdout: string; stderr: string; code: number }) => {
    const at = out.stdout.lastIndexOf("\n");
    if (out.code !== 0) throw new Error(`curl exited ${out.code}: ${out.stderr}`);
    return { status: Number(out.stdout.slice(at + 1)), body: out.stdout.slice(0, at) };
  };

  test("nothing it tries reaches the server: duplicate or case-folded keys, METHOD in capitals, /MCP, gzip, a 5 MiB body", async () => {
    const callsBefore = mcp.calls.length;
    const seenBefore = mcp.seen.length;
    const dup = answer(await post("/mcp/stateless?json", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"get-env"}}'));
    expect(dup.status).toBe(400);
    expect(JSON.parse(dup.body)).toMatchObject({ id: null, error: { code: -32700 } });
    const folded = answer(await post("/mcp/stateless?json", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","NAME":"get-env"}}'));
    expect(folded.status).toBe(400);
    const capitals = answer(await post("/mcp/stateless?json", '{"jsonrpc":"2.0","id":2,"METHOD":"tools/call","PARAMS":{"NAME":"get-env"}}'));
    expect(JSON.parse(capitals.body)).toMatchObject({ id: 2, error: { code: -32010, message: "credgate: tool get-env is not granted to this agent" } });
    const upper = answer(await post("/MCP/stateless?json", '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get-env"}}'));
    expect(JSON.parse(upper.body)).toMatchObject({ id: 3, error: { code: -32010 } });
    const gz = answer(await post("/mcp/stateless?json", Bun.gzipSync(new TextEncoder().encode('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get-env"}}')), ["content-encoding: gzip"]));
    expect(gz.status).toBe(415);
    const big = answer(await post("/mcp/stateless?json", JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "echo", arguments: { message: "hello " + "x".repeat(5 * 1024 * 1024) } } })));
    expect(big.status).toBe(413);
    const batch = answer(await post("/mcp/stateless?json", JSON.stringify([{ jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "echo", arguments: { message: "hello" } } }, { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "get-env" } }])));
    expect(JSON.parse(batch.body)).toMatchObject([{ id: 6, error: { code: -32010 } }, { id: 7, error: { code: -32010 } }]);
    expect(mcp.calls.length).toBe(callsBefore);
    expect(mcp.seen.length).toBe(seenBefore);
  });

  test("a client that accepts only SSE gets its refusal as an SSE event", async () => {
    const out = answer(await post("/mcp/stateless", '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get-env"}}', ["accept: text/event-stream"]));
    expect(out.status).toBe(200);
    expect(out.body).toStartWith("event: message\ndata: ");
    expect(JSON.parse(out.body.split("data: ")[1]!)).toMatchObject({ id: 8, error: { code: -32010 } });
  });
});

describe("HTTP/2 agents", () => {
  test("a refused call, a granted one and a filtered SSE tools/list on one h2 connection (stateless server)", async () => {
    const body = (id: number, name: string, args: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    const cfg = {
      gatewayPort: cg.gatewayPort,
      token: agent.token,
      authority: `${HOST}:${mcp.port}`,
      caFile: ca.file,
      requests: [
        { path: "/mcp/stateless?json", method: "POST", headers, body: body(1, "get-env", {}) },
        { path: "/mcp/stateless?json", method: "POST", headers, body: body(2, "echo", { message: "hello h2" }) },
        // An SSE answer (no ?json) over h2, read event by event and cut to the grant.
        { path: "/mcp/stateless", method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }) },
      ],
    };
    const out = await run(["node", "test/support/h2client.cjs", JSON.stringify(cfg)], { timeoutMs: 30_000 });
    const lines = out.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.at(-1)).toMatchObject({ done: true, alpn: "h2" });
    const byIndex = new Map(lines.filter((l) => "i" in l).map((l) => [l.i, l]));
    expect(byIndex.get(0).status).toBe(200);
    expect(JSON.parse(byIndex.get(0).text)).toMatchObject({ id: 1, error: { code: -32010 } });
    expect(byIndex.get(1).status).toBe(200);
    expect(byIndex.get(1).text).toContain("Echo: hello h2");
    expect(byIndex.get(2).headers["content-type"]).toContain("text/event-stream");
    const listed = JSON.parse(byIndex.get(2).text.split("data: ")[1]);
    expect(listed.result.tools.map((t: { name: string }) => t.name).sort()).toEqual(["echo", "get-sum"]);
  });
});
