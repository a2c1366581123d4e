// The winning connection's credential goes on first (docs/injection.md: connection → partner → organization →
// project, later writes win), the way its app's host rule says. An OAuth token inside its refresh window is
// refreshed first (single flight per connection, in the OAuth service).
import { hostRuleFor } from "../../apps/match.ts";
import type { AppInjection } from "../../apps/types.ts";
import type { Injectable } from "../../core/inject.ts";
import { isHeaderSafeValue, type InjectionConfigShape } from "../../core/secretRules.ts";
import { OAuthService } from "../../services/oauth.ts";
import type { ConnectionCredential } from "../../services/connections.ts";
import { credentialUnavailableFor } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { PASS, type RequestVerdict, type Stage } from "../stage.ts";

export interface InjectConnectionDeps {
  oauth: Pick<OAuthService, "fresh">;
}

function valueOf(credential: ConnectionCredential, field: string | undefined): string | null {
  if (credential.kind === "oauth") return credential.accessToken;
  const name = field ?? Object.keys(credential.fields)[0];
  return name !== undefined ? (credential.fields[name] ?? null) : null;
}

/** An app's injection as the generic secret variant it amounts to, and the value that goes in. */
function asGenericSecret(inj: AppInjection, value: string): { secret: Injectable; value: string } {
  const generic = (injection: InjectionConfigShape): Injectable => ({ type: "generic", authMode: "api-key", injection });
  switch (inj.kind) {
    case "bearer":
      return { secret: generic({ headerName: "authorization", valueFormat: "Bearer {value}" }), value };
    case "basic":
      return { secret: generic({ headerName: "authorization", valueFormat: "Basic {value}" }), value: Buffer.from(`${inj.username}:${value}`).toString("base64") };
    case "header":
      return { secret: generic({ headerName: inj.name, valueFormat: inj.format ?? "{value}" }), value };
    case "query":
      return { secret: generic({ paramName: inj.param }), value };
  }
}

function apply(rq: ProxyRequest, injections: AppInjection[], credential: ConnectionCredential): RequestVerdict {
  for (const inj of injections) {
    const value = valueOf(credential, inj.field);
    if (!value) return credentialUnavailableFor(rq);
    // Stored values are checked when saved; a token from a provider only now: a header must not break.
    if (inj.kind !== "query" && !isHeaderSafeValue(value)) return credentialUnavailableFor(rq);
    const { secret, value: injected } = asGenericSecret(inj, value);
    if (!rq.applyCredential(secret, injected)) return credentialUnavailableFor(rq);
  }
  return PASS;
}

export function injectConnectionStage({ oauth }: InjectConnectionDeps): Stage {
  return {
    name: "inject-connection",
    reads: ["connection"],
    provides: ["connectionCredential"],
    request(rq) {
      const c = rq.connection;
      if (!c?.credential) return PASS;
      const rule = hostRuleFor(c.app, rq.host, rq.pathReadings);
      if (!rule) return PASS;
      if (!OAuthService.needsRefresh(c.credential)) return apply(rq, rule.rule.inject, c.credential);
      return oauth.fresh(c.id).then((fresh) => (fresh ? apply(rq, rule.rule.inject, fresh) : credentialUnavailableFor(rq)));
    },
  };
}
