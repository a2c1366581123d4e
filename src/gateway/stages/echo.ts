// The echo guard (docs/guards.md#echo-guard): an upstream that reflects the request must not hand the injected
// credential to the agent. Credentialed requests ask for an identity encoding (so bodies can be read), and
// their responses have every injected value — raw, base64 and percent-encoded — replaced in header values and
// in the body while it streams. WebSocket frames are not scanned.
import { needlesFor, redactText, StreamRedactor } from "../../core/redactor.ts";
import type { BodyTransform } from "../reply.ts";
import { PASS, type Stage } from "../stage.ts";

/** The needles of a set of values, kept: the same secrets are injected request after request. */
const needleCache = new Map<string, { text: string[]; bytes: Buffer[] }>();
const NEEDLE_CACHE_MAX = 1000;

function needlesOf(values: readonly string[]): { text: string[]; bytes: Buffer[] } {
  const key = values.length === 1 ? values[0]! : values.join("\u0000");
  let entry = needleCache.get(key);
  if (!entry) {
    const text = needlesFor(values);
    entry = { text, bytes: text.map((n) => Buffer.from(n)) };
    if (needleCache.size >= NEEDLE_CACHE_MAX) needleCache.clear();
    needleCache.set(key, entry);
  }
  return entry;
}

/** The body scanner as the reply writer calls it: one object per response, no closures. */
class EchoRedactor extends StreamRedactor implements BodyTransform {
  readonly resizes = true;

  data(chunk: Uint8Array): Uint8Array {
    return this.push(chunk);
  }
}

export function echoStage(): Stage {
  return {
    name: "echo-guard",
    request(rq) {
      if (rq.injectionCount > 0 && !rq.websocket) rq.headers.set("accept-encoding", "identity");
      return PASS;
    },
    response(rq, reply) {
      if (rq.injectionCount === 0 || rq.websocket || rq.injectedValues.length === 0) return reply;
      const { text: needles, bytes } = needlesOf(rq.injectedValues);
      if (needles.length === 0) return reply;
      reply.mapHeaderValues((value) => redactText(value, needles));
      if (reply.body) reply.transforms.push(new EchoRedactor(bytes));
      return reply;
    },
  };
}
