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
