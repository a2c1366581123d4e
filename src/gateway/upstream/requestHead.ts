// The request head that leaves the gateway, and where it is dialled (docs/gateway.md#forwarding): the
// request-target byte for byte as the stages left it, exactly one Host (from the destination), the outgoing
// header lines as the stages edited them.
import type { DialTarget } from "../../services/outbound.ts";
import type { ProxyRequest } from "../request.ts";

/** Bytes a request line cannot carry (controls, space, DEL); the `g` copy replaces them all. */
const UNSENDABLE = /[\x00-\x20\x7f]/;
const EVERY_UNSENDABLE = new RegExp(UNSENDABLE.source, "g");

/** The request head, CRLFCRLF included. Bytes a request line cannot carry are percent-encoded. */
export function upstreamHead(rq: ProxyRequest, extra = ""): string {
  let target = rq.upstreamTarget;
  if (UNSENDABLE.test(target)) target = target.replace(EVERY_UNSENDABLE, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0").toUpperCase()}`);
  let head = `${rq.method} ${target} HTTP/1.1\r\nHost: ${rq.authority}\r\n`;
  for (const [name, value] of rq.headers) head += `${name}: ${value}\r\n`;
  return `${head}${extra}\r\n`;
}

/** Where to dial: nothing is dialled that the egress guard did not approve (fail closed). */
export function dialTarget(rq: ProxyRequest): DialTarget {
  if (!rq.dial) throw new Error("forward reached without an egress verdict");
  return rq.dial;
}

/** The body goes upstream chunked. */
export const CHUNKED_BODY = -1;

/**
 * How the request body goes upstream, its head made to say so (docs/gateway.md#message-framing): exactly the
 * length one `content-length` declares (repeats of one value become one field), or chunked with no length at all;
 * a body without a length goes chunked. Throws when the head declares a length that is not one number: nothing
 * is sent that an origin could read another way.
 */
export function upstreamBodyLength(rq: ProxyRequest): number {
  const declared = rq.headers.get("content-length");
  if (rq.body !== null && rq.chunked) {
    if (declared !== null) rq.headers.delete("content-length");
    return CHUNKED_BODY;
  }
  if (declared === null) {
    if (rq.body === null) return 0;
    rq.chunked = true;
    return CHUNKED_BODY;
  }
  if (/^\d{1,15}$/.test(declared)) return Number(declared);
  const values = declared.split(",").map((v) => v.trim());
  if (!/^\d{1,15}$/.test(values[0]!) || values.some((v) => v !== values[0])) throw new Error("the request's content-length is not one number");
  rq.headers.set("content-length", values[0]!);
  return Number(values[0]);
}
