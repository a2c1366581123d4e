// The shape every gateway concern has (the order is one list, in pipeline.ts). A request hook passes the
// request on (undefined) or answers it; the forward stage's answer is the upstream's reply. On the way back,
// the response hooks of every stage whose request hook ran are called in reverse order: they may change the
// reply's headers, add body transforms or end callbacks, or put another reply in its place.
import type { GatewayContext } from "./context.ts";
import type { Reply } from "./reply.ts";
import type { ProxyRequest } from "./request.ts";

type Maybe<T> = T | Promise<T>;

export interface Stage {
  readonly name: string;
  request?(rq: ProxyRequest, g: GatewayContext): Maybe<Response | Reply | undefined>;
  response?(rq: ProxyRequest, g: GatewayContext, reply: Reply): Maybe<Reply>;
}
