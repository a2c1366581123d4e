// Agent grants and credential assignments (docs/injection.md#grants, effective credentials, the legacy
// `/agents/{id}/secrets` and `/agents/{id}/connections`). Grant endpoints answer every non-auth failure
// with a flat body.
import { Type as T } from "@sinclair/typebox";
import { ApiError } from "../../core/errors.ts";
import { noContent, route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns, returnsNothing } from "../responses.ts";

const toolIds = T.Optional(T.Array(T.String({ minLength: 1, maxLength: 255 }), { maxItems: 200 }));
const ConnectionGrantBody = T.Object({
  access: T.Union([T.Literal("full"), T.Literal("custom")]),
  allow: toolIds,
  ask: toolIds,
  // Absent keeps the stored value; null (kept distinct from absent) clears it.
  resources: T.Optional(T.Union([T.Unknown(), T.Null()])),
});


export const grantsRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/agents/:agentId/grants",
    response: returns(R.GrantSet),
    access: "project",
    handler: ({ services, ctx, params }) => services.grants.grantSet(ctx.projectId, params.agentId),
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/grants/connections/:connectionId",
    response: returns(R.GrantSet),
    access: "project",
    body: ConnectionGrantBody,
    handler: ({ services, ctx, params, body }) => {
      if (body.access === "custom") {
        const allow = body.allow ?? [];
        const ask = body.ask ?? [];
        if (allow.length + ask.length === 0) throw ApiError.flat(400, "Custom access needs at least one allowed or approval tool — detach instead.");
        if (allow.some((id) => ask.includes(id))) throw ApiError.flat(400, "A tool can't be both always-allowed and require approval.");
      }
      return services.grants.grantConnection(ctx.projectId, ctx.organizationId, params.agentId, params.connectionId, body);
    },
  }),
  route({
    method: "DELETE",
    path: "/agents/:agentId/grants/connections/:connectionId",
    response: returnsNothing("Detached (idempotent)"),
    access: "project",
    handler: async ({ services, ctx, params }) => {
      await services.grants.revokeConnection(ctx.projectId, params.agentId, params.connectionId);
      return noContent();
    },
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/grants/secrets/:secretId",
    response: returns(R.GrantSet),
    access: "project",
    handler: ({ services, ctx, params }) => services.grants.grantSecret(ctx.projectId, ctx.organizationId, params.agentId, params.secretId),
  }),
  route({
    method: "DELETE",
    path: "/agents/:agentId/grants/secrets/:secretId",
    response: returnsNothing("Detached (idempotent)"),
    access: "project",
    handler: async ({ services, ctx, params }) => {
      await services.grants.revokeSecret(ctx.projectId, params.agentId, params.secretId);
      return noContent();
    },
  }),
  route({
    method: "GET",
    path: "/connections/:connectionId/grants",
    response: returns(R.ConnectionGrants),
    access: "project",
    handler: ({ services, ctx, params }) => services.grants.grantsOfConnection(ctx.projectId, ctx.organizationId, params.connectionId),
  }),
  route({
    method: "GET",
    path: "/agents/:agentId/secrets",
    response: returns(T.Array(T.String()), "The ids of the secrets granted to the agent"),
    access: "project",
    handler: async ({ services, ctx, params }) => {
      await services.agents.get(ctx.projectId, params.agentId);
      return services.grants.secretIds(params.agentId);
    },
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/secrets",
    response: returns(R.Success),
    access: "project",
    body: T.Object({ secretIds: T.Array(T.String(), { maxItems: 10000 }) }),
    handler: async ({ services, ctx, params, body }) => {
      await services.grants.replaceSecrets(ctx.projectId, ctx.organizationId, params.agentId, body.secretIds);
      return R.SUCCESS;
    },
  }),
  route({
    method: "GET",
    path: "/agents/:agentId/connections",
    response: returns(R.AgentConnectionAssignments),
    access: "project",
    handler: async ({ services, ctx, params }) => {
      await services.agents.get(ctx.projectId, params.agentId);
      return (await services.grants.connectionGrantRows(params.agentId)).map((g) => ({ appConnectionId: g.connectionId, sessionPolicy: g.resources ?? null }));
    },
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/connections",
    response: returns(R.Success),
    access: "project",
    body: T.Object({
      connections: T.Array(T.Object({ appConnectionId: T.String({ minLength: 1 }), sessionPolicy: T.Optional(T.Union([T.Record(T.String(), T.Unknown()), T.Null()])) }), {
        maxItems: 1000,
      }),
    }),
    handler: async ({ services, ctx, params, body }) => {
      await services.grants.replaceConnections(ctx.projectId, ctx.organizationId, params.agentId, body.connections);
      return R.SUCCESS;
    },
  }),
  route({
    method: "GET",
    path: "/agents/:agentId/effective-credentials",
    response: returns(R.EffectiveCredentials),
    access: "project",
    handler: ({ services, ctx, params }) => services.access.effectiveCredentials(ctx.projectId, ctx.organizationId, params.agentId),
  }),
];
