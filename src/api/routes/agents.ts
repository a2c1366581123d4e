// Agents (docs/api.md#agents-and-tokens without grants): CRUD, default agent, token regeneration. All project·any.
import { Type as T } from "@sinclair/typebox";
import { ApiError } from "../../core/errors.ts";
import { created, noContent, route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns, returnsCreated, returnsNothing } from "../responses.ts";

export const IDENTIFIER_MESSAGE =
  "Identifier must be 1-50 characters, start with a letter or number, and contain only lowercase letters, numbers, and hyphens";

const agentMode = T.Union([T.Literal("all"), T.Literal("grants")]);

export const CreateAgentBody = T.Object({
  name: T.String({ minLength: 1, maxLength: 255, trim: true }),
  identifier: T.String({ pattern: "^[a-z0-9][a-z0-9-]{0,49}$", error: IDENTIFIER_MESSAGE }),
  mode: T.Optional(agentMode),
  parentIdentifier: T.Optional(T.Unknown()),
});

export const UpdateAgentBody = T.Object({
  name: T.Optional(T.String({ minLength: 1, maxLength: 255, trim: true })),
  mode: T.Optional(agentMode),
});

const noFields = ApiError.flat(400, "No fields to update");

export const agentsRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/agents",
    response: returns(T.Array(R.Agent), "Agents with accessToken, default first, then newest first"),
    access: "project",
    handler: ({ services, ctx }) => services.agents.list(ctx.projectId),
  }),
  route({
    method: "POST",
    path: "/agents",
    response: returnsCreated(R.AgentCreated),
    access: "project",
    body: CreateAgentBody,
    handler: async ({ services, ctx, body }) => {
      const row = await services.agents.create(ctx.projectId, { name: body.name, identifier: body.identifier, mode: body.mode ?? "grants" });
      return created({ id: row.id, name: row.name, identifier: row.identifier, mode: row.mode, isDefault: row.isDefault, createdAt: row.createdAt });
    },
  }),
  route({
    method: "GET",
    path: "/agents/default",
    response: returns(R.Agent, "The default agent, with accessToken"),
    access: "project",
    handler: async ({ services, ctx }) => {
      const row = await services.agents.findDefault(ctx.projectId);
      if (!row) throw ApiError.flat(404, "No default agent found");
      return services.agents.view(row, true);
    },
  }),
  route({
    method: "GET",
    path: "/agents/:agentId",
    response: returns(R.Agent, "The agent, without accessToken"),
    access: "project",
    handler: async ({ services, ctx, params }) => services.agents.view(await services.agents.get(ctx.projectId, params.agentId), false),
  }),
  route({
    method: "PATCH",
    path: "/agents/:agentId",
    response: returns(R.Agent, "The agent, without accessToken"),
    access: "project",
    body: UpdateAgentBody,
    emptyBody: noFields,
    handler: async ({ services, ctx, params, body }) => {
      const patch = { ...(body.name !== undefined && { name: body.name }), ...(body.mode !== undefined && { mode: body.mode }) };
      if (Object.keys(patch).length === 0) throw noFields;
      return services.agents.view(await services.agents.update(ctx.projectId, params.agentId, patch), false);
    },
  }),
  route({
    method: "DELETE",
    path: "/agents/:agentId",
    response: returnsNothing(),
    access: "project",
    handler: async ({ services, ctx, params }) => {
      await services.agents.delete(ctx.projectId, params.agentId);
      return noContent();
    },
  }),
  route({
    method: "POST",
    path: "/agents/:agentId/set-default",
    response: returns(R.Success),
    access: "project",
    handler: async ({ services, ctx, params }) => {
      await services.agents.setDefault(ctx.projectId, params.agentId);
      return R.SUCCESS;
    },
  }),
  route({
    method: "POST",
    path: "/agents/:agentId/regenerate-token",
    response: returns(R.AccessToken, "The new token; the old one is invalid at once"),
    access: "project",
    handler: async ({ services, ctx, params }) => ({ accessToken: await services.agents.regenerateToken(ctx.projectId, params.agentId) }),
  }),
];
