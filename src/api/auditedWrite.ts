// Every successful mutating route is an audit event (docs/operations.md#audit-log): the route runner hands its
// handler to `auditedWrite`, which names the actor (from the principal), the action (method and the route's
// template as the OpenAPI document writes it), the client address and the tenant, and runs the handler inside
// that audit scope. The services record what changed; a route whose services recorded nothing still gets one
// event, for the target its path (or its answer) names.
import type { AuditActor, AuditScopeInit } from "../services/audit.ts";
import type { Services } from "../services/index.ts";
import type { PartnerContext, Principal, RequestContext } from "./auth.ts";

export function actorOf(principal: Principal | null): AuditActor | null {
  switch (principal?.via) {
    case "session":
      return { kind: "user", id: principal.userId, userId: principal.userId };
    case "project_key":
      return { kind: "project_key", id: principal.keyId, userId: principal.userId };
    case "org_key":
      return { kind: "org_key", id: principal.keyId, userId: principal.userId };
    case "partner_key":
      return { kind: "partner_key", id: principal.keyId, userId: null };
    default:
      return null;
  }
}

/** `/agents/:agentId` → `/v1/agents/{agentId}`, as the OpenAPI document names the path. */
export function actionOf(method: string, path: string): string {
  return `${method} /v1${path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`;
}

const singular = (segment: string) => segment.replace(/ies$/, "y").replace(/s$/, "").replace(/-/g, "_");

/**
 * The target a path names: the resource before its last parameter (`/policy/rules/:ruleId` → rule, ruleId), or
 * for a path without one its first resource segment (`/org/api-key/regenerate` → api_key); the id comes from the
 * parameter or else from the answer's `id`.
 */
export function pathTarget(path: string, params: Record<string, string>, result: unknown): { targetType: string; targetId: string | null } {
  const segments = path.split("/").filter(Boolean);
  for (let i = segments.length - 1; i > 0; i--) {
    if (segments[i]!.startsWith(":")) {
      const before = segments[i - 1]!;
      return { targetType: singular(before.startsWith(":") ? before.slice(1).replace(/Id$/, "") : before), targetId: params[segments[i]!.slice(1)] ?? null };
    }
  }
  const resource = segments.find((s) => s !== "org" && s !== "partner") ?? segments[0] ?? "api";
  return { targetType: singular(resource), targetId: idOf(result) ?? idOf((result as { body?: unknown } | null)?.body) };
}

/** The `id` of a handler's answer (a record, or a Result holding one). */
function idOf(value: unknown): string | null {
  const id = value && typeof value === "object" && !(value instanceof Response) ? (value as { id?: unknown }).id : undefined;
  return typeof id === "string" ? id : null;
}

export function auditedWrite<T>(
  services: Services,
  /** The route (route.ts RouteDef: only its path template is read, so this file needs nothing of route.ts). */
  def: { readonly path: string },
  request: Request,
  principal: Principal | null,
  ctx: RequestContext | PartnerContext | null,
  params: Record<string, string>,
  address: string | null,
  handler: () => Promise<T>,
): Promise<T> {
  params ??= {};
  const scope: AuditScopeInit = {
    actor: actorOf(principal),
    action: actionOf(request.method, def.path),
    address,
    organizationId: (ctx && "organizationId" in ctx ? ctx.organizationId : null) || params.orgId || (principal && "organizationId" in principal ? principal.organizationId : null) || null,
    projectId: (ctx && "projectId" in ctx ? ctx.projectId : null) || null,
    partnerId: (ctx && "partnerId" in ctx ? ctx.partnerId : null) ?? (principal?.via === "partner_key" ? principal.partnerId : null),
  };
  return services.deps.audit.write(scope, (result) => pathTarget(def.path, params, result), handler);
}
