// The shape of every gateway concern (docs/gateway.md#stages): one file in stages/ exporting `xStage(deps)`,
// which is given only what it uses and returns the hooks it needs. The order is one list (pipeline.ts).
//   connect(tunnel)     a CONNECT, before the tunnel opens: pass it on, or answer it (the tunnel never opens)
//   connected(tunnel)   the CONNECT has been answered (tunnel.status): on the way back, last stage first
//   request(rq)         a request, before anything leaves: pass it on, or answer it
//   response(rq, reply) on the way back, for every stage whose request hook ran, last stage first: change the
//                       reply's headers, add body transforms or end callbacks, or put another reply in its place
// Hooks are plain calls: synchronous unless they have to wait (then a promise), so the common path makes none.
// Beside its hooks a stage declares its contract (docs/architecture.md#stage-contracts): the facts it `reads`,
// which an earlier stage must have settled, and the facts it `provides`. The pipeline checks the order against
// them once, when it is built (pipeline.ts checkOrder); nothing is looked up by key while a request runs.
import type { JsonAnswer } from "./errors.ts";
import type { Reply } from "./reply.ts";
import type { ProxyRequest } from "./request.ts";
import type { Tunnel } from "./tunnel.ts";
import type { RequestVerdict, Verdict } from "./verdict.ts";

export { answer, PASS, proceedAs, relay, type RequestVerdict, type Verdict } from "./verdict.ts";

/** A connect hook's answer is written raw on the agent's socket (errors.ts rawAnswer). */
export type ConnectVerdict = Verdict<JsonAnswer>;

/**
 * A fact about a flow that one stage settles and later stages rely on. Each is provided by exactly one stage, and
 * names the fields of the flow it covers (the fields in request.ts and tunnel.ts say which key sets them):
 *   agent                 auth: `agent`, `credentials` (tunnel and request)
 *   dial                  egress: `rq.dial`, `tunnel.egress` (where the flow is dialled)
 *   passthrough           passthrough: `tunnel.passthrough`
 *   connection            connection: `connectionCandidates`, `connection`, `provider`
 *   policy                policy: `matchedRule`, `needsApproval`, `heldBy`
 *   leak                  leak-guard: `leak`, and `refusal` when the body scan refuses
 *   connectionCredential  inject-connection: the winning connection's credential, injected
 *   secrets               inject: `matched`, `signing`, `placeholders`, the secrets it injected
 *   githubToken           github-app: the installation token, injected
 *   cloudToken            cloud-token: a Google Cloud or Azure access token, injected
 *   awsPlan               aws-check: how the request will be signed (kept by the two AWS stages), counted as injected
 *   mcp                   mcp: `mcp` (the MCP server the request is for), its token injected
 *   meter                 budget: `meter`
 *   approval              approval: `approval`, and the person's decision on a held request
 *   placeholdersReplaced  placeholder: the placeholders replaced in the outgoing headers, target and body
 *   agentFrames           websocket-frames: `agentFrames`
 *   upstream              forward: the upstream's reply, `upstreamMs`
 */
export type StageKey =
  | "agent"
  | "dial"
  | "passthrough"
  | "connection"
  | "policy"
  | "leak"
  | "connectionCredential"
  | "secrets"
  | "githubToken"
  | "cloudToken"
  | "awsPlan"
  | "mcp"
  | "meter"
  | "approval"
  | "placeholdersReplaced"
  | "agentFrames"
  | "upstream";

/**
 * Every stage that injects a credential: what a stage reads to know whether the request is credentialed
 * (`injectionCount`, `injectedValues`, `placeholders`). A new injecting stage adds its key here, and every stage
 * that judges a credentialed request is then checked to run after it.
 */
export const INJECTIONS: readonly StageKey[] = ["connectionCredential", "secrets", "githubToken", "cloudToken", "awsPlan", "mcp"];

type Maybe<T> = T | Promise<T>;

export interface Stage {
  readonly name: string;
  /**
   * What the stage's hooks rely on an earlier stage having settled (not what a response hook may find set by a
   * later one: `meter` for the log row is read if present). Every stage of the gateway declares it, empty or not.
   */
  readonly reads?: readonly StageKey[];
  /** What the stage settles for later stages; no other stage provides the same key. */
  readonly provides?: readonly StageKey[];
  connect?(tunnel: Tunnel): Maybe<ConnectVerdict>;
  connected?(tunnel: Tunnel): void;
  request?(rq: ProxyRequest): Maybe<RequestVerdict>;
  response?(rq: ProxyRequest, reply: Reply): Maybe<Reply>;
}
