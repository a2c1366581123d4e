// What the gateway knows of MCP sessions of the older HTTP+SSE transport (docs/gateway.md#mcp-servers): the key
// of the mark it puts on the message endpoint each session's stream names (mcpEndpoints.ts; the same key in every
// process of every instance, so a POST is the server's whichever serves it), and the streams this process relays,
// so that a refusal of a message posted here can also be sent as a `message` event on that session's stream.
// Streams are in memory, per process: a POST served by another process gets its refusal in its own answer.
import { randomBytes } from "node:crypto";
import { markedEndpoint, markValid } from "./mcpEndpoints.ts";
import type { SseEventSource } from "./mcpEvents.ts";

export class McpSessions {
  /** `serverId path?query` → the session's open stream, and the agent whose it is. */
  readonly #streams = new Map<string, { stream: SseEventSource; agentId: string }>();

  /** `key`: derived from the master key (a random one, for tests, marks only what this object sees). */
  constructor(private readonly key: Buffer = randomBytes(32)) {}

  /** The endpoint event's data as the agent gets it: marked as `serverId`'s (`url`: the data, resolved). */
  mark(agentId: string, serverId: string, data: string, url: URL): string {
    return markedEndpoint(this.key, agentId, serverId, data, url);
  }

  /** Whether `mark` was given to `agentId` for `serverId`'s endpoint `pathAndQuery` (by any process). */
  marked(agentId: string, serverId: string, pathAndQuery: string, mark: string): boolean {
    return markValid(this.key, agentId, serverId, pathAndQuery, mark);
  }

  /** A stream of `serverId` named `pathAndQuery` (same origin) as its message endpoint; `stream` carries the session. */
  learn(serverId: string, pathAndQuery: string, stream: SseEventSource, agentId: string): () => void {
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
