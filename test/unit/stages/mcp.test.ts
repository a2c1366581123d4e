// The mcp stage (docs/gateway.md#mcp-servers): which requests are an MCP server's (origin, path equal or below, every
// reading of the path, case ignored; an HTTP+SSE stream's endpoint), the token put in place of the agent's
// Authorization, and the server's answers read on the way back: tools/list results cut to the grant, in a JSON
// body and in an SSE stream event by event (an event goes on as soon as it is whole; nothing waits for the end).
import { describe, expect, test } from "bun:test";
import { Reply, type BodySink, type BodySource } from "../../../src/gateway/reply.ts";
import type { CompiledMcpServer } from "../../../src/gateway/snapshot.ts";
import { guidanceStage } from "../../../src/gateway/stages/guidance.ts";
import { mcpStage } from "../../../src/gateway/stages/mcp.ts";
import { McpSessions } from "../../../src/gateway/stages/mcpSessions.ts";
import { agentCredentials, replyText, signIn, testRequest } from "../../../src/gateway/testing.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";

function server(parts: Partial<CompiledMcpServer> = {}): CompiledMcpServer {
  return {
    id: "mcp-1",
    name: "tools",
    origin: "https://mcp.example.com",
    pathPrefix: "/mcp",
    host: "mcp.example.com",
    auth: { header: "Authorization", value: "Bearer server-token-123" },
    expiresAt: null,
    status: "connected",
    grant: { access: "custom", allow: new Set(["echo"]), ask: new Set(["add"]), arguments: {} },
    ...parts,
  };
}

function request(target: string, servers: CompiledMcpServer[], init: { method?: string; tunnel?: string; headers?: Record<string, string>; body?: string } = {}): ProxyRequest {
  const rq = testRequest({ tunnel: init.tunnel ?? "mcp.example.com:443", target, method: init.method ?? "POST", headers: init.headers, body: init.body ?? null });
  signIn(rq, agentCredentials({ mcpServers: servers }));
  return rq;
}

/** A body the test pushes chunk by chunk, seeing what reaches the agent after each. */
class PushedBody implements BodySource {
  readonly length = null;
  sink: BodySink | null = null;
  cancelled = false;
  start(sink: BodySink): void {
    this.sink = sink;
  }
  resume(): void {}
  cancel(): void {
    this.cancelled = true;
  }
}

function upstreamReply(type: string, body: BodySource): Reply {
  const reply = new Reply(200, "OK", [["content-type", type]], body);
  reply.fromUpstream = true;
  return reply;
}

/** Starts the reply's body and collects what the agent receives (through the transforms). */
function receive(reply: Reply): { chunks: string[]; ended: () => boolean } {
  const chunks: string[] = [];
  let ended = false;
  reply.body!.start({
    data(chunk) {
      let c = chunk;
      for (const t of reply.transforms) c = t.data(c);
      if (c.byteLength > 0) chunks.push(new TextDecoder().decode(c));
      return true;
    },
    end() {
      for (const t of reply.transforms) {
        const tail = t.end(true);
        if (tail && tail.byteLength > 0) chunks.push(new TextDecoder().decode(tail));
      }
      ended = true;
    },
    error() {},
  });
  return { chunks, ended: () => ended };
}

const toolList = (id: number, names: string[]) => JSON.stringify({ jsonrpc: "2.0", id, result: { tools: names.map((name) => ({ name, inputSchema: { type: "object" } })) } });
const noRefresh = { fresh: () => Promise.reject(new Error("no refresh in this test")) };
const enc = (s: string) => new TextEncoder().encode(s);

describe("which requests are the server's", () => {
  const stage = mcpStage({ sessions: new McpSessions(), auth: noRefresh });
  // [tunnel, target, judged as the server's, given its token]: a path only some readings put under the URL is
  // judged but gets no token (a server that does not resolve `..` or decodes `%2F` reads another path there).
  const cases: [string, string, boolean, boolean][] = [
    ["mcp.example.com:443", "/mcp", true, true],
    ["mcp.example.com:443", "/mcp/", true, true],
    ["mcp.example.com:443", "/mcp/sub?x=1", true, true],
    ["mcp.example.com:443", "/MCP", true, true],
    ["mcp.example.com:443", "/other/../mcp", true, false],
    ["mcp.example.com:443", "/x/%2e%2e/mcp", true, false],
    ["mcp.example.com:443", "/mcp/..%2F..%2Fother", true, false],
    ["mcp.example.com:443", "/mcp/../other", false, false],
    ["mcp.example.com:443", "/mcpx", false, false],
    ["mcp.example.com:443", "/", false, false],
    ["mcp.example.com:8443", "/mcp", false, false],
    ["evil.example.com:443", "/mcp", false, false],
  ];
  for (const [tunnel, target, mine, token] of cases) {
    test(`${tunnel} ${target}: ${mine ? `the server's${token ? "" : " to judge, no token"}` : "not the server's"}`, () => {
      const rq = request(target, [server()], { tunnel, headers: { authorization: "Bearer agent-placeholder" }, body: "{}" });
      stage.request!(rq);
      // Judged when it is the server's; a request elsewhere on the server's host is judged too (no token), never another host's.
      expect(rq.mcp?.server.id ?? null).toBe(tunnel.startsWith("mcp.example.com") ? "mcp-1" : null);
      if (mine) expect(rq.mcp?.via).toBe(token ? "url" : "host");
      expect(rq.headers.get("authorization")).toBe(token ? "Bearer server-token-123" : "Bearer agent-placeholder");
      expect(rq.injectionCount).toBe(token ? 1 : 0);
      if (token) expect(rq.injectedValues).toEqual(["server-token-123"]);
    });
  }

  test("a server on a port and at the whole origin; a header token; no token leaves the agent's headers alone", () => {
    const s = server({ origin: "https://mcp.example.com:8443", pathPrefix: "", auth: { header: "X-Api-Key", value: "k-123456789" } });
    const rq = request("/anything", [s], { tunnel: "mcp.example.com:8443", headers: { authorization: "Bearer agent" } });
    stage.request!(rq);
    expect(rq.mcp?.server.id).toBe("mcp-1");
    expect(rq.headers.get("x-api-key")).toBe("k-123456789");
    expect(rq.headers.get("authorization")).toBeNull();
    const open = request("/mcp", [server({ auth: null })], { headers: { authorization: "Bearer agent" } });
    stage.request!(open);
    expect(open.mcp).not.toBeNull();
    expect(open.headers.get("authorization")).toBe("Bearer agent");
    expect(open.injectionCount).toBe(0);
  });

  test("an OAuth token inside its refresh window is refreshed first; none to be had: 502 credential_unavailable", async () => {
    const due = server({ expiresAt: Date.now() + 30_000, auth: { header: "authorization", value: "Bearer old-token-1234" } });
    const asked: string[] = [];
    const refreshing = mcpStage({
      sessions: new McpSessions(),
      auth: { fresh: async (id) => (asked.push(id), { kind: "oauth", accessToken: "new-token-5678", refreshToken: "r", expiresAt: Date.now() + 3_600_000 }) },
    });
    const rq = request("/mcp", [due]);
    expect(await refreshing.request!(rq)).toEqual({ decision: null, response: null });
    expect(asked).toEqual(["mcp-1"]);
    expect(rq.headers.get("authorization")).toBe("Bearer new-token-5678");
    expect(rq.injectedValues).toEqual(["new-token-5678"]);
    const revoked = mcpStage({ sessions: new McpSessions(), auth: { fresh: async () => null } });
    const gone = request("/mcp", [due]);
    const verdict = await revoked.request!(gone);
    expect(verdict.decision).toBe("error");
    expect((verdict.response as Response).status).toBe(502);
    expect(await (verdict.response as Response).json()).toMatchObject({ error: "credential_unavailable" });
    // A token far from expiry: no refresh, no promise.
    const fresh = request("/mcp", [server({ expiresAt: Date.now() + 3_600_000 })]);
    expect(refreshing.request!(fresh)).not.toBeInstanceOf(Promise);
    expect(asked).toHaveLength(1);
  });

  test("a server credgate has no token for answers 401: the agent is told to have it connected, not to add a secret", async () => {
    const stage = mcpStage({ sessions: new McpSessions(), auth: noRefresh });
    const rq = request("/mcp", [server({ auth: null, status: "pending" })]);
    stage.request!(rq);
    rq.decision = "allowed";
    const upstream = Object.assign(Reply.of(new Response('{"error":"unauthorized"}', { status: 401, headers: { "content-type": "application/json" } })), { fromUpstream: true });
    const guided = await guidanceStage({ publicUrl: "https://credgate.example" }).response!(rq, upstream);
    expect(guided.status).toBe(401);
    expect(JSON.parse(await replyText(guided))).toEqual({
      error: "app_not_connected",
      message: "The MCP server tools is not connected in credgate. Ask the user to open this URL to connect it: https://credgate.example/p/project-1/mcp-servers/mcp-1",
      provider: "tools",
      connect_url: "https://credgate.example/p/project-1/mcp-servers/mcp-1",
    });
  });

  test("an agent without MCP servers passes untouched", () => {
    const rq = request("/mcp", []);
    stage.request!(rq);
    expect(rq.mcp).toBeNull();
  });
});

describe("tools/list results", () => {
  test("a JSON answer is cut to allow ∪ ask, whatever id it carries (id 1e400 comes back null); other messages are left alone", async () => {
    const stage = mcpStage({ sessions: new McpSessions(), auth: noRefresh });
    const rq = request("/mcp", [server()]);
    stage.request!(rq);
    rq.mcp!.listIds = new Set([Infinity]);
    const call = { jsonrpc: "2.0", id: 2, result: { content: [{ type: "text", text: "tools: delete_all" }] } };
    const body = JSON.stringify([JSON.parse(toolList(1, ["echo", "add", "delete_all"])).result && { ...JSON.parse(toolList(1, ["echo", "add", "delete_all"])), id: null }, call]);
    const reply = stage.response!(rq, Object.assign(Reply.of(new Response(body, { headers: { "content-type": "application/json" } })), { fromUpstream: true })) as Reply;
    const out = JSON.parse(await replyText(reply));
    expect(out[0].id).toBeNull();
    expect(out[0].result.tools.map((t: { name: string }) => t.name)).toEqual(["echo", "add"]);
    expect(out[1]).toEqual(call);
  });

  test("a JSON answer to a tools/list over 16 MiB is replaced by an error, never passed on unread", async () => {
    const stage = mcpStage({ sessions: new McpSessions(), auth: noRefresh });
    const rq = request("/mcp", [server()]);
    stage.request!(rq);
    rq.mcp!.listIds = new Set([1]);
    const huge = toolList(1, Array.from({ length: 300_000 }, (_, i) => `tool_with_a_long_name_${i}`));
    expect(huge.length).toBeGreaterThan(16 * 1024 * 1024);
    const reply = stage.response!(rq, Object.assign(Reply.of(new Response(huge, { headers: { "content-type": "application/json" } })), { fromUpstream: true })) as Reply;
    expect(JSON.parse(await replyText(reply))).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32010, message: "credgate: the tools/list result is over 16 MiB and was not passed on" } });
  });

  test("no grant: no tools; full: the answer is not touched at all", async () => {
    const none = mcpStage({ sessions: new McpSessions(), auth: noRefresh });
    const rq = request("/mcp", [server({ grant: null })]);
    none.request!(rq);
    rq.mcp!.listIds = new Set([1]);
    const reply = none.response!(rq, Object.assign(Reply.of(new Response(toolList(1, ["echo"]), { headers: { "content-type": "application/json" } })), { fromUpstream: true })) as Reply;
    expect(JSON.parse(await replyText(reply)).result.tools).toEqual([]);
    const full = request("/mcp", [server({ grant: { access: "full" } })]);
    none.request!(full);
    full.mcp!.listIds = new Set([1]);
    const untouched = none.response!(full, Object.assign(Reply.of(new Response(toolList(1, ["echo"]), { headers: { "content-type": "application/json" } })), { fromUpstream: true })) as Reply;
    expect(untouched.transforms).toHaveLength(0);
  });

  test("an SSE answer: each event goes on as soon as it is whole, filtered; a split event waits only for its own end", () => {
    const stage = mcpStage({ sessions: new McpSessions(), auth: noRefresh });
    const rq = request("/mcp", [server()], { headers: { accept: "application/json, text/event-stream" } });
    stage.request!(rq);
    rq.mcp!.listIds = new Set([1]);
    const upstream = new PushedBody();
    const reply = stage.response!(rq, upstreamReply("text/event-stream", upstream)) as Reply;
    const got = receive(reply);
    upstream.sink!.data(enc('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'));
    expect(got.chunks).toEqual(['event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n']);
    const list = `event: message\r\nid: 7\r\ndata: ${toolList(1, ["echo", "delete_all", "add"])}\r\n\r\n`;
    upstream.sink!.data(enc(list.slice(0, 40)));
    upstream.sink!.data(enc(list.slice(40, 90)));
    expect(got.chunks).toHaveLength(1);
    upstream.sink!.data(enc(list.slice(90)));
    expect(got.chunks).toHaveLength(2);
    expect(got.chunks[1]).toStartWith("event: message\nid: 7\ndata: ");
    const data = JSON.parse(got.chunks[1]!.split("data: ")[1]!);
    expect(data.result.tools.map((t: { name: string }) => t.name)).toEqual(["echo", "add"]);
    upstream.sink!.end();
    expect(got.ended()).toBe(true);
  });

  test("a GET stream: any tools/list result is cut (a resumed stream replays them), and the endpoint event is marked", () => {
    const sessions = new McpSessions();
    const stage = mcpStage({ sessions, auth: noRefresh });
    const rq = request("/mcp/sse", [server()], { method: "GET" });
    stage.request!(rq);
    const upstream = new PushedBody();
    const reply = stage.response!(rq, upstreamReply("text/event-stream", upstream)) as Reply;
    const got = receive(reply);
    upstream.sink!.data(enc("event: endpoint\ndata: /messages?sessionId=abc\n\n"));
    const marked = /^event: endpoint\ndata: (\/messages\?sessionId=abc&credgate_mcp=[A-Za-z0-9_-]{43})\n\n$/.exec(got.chunks[0]!);
    expect(marked).not.toBeNull();
    expect(sessions.stream("mcp-1", "/messages?sessionId=abc", "agent-1")).not.toBeNull();
    // Another agent that learned the session id cannot put events on this agent's stream.
    expect(sessions.stream("mcp-1", "/messages?sessionId=abc", "agent-2")).toBeNull();
    upstream.sink!.data(enc(`event: message\ndata: ${toolList(99, ["delete_all", "echo"])}\n\n`));
    expect(JSON.parse(got.chunks[1]!.split("data: ")[1]!).result.tools).toEqual([{ name: "echo", inputSchema: { type: "object" } }]);
    // The marked endpoint belongs to the server, in any process with the same key: a POST there gets the token,
    // and the mark does not go upstream.
    const post = request(marked![1]!, [server()]);
    stage.request!(post);
    expect(post.mcp).toMatchObject({ via: "endpoint", endpoint: "/messages?sessionId=abc" });
    expect(post.mcp?.server.id).toBe("mcp-1");
    expect(post.upstreamTarget).toBe("/messages?sessionId=abc");
    expect(post.headers.get("authorization")).toStartWith("Bearer ");
    // Unmarked, a forged mark, another query, the mark moved to another spelling of the path (an origin that reads
    // `/x/../messages` literally, or decodes `%2F`, serves another path there): judged (a body to the origin) but no token.
    const mark = marked![1]!.slice(-43);
    for (const target of ["/messages?sessionId=abc", `/x/../messages?sessionId=abc&credgate_mcp=${mark}`, `/x/..%2Fmessages?sessionId=abc&credgate_mcp=${mark}`, `/%6dessages?sessionId=abc&credgate_mcp=${mark}`, `/messages?sessionId=abd&credgate_mcp=${marked![1]!.slice(-43)}`, `/collect?credgate_mcp=${"A".repeat(43)}`]) {
      const other = request(target, [server()], { body: "{}" });
      stage.request!(other);
      expect(other.mcp?.via).toBe("host");
      expect(other.headers.get("authorization")).toBeNull();
      expect(other.upstreamTarget).not.toContain("credgate_mcp");
    }
    // A gateway event goes between two of the server's events, never inside one.
    upstream.sink!.data(enc("event: message\ndata: {\"partial\":"));
    sessions.stream("mcp-1", "/messages?sessionId=abc", "agent-1")!.inject('event: message\ndata: {"injected":true}\n\n');
    expect(got.chunks).toHaveLength(2);
    upstream.sink!.data(enc("1}\n\n"));
    expect(got.chunks[2]).toBe('event: message\ndata: {"partial":1}\n\nevent: message\ndata: {"injected":true}\n\n');
    upstream.sink!.end();
    expect(sessions.stream("mcp-1", "/messages?sessionId=abc", "agent-1")).toBeNull();
  });

  test("CRLF events split between the CR and the LF; a result whose keys are JSON escapes is read all the same", () => {
    const sessions = new McpSessions();
    const stage = mcpStage({ sessions, auth: noRefresh });
    const rq = request("/mcp/sse", [server()], { method: "GET" });
    stage.request!(rq);
    const upstream = new PushedBody();
    const got = receive(stage.response!(rq, upstreamReply("text/event-stream", upstream)) as Reply);
    upstream.sink!.data(enc("event: endpoint\r\ndata: /messages?sessionId=s1\r\n\r"));
    upstream.sink!.data(enc("\n"));
    // The marked event is written with LFs; the CR's LF that follows it is a blank line, which dispatches nothing.
    expect(got.chunks.join("")).toMatch(/^event: endpoint\ndata: \/messages\?sessionId=s1&credgate_mcp=[\w-]{43}\n\n\n$/);
    // Nothing is held: a gateway event goes out at once.
    sessions.stream("mcp-1", "/messages?sessionId=s1", "agent-1")!.inject("event: message\ndata: {}\n\n");
    expect(got.chunks.at(-1)).toBe("event: message\ndata: {}\n\n");
    const escaped = '{"jsonrpc":"2.0","id":3,"result":{"tool\\u0073":[{"name":"echo"},{"n\\u0061me":"delete_all"}]}}';
    upstream.sink!.data(enc(`data: ${escaped}\n\n`));
    expect(JSON.parse(got.chunks.at(-1)!.split("data: ")[1]!)).toEqual({ jsonrpc: "2.0", id: 3, result: { tools: [{ name: "echo" }] } });
  });

  test("a stream reached elsewhere on the host (a GET with a body) names no endpoint of the server's", () => {
    const sessions = new McpSessions();
    const stage = mcpStage({ sessions, auth: noRefresh });
    const rq = request("/other-tenant/sse", [server()], { method: "GET", body: "{}" });
    stage.request!(rq);
    expect(rq.mcp?.via).toBe("host");
    const upstream = new PushedBody();
    const got = receive(stage.response!(rq, upstreamReply("text/event-stream", upstream)) as Reply);
    upstream.sink!.data(enc("event: endpoint\ndata: /other-tenant/messages?sessionId=abc\n\n"));
    expect(got.chunks[0]).toBe("event: endpoint\ndata: /other-tenant/messages?sessionId=abc\n\n");
    expect(sessions.stream("mcp-1", "/other-tenant/messages?sessionId=abc", "agent-1")).toBeNull();
  });

  test("an endpoint on another origin is not marked", () => {
    const sessions = new McpSessions();
    const stage = mcpStage({ sessions, auth: noRefresh });
    const rq = request("/mcp/sse", [server()], { method: "GET" });
    stage.request!(rq);
    const upstream = new PushedBody();
    const got = receive(stage.response!(rq, upstreamReply("text/event-stream", upstream)) as Reply);
    upstream.sink!.data(enc("event: endpoint\ndata: https://evil.example.com/messages?sessionId=abc\n\n"));
    expect(got.chunks[0]).toBe("event: endpoint\ndata: https://evil.example.com/messages?sessionId=abc\n\n");
    expect(sessions.stream("mcp-1", "/messages?sessionId=abc", "agent-1")).toBeNull();
  });

  test("answers are asked for unencoded; one that comes gzipped anyway is decoded and filtered; an unreadable coding is not passed on", async () => {
    const stage = mcpStage({ sessions: new McpSessions(), auth: noRefresh });
    const rq = request("/mcp", [server({ auth: null })], { headers: { "accept-encoding": "gzip, br" } });
    stage.request!(rq);
    expect(rq.headers.get("accept-encoding")).toBe("identity");
    rq.mcp!.listIds = new Set([1]);
    const gz = Bun.gzipSync(enc(`event: message\ndata: ${toolList(1, ["echo", "delete_all"])}\n\n`));
    const reply = Reply.of(new Response(gz, { headers: { "content-type": "text/event-stream", "content-encoding": "gzip" } }));
    reply.fromUpstream = true;
    const out = await replyText(stage.response!(rq, reply) as Reply);
    expect(JSON.parse(out.split("data: ")[1]!).result.tools.map((t: { name: string }) => t.name)).toEqual(["echo"]);
    const odd = Reply.of(new Response("\u0001\u0002", { headers: { "content-type": "application/json", "content-encoding": "compress" } }));
    odd.fromUpstream = true;
    const refused = stage.response!(rq, odd) as Reply;
    expect(refused.status).toBe(502);
    expect(JSON.parse(await replyText(refused))).toMatchObject({ error: { code: -32010, message: expect.stringContaining("encoding credgate cannot read (compress)") } });
  });

  test("a full grant's GET stream that is no HTTP+SSE session is relayed as it comes after its first event", () => {
    const stage = mcpStage({ sessions: new McpSessions(), auth: noRefresh });
    const rq = request("/mcp", [server({ grant: { access: "full" } })], { method: "GET" });
    stage.request!(rq);
    const upstream = new PushedBody();
    const got = receive(stage.response!(rq, upstreamReply("text/event-stream", upstream)) as Reply);
    upstream.sink!.data(enc('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message"}\n\nevent: mess'));
    expect(got.chunks.join("")).toBe('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message"}\n\nevent: mess');
    upstream.sink!.data(enc("age\ndata: half"));
    expect(got.chunks.at(-1)).toBe("age\ndata: half");
    for (let i = 0; i < 17; i++) upstream.sink!.data(enc("x".repeat(1024 * 1024)));
    expect(upstream.cancelled).toBe(false);
  });

  test("an SSE event that never ends is not held without bound", () => {
    const stage = mcpStage({ sessions: new McpSessions(), auth: noRefresh });
    const rq = request("/mcp", [server()], { method: "GET" });
    stage.request!(rq);
    const upstream = new PushedBody();
    const reply = stage.response!(rq, upstreamReply("text/event-stream", upstream)) as Reply;
    let failed: Error | null = null;
    reply.body!.start({ data: () => true, end() {}, error: (e) => (failed = e) });
    const mib = enc("data: " + "x".repeat(1024 * 1024));
    for (let i = 0; i < 17 && failed === null; i++) upstream.sink!.data(mib);
    expect(failed).not.toBeNull();
    expect(upstream.cancelled).toBe(true);
  });
});
