// The context of one proxied request as it moves through the pipeline stages.
import type { Conn } from "./connections.ts";
import type { Meter } from "./meter.ts";
import type { CompiledConnection, CompiledSecret, AgentCredentials, AgentEntry } from "./snapshot.ts";

export interface ProxyRequest {
  request: Request;
  conn: Exclude<Conn, { kind: "control" }>;
  started: number;
  method: string;
  scheme: "https" | "http";
  /** `host[:port]` for the upstream URL (default port dropped) and the log. */
  authority: string;
  /** Host for pattern matching: lowercase, no port, no trailing dot, no brackets. */
  host: string;
  port: number;
  /** Path and query as the agent sent them. */
  target: string;
  /** Path without query: what patterns, policy and logs see. */
  path: string;
  /** Set by the auth stage. */
  agent: AgentEntry;
  credentials: AgentCredentials;
  /** Outgoing headers: the agent's, cleaned, then injected. */
  headers: Headers;
  /** Outgoing path and query (after path/param injection). */
  upstreamTarget: string;
  body: ReadableStream<Uint8Array> | null;
  websocket: boolean;
  matched: CompiledSecret[];
  /** The connections whose app serves this host and path (§6.8), and the winning one. */
  connectionCandidates: CompiledConnection[];
  connection: CompiledConnection | null;
  injectionCount: number;
  decision: string;
  provider: string | null;
  /** The status the log records; set when it differs from the response's (a WebSocket 101). */
  status: number | null;
  /** Host with its non-default port, as logs and approvals show it. */
  logHost: string;
  /** The policy rule that decided, if any. */
  matchedRule: { logicalId: string; name: string } | null;
  /** Set by the policy stage when the request must be held for approval. */
  needsApproval: boolean;
  approvalId: string | null;
  /** The request-log row already written (an approval), updated in place at the end. */
  logId: string | null;
  /** Set by the budget stage for a metered LLM request (§6.11). */
  meter: Meter | null;
}
