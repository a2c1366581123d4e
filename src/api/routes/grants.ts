// Agent grants and credential assignments (CONTRACT §5.1 "Grants", effective credentials, the legacy
// `/agents/{id}/secrets` and `/agents/{id}/connections`). Grant endpoints answer every non-auth failure
// with a flat body.
import { Type as T } from "@sinclair/typebox";
import { findApp } from "../../apps/index.ts";
import { ApiError } from "../../core/errors.ts";
import { credentialStatus } from "../../core/policy.ts";
import { agentRules } from "../../services/agentRules.ts";
import type { Services } from "../../services/index.ts";
import { noContent, route, type RouteDef } from "../route.ts";
import * as S from "../schemas.ts";
import { returns, returnsNothing } from "../responses.ts";

const toolIds = T.Optional(T.Array(T.String({ minLength: 1, maxLength: 255 }), { maxItems: 200 }));
const ConnectionGrantBody = T.Object({
  access: T.Union([T.Literal("full"), T.Literal("custom")]),
  allow: toolIds,
  ask: toolIds,
  // Absent keeps the stored value; null (kept distinct from absent) clears it.
  resources: T.Optional(T.Union([T.Unknown(), T.Null()])),
});


/** How the rules treat a connection for an agent: every tool blocked → blocked; any tool not freely allowed → limited. */
function connectionStatus(judge: Awaited<ReturnType<Services["apps"]["toolJudge"]>>, connectionId: string, provider: string) {
  const app = findApp(provider);
  // An app without a permission definition: no per-tool rules can bear on it.
  if (!app || app.tools.length === 0) return "usable";
  const verdicts = judge(app, connectionId).flatMap((g) => g.tools.map((t) => t.verdict));
  if (verdicts.every((v) => v === "block")) return "blocked";
  return verdicts.some((v) => v !== "allow") ? "limited" : "usable";
}

export const grantsRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/agents/:agentId/grants",
    response: returns(S.GrantSet),
    access: "P",
    handler: ({ services, ctx, params }) => services.grants.grantSet(ctx.projectId, params.agentId!),
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/grants/connections/:connectionId",
    response: returns(S.GrantSet),
    access: "P",
    body: ConnectionGrantBody,
    handler: ({ services, ctx, params, body }) => {
      if (body.access === "custom") {
        const allow = body.allow ?? [];
        const ask = body.ask ?? [];
        if (allow.length + ask.length === 0) throw ApiError.flat(400, "Custom access needs at least one allowed or approval tool — detach instead.");
        if (allow.some((id) => ask.includes(id))) throw ApiError.flat(400, "A tool can't be both always-allowed and require approval.");
      }
      return services.grants.grantConnection(ctx.projectId, ctx.organizationId, params.agentId!, params.connectionId!, body);
    },
  }),
  route({
    method: "DELETE",
    path: "/agents/:agentId/grants/connections/:connectionId",
    response: returnsNothing("Detached (idempotent)"),
    access: "P",
    handler: async ({ services, ctx, params }) => {
      await services.grants.revokeConnection(ctx.projectId, params.agentId!, params.connectionId!);
      return noContent();
    },
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/grants/secrets/:secretId",
    response: returns(S.GrantSet),
    access: "P",
    handler: ({ services, ctx, params }) => services.grants.grantSecret(ctx.projectId, ctx.organizationId, params.agentId!, params.secretId!),
  }),
  route({
    method: "DELETE",
    path: "/agents/:agentId/grants/secrets/:secretId",
    response: returnsNothing("Detached (idempotent)"),
    access: "P",
    handler: async ({ services, ctx, params }) => {
      await services.grants.revokeSecret(ctx.projectId, params.agentId!, params.secretId!);
      return noContent();
    },
  }),
  route({
    method: "GET",
    path: "/connections/:connectionId/grants",
    response: returns(S.ConnectionGrants),
    access: "P",
    handler: ({ services, ctx, params }) => services.grants.grantsOfConnection(ctx.projectId, ctx.organizationId, params.connectionId!),
  }),
  route({
    method: "GET",
    path: "/agents/:agentId/secrets",
    response: returns(T.Array(T.String()), "The ids of the secrets granted to the agent"),
    access: "P",
    handler: async ({ services, ctx, params }) => {
      await services.agents.get(ctx.projectId, params.agentId!);
      return services.grants.secretIds(params.agentId!);
    },
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/secrets",
    response: returns(S.Success),
    access: "P",
    body: T.Object({ secretIds: T.Array(T.String(), { maxItems: 10000 }) }),
    handler: async ({ services, ctx, params, body }) => {
      await services.grants.replaceSecrets(ctx.projectId, ctx.organizationId, params.agentId!, body.secretIds);
      return { success: true };
    },
  }),
  route({
    method: "GET",
    path: "/agents/:agentId/connections",
    response: returns(S.AgentConnectionAssignments),
    access: "P",
    handler: async ({ services, ctx, params }) => {
      await services.agents.get(ctx.projectId, params.agentId!);
      return (await services.grants.connectionGrantRows(params.agentId!)).map((g) => ({ appConnectionId: g.connectionId, sessionPolicy: g.resources ?? null }));
    },
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/connections",
    response: returns(S.Success),
    access: "P",
    body: T.Object({
      connections: T.Array(T.Object({ appConnectionId: T.String({ minLength: 1 }), sessionPolicy: T.Optional(T.Union([T.Record(T.String(), T.Unknown()), T.Null()])) }), {
        maxItems: 1000,
      }),
    }),
    handler: async ({ services, ctx, params, body }) => {
      await services.grants.replaceConnections(ctx.projectId, ctx.organizationId, params.agentId!, body.connections);
      return { success: true };
    },
  }),
  route({
    method: "GET",
    path: "/agents/:agentId/effective-credentials",
    response: returns(S.EffectiveCredentials),
    access: "P",
    handler: async ({ services, ctx, params }) => {
      const agent = await services.agents.get(ctx.projectId, params.agentId!);
      const granted = new Set(await services.grants.secretIds(agent.id));
      const grantedConnections = new Map((await services.grants.connectionGrantRows(agent.id)).map((g) => [g.connectionId, g]));
      const secrets = await services.secrets.listForProject(ctx.projectId, ctx.organizationId);
      const rulesAgent = { id: agent.id, name: agent.name, projectId: agent.projectId, organizationId: ctx.organizationId };
      const rules = await agentRules(services, ctx.organizationId, ctx.projectId, rulesAgent);
      const scopes = [rules.organization, rules.project];
      const judge = await services.apps.toolJudge({ scope: "project", projectId: ctx.projectId, organizationId: ctx.organizationId }, rulesAgent);
      return {
        agentId: agent.id,
        mode: agent.mode,
        secrets: secrets.map((s) => ({
          id: s.id,
          name: s.name,
          type: s.type,
          scope: s.scope,
          hostPattern: s.hostPattern,
          status: agent.mode === "grants" && !granted.has(s.id) ? "not_granted" : credentialStatus(scopes, s),
        })),
        connections: (await services.connections.listForProject(ctx.projectId, ctx.organizationId)).map((c) => {
          const grant = grantedConnections.get(c.id);
          return {
            id: c.id,
            provider: c.provider,
            label: c.label,
            scope: c.scope,
            status: agent.mode === "grants" && !grant ? "not_granted" : connectionStatus(judge, c.id, c.provider),
            access: grant?.access ?? null,
          };
        }),
      };
    },
  }),
];
