// MCP servers as apps (docs/mcp.md): register (static bearer or header auth, or a login credgate runs), read,
// rename, delete, list their tools again, the login's start and callback, and the agents' tool grants (whose
// non-auth failures are flat, as every grant endpoint's).
import { Type as T } from "@sinclair/typebox";
import { ApiError } from "../../core/errors.ts";
import { argumentRulesError, mcpAuthError, mcpUrlPartsError } from "../../core/mcpRules.ts";
import { channelUrlError, URL_MAX } from "../../services/notifications/channels.ts";
import { MCP_CALLBACK_PATH, MCP_STATE_COOKIE } from "../../services/mcp/login.ts";
import type { McpAuthInput } from "../../services/mcpServers.ts";
import { cookieValue } from "../auth.ts";
import { created, noContent, route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { redirects, returns, returnsCreated, returnsNothing } from "../responses.ts";
import { refined } from "../validate.ts";

const q = (description: string) => T.Optional(T.String({ description }));

// Mode-independent here (plain http to loopback passes); the handler applies the running mode's rule.
const url = T.String({ maxLength: URL_MAX, trim: true, refine: (v: string) => channelUrlError(v, null) ?? mcpUrlPartsError(v) });

const CreateBody = T.Object({
  name: T.String({ minLength: 1, maxLength: 255, trim: true }),
  url,
  auth: T.Optional(refined<McpAuthInput>({ refine: (v) => mcpAuthError(v) })),
});

const toolIds = T.Optional(T.Array(T.String({ minLength: 1, maxLength: 255 }), { maxItems: 200 }));
const GrantBody = T.Object({
  access: T.Union([T.Literal("full"), T.Literal("custom")]),
  allow: toolIds,
  ask: toolIds,
  arguments: T.Optional(refined<Record<string, Record<string, string>>>({ refine: (v) => argumentRulesError(v) })),
});

export const mcpServersRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/mcp-servers",
    response: returns(T.Array(R.McpServer), "The project's MCP servers, oldest first"),
    access: "project",
    handler: async ({ services, ctx }) => (await services.mcpServers.list(ctx.projectId)).map((r) => services.mcpServers.view(r)),
  }),
  route({
    method: "POST",
    path: "/mcp-servers",
    response: returnsCreated(R.McpServer, "With a static credential its tools are listed at once; without one it is pending until the login"),
    access: "project",
    role: "admin",
    body: CreateBody,
    handler: async ({ services, ctx, body }) => {
      const urlError = channelUrlError(body.url, services.deps.config.mode);
      if (urlError) throw ApiError.flat(400, urlError);
      const row = await services.mcpServers.create({ projectId: ctx.projectId, organizationId: ctx.organizationId }, body);
      return created(services.mcpServers.view(row));
    },
  }),
  route({
    method: "GET",
    path: "/mcp-servers/callback",
    query: T.Object({ code: q("authorization code"), state: q("signed state"), error: q("the authorization server's error code") }),
    response: redirects("To /mcp-servers/{id}?status=success, or ?status=error&message=…"),
    access: "none",
    handler: async ({ services, query, request }) => {
      const location = await services.mcpAuth.login.callback(query, cookieValue(request.headers.get("cookie"), MCP_STATE_COOKIE));
      const clear = `${MCP_STATE_COOKIE}=; HttpOnly; SameSite=Lax; Path=${MCP_CALLBACK_PATH}; Max-Age=0`;
      return new Response(null, { status: 302, headers: { location, "set-cookie": clear, "cache-control": "no-store" } });
    },
  }),
  route({
    method: "GET",
    path: "/mcp-servers/:mcpServerId",
    response: returns(R.McpServer),
    access: "project",
    handler: async ({ services, ctx, params }) => services.mcpServers.view(await services.mcpServers.get(ctx.projectId, params.mcpServerId)),
  }),
  route({
    method: "PATCH",
    path: "/mcp-servers/:mcpServerId",
    response: returns(R.McpServer),
    access: "project",
    role: "admin",
    body: T.Object({ name: T.Optional(T.String({ minLength: 1, maxLength: 255, trim: true })) }),
    emptyBody: ApiError.flat(400, "No fields to update"),
    handler: async ({ services, ctx, params, body }) => {
      const row = await services.mcpServers.get(ctx.projectId, params.mcpServerId);
      if (body.name === undefined) throw ApiError.envelope(400, "No fields to update");
      return services.mcpServers.view(await services.mcpServers.rename(row, body.name));
    },
  }),
  route({
    method: "DELETE",
    path: "/mcp-servers/:mcpServerId",
    response: returnsNothing("Deleted, with every agent's grant of it"),
    access: "project",
    role: "admin",
    handler: async ({ services, ctx, params }) => {
      await services.mcpServers.delete(await services.mcpServers.get(ctx.projectId, params.mcpServerId));
      return noContent();
    },
  }),
  route({
    method: "POST",
    path: "/mcp-servers/:mcpServerId/refresh-tools",
    response: returns(R.McpServer, "A failed listing keeps the tools known before and says why in `error`"),
    access: "project",
    role: "admin",
    handler: async ({ services, ctx, params }) => services.mcpServers.view(await services.mcpAuth.refreshTools(await services.mcpServers.get(ctx.projectId, params.mcpServerId))),
  }),
  route({
    method: "GET",
    path: "/mcp-servers/:mcpServerId/authorize",
    query: T.Object({
      _token: q("browser bridge: stands in for Authorization: Bearer"),
      _project: q("browser bridge: stands in for X-Project-Id"),
      _org: q("browser bridge: stands in for X-Organization-Id"),
    }),
    response: redirects("To the authorization server's consent page; sets the credgate_oauth_state cookie"),
    access: "project",
    role: "admin",
    queryBridge: true,
    handler: async ({ services, ctx, params }) => {
      const row = await services.mcpServers.get(ctx.projectId, params.mcpServerId);
      const { location, cookie } = await services.mcpAuth.login.authorize(row);
      return new Response(null, { status: 302, headers: { location, "set-cookie": cookie, "cache-control": "no-store" } });
    },
  }),
  route({
    method: "GET",
    path: "/mcp-servers/:mcpServerId/grants",
    response: returns(R.McpServerGrants),
    access: "project",
    handler: ({ services, ctx, params }) => services.mcpGrants.ofServer(ctx.projectId, params.mcpServerId),
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/grants/mcp-servers/:mcpServerId",
    response: returns(R.GrantSet),
    access: "project",
    body: GrantBody,
    handler: async ({ services, ctx, params, body }) => {
      if (body.access === "custom") {
        const allow = body.allow ?? [];
        const ask = body.ask ?? [];
        if (allow.length + ask.length === 0) throw ApiError.flat(400, "Custom access needs at least one allowed or approval tool — detach instead.");
        if (allow.some((id) => ask.includes(id))) throw ApiError.flat(400, "A tool can't be both always-allowed and require approval.");
      }
      await services.mcpGrants.grant(ctx.projectId, params.agentId, params.mcpServerId, body);
      return services.grants.grantSet(ctx.projectId, params.agentId);
    },
  }),
  route({
    method: "DELETE",
    path: "/agents/:agentId/grants/mcp-servers/:mcpServerId",
    response: returnsNothing("Detached (idempotent)"),
    access: "project",
    handler: async ({ services, ctx, params }) => {
      await services.mcpGrants.revoke(ctx.projectId, params.agentId, params.mcpServerId);
      return noContent();
    },
  }),
];
