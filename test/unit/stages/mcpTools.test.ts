// The mcp-tools stage (docs/gateway.md#mcp-servers) as an attacker with one agent token drives it: every tools/call
// in the body judged against the grant however it is spelled or batched, bodies credgate cannot read refused
// rather than forwarded unread, refusals written as JSON-RPC errors (JSON or SSE, as the client accepts), and
// `ask` tools held through the real approval service, bound to the arguments' hash (remembered per arguments).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PipelineDeps } from "../../../src/gateway/pipeline.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import type { CompiledMcpServer } from "../../../src/gateway/snapshot.ts";
import { authStage } from "../../../src/gateway/stages/auth.ts";
import { mcpStage } from "../../../src/gateway/stages/mcp.ts";
import { McpSessions } from "../../../src/gateway/stages/mcpSessions.ts";
import { mcpToolsStage } from "../../../src/gateway/stages/mcpTools.ts";
import { testPipelineDeps, testRequest, testTunnel } from "../../../src/gateway/testing.ts";
import { createTestApi, type TestApi } from "../../support/app.ts";
import { until } from "../../support/gateway.ts";
import { outcome } from "./helpers.ts";

let api: TestApi;
let deps: PipelineDeps;
const sessions = new McpSessions();
let tools: ReturnType<typeof mcpToolsStage>;
const noRefresh = { fresh: () => Promise.reject(new Error("no refresh in this test")) };

const server: CompiledMcpServer = {
  id: "mcp-1",
  name: "everything",
  origin: "https://mcp.example.com",
  pathPrefix: "/mcp",
  host: "mcp.example.com",
  auth: { header: "Authorization", value: "Bearer server-token-123" },
  expiresAt: null,
  status: "connected",
  grant: {
    access: "custom",
    allow: new Set(["echo", "write_file"]),
    ask: new Set(["add"]),
    arguments: { write_file: { "/path": "/tmp/*", "/mode": "text" } },
  },
};

beforeAll(async () => {
  api = await createTestApi();
  deps = await testPipelineDeps(api.core.config, api.core.services);
  tools = mcpToolsStage({ approvals: api.core.services.approvals, requestLogs: api.core.services.requestLogs, remembered: deps.snapshot.remembered, sessions });
});

afterAll(async () => {
  deps.upstreams.close();
  await api.core.close();
});

/** A POST of the default agent to the MCP server, through the real auth and mcp stages. */
async function post(body: string | Uint8Array | ReadableStream<Uint8Array>, headers: Record<string, string> = {}, grant: CompiledMcpServer["grant"] = server.grant, method = "POST"): Promise<ProxyRequest> {
  const tunnel = testTunnel({ authority: "mcp.example.com:443", token: api.core.bootstrap.defaultAgentToken });
  const rq = testRequest({ tunnel, method, target: "/mcp", body, headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers } });
  expect(await outcome(authStage({ snapshot: deps.snapshot }).request!(rq))).toBe("pass");
  rq.credentials = { ...rq.credentials, mcpServers: [{ ...server, grant }] };
  expect(await outcome(mcpStage({ sessions, auth: noRefresh }).request!(rq))).toBe("pass");
  return rq;
}

const call = (id: number | string | null, name: string, args: unknown = {}, method = "tools/call") => ({ jsonrpc: "2.0", ...(id === null ? {} : { id }), method, params: { name, arguments: args } });
const text = (v: unknown) => JSON.stringify(v);

async function bodyOf(rq: ProxyRequest): Promise<string> {
  return rq.body ? await new Response(rq.body).text() : "";
}

describe("judged calls", () => {
  test("a granted call passes, its body forwarded whole; the log row will say MCP and the tool", async () => {
    const body = text(call(1, "echo", { message: "hi" }));
    const rq = await post(body);
    expect(await outcome(tools.request!(rq))).toBe("pass");
    expect(await bodyOf(rq)).toBe(body);
    expect(rq.mcp!.tools).toEqual(["echo"]);
  });

  test("a tool outside the grant: -32010, HTTP 200, nothing forwarded, logged blocked", async () => {
    const rq = await post(text(call(5, "delete_all")));
    expect(await outcome(tools.request!(rq))).toMatchObject({
      decision: "blocked",
      status: 200,
      body: { jsonrpc: "2.0", id: 5, error: { code: -32010, message: "credgate: tool delete_all is not granted to this agent" } },
    });
  });

  test("no grant at all refuses every call; tools named after Object.prototype members find nothing", async () => {
    const rq = await post(text(call(1, "echo")), {}, null);
    expect(await outcome(tools.request!(rq))).toMatchObject({ status: 200, body: { error: { code: -32010 } } });
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      const r = await post(text(call(1, name, { path: "/tmp/x" })));
      expect(await outcome(tools.request!(r))).toMatchObject({ body: { error: { message: `credgate: tool ${name} is not granted to this agent` } } });
    }
  });

  test("arguments that break a glob, or that a glob cannot judge, name the pointer", async () => {
    const ok = await post(text(call(1, "write_file", { path: "/tmp/a.txt", mode: "text", content: "x" })));
    expect(await outcome(tools.request!(ok))).toBe("pass");
    for (const [args, pointer] of [
      [{ path: "/etc/passwd", mode: "text" }, "/path"],
      [{ path: "/tmp/a", mode: "binary" }, "/mode"],
      [{ mode: "text" }, "/path"],
      [{ path: ["/tmp/a"], mode: "text" }, "/path"],
      [{ path: { toString: "/tmp/a" }, mode: "text" }, "/path"],
    ] as const) {
      const rq = await post(text(call(2, "write_file", args)));
      expect(await outcome(tools.request!(rq))).toMatchObject({ decision: "blocked", body: { id: 2, error: { code: -32010, message: `credgate: tool write_file arguments are not allowed: ${pointer}` } } });
    }
  });

  test("tools/call spelled with odd case or whitespace, or through unicode escapes, is judged like any call", async () => {
    for (const raw of [
      '{"jsonrpc":"2.0","id":1,"method":"Tools/Call","params":{"name":"delete_all"}}',
      '{"jsonrpc":"2.0","id":1,"method":" tools/call ","params":{"name":"delete_all"}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools\\/call","params":{"name":"delete\\u005fall"}}',
      // Go's encoding/json matches fields ignoring case: this is a call to delete_all on a Go server.
      '{"jsonrpc":"2.0","id":1,"METHOD":"tools/call","Params":{"NAME":"delete_all"}}',
    ]) {
      const rq = await post(raw);
      expect(await outcome(tools.request!(rq))).toMatchObject({ decision: "blocked", body: { error: { code: -32010, message: "credgate: tool delete_all is not granted to this agent" } } });
    }
  });

  test("a body sent with another method (PUT, lowercase post, even GET) is judged like a POST's", async () => {
    for (const method of ["PUT", "post", "PATCH", "GET"]) {
      const rq = await post(text(call(1, "delete_all")), {}, server.grant, method);
      expect(await outcome(tools.request!(rq))).toMatchObject({ decision: "blocked", body: { error: { code: -32010 } } });
    }
  });

  test("a notification-shaped call (no id) is judged too", async () => {
    const rq = await post(text(call(null, "delete_all")));
    expect(await outcome(tools.request!(rq))).toMatchObject({ decision: "blocked", body: { id: null, error: { code: -32010 } } });
  });

  test("a batch mixing granted and refused calls is answered whole: each refusal its own, the others not forwarded", async () => {
    const batch = [call(1, "echo"), call(2, "delete_all"), { jsonrpc: "2.0", method: "notifications/initialized" }, { jsonrpc: "2.0", id: 3, method: "tools/list" }];
    const rq = await post(text(batch));
    expect(await outcome(tools.request!(rq))).toMatchObject({
      decision: "blocked",
      status: 200,
      body: [
        { id: 1, error: { code: -32010, message: "credgate: the batch was not forwarded: another call in it was refused" } },
        { id: 2, error: { code: -32010, message: "credgate: tool delete_all is not granted to this agent" } },
        { id: 3, error: { code: -32010, message: "credgate: the batch was not forwarded: another call in it was refused" } },
      ],
    });
    const granted = await post(text([call(1, "echo"), { jsonrpc: "2.0", id: 3, method: "tools/list" }]));
    expect(await outcome(tools.request!(granted))).toBe("pass");
    expect([...granted.mcp!.listIds!]).toEqual([3]);
  });

  test("a client that accepts only SSE gets its refusal as an SSE event", async () => {
    const rq = await post(text(call(9, "delete_all")), { accept: "text/event-stream" });
    const got = await outcome(tools.request!(rq));
    expect(got).toMatchObject({ status: 200, headers: { "content-type": "text/event-stream" } });
    expect((got as { body: string }).body).toBe(`event: message\ndata: ${text({ jsonrpc: "2.0", id: 9, error: { code: -32010, message: "credgate: tool delete_all is not granted to this agent" } })}\n\n`);
  });
});

describe("bodies credgate will not forward unread", () => {
  test("duplicate keys: 400 -32700, whichever value a server would take", async () => {
    const rq = await post('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"delete_all"}}');
    expect(await outcome(tools.request!(rq))).toMatchObject({ decision: "blocked", status: 400, body: { id: null, error: { code: -32700, message: expect.stringContaining('duplicate key "name"') } } });
  });

  test("keys that differ only in case: 400 -32700 (a Go server would take the last)", async () => {
    const rq = await post('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","NAME":"delete_all"}}');
    expect(await outcome(tools.request!(rq))).toMatchObject({ status: 400, body: { error: { code: -32700, message: expect.stringContaining("ignoring case") } } });
    const args = await post(text(call(1, "write_file", { path: "/tmp/a", PATH: "/etc/passwd", mode: "text" })));
    expect(await outcome(tools.request!(args))).toMatchObject({ status: 400, body: { error: { code: -32700 } } });
  });

  test("params that are not an object, a name that is not a string, arguments that are not an object: -32602", async () => {
    for (const raw of [
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["delete_all"]}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":{"x":"delete_all"}}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":"{}"}}',
    ]) {
      const rq = await post(raw);
      expect(await outcome(tools.request!(rq))).toMatchObject({ decision: "blocked", status: 200, body: { id: 1, error: { code: -32602 } } });
    }
  });

  test("over 4 MiB, declared or streamed: 413, nothing forwarded", async () => {
    const big = text(call(1, "echo", { message: "x".repeat(4 * 1024 * 1024) }));
    const declared = await post(big);
    expect(await outcome(tools.request!(declared))).toMatchObject({ decision: "blocked", status: 413, body: { error: { code: -32600, message: expect.stringContaining("4194304 bytes") } } });
    const bytes = new TextEncoder().encode(big);
    const streamed = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 65536) c.enqueue(bytes.subarray(i, i + 65536));
        c.close();
      },
    });
    const chunked = await post(streamed);
    expect(await outcome(tools.request!(chunked))).toMatchObject({ status: 413 });
  });

  test("an encoded body (gzip) is refused: 415", async () => {
    const rq = await post(Bun.gzipSync(new TextEncoder().encode(text(call(1, "delete_all")))), { "content-encoding": "gzip" });
    expect(await outcome(tools.request!(rq))).toMatchObject({ decision: "blocked", status: 415, body: { error: { code: -32700 } } });
  });

  test("not JSON: 400 -32700", async () => {
    const rq = await post("{jsonrpc: '2.0', id: 1, method: 'tools/call', params: {name: 'delete_all'}}");
    expect(await outcome(tools.request!(rq))).toMatchObject({ status: 400, body: { error: { code: -32700 } } });
  });
});

describe("ask tools", () => {
  async function held(rq: ProxyRequest) {
    return until(() => {
      if (!rq.approval) throw new Error("not held yet");
      return rq.approval;
    });
  }

  test("held with the tool and its arguments; approved: forwarded as approval_approved", async () => {
    const rq = await post(text(call(1, "add", { a: 1, b: 2, api_key: "sk-hidden" })));
    const verdict = tools.request!(rq);
    const { id } = await held(rq);
    const row = (await api.call("GET", `/v1/approvals/${id}`)).body as { method: string; path: string; bodyPreview: string };
    expect(row.method).toBe("MCP");
    expect(row.path).toBe("add");
    expect(JSON.parse(row.bodyPreview)).toEqual({ a: 1, b: 2, api_key: "***" });
    expect((await api.call("POST", `/v1/approvals/${id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
    expect(await verdict).toEqual({ decision: "approval_approved", response: null });
  });

  test("denied: -32011, HTTP 200", async () => {
    const rq = await post(text(call(4, "add", { a: 1, b: 2 })));
    const verdict = tools.request!(rq);
    const { id } = await held(rq);
    expect((await api.call("POST", `/v1/approvals/${id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    expect(await outcome(verdict)).toMatchObject({ decision: "approval_denied", status: 200, body: { id: 4, error: { code: -32011, message: "credgate: the call to add was not approved" } } });
  });

  test("remembered: the same arguments (in any key order) pass; other arguments are held again", async () => {
    const rq = await post(text(call(1, "add", { a: 5, b: 6 })));
    const verdict = tools.request!(rq);
    const { id } = await held(rq);
    expect((await api.call("POST", `/v1/approvals/${id}/decision`, { body: { decision: "approve", remember: { minutes: 10 } } })).status).toBe(200);
    expect(await verdict).toEqual({ decision: "approval_approved", response: null });
    const same = await post('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"b":6,"a":5},"name":"add"}}');
    expect(await until(async () => {
      const v = await tools.request!(same);
      if (v.decision !== "approved_by_memory") throw new Error(`not remembered yet: ${v.decision}`);
      return v;
    })).toEqual({ decision: "approved_by_memory", response: null });
    const other = await post(text(call(3, "add", { a: 5, b: 7 })));
    const again = tools.request!(other);
    const { id: second } = await held(other);
    expect((await api.call("POST", `/v1/approvals/${second}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    expect(await outcome(again)).toMatchObject({ decision: "approval_denied" });
  });

  test("remembered with anyArguments: the tool passes whatever its arguments, for this agent", async () => {
    const rq = await post(text(call(1, "add", { a: 100 })));
    const verdict = tools.request!(rq);
    const { id } = await held(rq);
    expect((await api.call("POST", `/v1/approvals/${id}/decision`, { body: { decision: "approve", remember: { minutes: 10, anyArguments: true } } })).status).toBe(200);
    expect(await verdict).toEqual({ decision: "approval_approved", response: null });
    const [memory] = ((await api.call("GET", "/v1/approvals/remembered")).body as { ruleId: string }[]).filter((m) => m.ruleId.endsWith(":*"));
    expect(memory!.ruleId).toBe("mcp:mcp-1:add:*");
    const other = await post(text(call(2, "add", { a: 999, c: "anything" })));
    expect(
      await until(async () => {
        const v = await tools.request!(other);
        if (v.decision !== "approved_by_memory") throw new Error(`not remembered yet: ${v.decision}`);
        return v;
      }),
    ).toEqual({ decision: "approved_by_memory", response: null });
    expect((await api.call("POST", `/v1/approvals/${id}/decision`, { body: { decision: "approve", remember: { minutes: 10, anyArguments: "yes" } } })).status).toBe(400);
  });

  test("two ask calls in one batch are refused, each named", async () => {
    const rq = await post(text([call(1, "add", { a: 1 }), call(2, "add", { a: 2 })]));
    expect(await outcome(tools.request!(rq))).toMatchObject({ decision: "blocked", body: [{ id: 1, error: { code: -32010 } }, { id: 2, error: { code: -32010 } }] });
  });
});
