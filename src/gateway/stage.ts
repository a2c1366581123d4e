// The shape of every gateway concern (docs/gateway.md#stages): one file in stages/ exporting `xStage(deps)`,
// which is given only what it uses and returns the hooks it needs. The order is one list (pipeline.ts).
//   connect(tunnel)     a CONNECT, before the tunnel opens: pass it on, or answer it (the tunnel never opens)
//   connected(tunnel)   the CONNECT has been answered (tunnel.status): on the way back, last stage first
//   request(rq)         a request, before anything leaves: pass it on, or answer it
//   response(rq, reply) on the way back, for every stage whose request hook ran, last stage first: change the
//                       reply's headers, add body transforms or end callbacks, or put another reply in its place
// Hooks are plain calls: synchronous unless they have to wait (then a promise), so the common path makes none.
import type { LogDecision } from "../services/requestLogs.ts";
import type { JsonAnswer } from "./errors.ts";
import type { Reply } from "./reply.ts";
import type { ProxyRequest } from "./request.ts";
import type { Tunnel } from "./tunnel.ts";

/**
 * What a request or connect hook says. `response` null: go on to the next stage; otherwise the flow is
 * answered here. `decision`, when not null, is what the request log records from now on (the runner sets it;
 * a stage never writes the flow's decision itself). Every verdict has this one shape.
 */
export interface Verdict<A> {
  readonly decision: LogDecision | null;
  readonly response: A | null;
}

/** A request hook's answer: the gateway's own (a Response), or a Reply (the upstream's, a taken-over socket). */
export type RequestVerdict = Verdict<Response | Reply>;
/** A connect hook's answer is written raw on the agent's socket (errors.ts rawAnswer). */
export type ConnectVerdict = Verdict<JsonAnswer>;

/** Go on: the one verdict most hooks return, shared (nothing is made per request). */
export const PASS: Verdict<never> = { decision: null, response: null };

/** The flow is answered here, and logged with `decision`. */
export function answer<A>(decision: LogDecision, response: A): Verdict<A> {
  return { decision, response };
}

/** The flow is answered with `response` (the upstream's), and its decision so far stands. */
export function relay(response: Response | Reply): RequestVerdict {
  return { decision: null, response };
}

/** Go on, and log the request with `decision` from now on (an approval granted). */
export function proceedAs(decision: LogDecision): Verdict<never> {
  return { decision, response: null };
}

type Maybe<T> = T | Promise<T>;

export interface Stage {
  readonly name: string;
  connect?(tunnel: Tunnel): Maybe<ConnectVerdict>;
  connected?(tunnel: Tunnel): void;
  request?(rq: ProxyRequest): Maybe<RequestVerdict>;
  response?(rq: ProxyRequest, reply: Reply): Maybe<Reply>;
}
