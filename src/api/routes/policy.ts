// Policy rules (CONTRACT §5.3) at project scope (`/policy/*`, P·any) and organization scope
// (`/org/policy/*`, O·admin). Every validation failure is a 422 envelope.
import { Type as T, type TSchema } from "@sinclair/typebox";
import { ApiError } from "../../core/errors.ts";
import { HOST_MESSAGES, hostPatternError, pathPatternError } from "../../core/patterns.ts";
import { findApp } from "../../apps/index.ts";
import { POLICY_METHODS, type RuleInput } from "../../core/policy.ts";
import { agentRules } from "../../services/agentRules.ts";
import type { Services } from "../../services/index.ts";
import type { PolicyOwner, RuleFields } from "../../services/policy.ts";
import type { RuleTarget } from "../../core/model.ts";
import type { Access, RequestContext, RoleGate } from "../auth.ts";
import { created, noContent, route, type RouteDef } from "../route.ts";
import { validateAt } from "../validate.ts";
import * as S from "../schemas.ts";
import { returns, returnsCreated, returnsNothing } from "../responses.ts";

const strict = { additionalProperties: false } as const;
const literals = (...values: string[]) => T.Union(values.map((v) => T.Literal(v)));
const nullable = <T extends TSchema>(s: T) => T.Union([s, T.Null()]);

const Condition = T.Object(
  { target: T.Literal("body"), operator: T.Literal("contains"), value: T.String({ minLength: 1, maxLength: 1000 }) },
  strict,
);
const Identity = T.Object({ type: T.Literal("agent"), id: T.String({ minLength: 1, maxLength: 255 }) }, strict);
const tools = T.Optional(T.Array(T.String({ minLength: 1, maxLength: 255 }), { maxItems: 200 }));

const TARGETS: Record<RuleTarget["kind"], TSchema> = {
  network: T.Object(
    {
      kind: T.Literal("network"),
      // The secret host rules (§5.2): absent reads like blank; the length check names the nested field.
      hostPattern: T.String({ trim: true, maxLength: 255, missing: HOST_MESSAGES.required, refine: (v: string) => hostPatternError(v, { allowAny: true }) }),
      pathPattern: T.Optional(T.String({ trim: true, maxLength: 1000, refine: (v: string) => pathPatternError(v) })),
      method: T.Optional(literals(...POLICY_METHODS)),
    },
    strict,
  ),
  app: T.Object({ kind: T.Literal("app"), provider: T.String({ minLength: 1, maxLength: 255 }), tools }, strict),
  connection: T.Object({ kind: T.Literal("connection"), connectionId: T.String({ minLength: 1, maxLength: 255 }), tools }, strict),
  secret: T.Object(
    { kind: T.Literal("secret"), secretId: T.Optional(T.String({ minLength: 1, maxLength: 255 })), secretScope: T.Optional(literals("project", "organization")) },
    strict,
  ),
};
const KINDS = Object.keys(TARGETS);

function checkTargets(raw: unknown[] | undefined): RuleTarget[] | undefined {
  if (raw === undefined) return undefined;
  return raw.map((item, i) => {
    const path = `targets[${i}]`;
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw ApiError.envelope(422, `${path} must be an object`);
    const kind = (item as { kind?: unknown }).kind;
    if (kind === undefined || kind === null) throw ApiError.envelope(422, `${path}.kind is required`);
    if (typeof kind !== "string" || !KINDS.includes(kind)) throw ApiError.envelope(422, `${path}.kind must be one of: ${KINDS.join(", ")}`);
    const r = validateAt(TARGETS[kind as RuleTarget["kind"]], item, path);
    if (!r.ok) {
      // The shared path-pattern messages name the bare field; here it sits inside targets[i].
      const m = r.message;
      throw typeof m === "string" ? ApiError.envelope(422, m.startsWith("pathPattern ") ? `${path}.${m}` : m) : m;
    }
    const target = r.value as RuleTarget;
    if ((target.kind === "app" || target.kind === "connection") && !target.tools) target.tools = [];
    return target;
  });
}

const fields = {
  name: T.String({ minLength: 1, maxLength: 255, trim: true }),
  description: T.Optional(nullable(T.String({ maxLength: 1000 }))),
  enabled: T.Optional(T.Boolean()),
  action: literals("allow", "block"),
  rateLimit: T.Optional(nullable(T.Integer({ minimum: 1, maximum: 1_000_000 }))),
  rateLimitWindow: T.Optional(nullable(literals("minute", "hour", "day"))),
  requireApproval: T.Optional(T.Boolean()),
  conditions: T.Optional(nullable(T.Array(Condition, { maxItems: 10 }))),
  identities: T.Optional(T.Array(Identity, { maxItems: 100 })),
  targets: T.Optional(T.Array(T.Unknown(), { maxItems: 100 })),
};
const CreateRuleBody = T.Object(fields);
const UpdateRuleBody = T.Object({ ...fields, name: T.Optional(fields.name), action: T.Optional(fields.action) });

type Body = Record<string, any>;

function createFields(b: Body): RuleFields {
  return {
    name: b.name,
    description: b.description ?? null,
    enabled: b.enabled ?? true,
    action: b.action,
    rateLimit: b.rateLimit ?? null,
    rateLimitWindow: b.rateLimitWindow ?? null,
    requireApproval: b.requireApproval ?? false,
    conditions: b.conditions ?? null,
    identities: b.identities ?? [],
    targets: checkTargets(b.targets) ?? [],
  };
}

function patchFields(b: Body): Partial<RuleFields> {
  const out: Partial<RuleFields> = {};
  for (const key of ["name", "description", "enabled", "action", "rateLimit", "rateLimitWindow", "requireApproval", "conditions", "identities"] as const) {
    if (b[key] !== undefined) (out as Body)[key] = b[key];
  }
  const targets = checkTargets(b.targets);
  if (targets !== undefined) out.targets = targets;
  return out;
}

const statusOf = (query: URLSearchParams): "draft" | "published" => {
  const s = query.get("status");
  if (s === null || s === "") return "draft";
  if (s !== "draft" && s !== "published") throw ApiError.envelope(422, "status must be one of: draft, published");
  return s;
};

const VIRTUAL_DEFAULT = {
  id: "",
  logicalId: "",
  scope: null,
  status: "draft",
  generation: 0,
  priority: 0,
  enabled: true,
  isDefault: true,
  source: "default",
  name: "Default Rule",
  description: null,
  action: "allow",
  rateLimit: null,
  rateLimitWindow: null,
  requireApproval: false,
  conditions: null,
  identities: [],
  targets: [],
  createdAt: "1970-01-01T00:00:00.000Z",
  updatedAt: "1970-01-01T00:00:00.000Z",
};

function policyRoutesFor(prefix: string, access: Access, role: RoleGate, ownerOf: (ctx: RequestContext) => PolicyOwner): RouteDef[] {
  const noFields = ApiError.envelope(422, "At least one field must be provided");
  return [
    route({
      method: "GET",
      path: `${prefix}/rules`,
      query: S.RulesQuery,
      response: returns(T.Array(S.PolicyRule), "Custom rules by priority"),
      access,
      role,
      handler: async ({ services, ctx, query }) => {
        const owner = ownerOf(ctx);
        const rules = (await services.policy.customRules(owner, statusOf(query))).map((r) => services.policy.view(r));
        if (query.get("include") !== "managed") return rules;
        return [...rules, ...(await managedRules(services, owner))];
      },
    }),
    route({
      method: "POST",
      path: `${prefix}/rules`,
      response: returnsCreated(S.PolicyRule, "The draft rule"),
      access,
      role,
      body: CreateRuleBody,
      unprocessable: true,
      handler: async ({ services, ctx, body }) => created(services.policy.view(await services.policy.create(ownerOf(ctx), createFields(body)))),
    }),
    route({
      method: "PUT",
      path: `${prefix}/rules/order`,
      response: returns(T.Array(S.PolicyRule), "The full draft list, priorities renumbered 1..N"),
      access,
      role,
      body: T.Object({ orderedIds: T.Array(T.String(), { minItems: 1, maxItems: 10000 }) }),
      unprocessable: true,
      handler: async ({ services, ctx, body }) => (await services.policy.reorder(ownerOf(ctx), body.orderedIds)).map((r) => services.policy.view(r)),
    }),
    route({
      method: "GET",
      path: `${prefix}/rules/:ruleId`,
      response: returns(S.PolicyRule),
      access,
      role,
      handler: async ({ services, ctx, params }) => services.policy.view(await services.policy.getDraft(ownerOf(ctx), params.ruleId!)),
    }),
    route({
      method: "PATCH",
      path: `${prefix}/rules/:ruleId`,
      response: returns(S.PolicyRule),
      access,
      role,
      body: UpdateRuleBody,
      emptyBody: noFields,
      unprocessable: true,
      handler: async ({ services, ctx, params, body }) => {
        const owner = ownerOf(ctx);
        await services.policy.getDraft(owner, params.ruleId!);
        const patch = patchFields(body);
        if (Object.keys(patch).length === 0) throw noFields;
        return services.policy.view(await services.policy.update(owner, params.ruleId!, patch));
      },
    }),
    route({
      method: "DELETE",
      path: `${prefix}/rules/:ruleId`,
      response: returnsNothing(),
      access,
      role,
      handler: async ({ services, ctx, params }) => {
        await services.policy.delete(ownerOf(ctx), params.ruleId!);
        return noContent();
      },
    }),
    route({
      method: "GET",
      path: `${prefix}/default`,
      query: S.StatusQuery,
      response: returns(S.PolicyRule, "The Default Rule (virtual, with an empty id, when none is stored)"),
      access,
      role,
      handler: async ({ services, ctx, query }) => {
        const owner = ownerOf(ctx);
        const row = await services.policy.defaultRule(owner, statusOf(query));
        return row ? services.policy.view(row) : { ...VIRTUAL_DEFAULT, scope: owner.scope };
      },
    }),
    route({
      method: "PATCH",
      path: `${prefix}/default`,
      response: returns(S.PolicyRule, "The draft Default Rule"),
      access,
      role,
      body: T.Object({ action: literals("allow", "block") }),
      unprocessable: true,
      handler: async ({ services, ctx, body }) => services.policy.view(await services.policy.setDefault(ownerOf(ctx), body.action as "allow" | "block")),
    }),
    route({
      method: "POST",
      path: `${prefix}/publish`,
      response: returns(S.PublishResult),
      access,
      role,
      handler: async ({ services, ctx }) => {
        const user = ctx.userId ? await services.orgs.getUser(ctx.userId) : undefined;
        return services.policy.publish(ownerOf(ctx), user ? { name: user.name, email: user.email } : null);
      },
    }),
    route({
      method: "GET",
      path: `${prefix}/effective-app-permissions`,
      query: S.EffectivePermissionsQuery,
      response: returns(S.EffectiveAppPermissions),
      access,
      role,
      handler: ({ services, ctx, query }) => {
        const provider = query.get("provider")?.trim();
        if (!provider) throw ApiError.envelope(422, "provider is required");
        if (!findApp(provider)?.tools.length) throw ApiError.flat(404, `No permission definition for provider: ${provider}`);
        const owner = ownerOf(ctx);
        const agentId = owner.scope === "project" ? query.get("agentId")?.trim() || null : null;
        const connectionId = owner.scope === "project" ? query.get("connectionId")?.trim() || null : null;
        return services.apps.effectivePermissions(owner, provider, agentId, connectionId);
      },
    }),
    route({
      method: "GET",
      path: `${prefix}/last-publish`,
      response: returns(S.LastPublish, "The last publish, or null"),
      access,
      role,
      handler: ({ services, ctx }) => services.policy.lastPublish(ownerOf(ctx)),
    }),
  ];
}

/** The live managed rules of a scope, read-only: blocklist rules, and the grant rules of the project's agents. */
async function managedRules(services: Services, owner: PolicyOwner) {
  const blocklist = await services.blocklist.managedRules(owner.organizationId, owner.scope === "project" ? owner.projectId : null);
  const rules: RuleInput[] = owner.scope === "project" ? [...blocklist.project] : [...blocklist.organization];
  if (owner.scope === "project") {
    for (const agent of await services.agents.list(owner.projectId)) {
      const agentScope = await agentRules(services, owner.organizationId, owner.projectId, { ...agent, projectId: owner.projectId, organizationId: owner.organizationId });
      rules.push(...agentScope.project.ordered.filter((r) => r.source === "grant"));
    }
  }
  const epoch = "1970-01-01T00:00:00.000Z";
  return rules.map((r) => ({
    ...VIRTUAL_DEFAULT,
    ...r,
    scope: owner.scope,
    status: "published",
    generation: 0,
    priority: 0,
    description: null,
    identities: r.identities.map((i) => ({ type: "agent", id: i.id })),
    createdAt: epoch,
    updatedAt: epoch,
  }));
}

export const policyRoutes: RouteDef[] = [
  ...policyRoutesFor("/policy", "P", "any", (ctx) => ({ scope: "project", organizationId: ctx.organizationId, projectId: ctx.projectId })),
  ...policyRoutesFor("/org/policy", "O", "admin", (ctx) => ({ scope: "organization", organizationId: ctx.organizationId })),
];
