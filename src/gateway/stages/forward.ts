// The `forward` stage — forward upstream (docs/gateway.md#forwarding): the request goes out on a pooled HTTP/1.1 connection with
// the request-target as the agent sent it (plus the documented injection rewrites, docs/injection.md#injection-variants), no redirects
// followed, no decompression, bodies streamed both ways, hop-by-hop headers stripped, a header timeout.
import type { GatewayContext } from "../context.ts";
import { upstreamTimeout, upstreamUnreachable } from "../errors.ts";
import type { Reply } from "../reply.ts";
import type { ProxyRequest } from "../request.ts";
import { exchange } from "../upstream/exchange.ts";
import type { DialTarget } from "../../services/outbound.ts";

/** Bytes a request line cannot carry (controls, space, DEL); the `g` copy replaces them all. */
const UNSENDABLE = /[\x00-\x20\x7f]/;
const EVERY_UNSENDABLE = new RegExp(UNSENDABLE.source, "g");

/** The request head that leaves the gateway. Bytes a request line cannot carry are percent-encoded. */
export function upstreamHead(rq: ProxyRequest, extra = ""): string {
  let target = rq.upstreamTarget;
  if (UNSENDABLE.test(target)) target = target.replace(EVERY_UNSENDABLE, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0").toUpperCase()}`);
  let head = `${rq.method} ${target} HTTP/1.1\r\nHost: ${rq.authority}\r\n`;
  for (const [name, value] of rq.headers) head += `${name}: ${value}\r\n`;
  return `${head}${extra}\r\n`;
}

function dialTarget(rq: ProxyRequest): DialTarget {
  // Fail closed: nothing is dialled that the egress guard did not approve.
  if (!rq.dial) throw new Error("forward reached without an egress verdict");
  return rq.dial;
}

export function forward(rq: ProxyRequest, g: GatewayContext): Promise<Response | Reply> {
  const chunked = rq.body !== null && rq.chunked;
  const seconds = g.config.upstreamHeaderTimeoutSeconds;
  const sent = performance.now();
  return exchange(g.upstreams, {
    scheme: rq.scheme,
    target: dialTarget(rq),
    method: rq.method,
    head: upstreamHead(rq, chunked ? "transfer-encoding: chunked\r\n" : ""),
    body: rq.body,
    chunked,
    headerTimeoutMs: seconds * 1000,
    agent: rq.presence,
  }).then((result) => {
    if ("reply" in result) {
      rq.upstreamMs = performance.now() - sent;
      return result.reply;
    }
    rq.decision = "error";
    return result.failure === "timeout" ? upstreamTimeout(rq.host, seconds) : upstreamUnreachable(rq.host, rq.port, result.reason);
  });
}
