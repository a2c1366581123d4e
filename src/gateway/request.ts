// One proxied request as it moves through the stages (docs/gateway.md#pipeline): what the agent sent (through
// its AgentSide, whatever carries it), what will go upstream, and what the stages found out on the way. What
// the stages found out is set in one place each: the stage named beside it, which declares the key in brackets
// in its `provides` (stage.ts StageKey; docs/architecture.md#stage-contracts), or a method here. The outgoing
// request itself (`headers`, `upstreamTarget`, `body`, `chunked`) is built up by several stages in order.
import { pathWithoutQuery } from "../core/patterns.ts";
import { targetReadings, type PathReadings } from "../core/pathReadings.ts";
import { applyInjection, type Injectable } from "../core/inject.ts";
import { SURFACES, type Surface } from "../core/placeholders.ts";
import { REQUEST_ID_HEADER, requestIdFor } from "../observability/requestId.ts";
import type { DialTarget } from "../services/outbound.ts";
import type { Hold } from "../services/budgets/ledger.ts";
import type { AgentPresence, AgentSide } from "./agentSide.ts";
import { Flow } from "./flow.ts";
import { requestHeadersForUpstream } from "./headers.ts";
import { headerValue, type HeaderLines } from "./http1/head.ts";
import type { HeaderList } from "./http1/headerList.ts";
import { peekStream } from "./peek.ts";
import type { CompiledConnection, CompiledMcpServer, CompiledSecret } from "./snapshot.ts";
import { answer, type RequestVerdict } from "./verdict.ts";
import { gatewayJson, malformedRequest } from "./errors.ts";
import type { Tunnel } from "./tunnel.ts";
import type { FrameScan } from "./wsFrames.ts";

export { displayHostOf } from "./flow.ts";

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
  /** Host with its non-default port, as logs and approvals show it (made once per tunnel: see displayHostOf). */
  displayHost: string;
}

/** A metered LLM request (docs/budgets.md): what the budget stage admitted, and what its response cost. */
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
  /** The cost, known when the response body has ended (set by the budget stage's response hook). */
  costNanos: number | null;
}

/** A placeholder secret that applies to the request: what the agent writes, and what goes in its place. */
export interface PlaceholderUse {
  readonly placeholder: string;
  readonly value: string;
  readonly surfaces: readonly Surface[];
}

/** A credential value on its way to the wrong host (docs/guards.md#credential-leak-guard). */
export interface LeakFinding {
  /** The secret's name, or the connection's label (its provider's name without one). */
  readonly secretName: string;
  /** The path as the log shows it, the value's forms replaced by `credgate-redacted`. */
  readonly loggedPath: string;
}

/** A request to an MCP server's URL (docs/gateway.md#mcp-servers): the server, and what its body asked for. */
export interface McpExchange {
  readonly server: CompiledMcpServer;
  /**
   * How the request is the server's (docs/gateway.md#mcp-servers): `url`, under its registered URL; `endpoint`, at
   * an HTTP+SSE message endpoint its stream named (the gateway's mark on it); `host`, a body sent elsewhere on its
   * host (any path, scheme or port), judged but given no token.
   */
  readonly via: "url" | "endpoint" | "host";
  /** Every server whose grant judges the body: `server` alone, or with `host`, each of the agent's on that host. */
  readonly judges: readonly CompiledMcpServer[];
  /** With `endpoint`: the endpoint's path and query without the mark (the session's key). */
  readonly endpoint: string | null;
  /** The tools/call names of the body, in order (read by mcp-tools; the first is the log row's path). */
  tools: readonly string[];
  /** The ids of the body's tools/list requests (empty: asked without one); null when it asks none. */
  listIds: ReadonlySet<string | number> | null;
}

/** The empty list every request starts with (lists are replaced, never edited in place while shared). */
const NONE: readonly never[] = [];

/** A body that disagreed with its head's length: 400, logged as blocked (docs/gateway.md#message-framing). */
function malformedBody(): Response {
  const a = malformedRequest();
  return gatewayJson(a.status, a.body);
}

export class ProxyRequest extends Flow {
  readonly method: string;
  readonly scheme: "https" | "http";
  readonly authority: string;
  /** Path and query as the agent sent them (an absolute-form target's origin part). */
  readonly target: string;
  /** Path without query, as sent: what logs and answers show (docs/gateway.md#request-targets). */
  readonly path: string;
  #readings: PathReadings | null = null;
  /** The body goes upstream chunked: the agent sent it so, or its length changes as it streams (placeholder stage). */
  chunked: boolean;
  /** A WebSocket upgrade inside a tunnel (absolute-form requests never upgrade). */
  readonly websocket: boolean;
  /** A gRPC call (HTTP/2, application/grpc): it goes upstream over HTTP/2 only (docs/gateway.md#http2-and-grpc). */
  readonly grpc: boolean;
  /** The tunnel the request came through; null for a request on a plain proxy connection. */
  readonly tunnel: Tunnel | null;
  readonly #side: AgentSide;

  /** Outgoing headers: the agent's, cleaned, then edited by the stages (injection, accept-encoding). */
  readonly headers: HeaderList;
  /**
   * Outgoing path and query: the agent's, then edited in pipeline order, like `headers`, by the stages that
   * build the outgoing request: inject (path and query injection, through `applyCredential()`), placeholder (URL
   * placeholders replaced) and aws-sign (a presigned URL's new query). Not one writer: each edit is its stage's
   * own idea, and aws-sign must see the others' (it declares it reads `placeholdersReplaced`).
   */
  upstreamTarget: string;
  /** The body still to be forwarded (`peekBody` puts back an equivalent stream). */
  body: ReadableStream<Uint8Array> | null;
  /** Where the request will be dialled (egress stage: [dial]). */
  dial: DialTarget | null = null;
  /** The connections whose app serves this host and path, and the winning one (connection stage: [connection]). */
  connectionCandidates: readonly CompiledConnection[] = NONE;
  connection: CompiledConnection | null = null;
  /** The app the request is for, as the log shows it (connection stage: [connection]). */
  provider: string | null = null;
  /** The policy rule that decided, if any (policy stage: [policy]). */
  matchedRule: { logicalId: string; name: string } | null = null;
  /** The policy wants a human to approve the request (policy stage: [policy]; the approval stage holds it). */
  needsApproval = false;
  /** Every rule that asked for approval on some reading of the path, the deciding one first (policy stage: [policy]). */
  heldBy: readonly { logicalId: string; name: string }[] = NONE;
  /** The secrets that match this request, in application order (inject stage: [secrets]). */
  matched: readonly CompiledSecret[] = NONE;
  /**
   * Matching secrets whose value makes the credential rather than being it (AWS keys, GitHub App keys), with
   * their values, for the signing and minting stages (inject stage: [secrets]).
   */
  signing: readonly { secret: CompiledSecret; value: string }[] = NONE;
  /**
   * How many places were injected, and every value injected, for the echo guard (`applyCredential()`, `recordInjection()`): added
   * to by every stage that injects (stage.ts INJECTIONS), and by aws-sign and placeholder as they write.
   */
  injectionCount = 0;
  injectedValues: readonly string[] = NONE;
  /** The placeholder secrets that apply, with their values (`inject`: [secrets]; the placeholder stage replaces them). */
  placeholders: readonly PlaceholderUse[] = NONE;
  /** A credential value found on its way to a host none of its holders match (leak-guard stage: [leak]). */
  leak: LeakFinding | null = null;
  /**
   * The answer of a stage whose body scan refused the request after it was passed on (the leak guard), or of a
   * body that disagreed with its declared length (docs/gateway.md#message-framing): the forward stage answers
   * with it when the upstream exchange broke off for it. [leak]
   */
  get refusal(): RequestVerdict | null {
    if (this.#refusal === null && this.#side.malformed === true) this.#refusal = answer("blocked", malformedBody());
    return this.#refusal;
  }

  set refusal(verdict: RequestVerdict | null) {
    this.#refusal = verdict;
  }

  #refusal: RequestVerdict | null = null;
  /**
   * What reads the agent's WebSocket frames after 101 (websocket-frames stage: [agentFrames]); null: they pass as
   * they come. (The server's are read by the echo guard when anything was injected: websocket.ts.)
   */
  agentFrames: FrameScan[] | null = null;
  /** A request to an MCP server's URL, its token injected (mcp stage: [mcp]; mcp-tools reads its body). */
  mcp: McpExchange | null = null;
  /** A metered LLM request (budget stage: [meter]). */
  meter: Meter | null = null;
  /** The approval that held the request, and its log row, updated in place at the end (approval stage: [approval]). */
  approval: { id: string; requestLogId: string } | null = null;
  /** Time from sending upstream to the response head (ms), when the request went upstream (forward stage: [upstream]). */
  upstreamMs: number | null = null;

  constructor(side: AgentSide, tunnel: Tunnel | null, to: Destination, websocket: boolean) {
    super(requestIdFor(headerValue(side.headerLines, REQUEST_ID_HEADER)), to.host, to.port, to.displayHost);
    this.#side = side;
    this.tunnel = tunnel;
    this.method = side.method;
    this.scheme = to.scheme;
    this.authority = to.authority;
    this.target = to.target;
    this.path = pathWithoutQuery(to.target);
    this.chunked = side.chunked;
    this.websocket = websocket;
    this.grpc = side.grpc;
    this.headers = requestHeadersForUpstream(side.headerLines);
    this.upstreamTarget = to.target;
    this.body = side.body;
  }

  /**
   * Every reading of the path an origin may take, the path as sent first: what patterns, policy, resource
   * guards, metering and approvals judge (docs/injection.md#every-reading-of-a-path). Made on first use, once.
   */
  get pathReadings(): PathReadings {
    return (this.#readings ??= targetReadings(this.target));
  }

  /** The request-target exactly as the agent sent it (absolute-form included). */
  get agentTarget(): string {
    return this.#side.target;
  }

  /** The agent's headers as received (a Headers object is built on the first read: most requests need none). */
  get agentHeaders(): Headers {
    return this.#side.headers;
  }

  /** The agent's header lines as received (names as sent). */
  get agentHeaderLines(): HeaderLines {
    return this.#side.headerLines;
  }

  /** The agent's HTTP/2 request trailers, once its body has ended. */
  get agentTrailers(): HeaderLines | null {
    return this.#side.trailers;
  }

  /** Aborted when the agent goes away (made on first use; the upstream exchange watches `presence` instead). */
  get signal(): AbortSignal {
    return this.#side.signal;
  }

  /** Whether the agent is still there for the answer. */
  get presence(): AgentPresence {
    return this.#side;
  }

  /** Whether the request went (or goes) upstream. */
  get forwarded(): boolean {
    return this.decision === "allowed" || this.decision === "approval_approved" || this.decision === "approved_by_memory";
  }

  /** Takes the agent's connection over (a WebSocket after 101). */
  takeOver(): ReturnType<AgentSide["takeOver"]> {
    return this.#side.takeOver();
  }

  /**
   * The first `limit` bytes of the body (fewer when it is shorter), read without losing any: the body to
   * forward becomes an equivalent stream that gives them again.
   */
  async peekBody(limit: number): Promise<Uint8Array> {
    if (!this.body) return new Uint8Array(0);
    const { head, stream } = await peekStream(this.body, limit);
    this.body = stream;
    return head;
  }

  /** Applies one credential to the outgoing request (docs/injection.md); false when it cannot be applied safely. */
  applyCredential(secret: Injectable, value: string): boolean {
    const placeholder = secret.injection?.placeholder;
    if (placeholder !== undefined) {
      const use: PlaceholderUse = { placeholder, value, surfaces: secret.injection!.surfaces ?? SURFACES };
      this.placeholders = this.placeholders === NONE ? [use] : [...this.placeholders, use];
      return true;
    }
    const out = applyInjection(secret, value, this.headers, this.upstreamTarget);
    if (!out.ok) return false;
    this.upstreamTarget = out.pathAndQuery;
    if (out.count > 0) this.recordInjection(value, out.count);
    return true;
  }

  /** Records `count` injected actions of `value` (a signature or a minted token counts one: docs/injection.md). */
  recordInjection(value: string, count = 1): void {
    this.injectionCount += count;
    this.injectedValues = this.injectedValues === NONE ? [value] : [...this.injectedValues, value];
  }
}
