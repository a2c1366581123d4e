// Stage 7 — credential injection (CONTRACT §6.6–6.7): every matching credential the agent may use, in
// precedence order (later writes win). A credential that cannot be applied safely stops the request.
import { applyInjection } from "../../core/inject.ts";
import type { GatewayContext } from "../context.ts";
import { credentialUnavailable } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { matchingCredentials } from "../snapshot.ts";

export function inject(rq: ProxyRequest, _g: GatewayContext): Response | undefined {
  const matched = matchingCredentials(rq.credentials.injectable, rq.host, rq.path);
  rq.matched = matched;
  let target = rq.upstreamTarget;
  for (const secret of matched) {
    // External-vault values are resolved by the vault resolver; without one they are unavailable.
    if (secret.value === null) return fail(rq);
    const out = applyInjection(secret, secret.value, rq.headers, target);
    if (!out.ok) return fail(rq);
    target = out.pathAndQuery;
    rq.injectionCount += out.count;
  }
  rq.upstreamTarget = target;
  return undefined;
}

function fail(rq: ProxyRequest): Response {
  rq.decision = "error";
  return credentialUnavailable(rq.host);
}
