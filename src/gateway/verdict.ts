// What a stage's hook says (docs/gateway.md#stages): go on, or answer the flow here. Its own file, apart from
// stage.ts, so that what the flow carries (request.ts) and the shared refusals (errors.ts) can name a verdict
// without importing the Stage interface, which names them.
import type { RequestLogDecision } from "../services/requestLogs.ts";
import type { Reply } from "./reply.ts";

/**
 * What a request or connect hook says. `response` null: go on to the next stage; otherwise the flow is
 * answered here. `decision`, when not null, is what the request log records from now on (the runner sets it;
 * a stage never writes the flow's decision itself). Every verdict has this one shape.
 */
export interface Verdict<A> {
  readonly decision: RequestLogDecision | null;
  readonly response: A | null;
}

/** A request hook's answer: the gateway's own (a Response), or a Reply (the upstream's, a taken-over socket). */
export type RequestVerdict = Verdict<Response | Reply>;
/** Go on: the one verdict most hooks return, shared (nothing is made per request). */
export const PASS: Verdict<never> = { decision: null, response: null };

/** The flow is answered here, and logged with `decision`. */
export function answer<A>(decision: RequestLogDecision, response: A): Verdict<A> {
  return { decision, response };
}

/** The flow is answered with `response` (the upstream's), and its decision so far stands. */
export function relay(response: Response | Reply): RequestVerdict {
  return { decision: null, response };
}

/** Go on, and log the request with `decision` from now on (an approval granted). */
export function proceedAs(decision: RequestLogDecision): Verdict<never> {
  return { decision, response: null };
}
