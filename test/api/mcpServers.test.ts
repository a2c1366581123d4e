// MCP servers as apps through the in-process API (docs/mcp.md): registering with a static bearer or header
// (tools listed at once from a real SDK server, over Streamable HTTP and over HTTP+SSE), validation, access,
// secrecy at rest, rename/delete/refresh-tools, tool grants with the connection grants' validation, and what the
// gateway snapshot holds for each agent. The login run by credgate is in test/e2e/mcp-login.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, storedText, type TestApi } from "../support/app.ts";
import { startMcpUpstream, type McpUpstream } from "../support/mcpUpstream.ts";
import { GatewaySnapshot } from "../../src/gateway/snapshot.ts";
import { startTinyproxy } from "../support/upstreamProxies.ts";
import { addMember, addProject, expectEnvelope, expectFlat, ISO_MS, UUID_V4 } from "./helpers.ts";

const TOKEN = "mcp-static-token-0123456789abcdef";
const UNKNOWN = "00000000-0000-4000-8000-000000000000";

let api: TestApi;
let streamable: McpUpstream;
let sse: McpUpstream;

beforeAll(async () => {
  api = await createTestApi();
  streamable = await startMcpUpstream({ transport: "streamable", acceptsToken: (t) => t === TOKEN });
  sse = await startMcpUpstream({ transport: "sse", path: "/sse" });
});

afterAll(async () => {
  await streamable?.close();
  await sse?.close();
  await api?.core.close();
});

async function register(body: Record<string, unknown>, key?: string) {
  const res = await api.call("POST", "/v1/mcp-servers", { body, key });
  if (res.status !== 201) throw new Error(`register: ${res.status} ${res.text}`);
  return res.body;
}

async function newAgent(mode: "all" | "grants", identifier = `agent-${crypto.randomUUID().slice(0, 8)}`) {
  const res = await api.call("POST", "/v1/agents", { body: { name: identifier, identifier, mode } });
  expect(res.status).toBe(201);
  const list = (await api.call("GET", "/v1/agents")).body as { id: string; name: string; accessToken: string }[];
  return list.find((a) => a.id === res.body.id)!;
}

describe("registering", () => {
  test("a bearer token: the tools are listed at once over Streamable HTTP, with the token; it is never shown nor stored in plaintext", async () => {
    const before = streamable.authorizations.length;
    const server = await register({ name: "  Files  ", url: streamable.url, auth: { bearer: TOKEN } });
    expect(server).toMatchObject({ name: "Files", url: streamable.url, authKind: "bearer", status: "connected", error: null });
    expect(server.id).toMatch(UUID_V4);
    expect(server.createdAt).toMatch(ISO_MS);
    expect(server.toolsRefreshedAt).toMatch(ISO_MS);
    expect(server.tools).toEqual([
      { name: "read_file", description: "Reads a file", readOnlyHint: true },
      { name: "write_file", description: "Writes a file", readOnlyHint: false },
      { name: "delete_repository", description: "Deletes a repository", readOnlyHint: null },
    ]);
    const sent = streamable.authorizations.slice(before);
    expect(sent.length).toBeGreaterThanOrEqual(3); // initialize, initialized, tools/list (and the session's end)
    expect(sent.every((a) => a === `Bearer ${TOKEN}`)).toBe(true);
    const read = await api.call("GET", `/v1/mcp-servers/${server.id}`);
    expect(read.status).toBe(200);
    expect(read.text).not.toContain(TOKEN);
    expect(JSON.stringify((await api.call("GET", "/v1/mcp-servers")).body)).not.toContain(TOKEN);
    expect(await storedText(api)).not.toContain(TOKEN);
  });

  test("a static header over the HTTP+SSE transport (the POST is refused with 405, the GET stream names the endpoint)", async () => {
    const server = await register({ name: "Legacy", url: sse.url, auth: { header: "X-Api-Key", value: "legacy-key-value" } });
    expect(server).toMatchObject({ authKind: "header", status: "connected", error: null });
    expect(server.tools.map((t: { name: string }) => t.name)).toEqual(["read_file", "write_file", "delete_repository"]);
    expect(sse.requests).toContain("GET /sse");
    expect(sse.requests).toContain("POST /sse/messages");
  });

  test("a token the server refuses: status error, no tools, and why", async () => {
    const server = await register({ name: "Wrong", url: streamable.url, auth: { bearer: "not-the-token" } });
    expect(server.status).toBe("error");
    expect(server.tools).toEqual([]);
    expect(server.error).toContain("refused credgate's credential");
  });

  test("without auth the server waits for the login: pending, oauth, nothing sent yet", async () => {
    const before = streamable.requests.length;
    const server = await register({ name: "Login later", url: streamable.url });
    expect(server).toMatchObject({ authKind: "oauth", status: "pending", tools: [], toolsRefreshedAt: null });
    expect(streamable.requests.length).toBe(before);
    expectEnvelope(await api.call("POST", `/v1/mcp-servers/${server.id}/refresh-tools`), 400, "Connect the MCP server first: credgate holds no token for it");
    expect((await api.call("GET", `/v1/mcp-servers/${server.id}`)).body.status).toBe("pending");
  });

  test("a server that cannot be reached is registered in error, saying why", async () => {
    const server = await register({ name: "Unreachable", url: "https://127.0.0.1:1/mcp", auth: { bearer: "x" } });
    expect(server.status).toBe("error");
    expect(server.error).toMatch(/^Listing the tools failed: /);
  });

  test("validation: the first failure, in field order, with the documented messages", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: streamable.url }, "name is required"],
      [{ name: "", url: streamable.url }, "name must be 1-255 characters"],
      [{ name: "x" }, "url is required"],
      [{ name: "x", url: "http://mcp.example.com/mcp" }, "url must be an https:// URL"],
      [{ name: "x", url: "ftp://mcp.example.com/mcp" }, "url must be an https:// URL"],
      [{ name: "x", url: "not a url" }, "url must be an https:// URL"],
      [{ name: "x", url: "https://mcp.example.com/mcp?tenant=a" }, "url must not contain credentials, a query or a fragment"],
      [{ name: "x", url: "https://u:p@mcp.example.com/mcp" }, "url must not contain credentials, a query or a fragment"],
      [{ name: "x", url: "https://mcp.example.com/mcp", auth: "token" }, "auth must be one of: {bearer}, {header, value}, {clientId, clientSecret?}"],
      [{ name: "x", url: "https://mcp.example.com/mcp", auth: { bearer: "a", header: "b" } }, "auth must be one of: {bearer}, {header, value}, {clientId, clientSecret?}"],
      [{ name: "x", url: "https://mcp.example.com/mcp", auth: { bearer: "" } }, "auth.bearer must be 1-8192 printable ASCII characters"],
      [{ name: "x", url: "https://mcp.example.com/mcp", auth: { bearer: "line\nbreak" } }, "auth.bearer must be 1-8192 printable ASCII characters"],
      [{ name: "x", url: "https://mcp.example.com/mcp", auth: { header: "Bad Header", value: "v" } }, "auth.header must be a valid HTTP header name"],
      [{ name: "x", url: "https://mcp.example.com/mcp", auth: { header: "Host", value: "v" } }, "auth.header can't be host"],
      [{ name: "x", url: "https://mcp.example.com/mcp", auth: { header: "Mcp-Session-Id", value: "v" } }, "auth.header can't be mcp-session-id"],
      [{ name: "x", url: "https://mcp.example.com/mcp", auth: { clientId: "" } }, "auth.clientId must be 1-255 characters"],
    ];
    for (const [body, message] of cases) expectFlat(await api.call("POST", "/v1/mcp-servers", { body }), 400, message);
  });

  test("plain http only to loopback, and never in cloud mode; in cloud mode the egress guard keeps credgate off internal addresses", async () => {
    const cloud = await createTestApi({ CREDGATE_MODE: "cloud" });
    try {
      const res = await cloud.call("POST", "/v1/mcp-servers", { body: { name: "x", url: streamable.url, auth: { bearer: TOKEN } }, headers: { "x-project-id": cloud.projectId } });
      expectFlat(res, 400, "url must be an https:// URL");
      // An https:// URL to an internal address passes validation, and the egress guard refuses to connect.
      const internal = await cloud.call("POST", "/v1/mcp-servers", { body: { name: "x", url: "https://127.0.0.1:9/mcp", auth: { bearer: TOKEN } }, headers: { "x-project-id": cloud.projectId } });
      expect(internal.status).toBe(201);
      expect(internal.body.status).toBe("error");
      expect(internal.body.error).toBe("Listing the tools failed: credgate does not connect to 127.0.0.1 (127.0.0.1): the destination is an internal or reserved address");
    } finally {
      await cloud.core.close();
    }
  });
});

describe("a hostile server", () => {
  /** A plain HTTP server answering every request with `answer`; it and a bystander record who came. */
  async function hostile(answer: (req: Request, bystander: string) => Response | Promise<Response>) {
    const bystanderSeen: string[] = [];
    const bystander = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (bystanderSeen.push(`${req.method} ${new URL(req.url).pathname} ${req.headers.get("authorization")}`), new Response("ok")) });
    const bystanderUrl = `http://127.0.0.1:${bystander.port}`;
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => answer(req, bystanderUrl) });
    return { url: `http://127.0.0.1:${server.port}/mcp`, bystanderSeen, stop: () => (server.stop(true), bystander.stop(true)) };
  }

  test("a redirect is not followed: the token never reaches the other host", async () => {
    const h = await hostile((_req, other) => new Response(null, { status: 307, headers: { location: `${other}/mcp` } }));
    try {
      const server = await register({ name: "Redirects", url: h.url, auth: { bearer: TOKEN } });
      expect(server.status).toBe("error");
      expect(server.error).toBe("Listing the tools failed: initialize was answered with HTTP 307");
      expect(h.bystanderSeen).toEqual([]);
    } finally {
      h.stop();
    }
  });

  test("an HTTP+SSE stream naming a message endpoint on another origin: nothing is posted there", async () => {
    const h = await hostile((req, other) =>
      req.method === "POST"
        ? new Response(null, { status: 405 })
        : new Response(`event: endpoint\ndata: ${other}/steal?sessionId=1\n\n`, { headers: { "content-type": "text/event-stream" } }),
    );
    try {
      const server = await register({ name: "Steals", url: h.url, auth: { bearer: TOKEN } });
      expect(server.error).toBe("Listing the tools failed: the event stream named a message endpoint on another origin");
      expect(h.bystanderSeen).toEqual([]);
    } finally {
      h.stop();
    }
  });

  test("an endless answer is cut at its bound, and a tool list of more than 1000 tools is refused", async () => {
    const big = await hostile(() => new Response(`{"jsonrpc":"2.0","id":0,"result":{"pad":"${"x".repeat(5 * 1024 * 1024)}"}}`, { headers: { "content-type": "application/json" } }));
    const many = await hostile(async (req) => {
      const msg = (await req.json()) as { id?: number; method: string };
      if (msg.id === undefined) return new Response(null, { status: 202 });
      const result = msg.method === "initialize" ? { protocolVersion: "2025-06-18", capabilities: {}, serverInfo: { name: "many", version: "1" } } : { tools: Array.from({ length: 1001 }, (_, i) => ({ name: `t${i}`, inputSchema: { type: "object" } })) };
      return Response.json({ jsonrpc: "2.0", id: msg.id, result });
    });
    try {
      expect((await register({ name: "Big", url: big.url, auth: { bearer: TOKEN } })).error).toBe(`Listing the tools failed: the answer is larger than ${4 * 1024 * 1024} bytes`);
      expect((await register({ name: "Many", url: many.url, auth: { bearer: TOKEN } })).error).toBe("Listing the tools failed: the server lists more than 1000 tools");
    } finally {
      big.stop();
      many.stop();
    }
  });
});

describe("the outbound door", () => {
  test("with an upstream proxy, credgate's own listing goes through it (CONNECT to the server), and still works", async () => {
    const proxy = await startTinyproxy({ user: "mcp", password: "mcp-proxy-pass", connectPorts: [Number(new URL(streamable.url).port)] });
    const proxied = await createTestApi({ CREDGATE_UPSTREAM_PROXY: `http://mcp:mcp-proxy-pass@127.0.0.1:${proxy.port}` });
    try {
      const res = await proxied.call("POST", "/v1/mcp-servers", { body: { name: "Proxied", url: streamable.url, auth: { bearer: TOKEN } } });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ status: "connected", error: null });
      expect(res.body.tools).toHaveLength(3);
      expect(proxy.targets()).toContain(`127.0.0.1:${new URL(streamable.url).port}`);
    } finally {
      await proxied.core.close();
      await proxy.stop();
    }
  });
});

describe("access and lifecycle", () => {
  test("writes need admin; a member reads", async () => {
    const { projectKey } = await addMember(api, "member");
    expectEnvelope(await api.call("POST", "/v1/mcp-servers", { key: projectKey, body: { name: "x", url: streamable.url } }), 403, "Insufficient permissions");
    const server = await register({ name: "Readable", url: streamable.url });
    expect((await api.call("GET", `/v1/mcp-servers/${server.id}`, { key: projectKey })).status).toBe(200);
    expectEnvelope(await api.call("DELETE", `/v1/mcp-servers/${server.id}`, { key: projectKey }), 403, "Insufficient permissions");
    expectEnvelope(await api.call("GET", `/v1/mcp-servers/${server.id}/authorize`, { key: projectKey }), 403, "Insufficient permissions");
  });

  test("another project's server is not found", async () => {
    const server = await register({ name: "Mine", url: streamable.url });
    const other = await addProject(api, "MCP other project");
    expectEnvelope(await api.call("GET", `/v1/mcp-servers/${server.id}`, { key: other.projectKey }), 404, "MCP server not found");
    expectEnvelope(await api.call("PATCH", `/v1/mcp-servers/${server.id}`, { key: other.projectKey, body: { name: "stolen" } }), 404, "MCP server not found");
    expectEnvelope(await api.call("DELETE", `/v1/mcp-servers/${server.id}`, { key: other.projectKey }), 404, "MCP server not found");
    expect((await api.call("GET", "/v1/mcp-servers", { key: other.projectKey })).body).toEqual([]);
    expectEnvelope(await api.call("GET", `/v1/mcp-servers/${UNKNOWN}`), 404, "MCP server not found");
  });

  test("rename, refresh-tools and delete", async () => {
    const server = await register({ name: "Old name", url: streamable.url, auth: { bearer: TOKEN } });
    expectFlat(await api.call("PATCH", `/v1/mcp-servers/${server.id}`, { body: {} }), 400, "No fields to update");
    const renamed = await api.call("PATCH", `/v1/mcp-servers/${server.id}`, { body: { name: " New name " } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe("New name");

    streamable.setTools([{ name: "read_file" }, { name: "search", description: "Searches", readOnly: true }]);
    try {
      const refreshed = await api.call("POST", `/v1/mcp-servers/${server.id}/refresh-tools`);
      expect(refreshed.status).toBe(200);
      expect(refreshed.body.tools).toEqual([
        { name: "read_file", description: null, readOnlyHint: null },
        { name: "search", description: "Searches", readOnlyHint: true },
      ]);
    } finally {
      streamable.setTools([{ name: "read_file", description: "Reads a file", readOnly: true }, { name: "write_file", description: "Writes a file", readOnly: false }, { name: "delete_repository", description: "Deletes a repository" }]);
    }

    expect((await api.call("DELETE", `/v1/mcp-servers/${server.id}`)).status).toBe(204);
    expectEnvelope(await api.call("GET", `/v1/mcp-servers/${server.id}`), 404, "MCP server not found");
  });
});

describe("tool grants", () => {
  test("custom and full grants, validated as connection grants are, shown in the grant set", async () => {
    const server = await register({ name: "Granted", url: streamable.url, auth: { bearer: TOKEN } });
    const agent = await newAgent("grants");
    const put = (body: unknown, agentId = agent.id, serverId = server.id) => api.call("PUT", `/v1/agents/${agentId}/grants/mcp-servers/${serverId}`, { body });

    expectFlat(await put({ access: "some" }), 400, "access must be one of: full, custom");
    expectFlat(await put({ access: "custom" }), 400, "Custom access needs at least one allowed or approval tool — detach instead.");
    expectFlat(await put({ access: "custom", allow: ["read_file"], ask: ["read_file"] }), 400, "A tool can't be both always-allowed and require approval.");
    expectFlat(await put({ access: "custom", allow: ["read_file", "drop_table", "rm"] }), 400, 'Unknown tool id(s) for "Granted": drop_table, rm');
    expectFlat(await put({ access: "custom", allow: ["read_file"], arguments: { write_file: { "/path": "/tmp/*" } } }), 400, "arguments names tools that are not granted: write_file");
    expectFlat(await put({ access: "custom", allow: ["read_file"], arguments: { read_file: { path: "/tmp/*" } } }), 400, 'arguments.read_file: "path" is not a JSON pointer');
    expectFlat(await put({ access: "custom", allow: ["read_file"], arguments: { read_file: { "/path": "" } } }), 400, 'arguments.read_file["/path"] must be a glob of 1-1000 characters');
    expectFlat(await put({ access: "full" }, UNKNOWN), 404, "Agent not found");
    expectFlat(await put({ access: "full" }, agent.id, UNKNOWN), 404, "MCP server not found");
    const pending = await register({ name: "No catalog", url: streamable.url });
    expectFlat(await put({ access: "custom", allow: ["read_file"] }, agent.id, pending.id), 400, 'Per-tool permissions need a permission catalog; "No catalog" has none.');

    const granted = await put({ access: "custom", allow: ["read_file", "read_file"], ask: ["write_file"], arguments: { read_file: { "/path": "/srv/**" } } });
    expect(granted.status).toBe(200);
    expect(granted.body.mcpServers).toEqual([
      { mcpServerId: server.id, name: "Granted", access: "custom", allow: ["read_file"], ask: ["write_file"], arguments: { read_file: { "/path": "/srv/**" } } },
    ]);
    expect((await api.call("GET", `/v1/agents/${agent.id}/grants`)).body.mcpServers).toEqual(granted.body.mcpServers);
    const holders = await api.call("GET", `/v1/mcp-servers/${server.id}/grants`);
    expect(holders.body).toEqual({
      mcpServerId: server.id,
      agents: [{ agentId: agent.id, agentName: agent.name, access: "custom", allow: ["read_file"], ask: ["write_file"], arguments: { read_file: { "/path": "/srv/**" } } }],
    });

    const full = await put({ access: "full", allow: ["ignored"] });
    expect(full.body.mcpServers[0]).toMatchObject({ access: "full", allow: [], ask: [], arguments: {} });

    expect((await api.call("DELETE", `/v1/agents/${agent.id}/grants/mcp-servers/${server.id}`)).status).toBe(204);
    expect((await api.call("DELETE", `/v1/agents/${agent.id}/grants/mcp-servers/${server.id}`)).status).toBe(204);
    expect((await api.call("GET", `/v1/agents/${agent.id}/grants`)).body.mcpServers).toEqual([]);
  });

  test("the gateway snapshot: each agent's servers with origin, path, header and grant; changes apply at once", async () => {
    const server = await register({ name: "Snap", url: streamable.url, auth: { bearer: TOKEN } });
    const pending = await register({ name: "Snap pending", url: `${streamable.origin}/other/` });
    const granted = await newAgent("grants");
    const everything = await newAgent("all");
    const snapshot = await GatewaySnapshot.create(api.core.services);
    const view = async (token: string) => (await snapshot.credentials((await snapshot.agentForToken(token))!)).mcpServers;

    const allView = await view(everything.accessToken);
    const mine = allView.find((s) => s.id === server.id)!;
    expect(mine).toEqual({
      id: server.id,
      name: "Snap",
      origin: streamable.origin,
      host: new URL(streamable.origin).hostname,
      pathPrefix: "/mcp",
      auth: { header: "authorization", value: `Bearer ${TOKEN}` },
      expiresAt: null,
      status: "connected",
      grant: { access: "full" },
    });
    expect(allView.find((s) => s.id === pending.id)).toMatchObject({ pathPrefix: "/other", auth: null, status: "pending", grant: null });
    expect((await view(granted.accessToken)).find((s) => s.id === server.id)!.grant).toBeNull();

    const put = await api.call("PUT", `/v1/agents/${granted.id}/grants/mcp-servers/${server.id}`, {
      body: { access: "custom", allow: ["read_file"], ask: ["write_file"], arguments: { write_file: { "/path": "/tmp/*" } } },
    });
    expect(put.status).toBe(200);
    const grant = (await view(granted.accessToken)).find((s) => s.id === server.id)!.grant;
    expect(grant).toEqual({ access: "custom", allow: new Set(["read_file"]), ask: new Set(["write_file"]), arguments: { write_file: { "/path": "/tmp/*" } } });

    await api.call("DELETE", `/v1/mcp-servers/${server.id}`);
    expect((await view(granted.accessToken)).find((s) => s.id === server.id)).toBeUndefined();
  });

  test("agent setup lists the servers each agent may use, with their URLs and granted tools", async () => {
    const server = await register({ name: "Setup", url: streamable.url, auth: { bearer: TOKEN } });
    const granted = await newAgent("grants", "setup-granted");
    await newAgent("grants", "setup-bare");
    await newAgent("all", "setup-all");
    await api.call("PUT", `/v1/agents/${granted.id}/grants/mcp-servers/${server.id}`, { body: { access: "custom", allow: ["read_file"], ask: ["write_file"] } });
    const listed = async (identifier: string) => {
      const all = ((await api.call("GET", `/v1/container-config?agent=${identifier}`)).body.mcpServers ?? []) as Record<string, unknown>[];
      return all.filter((m) => m.id === server.id);
    };
    expect(await listed("setup-granted")).toEqual([{ id: server.id, name: "Setup", url: streamable.url, status: "connected", access: "custom", tools: ["read_file", "write_file"] }]);
    expect(await listed("setup-bare")).toEqual([]);
    expect(await listed("setup-all")).toEqual([{ id: server.id, name: "Setup", url: streamable.url, status: "connected", access: "full", tools: [] }]);
    const text = (await api.call("GET", "/v1/container-config?agent=setup-granted")).text;
    expect(text).not.toContain(TOKEN);
  });
});
