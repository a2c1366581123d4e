// Apps (docs/injection.md#app-connections) and their organization variants (docs/api.md#organization-level-routes): catalog reads, OAuth start and the shared
// callback, direct-credential connect, and BYOC configuration. Blocklists live in appBlocklist.ts.
import { Type as T } from "@sinclair/typebox";
import { APPS } from "../../apps/index.ts";
import type { AppDefinition } from "../../apps/types.ts";
import { ApiError, forbidden } from "../../core/errors.ts";
import { INVALID_BODY } from "../../services/appConfigs.ts";
import { appOrThrow, permissionDefinition } from "../../services/apps.ts";
import { STATE_COOKIE } from "../../services/oauth.ts";
import type { PolicyOwner } from "../../services/policy.ts";
import type { Services } from "../../services/index.ts";
import { cookieValue, type RequestContext } from "../auth.ts";
import { route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import * as S from "../schemas.ts";
import { redirects, returns } from "../responses.ts";

type OwnerOf = (ctx: RequestContext) => PolicyOwner;
const projectOwner: OwnerOf = (ctx) => ({ scope: "project", projectId: ctx.projectId, organizationId: ctx.organizationId });
const orgOwner: OwnerOf = (ctx) => ({ scope: "organization", organizationId: ctx.organizationId });

function configurableApp(provider: string): AppDefinition {
  const app = appOrThrow(provider);
  if (app.connectionType !== "oauth") throw ApiError.flat(400, `Provider "${provider}" does not support app configuration`);
  return app;
}

function apiKeyApp(provider: string): AppDefinition {
  const app = appOrThrow(provider);
  if (app.connectionType !== "api_key") throw ApiError.flat(400, `Provider "${provider}" is not available`);
  return app;
}

const ConnectBody = T.Object({
  fields: T.Optional(T.Unknown()),
  label: T.Optional(T.String({ maxLength: 255, trim: true })),
  connectionId: T.Optional(T.String({ maxLength: 255, trim: true })),
});

/** `POST …/connect`: the app's fields, each present and non-blank; unknown keys are dropped. */
async function connect(services: Services, owner: PolicyOwner, provider: string, body: { fields?: unknown; label?: string; connectionId?: string }) {
  const app = apiKeyApp(provider);
  const raw = body.fields;
  if (raw === undefined || raw === null || typeof raw !== "object" || Array.isArray(raw)) throw ApiError.flat(400, "Missing fields in request body");
  const fields: Record<string, string> = {};
  for (const f of app.fields) {
    const v = (raw as Record<string, unknown>)[f.name];
    // docs/api.md#error-messages: `{field}` is the field's label, e.g. `API Key is required`.
    if (typeof v !== "string" || v.trim() === "") throw ApiError.flat(400, `${f.label} is required`);
    fields[f.name] = v.trim();
  }
  const row = await services.connections.save(owner, {
    provider: app.id,
    label: body.label || app.name,
    credential: { kind: "api_key", fields },
    scopes: [],
    ...(body.connectionId ? { connectionId: body.connectionId } : {}),
  });
  return { success: true as const, connection: { id: row.id, label: row.label } };
}

async function authorizeResponse(services: Services, owner: PolicyOwner, provider: string, query: URLSearchParams): Promise<Response> {
  const agentName = query.get("agent_name")?.trim() || null;
  if (agentName && agentName.length > 128) throw ApiError.flat(400, "agent_name must be at most 128 characters");
  const { location, cookie } = await services.oauth.authorize({ owner, provider, connectionId: query.get("connectionId")?.trim() || null, agentName });
  return new Response(null, { status: 302, headers: { location, "set-cookie": cookie, "cache-control": "no-store" } });
}

/** The config rows shared by project (`/apps`) and organization (`/org/apps`) scope. */
function configRoutes(prefix: "/apps" | "/org/apps", access: "project" | "organization", owner: OwnerOf): RouteDef[] {
  const role = access === "organization" ? "admin" : "any";
  return [
    route({
      method: "GET",
      path: `${prefix}/:provider/config`,
      response: returns(R.AppConfig),
      access,
      role,
      handler: async ({ services, ctx, params }) => {
        const app = appOrThrow(params.provider);
        return (await services.appConfigs.view(owner(ctx), app.id)) ?? { settings: {}, hasCredentials: false, enabled: false };
      },
    }),
    route({
      method: "POST",
      path: `${prefix}/:provider/config`,
      response: returns(R.Success),
      access,
      role,
      body: T.Unknown({ description: "An object of the app's credential fields as strings (e.g. clientId, clientSecret); unknown keys are stripped" }),
      handler: async ({ services, ctx, params, body }) => {
        const app = configurableApp(params.provider);
        if (body === null || typeof body !== "object" || Array.isArray(body)) throw ApiError.flat(400, INVALID_BODY);
        await services.appConfigs.save(owner(ctx), app, body as Record<string, unknown>);
        return R.SUCCESS;
      },
    }),
    route({
      method: "DELETE",
      path: `${prefix}/:provider/config`,
      response: returns(R.Success),
      access,
      role,
      handler: async ({ services, ctx, params }) => {
        const app = appOrThrow(params.provider);
        await services.appConfigs.delete(owner(ctx), app.id);
        return R.SUCCESS;
      },
    }),
    route({
      method: "PATCH",
      path: `${prefix}/:provider/config/toggle`,
      response: returns(R.Success),
      access,
      role,
      body: T.Object({ enabled: T.Boolean() }),
      handler: async ({ services, ctx, params, body }) => {
        const app = appOrThrow(params.provider);
        await services.appConfigs.toggle(owner(ctx), app.id, body.enabled);
        return R.SUCCESS;
      },
    }),
    route({
      method: "POST",
      path: `${prefix}/:provider/connect`,
      response: returns(R.Connected),
      access: access === "project" ? "project-explicit" : "organization",
      role,
      body: ConnectBody,
      handler: ({ services, ctx, params, body }) => connect(services, owner(ctx), params.provider, body),
    }),
  ];
}

export const appsRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/apps",
    response: returns(T.Array(R.AppItem)),
    access: "project",
    handler: ({ services, ctx }) => services.apps.items(ctx.projectId, ctx.organizationId),
  }),
  route({
    method: "GET",
    path: "/apps/permission-definitions",
    response: returns(T.Array(R.PermissionDefinition)),
    access: "organization",
    handler: () => APPS.filter((a) => a.tools.length > 0).map(permissionDefinition),
  }),
  route({
    method: "GET",
    path: "/apps/:provider",
    response: returns(R.AppItem),
    access: "project",
    handler: ({ services, ctx, params }) => services.apps.item(appOrThrow(params.provider), ctx.projectId, ctx.organizationId),
  }),
  route({
    method: "GET",
    path: "/apps/:provider/permission-definition",
    response: returns(R.PermissionDefinition),
    access: "organization",
    handler: ({ params }) => permissionDefinition(appOrThrow(params.provider)),
  }),
  route({
    method: "GET",
    path: "/apps/:provider/authorize",
    query: S.AuthorizeQuery,
    response: redirects("To the provider's consent page; sets the credgate_oauth_state cookie"),
    access: "project-explicit",
    queryBridge: true,
    handler: ({ services, ctx, params, query }) => authorizeResponse(services, projectOwner(ctx), params.provider, query),
  }),
  route({
    method: "GET",
    path: "/org/apps/:provider/authorize",
    query: S.OrgAuthorizeQuery,
    response: redirects("To the provider's consent page; the connection is created at organization level"),
    access: "organization",
    role: "admin",
    queryBridge: true,
    handler: ({ services, ctx, params, query }) => {
      const org = query.get("org")?.trim();
      if (org && org !== ctx.organizationId) throw forbidden("Not a member of this organization");
      return authorizeResponse(services, orgOwner(ctx), params.provider, query);
    },
  }),
  route({
    method: "GET",
    path: "/apps/:provider/callback",
    query: S.CallbackQuery,
    response: redirects("To /app-connect/{provider}?status=success&connectionId=… or ?status=error&message=…"),
    access: "none",
    handler: async ({ services, params, query, request }) => {
      const provider = params.provider;
      const location = await services.oauth.callback(provider, query, cookieValue(request.headers.get("cookie"), STATE_COOKIE));
      // The flow is over either way: the state cookie is cleared.
      const clear = `${STATE_COOKIE}=; HttpOnly; SameSite=Lax; Path=/v1/apps/${encodeURIComponent(provider)}/callback; Max-Age=0`;
      return new Response(null, { status: 302, headers: { location, "set-cookie": clear, "cache-control": "no-store" } });
    },
  }),
  ...configRoutes("/apps", "project", projectOwner),
  ...configRoutes("/org/apps", "organization", orgOwner),
];
