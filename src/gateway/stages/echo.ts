// The echo guard (docs/guards.md#echo-guard): an upstream that reflects the request must not hand the injected
// credential to the agent. Credentialed requests ask for an identity encoding (so bodies can be read), and
// their responses have every injected value — raw, base64, hex, percent-encoded and JSON-string forms —
// replaced in the reason phrase, header values, trailers (an h2 origin's reach h2 agents: `mapHeaderValues`
// covers them as they come) and the body while it streams. A body encoded although identity was asked for is
// decoded first (encodedBody.ts), so that it can be read. A WebSocket upgrade's 101 headers and its frames are
// redacted by the WebSocket relay (websocket.ts) with the same needles.
import type { NeedleSet } from "../../core/needles.ts";
import { echoNeedles, redactText, StreamRedactor } from "../../core/echoRedaction.ts";
import { decodedBody, isDecodable } from "../encodedBody.ts";
import type { BodyTransform, Reply } from "../reply.ts";
import type { ProxyRequest } from "../request.ts";
import { INJECTIONS, PASS, type Stage } from "../stage.ts";

/** The needles of a set of values, kept: the same secrets are injected request after request. */
const needleCache = new Map<string, NeedleSet | null>();
const NEEDLE_CACHE_MAX = 1000;

export function echoNeedlesOf(values: readonly string[]): NeedleSet | null {
  const key = values.length === 1 ? values[0]! : values.join("\u0000");
  let entry = needleCache.get(key);
  if (entry === undefined) {
    entry = echoNeedles(values);
    if (needleCache.size >= NEEDLE_CACHE_MAX) needleCache.clear();
    needleCache.set(key, entry);
  }
  return entry;
}

/** Whether the request may carry a credential: something was injected, or a placeholder secret applies. */
export function isCredentialed(rq: ProxyRequest): boolean {
  return rq.injectionCount > 0 || rq.placeholders.length > 0;
}

/** The body scanner as the reply writer calls it: one object per response, no closures. */
class EchoRedactor extends StreamRedactor implements BodyTransform {
  readonly resizes = true;

  data(chunk: Uint8Array): Uint8Array {
    return this.push(chunk);
  }
}

function redacted(reply: Reply, set: NeedleSet): Reply {
  if (reply.statusText !== "") reply.statusText = redactText(reply.statusText, set);
  reply.mapHeaderValues((value) => redactText(value, set));
  if (reply.body) {
    if (reply.fromUpstream && isDecodable(reply.header("content-encoding"))) decodedBody(reply);
    reply.transforms.push(new EchoRedactor(set));
  }
  return reply;
}

export function echoStage(): Stage {
  return {
    name: "echo-guard",
    reads: INJECTIONS,
    provides: [],
    request(rq) {
      if (isCredentialed(rq) && !rq.websocket) rq.headers.set("accept-encoding", "identity");
      return PASS;
    },
    response(rq, reply) {
      if (rq.injectedValues.length === 0 || rq.websocket) return reply;
      const set = echoNeedlesOf(rq.injectedValues);
      return set === null ? reply : redacted(reply, set);
    },
  };
}
