// Stage 7 (apps half) — the winning connection's credential goes on first (CONTRACT §6.6 order: connection →
// partner → organization → project, later writes win), the way its app's host rule says. An OAuth token
// inside its refresh window is refreshed first (single flight per connection, in the OAuth service).
import { hostRuleFor } from "../../apps/match.ts";
import type { AppInjection } from "../../apps/types.ts";
import { setQueryParam } from "../../core/inject.ts";
import { isHeaderSafeValue } from "../../core/secretRules.ts";
import { OAuthService } from "../../services/oauth.ts";
import type { ConnectionCredential } from "../../services/connections.ts";
import type { GatewayContext } from "../context.ts";
import { credentialUnavailable } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";

export function injectConnection(rq: ProxyRequest, g: GatewayContext): Response | undefined | Promise<Response | undefined> {
  const c = rq.connection;
  if (!c?.credential) return undefined;
  const rule = hostRuleFor(c.app, rq.host, rq.path);
  if (!rule) return undefined;
  if (!OAuthService.needsRefresh(c.credential)) return apply(rq, rule.rule.inject, c.credential);
  return g.services.oauth.fresh(c.id).then((fresh) => (fresh ? apply(rq, rule.rule.inject, fresh) : fail(rq)));
}

function valueOf(credential: ConnectionCredential, field: string | undefined): string | null {
  if (credential.kind === "oauth") return credential.accessToken;
  const name = field ?? Object.keys(credential.fields)[0];
  return name !== undefined ? (credential.fields[name] ?? null) : null;
}

function apply(rq: ProxyRequest, injections: AppInjection[], credential: ConnectionCredential): Response | undefined {
  for (const inj of injections) {
    const value = valueOf(credential, inj.field);
    if (!value) return fail(rq);
    if (inj.kind === "query") {
      rq.upstreamTarget = setQueryParam(rq.upstreamTarget, inj.param, value);
      rq.injectionCount += 1;
      continue;
    }
    if (!isHeaderSafeValue(value)) return fail(rq);
    switch (inj.kind) {
      case "bearer":
        rq.headers.set("authorization", `Bearer ${value}`);
        break;
      case "basic":
        rq.headers.set("authorization", `Basic ${Buffer.from(`${inj.username}:${value}`).toString("base64")}`);
        break;
      case "header":
        rq.headers.set(inj.name, (inj.format ?? "{value}").split("{value}").join(value));
        break;
    }
    rq.injectionCount += 1;
  }
  return undefined;
}

function fail(rq: ProxyRequest): Response {
  rq.decision = "error";
  return credentialUnavailable(rq.host);
}
