// Tool discovery (docs/mcp.md#tools): credgate itself asks an MCP server for its tools — `initialize`, then
// `tools/list` page by page — with the server's token, over Streamable HTTP, or the older HTTP+SSE transport
// when the server answers the first POST with 400, 404 or 405 (the transports' own fallback rule). JSON-RPC is
// spoken over the outbound door directly: the few messages needed do not warrant the SDK in the executable.
import type { McpTool } from "../../core/records/mcp.ts";
import { VERSION } from "../../runtime/version.ts";
import { boundedText, OutboundRefused, type McpFetch } from "./egressFetch.ts";
import { sseEvents } from "./sseEvents.ts";

export const PROTOCOL_VERSION = "2025-06-18";
/** Bounds on what a server can make credgate read and keep. */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
const MAX_PAGES = 50;
export const MAX_TOOLS = 1000;
const MAX_NAME = 255;
const MAX_DESCRIPTION = 1000;

/** The server wants credentials (401): what its `WWW-Authenticate` said, for the login's discovery. */
export class McpAuthRequired extends Error {
  constructor(readonly wwwAuthenticate: string | null) {
    super("the server asks for authorization (401)");
  }
}

export interface AuthHeader {
  header: string;
  value: string;
}

type JsonRpcMessage = { id?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown }; method?: unknown };

/** One conversation with a server: `call` sends a request and resolves with its result. */
interface Session {
  call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>>;
  notify(method: string): Promise<void>;
  close(): Promise<void>;
}

/** The server's tools, normalized: valid names only (1-255 characters, first seen kept), descriptions trimmed. */
export async function listTools(fetch: McpFetch, serverUrl: string, auth: AuthHeader | null): Promise<McpTool[]> {
  const session = await open(fetch, new URL(serverUrl), auth);
  try {
    const tools: McpTool[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await session.call("tools/list", cursor ? { cursor } : {});
      for (const t of Array.isArray(result.tools) ? result.tools : []) {
        const tool = normalizeTool(t);
        if (!tool || seen.has(tool.name)) continue;
        if (tools.length >= MAX_TOOLS) throw new OutboundRefused(`the server lists more than ${MAX_TOOLS} tools`);
        seen.add(tool.name);
        tools.push(tool);
      }
      cursor = typeof result.nextCursor === "string" && result.nextCursor ? result.nextCursor : undefined;
      if (!cursor) return tools;
    }
    throw new OutboundRefused(`the server's tool list goes on for more than ${MAX_PAGES} pages`);
  } finally {
    await session.close().catch(() => {});
  }
}

function normalizeTool(raw: unknown): McpTool | null {
  if (raw === null || typeof raw !== "object") return null;
  const t = raw as { name?: unknown; description?: unknown; annotations?: { readOnlyHint?: unknown } };
  if (typeof t.name !== "string" || t.name.length === 0 || t.name.length > MAX_NAME) return null;
  const description = typeof t.description === "string" && t.description.trim() ? t.description.trim().slice(0, MAX_DESCRIPTION) : null;
  const hint = t.annotations && typeof t.annotations === "object" ? t.annotations.readOnlyHint : undefined;
  return { name: t.name, description, readOnlyHint: typeof hint === "boolean" ? hint : null };
}

const INITIALIZE = { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "credgate", version: VERSION } };

/** `initialize` and `notifications/initialized` over Streamable HTTP, else over HTTP+SSE. */
async function open(fetch: McpFetch, url: URL, auth: AuthHeader | null): Promise<Session> {
  const streamable = new StreamableSession(fetch, url, auth);
  const first = await streamable.post({ jsonrpc: "2.0", id: 0, method: "initialize", params: INITIALIZE });
  if (first.status === 400 || first.status === 404 || first.status === 405) {
    void first.body?.cancel().catch(() => {});
    const sse = await SseSession.connect(fetch, url, auth);
    try {
      await sse.call("initialize", INITIALIZE);
      await sse.notify("notifications/initialized");
    } catch (err) {
      await sse.close();
      throw err;
    }
    return sse;
  }
  await streamable.initialized(first);
  return streamable;
}

function headersOf(auth: AuthHeader | null, extra: Record<string, string>): Record<string, string> {
  return { "user-agent": `credgate/${VERSION}`, ...extra, ...(auth ? { [auth.header]: auth.value } : {}) };
}

function failIfUnauthorized(res: Response): void {
  if (res.status === 401) {
    void res.body?.cancel().catch(() => {});
    throw new McpAuthRequired(res.headers.get("www-authenticate"));
  }
}

function resultOf(message: JsonRpcMessage, method: string): Record<string, unknown> {
  if (message.error) {
    const text = typeof message.error.message === "string" ? message.error.message : "an error";
    throw new OutboundRefused(`${method} answered with error ${String(message.error.code)}: ${text.slice(0, 300)}`);
  }
  if (message.result === null || typeof message.result !== "object") throw new OutboundRefused(`${method} answered without a result`);
  return message.result as Record<string, unknown>;
}

function parseMessages(text: string): JsonRpcMessage[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  const list = Array.isArray(value) ? value : [value];
  return list.filter((m): m is JsonRpcMessage => m !== null && typeof m === "object");
}

class StreamableSession implements Session {
  #sessionId: string | null = null;
  #version = PROTOCOL_VERSION;
  #nextId = 1;

  constructor(
    private readonly fetch: McpFetch,
    private readonly url: URL,
    private readonly auth: AuthHeader | null,
  ) {}

  post(message: object): Promise<Response> {
    const extra: Record<string, string> = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    if (this.#sessionId) extra["mcp-session-id"] = this.#sessionId;
    if (this.#sessionId !== null || (message as { method?: string }).method !== "initialize") extra["mcp-protocol-version"] = this.#version;
    return this.fetch(this.url, { method: "POST", headers: headersOf(this.auth, extra), body: JSON.stringify(message) });
  }

  async initialized(first: Response): Promise<void> {
    this.#sessionId = first.headers.get("mcp-session-id");
    const result = await this.#answer(first, 0, "initialize");
    if (typeof result.protocolVersion === "string") this.#version = result.protocolVersion;
    await this.notify("notifications/initialized");
  }

  async call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.#nextId++;
    return this.#answer(await this.post({ jsonrpc: "2.0", id, method, params }), id, method);
  }

  async notify(method: string): Promise<void> {
    const res = await this.post({ jsonrpc: "2.0", method });
    failIfUnauthorized(res);
    void res.body?.cancel().catch(() => {});
    if (!res.ok) throw new OutboundRefused(`${method} was answered with HTTP ${res.status}`);
  }

  /** The response to request `id`: a JSON body, or the event carrying it on an SSE answer. */
  async #answer(res: Response, id: number, method: string): Promise<Record<string, unknown>> {
    failIfUnauthorized(res);
    if (!res.ok) {
      void res.body?.cancel().catch(() => {});
      throw new OutboundRefused(`${method} was answered with HTTP ${res.status}`);
    }
    const type = res.headers.get("content-type") ?? "";
    if (type.includes("text/event-stream") && res.body) {
      for await (const e of sseEvents(res.body, MAX_MESSAGE_BYTES)) {
        if (e.event !== "message") continue;
        const found = parseMessages(e.data).find((m) => m.id === id);
        if (found) return resultOf(found, method);
      }
      throw new OutboundRefused(`the stream ended before the answer to ${method}`);
    }
    const found = parseMessages(await boundedText(res, MAX_MESSAGE_BYTES)).find((m) => m.id === id);
    if (!found) throw new OutboundRefused(`${method} was answered without a JSON-RPC response`);
    return resultOf(found, method);
  }

  async close(): Promise<void> {
    if (!this.#sessionId) return;
    const res = await this.fetch(this.url, {
      method: "DELETE",
      headers: headersOf(this.auth, { "mcp-session-id": this.#sessionId, "mcp-protocol-version": this.#version }),
    });
    void res.body?.cancel().catch(() => {});
  }
}

/** The HTTP+SSE transport: a GET stream names a message endpoint (same origin); answers come back on the stream. */
class SseSession implements Session {
  #nextId = 1;

  private constructor(
    private readonly fetch: McpFetch,
    private readonly endpoint: URL,
    private readonly auth: AuthHeader | null,
    private readonly events: AsyncGenerator<{ event: string; data: string }>,
  ) {}

  static async connect(fetch: McpFetch, url: URL, auth: AuthHeader | null): Promise<SseSession> {
    const res = await fetch(url, { method: "GET", headers: headersOf(auth, { accept: "text/event-stream" }) });
    failIfUnauthorized(res);
    if (!res.ok || !(res.headers.get("content-type") ?? "").includes("text/event-stream") || !res.body) {
      void res.body?.cancel().catch(() => {});
      throw new OutboundRefused(`the server speaks neither MCP transport (POST and GET were answered with HTTP ${res.status})`);
    }
    const events = sseEvents(res.body, MAX_MESSAGE_BYTES);
    for (;;) {
      const next = await events.next();
      if (next.done) throw new OutboundRefused("the event stream ended before naming its message endpoint");
      if (next.value.event !== "endpoint") continue;
      let endpoint: URL;
      try {
        endpoint = new URL(next.value.data.trim(), url);
      } catch {
        throw new OutboundRefused("the event stream named an invalid message endpoint");
      }
      // The token goes to the message endpoint too: only on the server's own origin.
      if (endpoint.origin !== url.origin) {
        await events.return(undefined);
        throw new OutboundRefused("the event stream named a message endpoint on another origin");
      }
      return new SseSession(fetch, endpoint, auth, events);
    }
  }

  async #post(message: object): Promise<void> {
    const res = await this.fetch(this.endpoint, {
      method: "POST",
      headers: headersOf(this.auth, { "content-type": "application/json" }),
      body: JSON.stringify(message),
    });
    failIfUnauthorized(res);
    void res.body?.cancel().catch(() => {});
    if (!res.ok) throw new OutboundRefused(`the message endpoint answered HTTP ${res.status}`);
  }

  async call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.#nextId++;
    await this.#post({ jsonrpc: "2.0", id, method, params });
    for (;;) {
      const next = await this.events.next();
      if (next.done) throw new OutboundRefused(`the stream ended before the answer to ${method}`);
      if (next.value.event !== "message") continue;
      const found = parseMessages(next.value.data).find((m) => m.id === id);
      if (found) return resultOf(found, method);
    }
  }

  notify(method: string): Promise<void> {
    return this.#post({ jsonrpc: "2.0", method });
  }

  async close(): Promise<void> {
    await this.events.return(undefined);
  }
}
