// MCP's older HTTP+SSE transport when the agent's GET stream and its message POSTs are served by different gateway
// processes (docs/gateway.md#mcp-servers): CREDGATE_GATEWAY_WORKERS=2 on one instance (connections land on either
// worker), and on PostgreSQL two instances, the stream through one and every POST through the other. The official
// SDK's SSEClientTransport (the GET on one connection, the POSTs on others) must work whichever process serves a
// POST — the server's token on it, the tool list cut — and, as an attacker with one agent token, a blocked or an
// `ask` tool must never reach the server unjudged: not on a fresh connection that lands on a process that never
// relayed the stream, not on a guessed spelling of the endpoint, not in a body credgate cannot read. The token goes
// only to endpoints a stream of the server named. Two servers of test/support/mcp.ts: `strict.` checks the token on
// every request, `open.` trusts the session id alone on its message endpoint, as many HTTP+SSE servers do.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { curlThroughGateway, type CurlResult } from "../support/curl.ts";
import { gatewayCa, resolveEntries, until } from "../support/gateway.ts";
import { startMcpServer, type McpTestServer } from "../support/mcp.ts";
import { startCredgate, startSecondInstance, type RunningCredgate } from "../support/process.ts";
import { makePki, type TestPki } from "../support/upstream.ts";
import { tempDir } from "../support/tmp.ts";

const STRICT = "strict.mcp.test";
const OPEN = "open.mcp.test";
const TOKEN = "mcp-sse-server-token-0123456789";
let pki: TestPki;
let mcp: McpTestServer;
let first: RunningCredgate;
let second: RunningCredgate | null = null;
let ca: { pem: string; file: string };
let agent: { id: string; token: string };

/** The gateway the POSTs go through: the other instance on PostgreSQL, else the same two workers. */
const postGateway = () => second ?? first;
const proxyOf = (g: RunningCredgate) => `http://x:${agent.token}@127.0.0.1:${g.gatewayPort}`;
const base = (host: string) => `https://${host}:${mcp.port}`;

beforeAll(async () => {
  pki = makePki([STRICT, OPEN]);
  mcp = await startMcpServer(pki, { token: TOKEN });
  const env = { CREDGATE_GATEWAY_WORKERS: "2", CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: `${resolveEntries([STRICT, OPEN], mcp.port)},${resolveEntries([OPEN], mcp.httpPort)}` };
  first = await startCredgate({ env });
  second = await startSecondInstance(first, env);
  ca = await gatewayCa(first);
  const a = await first.api("POST", "/v1/agents", { body: { name: "SSE agent", identifier: "sse-agent", mode: "grants" } });
  expect(a.status).toBe(201);
  const listed = ((await first.api("GET", "/v1/agents")).body as { id: string; accessToken: string }[]).find((x) => x.id === a.body.id)!;
  agent = { id: a.body.id, token: listed.accessToken };
  for (const [name, url] of [["strict", `${base(STRICT)}/mcp/sse`], ["open", `${base(OPEN)}/open/sse`]]) {
    const created = await first.api("POST", "/v1/mcp-servers", { body: { name, url, auth: { bearer: TOKEN } } });
    expect(created.status).toBe(201);
    expect(created.body.status).toBe("connected");
    const grant = await first.api("PUT", `/v1/agents/${agent.id}/grants/mcp-servers/${created.body.id}`, { body: { access: "custom", allow: ["echo"], ask: ["get-sum"] } });
    expect(grant.status).toBe(200);
  }
  // The other instance has the agent and its grants before a request goes through it.
  if (second) {
    await until(async () => {
      const r = await curlThroughGateway(second!, `${base(STRICT)}/nothing`, { caFile: ca.file, agentToken: agent.token });
      if (r.status === 407) throw new Error("agent not known yet");
    }, 20_000);
  }
}, 90_000);

afterAll(async () => {
  await second?.stop();
  await first?.stop();
  await mcp?.stop();
});

/** The SDK's own SSE client: its GET stream through the first gateway, its POSTs through postGateway(). */
async function sdkClient(host: string, path: string): Promise<Client> {
  const via = (g: RunningCredgate): FetchLike => (url, init) => fetch(url, { ...init, proxy: proxyOf(g), tls: { ca: ca.pem } } as RequestInit);
  const getVia = via(first);
  const postVia = via(postGateway());
  const f: FetchLike = (url, init) => ((init?.method ?? "GET").toUpperCase() === "POST" ? postVia(url, init) : getVia(url, init));
  const client = new Client({ name: "sse-agent", version: "1.0.0" });
  await client.connect(new SSEClientTransport(new URL(`${base(host)}${path}`), { fetch: f, eventSourceInit: { fetch: f } as never }));
  return client;
}

/** An HTTP+SSE stream opened through the first gateway, read as it comes; `endpoint` is what its event named. */
async function openStream(host: string, path: string): Promise<{ endpoint: string; text: () => string; close: () => void }> {
  const abort = new AbortController();
  const res = await fetch(`${base(host)}${path}`, { headers: { accept: "text/event-stream" }, proxy: proxyOf(first), tls: { ca: ca.pem }, signal: abort.signal } as RequestInit);
  expect(res.status).toBe(200);
  let text = "";
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        text += decoder.decode(value, { stream: true });
      }
    } catch {}
  })();
  const data = await until(() => {
    const m = /event: endpoint\r?\ndata: ([^\r\n]+)/.exec(text);
    if (!m) throw new Error("no endpoint yet");
    return m[1]!;
  }, 15_000);
  return { endpoint: new URL(data, `${base(host)}${path}`).href, text: () => text, close: () => abort.abort() };
}

/** A POST on a connection of its own (curl), through postGateway(): the kernel picks the worker that serves it. */
function post(url: string, body: string | object, headers: string[] = []): Promise<CurlResult> {
  return curlThroughGateway(postGateway(), url, {
    caFile: ca.file,
    agentToken: agent.token,
    method: "POST",
    headers: ["content-type: application/json", ...headers],
    data: typeof body === "string" ? body : JSON.stringify(body),
    pathAsIs: true,
    maxTime: 60,
  });
}

const call = (id: number, name: string, args: object = {}) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

async function errorOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return String((err as Error).message);
  }
  throw new Error("the call succeeded");
}

async function pendingApproval(tool: string): Promise<string> {
  return until(async () => {
    const list = (await first.api("GET", "/v1/approvals/pending")).body as { requests: { id: string; method: string; path: string }[] };
    const found = list.requests.find((r) => r.method === "MCP" && r.path === tool);
    if (!found) throw new Error("not pending yet");
    return found.id;
  }, 20_000);
}

describe("the SDK's SSE client, its POSTs served by another process", () => {
  test("every session works: the server's token on every POST, the tool list cut, a granted call answered", async () => {
    for (let i = 0; i < 4; i++) {
      const seenBefore = mcp.seen.length;
      const client = await sdkClient(STRICT, "/mcp/sse");
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["echo", "get-sum"]);
      expect((await client.callTool({ name: "echo", arguments: { message: `session ${i}` } })).content).toEqual([{ type: "text", text: `Echo: session ${i}` }]);
      const posts = mcp.seen.slice(seenBefore).filter((s) => s.method === "POST");
      expect(posts.length).toBeGreaterThanOrEqual(3);
      expect(posts.every((s) => s.path === "/messages" && s.authorization === `Bearer ${TOKEN}`)).toBe(true);
      await client.close();
    }
  }, 60_000);

  test("a blocked tool is refused at once, whichever process serves the POST, and never reaches the server", async () => {
    for (let i = 0; i < 4; i++) {
      const client = await sdkClient(OPEN, "/open/sse");
      expect(await errorOf(client.callTool({ name: "get-env", arguments: {} }, undefined, { timeout: 20_000 }))).toContain("credgate: tool get-env is not granted to this agent");
      await client.close();
    }
    expect(mcp.calls).not.toContain("get-env");
  }, 120_000);
});

describe("an attacker with one agent token", () => {
  test("a blocked tool POSTed on fresh connections to the endpoint the stream named: refused every time", async () => {
    const stream = await openStream(OPEN, "/open/sse");
    const callsBefore = mcp.calls.length;
    for (let i = 0; i < 8; i++) {
      const r = await post(stream.endpoint, call(100 + i, "get-env"));
      expect(r.text).toContain("credgate: tool get-env is not granted to this agent");
    }
    expect(mcp.calls.slice(callsBefore)).not.toContain("get-env");
    stream.close();
  }, 60_000);

  test("guessed spellings of the endpoint (no credgate mark, a trailing slash, another case, another path the server takes, plain http) are judged too", async () => {
    const stream = await openStream(OPEN, "/open/sse");
    const session = new URL(stream.endpoint).searchParams.get("sessionId")!;
    const callsBefore = mcp.calls.length;
    const named = new URL(stream.endpoint).pathname;
    for (const path of [`${named}?sessionId=${session}`, `${named}/?sessionId=${session}`, `${named.toUpperCase()}?sessionId=${session}`, `/open/m/guessed?sessionId=${session}`]) {
      const r = await post(`${base(OPEN)}${path}`, call(7, "get-env"));
      expect(r.status).not.toBe(202);
      expect(r.text).toContain("credgate: tool get-env is not granted to this agent");
    }
    // The same server on another scheme and port of its host.
    const plain = await post(`http://${OPEN}:${mcp.httpPort}${named}?sessionId=${session}`, call(8, "get-env"));
    expect(plain.status).toBe(403);
    expect(plain.text).toContain("credgate: tool get-env is not granted to this agent");
    expect(mcp.calls.slice(callsBefore)).not.toContain("get-env");
    stream.close();
  }, 60_000);

  test("an `ask` tool POSTed on fresh connections is held every time; denied, it never reaches the server; approved, it does", async () => {
    const stream = await openStream(OPEN, "/open/sse");
    const callsBefore = mcp.calls.length;
    for (let i = 0; i < 3; i++) {
      const answer = post(stream.endpoint, call(200 + i, "get-sum", { a: i, b: 1 }));
      const id = await pendingApproval("get-sum");
      expect(mcp.calls.slice(callsBefore)).not.toContain("get-sum");
      expect((await first.api("POST", `/v1/approvals/${id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
      const r = await answer;
      // On the stream when the POST's process relays it, else in the POST's own answer.
      await until(() => {
        if (!`${r.text}${stream.text()}`.includes("credgate: the call to get-sum was not approved")) throw new Error("no refusal yet");
      }, 10_000);
    }
    expect(mcp.calls.slice(callsBefore)).not.toContain("get-sum");
    // Approved, it reaches the server with the server's token, and its answer comes on the session's stream.
    const seenBefore = mcp.seen.length;
    const approvedPost = post(stream.endpoint, call(300, "get-sum", { a: 20, b: 22 }));
    expect((await first.api("POST", `/v1/approvals/${await pendingApproval("get-sum")}/decision`, { body: { decision: "approve" } })).status).toBe(200);
    expect((await approvedPost).status).toBe(202);
    await until(() => {
      if (!stream.text().split("\n").some((line) => line.includes('"id":300') && line.includes("The sum of 20 and 22 is 42."))) throw new Error("no answer yet");
    }, 15_000);
    expect(mcp.calls.slice(callsBefore)).toEqual(["get-sum"]);
    expect(mcp.seen.slice(seenBefore).find((s) => s.method === "POST")?.authorization).toBe(`Bearer ${TOKEN}`);
    stream.close();
  }, 120_000);

  test("a body credgate cannot read is not forwarded to the server's origin, whatever the path", async () => {
    const stream = await openStream(OPEN, "/open/sse");
    const session = new URL(stream.endpoint).searchParams.get("sessionId")!;
    const callsBefore = mcp.calls.length;
    // Parsers disagree on which `params` wins; the SDK's JSON.parse takes the last one.
    const twice = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}},"params":{"name":"get-env","arguments":{}}}`;
    for (const path of [`/open/m/guessed?sessionId=${session}`, `/elsewhere?sessionId=${session}`]) {
      const dup = await post(`${base(OPEN)}${path}`, twice);
      expect(dup.status).toBe(400);
      expect(dup.json.error.code).toBe(-32700);
    }
    const file = join(tempDir(), "call.json.gz");
    writeFileSync(file, gzipSync(JSON.stringify(call(10, "get-env"))));
    const gz = await curlThroughGateway(postGateway(), `${base(OPEN)}/open/m/guessed?sessionId=${session}`, {
      caFile: ca.file,
      agentToken: agent.token,
      method: "POST",
      headers: ["content-type: application/json", "content-encoding: gzip"],
      dataFile: file,
    });
    expect(gz.status).toBe(415);
    expect(mcp.calls.slice(callsBefore)).not.toContain("get-env");
    stream.close();
  }, 60_000);

  test("the token goes only to endpoints the server's stream named; a body that is no JSON passes as it came, without it", async () => {
    const stream = await openStream(STRICT, "/mcp/sse");
    const seenBefore = mcp.seen.length;
    const list = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    // Another path of the origin, a forged credgate mark, the named endpoint with its query changed.
    const named = new URL(stream.endpoint);
    const forged = new URL(named);
    forged.pathname = "/collect";
    const otherSession = new URL(named);
    otherSession.searchParams.set("sessionId", "another");
    for (const url of [`${base(STRICT)}/collect`, forged.href, otherSession.href]) expect((await post(url, list)).status).toBe(401);
    const form = await post(`${base(STRICT)}/upload`, "name=value", ["content-type: application/x-www-form-urlencoded"]);
    expect(form.status).toBe(401);
    const after = mcp.seen.slice(seenBefore).filter((s) => s.method === "POST");
    expect(after.map((s) => s.path)).toEqual(["/collect", "/collect", "/messages", "/upload"]);
    expect(after.every((s) => s.authorization === null)).toBe(true);
    stream.close();
  }, 60_000);
});
