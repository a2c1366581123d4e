// The context of one proxied request as it moves through the stages (pipeline.ts): what the agent sent,
// what will go upstream, and what each stage decided. Fields a stage sets are typed here, not bolted on.
import { pathWithoutQuery } from "../core/patterns.ts";
import { headerValue } from "./http1/head.ts";
import type { HeaderList } from "./http1/headerList.ts";
import { REQUEST_ID_HEADER, requestIdFor } from "../observability/requestId.ts";
import type { DialTarget } from "../services/outbound.ts";
import type { Hold } from "../services/budgetLedger.ts";
import type { AgentPresence, IncomingRequest } from "./client/agentConnection.ts";
import type { AgentSocket } from "./client/socket.ts";
import type { AgentCredentials, AgentEntry, CompiledConnection, CompiledSecret } from "./snapshot.ts";

/** Where the request goes, from the tunnel's CONNECT authority or the absolute-form target. */
export interface Destination {
  scheme: "https" | "http";
  /** Host for pattern matching: lowercase, no port, no trailing dot, no brackets. */
  host: string;
  port: number;
  /** `host[:port]` for the Host header: brackets kept, default port dropped. */
  authority: string;
  /** Path and query exactly as the agent sent them. */
  target: string;
  /** Host with its non-default port, as logs and approvals show it (made once per tunnel: see logHostOf). */
  logHost: string;
}

/** Host with its port unless it is the scheme's default. */
export function logHostOf(scheme: "https" | "http", host: string, port: number): string {
  return port === (scheme === "https" ? 443 : 80) ? host : `${host}:${port}`;
}

/** The agent's connection, as far as a stage may touch it: a WebSocket takes it over after 101. */
export interface AgentConnection {
  detach(): { socket: AgentSocket; buffered: Buffer };
}

/** A metered LLM request (docs/budgets.md#metering): what the budget stage reserved and the response side charges (meter.ts). */
export interface Meter {
  secretId: string;
  type: "llm_a" | "llm_b";
  api: "messages" | "chat_completions" | "responses";
  /** The model the request named (the spend record's when the answer reports none). */
  model: string | null;
  /** nano-USD; charged when a 2xx reports no usage. */
  estimateNanos: number;
  /** The budget clock when the request was admitted: the windows and the spend record's time. */
  at: number;
  /** What admission holds against the request's budgets, settled when it ends (null: no budget applies). */
  hold: Hold | null;
}

/** How the agent reached the gateway: inside a CONNECT tunnel (its token given once), or a proxy request. */
export type Via = { kind: "tunnel"; token: string } | { kind: "forward" };

/** The empty list every request starts with (stages assign their own lists; none is edited in place). */
const NONE: readonly never[] = [];

export class ProxyRequest {
  readonly started = performance.now();
  readonly method: string;
  readonly scheme: "https" | "http";
  readonly host: string;
  readonly port: number;
  readonly authority: string;
  readonly target: string;
  /** Path without query: what patterns, policy and logs see (raw, undecoded: docs/injection.md#host-and-path-patterns). */
  readonly path: string;
  /** Host with its non-default port, as logs and approvals show it. */
  readonly logHost: string;
  /** The agent sent its body chunked (it goes upstream chunked too). */
  readonly chunked: boolean;
  /** A WebSocket upgrade inside a tunnel (absolute-form requests never upgrade). */
  readonly websocket: boolean;
  /** The agent's x-request-id when sane, else a new one (docs/operations.md#request-ids): on gateway answers, log lines and the log row. */
  readonly requestId: string;

  readonly #incoming: IncomingRequest;
  #agent: AgentEntry | null = null;
  #credentials: AgentCredentials | null = null;

  /** Outgoing headers: the agent's, cleaned, then injected. */
  headers: HeaderList;
  /** Outgoing path and query (after path/param injection). */
  upstreamTarget: string;
  /** The body still to be forwarded (peeking stages put back an equivalent stream). */
  body: ReadableStream<Uint8Array> | null;
  matched: readonly CompiledSecret[] = NONE;
  /** The connections whose app serves this host and path (docs/injection.md#app-connections), and the winning one. */
  connectionCandidates: readonly CompiledConnection[] = NONE;
  connection: CompiledConnection | null = null;
  injectionCount = 0;
  decision = "allowed";
  provider: string | null = null;
  /** The status the log records when it differs from the answer's (a WebSocket 101). */
  status: number | null = null;
  /** The policy rule that decided, if any. */
  matchedRule: { logicalId: string; name: string } | null = null;
  /** Set by the policy stage when the request must be held for approval. */
  needsApproval = false;
  approvalId: string | null = null;
  /** The request-log row already written (an approval), updated in place at the end. */
  logId: string | null = null;
  /** Where the request will be dialled, set by the egress stage (docs/guards.md#egress-guard). */
  dial: DialTarget | null = null;
  /** Every value injected into the request, for the echo guard (docs/guards.md#echo-guard). */
  injectedValues: string[] = [];
  /** Set by the budget stage for a metered LLM request (docs/budgets.md#metering). */
  meter: Meter | null = null;
  /** Time from sending upstream to the response head (ms), when the request went upstream. */
  upstreamMs: number | null = null;
  /** The metered cost, known when the response body has ended. */
  costNanos: number | null = null;

  constructor(
    incoming: IncomingRequest,
    readonly via: Via,
    readonly client: AgentConnection,
    to: Destination,
    cleanHeaders: HeaderList,
    websocket: boolean,
  ) {
    this.#incoming = incoming;
    this.method = incoming.method;
    this.scheme = to.scheme;
    this.host = to.host;
    this.port = to.port;
    this.authority = to.authority;
    this.target = to.target;
    this.path = pathWithoutQuery(to.target);
    this.logHost = to.logHost;
    this.chunked = incoming.chunked;
    this.websocket = websocket;
    this.requestId = requestIdFor(headerValue(incoming.headerLines, REQUEST_ID_HEADER));
    this.headers = cleanHeaders;
    this.upstreamTarget = to.target;
    this.body = incoming.body;
  }

  /** The agent's headers as received (a Headers object is built on the first read: most requests need none). */
  get agentHeaders(): Headers {
    return this.#incoming.headers;
  }

  /** Aborted when the agent goes away (made on first use; the upstream exchange watches `presence` instead). */
  get signal(): AbortSignal {
    return this.#incoming.signal;
  }

  /** Whether the agent is still there for the answer. */
  get presence(): AgentPresence {
    return this.#incoming;
  }

  /** Set by the auth stage, which runs before every stage that reads it. */
  get agent(): AgentEntry {
    if (!this.#agent) throw new Error("the agent is read before the auth stage ran");
    return this.#agent;
  }

  set agent(agent: AgentEntry) {
    this.#agent = agent;
  }

  get authenticated(): boolean {
    return this.#agent !== null;
  }

  get credentials(): AgentCredentials {
    if (!this.#credentials) throw new Error("the credentials are read before the auth stage ran");
    return this.#credentials;
  }

  set credentials(credentials: AgentCredentials) {
    this.#credentials = credentials;
  }

  /** Whether the request went (or goes) upstream. */
  get forwarded(): boolean {
    return this.decision === "allowed" || this.decision === "approval_approved" || this.decision === "approved_by_memory";
  }
}
