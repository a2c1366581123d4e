// Agent grants and credential assignments (CONTRACT §5.1 "Grants", effective credentials, the legacy
// `/agents/{id}/secrets` and `/agents/{id}/connections`). Grant endpoints answer every non-auth failure
// with a flat body.
import { t } from "elysia";
import { ApiError } from "../../core/errors.ts";
import { credentialStatus, type RuleInput } from "../../core/policy.ts";
import { CONNECTION_NOT_FOUND } from "../../services/grants.ts";
import type { Services } from "../../services/index.ts";
import type { PolicyRuleRow } from "../../services/policy.ts";
import { noContent, route, type RouteDef } from "../route.ts";

const toolIds = t.Optional(t.Array(t.String({ minLength: 1, maxLength: 255 }), { maxItems: 200 }));
const ConnectionGrantBody = t.Object({
  access: t.Union([t.Literal("full"), t.Literal("custom")]),
  allow: toolIds,
  ask: toolIds,
  resources: t.Optional(t.Unknown()),
});

const connectionNotFound = () => ApiError.flat(404, CONNECTION_NOT_FOUND);

/** The published rules of both scopes that apply to this agent, per scope, plus its grant rules. */
function rulesForAgent(services: Services, organizationId: string, projectId: string, agentId: string, grantRules: RuleInput[]) {
  const published = services.policy.publishedForOrganization(organizationId);
  const applies = (r: PolicyRuleRow) => r.enabled && (r.identities.length === 0 || r.identities.some((i) => i.id === agentId));
  const split = (rows: PolicyRuleRow[], extra: RuleInput[] = []) => ({
    ordered: [...rows.filter((r) => !r.isDefault && applies(r)), ...extra],
    fallback: rows.find((r) => r.isDefault) ?? null,
  });
  return [split(published.organization), split(published.projects.get(projectId) ?? [], grantRules)];
}

export const grantsRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/agents/:agentId/grants",
    access: "P",
    handler: ({ services, ctx, params }) => services.grants.grantSet(ctx.projectId, params.agentId!),
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/grants/connections/:connectionId",
    access: "P",
    body: ConnectionGrantBody,
    handler: ({ services, ctx, params, body }) => {
      if (body.access === "custom") {
        const allow = body.allow ?? [];
        const ask = body.ask ?? [];
        if (allow.length + ask.length === 0) throw ApiError.flat(400, "Custom access needs at least one allowed or approval tool — detach instead.");
        if (allow.some((id) => ask.includes(id))) throw ApiError.flat(400, "A tool can't be both always-allowed and require approval.");
      }
      services.agents.get(ctx.projectId, params.agentId!, "flat");
      // App connections arrive with the apps issue; until then no connection exists to grant.
      throw connectionNotFound();
    },
  }),
  route({
    method: "DELETE",
    path: "/agents/:agentId/grants/connections/:connectionId",
    access: "P",
    handler: ({ services, ctx, params }) => {
      services.agents.get(ctx.projectId, params.agentId!, "flat");
      return noContent();
    },
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/grants/secrets/:secretId",
    access: "P",
    handler: ({ services, ctx, params }) => services.grants.grantSecret(ctx.projectId, ctx.organizationId, params.agentId!, params.secretId!),
  }),
  route({
    method: "DELETE",
    path: "/agents/:agentId/grants/secrets/:secretId",
    access: "P",
    handler: ({ services, ctx, params }) => {
      services.grants.revokeSecret(ctx.projectId, params.agentId!, params.secretId!);
      return noContent();
    },
  }),
  route({
    method: "GET",
    path: "/connections/:connectionId/grants",
    access: "P",
    handler: () => {
      throw connectionNotFound();
    },
  }),
  route({
    method: "GET",
    path: "/agents/:agentId/secrets",
    access: "P",
    handler: ({ services, ctx, params }) => {
      services.agents.get(ctx.projectId, params.agentId!);
      return services.grants.secretIds(params.agentId!);
    },
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/secrets",
    access: "P",
    body: t.Object({ secretIds: t.Array(t.String(), { maxItems: 10000 }) }),
    handler: ({ services, ctx, params, body }) => {
      services.grants.replaceSecrets(ctx.projectId, ctx.organizationId, params.agentId!, body.secretIds);
      return { success: true };
    },
  }),
  route({
    method: "GET",
    path: "/agents/:agentId/connections",
    access: "P",
    handler: ({ services, ctx, params }) => {
      services.agents.get(ctx.projectId, params.agentId!);
      return [];
    },
  }),
  route({
    method: "PUT",
    path: "/agents/:agentId/connections",
    access: "P",
    body: t.Object({
      connections: t.Array(t.Object({ appConnectionId: t.String({ minLength: 1 }), sessionPolicy: t.Optional(t.Union([t.Record(t.String(), t.Unknown()), t.Null()])) }), {
        maxItems: 1000,
      }),
    }),
    handler: ({ services, ctx, params, body }) => {
      services.agents.get(ctx.projectId, params.agentId!);
      if (body.connections.length > 0) throw ApiError.envelope(400, "One or more app connections not found");
      return { success: true };
    },
  }),
  route({
    method: "GET",
    path: "/agents/:agentId/effective-credentials",
    access: "P",
    handler: ({ services, ctx, params }) => {
      const agent = services.agents.get(ctx.projectId, params.agentId!);
      const granted = new Set(services.grants.secretIds(agent.id));
      const secrets = services.secrets.listForProject(ctx.projectId, ctx.organizationId);
      const grantRules: RuleInput[] =
        agent.mode === "grants"
          ? [...granted].map((secretId) => ({
              id: secretId,
              logicalId: secretId,
              scope: "project",
              name: "grant",
              enabled: true,
              isDefault: false,
              source: "grant",
              action: "allow",
              rateLimit: null,
              rateLimitWindow: null,
              requireApproval: false,
              conditions: null,
              identities: [{ id: agent.id }],
              targets: [{ kind: "secret", secretId }],
            }))
          : [];
      const scopes = rulesForAgent(services, ctx.organizationId, ctx.projectId, agent.id, grantRules);
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
        connections: [],
      };
    },
  }),
];
