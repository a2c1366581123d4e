// What the gateway learns from MCP servers of the older HTTP+SSE transport (docs/gateway.md#mcp-servers): the
// message endpoint each session's stream names in its `endpoint` event (a path of the server's origin, which then
// belongs to the server as its URL does), and the open streams, so that a refusal of a message posted to an
// endpoint can also be sent as a `message` event on that session's stream. In memory, per process, bounded.
import type { SseEventSource } from "./mcpEvents.ts";

/** Endpoint paths remembered per server (the oldest forgotten first). */
const ENDPOINTS_PER_SERVER = 1024;

export class McpSessions {
  /** Server id → lowercased endpoint paths (no query), in the order learned. */
  readonly #endpoints = new Map<string, Set<string>>();
  /** `serverId path?query` → the session's open stream, and the agent whose it is. */
  readonly #streams = new Map<string, { stream: SseEventSource; agentId: string }>();

  /** Whether `lowerPath` is a message endpoint a stream of `serverId` named. */
  isEndpoint(serverId: string, lowerPath: string): boolean {
    return this.#endpoints.get(serverId)?.has(lowerPath) ?? false;
  }

  /** A stream of `serverId` named `pathAndQuery` (same origin) as its message endpoint; `stream` carries the session. */
  learn(serverId: string, pathAndQuery: string, stream: SseEventSource, agentId: string): () => void {
    const q = pathAndQuery.indexOf("?");
    const path = (q < 0 ? pathAndQuery : pathAndQuery.slice(0, q)).toLowerCase();
    let paths = this.#endpoints.get(serverId);
    if (!paths) this.#endpoints.set(serverId, (paths = new Set()));
    paths.delete(path);
    paths.add(path);
    if (paths.size > ENDPOINTS_PER_SERVER) paths.delete(paths.values().next().value!);
    const key = `${serverId} ${pathAndQuery}`;
    const entry = { stream, agentId };
    this.#streams.set(key, entry);
    return () => {
      if (this.#streams.get(key) === entry) this.#streams.delete(key);
    };
  }

  /**
   * The open stream of the session whose endpoint is `pathAndQuery`, if this process relays it to `agentId`: an
   * agent that learned another's session id cannot put events on that agent's stream.
   */
  stream(serverId: string, pathAndQuery: string, agentId: string): SseEventSource | null {
    const entry = this.#streams.get(`${serverId} ${pathAndQuery}`);
    return entry !== undefined && entry.agentId === agentId ? entry.stream : null;
  }
}
