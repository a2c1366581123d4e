// A real MCP server for tests, built with the official SDK (@modelcontextprotocol/sdk): Streamable HTTP (with
// sessions) or the older HTTP+SSE transport, on loopback plain HTTP, with a few tools, optionally requiring a
// bearer token (a 401 with an RFC 9728 `WWW-Authenticate` challenge otherwise). It records what it was sent.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { z } from "zod";

export interface McpUpstreamTool {
  name: string;
  description?: string;
  readOnly?: boolean;
}

export interface McpUpstreamOptions {
  transport: "streamable" | "sse";
  /** Path of the MCP endpoint (the SSE stream for `sse`). Default `/mcp`. */
  path?: string;
  tools?: McpUpstreamTool[];
  /** Accept a request only when this says its bearer token is good; absent: no authentication. */
  acceptsToken?: (token: string) => boolean | Promise<boolean>;
  /** The `resource_metadata` URL its 401 names (RFC 9728), when set. */
  resourceMetadataUrl?: () => string;
  /** Extra routes served before the MCP endpoint (e.g. protected-resource metadata). */
  routes?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

export interface McpUpstream {
  url: string;
  origin: string;
  /** The Authorization header of every request, in order (null when absent). */
  authorizations: (string | null)[];
  /** Every request as `METHOD path`. */
  requests: string[];
  setTools(tools: McpUpstreamTool[]): void;
  close(): Promise<void>;
}

export const DEFAULT_TOOLS: McpUpstreamTool[] = [
  { name: "read_file", description: "Reads a file", readOnly: true },
  { name: "write_file", description: "Writes a file", readOnly: false },
  { name: "delete_repository", description: "Deletes a repository" },
];

function serverWith(tools: McpUpstreamTool[]): McpServer {
  const server = new McpServer({ name: "test-upstream", version: "1.0.0" });
  for (const t of tools) {
    server.registerTool(
      t.name,
      { description: t.description, inputSchema: { path: z.string().optional() }, ...(t.readOnly !== undefined ? { annotations: { readOnlyHint: t.readOnly } } : {}) },
      async (args) => ({ content: [{ type: "text", text: `${t.name}:${JSON.stringify(args)}` }] }),
    );
  }
  return server;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

export async function startMcpUpstream(opts: McpUpstreamOptions): Promise<McpUpstream> {
  const path = opts.path ?? "/mcp";
  let tools = opts.tools ?? DEFAULT_TOOLS;
  const authorizations: (string | null)[] = [];
  const requests: string[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const sseSessions = new Map<string, SSEServerTransport>();

  const http: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    requests.push(`${req.method} ${url.pathname}`);
    authorizations.push(req.headers.authorization ?? null);
    try {
      if (opts.routes?.(req, res)) return;
      if (opts.acceptsToken) {
        const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? "");
        if (!m || !(await opts.acceptsToken(m[1]!))) {
          const challenge = opts.resourceMetadataUrl ? `Bearer error="invalid_token", resource_metadata="${opts.resourceMetadataUrl()}"` : `Bearer error="invalid_token"`;
          res.writeHead(401, { "www-authenticate": challenge, "content-type": "application/json" }).end(JSON.stringify({ error: "invalid_token" }));
          return;
        }
      }
      if (opts.transport === "streamable" && url.pathname === path) {
        const sid = req.headers["mcp-session-id"];
        const known = typeof sid === "string" ? sessions.get(sid) : undefined;
        if (known) return void (await known.handleRequest(req, res, req.method === "POST" ? await readJson(req) : undefined));
        if (req.method !== "POST") return void res.writeHead(400).end("no session");
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void sessions.set(id, transport) });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await serverWith(tools).connect(transport);
        return void (await transport.handleRequest(req, res, await readJson(req)));
      }
      if (opts.transport === "sse" && url.pathname === path && req.method === "GET") {
        const transport = new SSEServerTransport(`${path}/messages`, res);
        sseSessions.set(transport.sessionId, transport);
        res.on("close", () => sseSessions.delete(transport.sessionId));
        await serverWith(tools).connect(transport);
        return;
      }
      if (opts.transport === "sse" && url.pathname === `${path}/messages` && req.method === "POST") {
        const transport = sseSessions.get(url.searchParams.get("sessionId") ?? "");
        if (!transport) return void res.writeHead(404).end("unknown session");
        return void (await transport.handlePostMessage(req, res, await readJson(req)));
      }
      // What an SSE-only server answers a Streamable HTTP POST: the client falls back to the GET stream.
      res.writeHead(opts.transport === "sse" && req.method === "POST" ? 405 : 404).end();
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    }
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    url: `${origin}${path}`,
    origin,
    authorizations,
    requests,
    setTools: (next) => void (tools = next),
    close: async () => {
      for (const t of sessions.values()) await t.close().catch(() => {});
      for (const t of sseSessions.values()) await t.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
