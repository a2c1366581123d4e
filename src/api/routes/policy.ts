// Policy rules (docs/policy.md#rules) at project scope (`/policy/*`, project·any) and organization scope
// (`/org/policy/*`, organization·admin). Every validation failure is a 422 envelope.
import { Type as T, type Static } from "@sinclair/typebox";
import { ApiError } from "../../core/errors.ts";
import { HOST_MESSAGES, hostPatternError, pathPatternError } from "../../core/patterns.ts";
import { findApp } from "../../apps/index.ts";
import { POLICY_METHODS } from "../../core/policy.ts";
import type { PolicyOwner, RuleFields } from "../../services/policy.ts";
import type { PolicyScope, RuleTarget } from "../../core/model.ts";
import { Enum, Nullable } from "../../core/records/common.ts";
import type { PolicyRule } from "../../core/records/policy.ts";
import type { RequestContext, RoleGate } from "../auth.ts";
import { created, noContent, route, type RouteDef } from "../route.ts";
import { validateAt } from "../validate.ts";
import * as R from "../../core/records/index.ts";
import * as S from "../schemas.ts";
import { returns, returnsCreated, returnsNothing } from "../responses.ts";

const strict = { additionalProperties: false } as const;

const Condition = T.Object(
  { target: T.Literal("body"), operator: T.Literal("contains"), value: T.String({ minLength: 1, maxLength: 1000 }) },
  strict,
);
const Identity = T.Object({ type: T.Literal("agent"), id: T.String({ minLength: 1, maxLength: 255 }) }, strict);
const tools = T.Optional(T.Array(T.String({ minLength: 1, maxLength: 255 }), { maxItems: 200 }));

const TARGETS = {
  network: T.Object(
    {
      kind: T.Literal("network"),
      // The secret host rules (docs/injection.md#secrets): absent reads like blank; the length check names the nested field.
      hostPattern: T.String({ trim: true, maxLength: 255, missing: HOST_MESSAGES.required, refine: (v: string) => hostPatternError(v, { allowAny: true }) }),
      pathPattern: T.Optional(T.String({ trim: true, maxLength: 1000, refine: (v: string) => pathPatternError(v) })),
      method: T.Optional(Enum(...POLICY_METHODS)),
    },
    strict,
  ),
  app: T.Object({ kind: T.Literal("app"), provider: T.String({ minLength: 1, maxLength: 255 }), tools }, strict),
  connection: T.Object({ kind: T.Literal("connection"), connectionId: T.String({ minLength: 1, maxLength: 255 }), tools }, strict),
  secret: T.Object(
    { kind: T.Literal("secret"), secretId: T.Optional(T.String({ minLength: 1, maxLength: 255 })), secretScope: T.Optional(Enum("project", "organization")) },
    strict,
  ),
};
const KINDS = Object.keys(TARGETS);
const isKind = (kind: string): kind is RuleTarget["kind"] => KINDS.includes(kind);

function checkTargets(raw: unknown[] | undefined): RuleTarget[] | undefined {
  if (raw === undefined) return undefined;
  return raw.map((item, i) => {
    const path = `targets[${i}]`;
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw ApiError.envelope(422, `${path} must be an object`);
    const kind: unknown = "kind" in item ? item.kind : undefined;
    if (kind === undefined || kind === null) throw ApiError.envelope(422, `${path}.kind is required`);
    if (typeof kind !== "string" || !isKind(kind)) throw ApiError.envelope(422, `${path}.kind must be one of: ${KINDS.join(", ")}`);
    const r = validateAt(TARGETS[kind], item, path);
    if (!r.ok) {
      // The shared path-pattern messages name the bare field; here it sits inside targets[i].
      const m = r.message;
      throw typeof m === "string" ? ApiError.envelope(422, m.startsWith("pathPattern ") ? `${path}.${m}` : m) : m;
    }
    const target = r.value;
    return target.kind === "app" || target.kind === "connection" ? { ...target, tools: target.tools ?? [] } : target;
  });
}

const fields = {
  name: T.String({ minLength: 1, maxLength: 255, trim: true }),
  description: T.Optional(Nullable(T.String({ maxLength: 1000 }))),
  enabled: T.Optional(T.Boolean()),
  action: Enum("allow", "block"),
  rateLimit: T.Optional(Nullable(T.Integer({ minimum: 1, maximum: 1_000_000 }))),
  rateLimitWindow: T.Optional(Nullable(Enum("minute", "hour", "day"))),
  requireApproval: T.Optional(T.Boolean()),
  conditions: T.Optional(Nullable(T.Array(Condition, { maxItems: 10 }))),
  identities: T.Optional(T.Array(Identity, { maxItems: 100 })),
  targets: T.Optional(T.Array(T.Unknown(), { maxItems: 100 })),
};
const CreateRuleBody = T.Object(fields);
const UpdateRuleBody = T.Object({ ...fields, name: T.Optional(fields.name), action: T.Optional(fields.action) });

function createFields(b: Static<typeof CreateRuleBody>): RuleFields {
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

/** The fields a PATCH names (the validated body holds only those). */
function patchFields(b: Static<typeof UpdateRuleBody>): Partial<RuleFields> {
  const { targets, ...named } = b;
  const checked = checkTargets(targets);
  return checked === undefined ? named : { ...named, targets: checked };
}

const statusOf = (query: URLSearchParams): "draft" | "published" => {
  const s = query.get("status");
  if (s === null || s === "") return "draft";
  if (s !== "draft" && s !== "published") throw ApiError.envelope(422, "status must be one of: draft, published");
  return s;
};

/** The Default Rule of a scope that has none stored: allow, with an empty id. */
const virtualDefault = (scope: PolicyScope): PolicyRule => ({
  id: "",
  logicalId: "",
  scope,
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
});

function policyRoutesFor(prefix: "/policy" | "/org/policy", access: "project" | "organization", role: RoleGate, ownerOf: (ctx: RequestContext) => PolicyOwner): RouteDef[] {
  const noFields = ApiError.envelope(422, "At least one field must be provided");
  return [
    route({
      method: "GET",
      path: `${prefix}/rules`,
      query: S.RulesQuery,
      response: returns(T.Array(R.PolicyRule), "Custom rules by priority"),
      access,
      role,
      handler: async ({ services, ctx, query }) => {
        const owner = ownerOf(ctx);
        const rules = (await services.policy.customRules(owner, statusOf(query))).map((r) => services.policy.view(r));
        if (query.get("include") !== "managed") return rules;
        return [...rules, ...(await services.policy.managedRules(owner))];
      },
    }),
    route({
      method: "POST",
      path: `${prefix}/rules`,
      response: returnsCreated(R.PolicyRule, "The draft rule"),
      access,
      role,
      body: CreateRuleBody,
      unprocessable: true,
      handler: async ({ services, ctx, body }) => created(services.policy.view(await services.policy.create(ownerOf(ctx), createFields(body)))),
    }),
    route({
      method: "PUT",
      path: `${prefix}/rules/order`,
      response: returns(T.Array(R.PolicyRule), "The full draft list, priorities renumbered 1..N"),
      access,
      role,
      body: T.Object({ orderedIds: T.Array(T.String(), { minItems: 1, maxItems: 10000 }) }),
      unprocessable: true,
      handler: async ({ services, ctx, body }) => (await services.policy.reorder(ownerOf(ctx), body.orderedIds)).map((r) => services.policy.view(r)),
    }),
    route({
      method: "GET",
      path: `${prefix}/rules/:ruleId`,
      response: returns(R.PolicyRule),
      access,
      role,
      handler: async ({ services, ctx, params }) => services.policy.view(await services.policy.getDraft(ownerOf(ctx), params.ruleId)),
    }),
    route({
      method: "PATCH",
      path: `${prefix}/rules/:ruleId`,
      response: returns(R.PolicyRule),
      access,
      role,
      body: UpdateRuleBody,
      emptyBody: noFields,
      unprocessable: true,
      handler: async ({ services, ctx, params, body }) => {
        const owner = ownerOf(ctx);
        await services.policy.getDraft(owner, params.ruleId);
        const patch = patchFields(body);
        if (Object.keys(patch).length === 0) throw noFields;
        return services.policy.view(await services.policy.update(owner, params.ruleId, patch));
      },
    }),
    route({
      method: "DELETE",
      path: `${prefix}/rules/:ruleId`,
      response: returnsNothing(),
      access,
      role,
      handler: async ({ services, ctx, params }) => {
        await services.policy.delete(ownerOf(ctx), params.ruleId);
        return noContent();
      },
    }),
    route({
      method: "GET",
      path: `${prefix}/default`,
      query: S.StatusQuery,
      response: returns(R.PolicyRule, "The Default Rule (virtual, with an empty id, when none is stored)"),
      access,
      role,
      handler: async ({ services, ctx, query }) => {
        const owner = ownerOf(ctx);
        const row = await services.policy.defaultRule(owner, statusOf(query));
        return row ? services.policy.view(row) : virtualDefault(owner.scope);
      },
    }),
    route({
      method: "PATCH",
      path: `${prefix}/default`,
      response: returns(R.PolicyRule, "The draft Default Rule"),
      access,
      role,
      body: T.Object({ action: Enum("allow", "block") }),
      unprocessable: true,
      handler: async ({ services, ctx, body }) => services.policy.view(await services.policy.setDefault(ownerOf(ctx), body.action)),
    }),
    route({
      method: "POST",
      path: `${prefix}/publish`,
      response: returns(R.PublishResult),
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
      response: returns(R.EffectiveAppPermissions),
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
      response: returns(R.LastPublish, "The last publish, or null"),
      access,
      role,
      handler: ({ services, ctx }) => services.policy.lastPublish(ownerOf(ctx)),
    }),
  ];
}

export const policyRoutes: RouteDef[] = [
  ...policyRoutesFor("/policy", "project", "any", (ctx) => ({ scope: "project", organizationId: ctx.organizationId, projectId: ctx.projectId })),
  ...policyRoutesFor("/org/policy", "organization", "admin", (ctx) => ({ scope: "organization", organizationId: ctx.organizationId })),
];
