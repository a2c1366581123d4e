// The egress guard and the cleartext rule (docs/guards.md#egress-guard, docs/guards.md#cleartext-rule), both answered before any connection is made.
import { compileHostPattern } from "../../core/patterns.ts";
import { isLocalAddress, parseAddress } from "../../core/addressRules.ts";
import type { GatewayContext } from "../context.ts";
import type { EgressVerdict } from "../egressGuard.ts";
import { egressDenied, insecureTransport, upstreamUnreachable } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";

function settle(rq: ProxyRequest, verdict: EgressVerdict): Response | undefined {
  switch (verdict.kind) {
    case "dial":
      rq.dial = verdict.target;
      return undefined;
    case "denied":
      rq.decision = "blocked";
      return egressDenied(rq.host, verdict.address);
    case "unresolved":
      rq.decision = "error";
      return upstreamUnreachable(rq.host, rq.port, verdict.reason);
  }
}

/** Resolves the destination once and checks the address that will be dialled. */
export function guardEgress(rq: ProxyRequest, g: GatewayContext): Response | undefined | Promise<Response | undefined> {
  const verdict = g.egress.check(rq.host, rq.port);
  return verdict instanceof Promise ? verdict.then((v) => settle(rq, v)) : settle(rq, verdict);
}

const plaintextMatchers = new WeakMap<string[], ((host: string) => boolean)[]>();

/** A credential goes over plain HTTP only to a loopback or private address, or a host the operator listed. */
export function guardCleartext(rq: ProxyRequest, g: GatewayContext): Response | undefined {
  if (rq.scheme !== "http" || rq.injectionCount === 0) return undefined;
  const address = rq.dial ? parseAddress(rq.dial.address) : null;
  if (address && isLocalAddress(address)) return undefined;
  const hosts = g.config.plaintextHosts;
  let matchers = plaintextMatchers.get(hosts);
  if (!matchers) plaintextMatchers.set(hosts, (matchers = hosts.map(compileHostPattern)));
  if (matchers.some((match) => match(rq.host))) return undefined;
  rq.decision = "blocked";
  return insecureTransport(rq.host);
}
