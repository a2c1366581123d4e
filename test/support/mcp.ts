// Real MCP servers for gateway tests, built with the official SDK's own server transports over HTTPS (a leaf of a
// test PKI, reached through credgate with CREDGATE_RESOLVE): `/mcp` speaks Streamable HTTP (sessions, SSE
// answers), `/mcp/stateless` Streamable HTTP without sessions (one server per POST: what an h2 client can call
// without an initialize first; `?json` for JSON answers), `/mcp/sse` the older HTTP+SSE transport, whose
// stream names `/messages` (outside `/mcp`: the gateway learns it from the stream) as its message endpoint. The tools are
// @modelcontextprotocol/server-everything's, or `tools: n` made-up echo tools (`tool_0` … `tool_<n-1>`) for the
// filtering benchmark. Every request must carry `Authorization: Bearer <token>` (else 401) — except the message
// POSTs of `/open/sse` sessions, which like many HTTP+SSE servers trust the session id alone: that stream names a
// path of its own, `/open/m/<random>`, and any path under `/open/m/` reaches the session its `sessionId` names —
// and every tools/call the server receives is recorded, so a test can tell that a refused call never reached it.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
// server-everything has no exports map: its server factory is imported from where the package puts it.
import { createServer as everythingServer } from "@modelcontextprotocol/server-everything/dist/server/index.js";
import { z } from "zod";
import type { TestPki } from "./upstream.ts";

export interface McpTestServer {
  port: number;
  /** The same server over plain HTTP, as some deployments also answer on port 80. */
  httpPort: number;
  /** Every tools/call name the server received, in order. */
  calls: string[];
  /** Every request: method, path and the Authorization it came with. */
  seen: { method: string; path: string; authorization: string | null }[];
  stop(): Promise<void>;
}

type Made = { server: { connect(t: unknown): Promise<void>; close(): Promise<void> }; cleanup?: (id?: string) => void };

function toolsServer(count: number): Made {
  const server = new McpServer({ name: "many-tools", version: "1.0.0" });
  for (let i = 0; i < count; i++) {
    server.registerTool(`tool_${i}`, { description: `Echo number ${i}: returns its text argument unchanged, for the filtering benchmark.`, inputSchema: { text: z.string() } }, async ({ text }) => ({
      content: [{ type: "text", text }],
    }));
  }
  return { server };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return Buffer.concat(parts).toString("utf8");
}

function recordCalls(body: unknown, calls: string[]): void {
  for (const m of Array.isArray(body) ? body : [body]) {
    if (m && typeof m === "object" && (m as { method?: unknown }).method === "tools/call") calls.push(String((m as { params?: { name?: unknown } }).params?.name));
  }
}

export async function startMcpServer(pki: TestPki, opts: { token: string; tools?: "everything" | number }): Promise<McpTestServer> {
  const make = (): Made => (opts.tools === undefined || opts.tools === "everything" ? (everythingServer() as unknown as Made) : toolsServer(opts.tools));
  const calls: string[] = [];
  const seen: McpTestServer["seen"] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const sseSessions = new Map<string, SSEServerTransport>();
  const open = new Set<ServerResponse>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "https://mcp.test");
    const authorization = req.headers.authorization ?? null;
    seen.push({ method: req.method ?? "", path: url.pathname, authorization });
    const openMessages = url.pathname.startsWith("/open/m/");
    if (authorization !== `Bearer ${opts.token}` && !openMessages) {
      res.writeHead(401, { "content-type": "application/json", "www-authenticate": 'Bearer realm="mcp"' }).end('{"error":"unauthorized"}');
      return;
    }
    open.add(res);
    res.on("close", () => open.delete(res));
    const body = req.method === "POST" ? await readBody(req) : "";
    let parsed: unknown = undefined;
    if (body !== "") {
      try {
        parsed = JSON.parse(body);
      } catch {
        res.writeHead(400).end("not JSON");
        return;
      }
      recordCalls(parsed, calls);
    }
    if (url.pathname === "/mcp") {
      const id = req.headers["mcp-session-id"] as string | undefined;
      let transport = id ? sessions.get(id) : undefined;
      if (!transport) {
        if (id || req.method !== "POST") {
          res.writeHead(404, { "content-type": "application/json" }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
          return;
        }
        const made = make();
        const t: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => void sessions.set(sid, t),
        });
        t.onclose = () => {
          if (t.sessionId) sessions.delete(t.sessionId);
          made.cleanup?.(t.sessionId);
        };
        await made.server.connect(t);
        transport = t;
      }
      await transport.handleRequest(req as never, res, parsed);
      return;
    }
    if (url.pathname === "/mcp/stateless" && req.method === "POST") {
      const made = make();
      const t = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: url.searchParams.has("json") });
      res.on("close", () => {
        void t.close();
        void made.server.close();
      });
      await made.server.connect(t);
      await t.handleRequest(req as never, res, parsed);
      return;
    }
    if ((url.pathname === "/mcp/sse" || url.pathname === "/open/sse") && req.method === "GET") {
      const made = make();
      const t = new SSEServerTransport(url.pathname === "/open/sse" ? `/open/m/${randomUUID()}` : "/messages", res);
      sseSessions.set(t.sessionId, t);
      res.on("close", () => sseSessions.delete(t.sessionId));
      await made.server.connect(t);
      return;
    }
    if ((url.pathname === "/messages" || openMessages) && req.method === "POST") {
      const t = sseSessions.get(url.searchParams.get("sessionId") ?? "");
      if (!t) {
        res.writeHead(404).end("no such session");
        return;
      }
      await t.handlePostMessage(req as never, res, parsed);
      return;
    }
    res.writeHead(404).end("not found");
  }

  const serve = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  };
  const server = https.createServer({ cert: readFileSync(pki.certFile), key: readFileSync(pki.keyFile) }, serve);
  const plain = http.createServer(serve);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    httpPort: (plain.address() as AddressInfo).port,
    calls,
    seen,
    async stop() {
      for (const res of open) res.destroy();
      await Promise.all([server, plain].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

/** fetch through the gateway as an agent: the proxy URL with its token, trusting the gateway CA (Bun's fetch). */
export function proxiedFetch(proxy: string, caPem: string): FetchLike {
  return (url, init) => fetch(url, { ...init, proxy, tls: { ca: caPem } } as RequestInit);
}
