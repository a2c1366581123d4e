// The partner portal's organizations (docs/api.md#partners, cloud only; access `partner`): create one for a customer
// (its credentials and claim link shown once), list and read them with their status, delete one nobody has
// claimed, replace its claim link, rotate its credentials, and manage its projects.
import { Type as T } from "@sinclair/typebox";
import { ApiError, badRequest, notFound } from "../../core/errors.ts";
import { projectView } from "../../services/projects.ts";
import type { PartnerContext } from "../auth.ts";
import { created, noContent, route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns, returnsCreated, returnsNothing } from "../responses.ts";

export const PartnerOrgBody = T.Object({ name: T.String({ trim: true, minLength: 1, maxLength: 255 }) });
export const PartnerProjectBody = T.Object({ name: T.String({ trim: true }) });

const partner = (ctx: PartnerContext) => ctx.partnerId;
const PROJECT_NAME = "Name must be 2-50 characters with at least one letter or number";

export const partnerRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/partner/orgs",
    modes: ["cloud"],
    response: returns(T.Array(R.PartnerOrganization)),
    access: "partner",
    handler: ({ services, ctx }) => services.partners.listOrganizations(partner(ctx)),
  }),
  route({
    method: "POST",
    path: "/partner/orgs",
    modes: ["cloud"],
    response: returnsCreated(R.PartnerOrgCreated, "The organization, its credentials and claim link (shown only here)"),
    access: "partner",
    body: PartnerOrgBody,
    handler: async ({ services, ctx, body }) => created(await services.partners.createOrganization(partner(ctx), body.name)),
  }),
  route({
    method: "GET",
    path: "/partner/orgs/:orgId",
    modes: ["cloud"],
    response: returns(R.PartnerOrganization),
    access: "partner",
    handler: async ({ services, ctx, params }) => services.partners.view(await services.partners.organization(partner(ctx), params.orgId)),
  }),
  route({
    method: "DELETE",
    path: "/partner/orgs/:orgId",
    modes: ["cloud"],
    response: returnsNothing("Deleted with everything in it (only while unclaimed)"),
    access: "partner",
    handler: async ({ services, ctx, params }) => {
      await services.partners.deleteOrganization(partner(ctx), params.orgId);
      return noContent();
    },
  }),
  route({
    method: "POST",
    path: "/partner/orgs/:orgId/claim-link",
    modes: ["cloud"],
    response: returns(R.ClaimLink, "A new claim link; the previous one dies"),
    access: "partner",
    handler: async ({ services, ctx, params }) => ({ claimUrl: await services.partners.reissueClaimLink(partner(ctx), params.orgId) }),
  }),
  route({
    method: "POST",
    path: "/partner/orgs/:orgId/rotate-tokens",
    modes: ["cloud"],
    response: returns(R.RotatedTokens, "New org key, project key and agent token; the old ones die at once"),
    access: "partner",
    handler: ({ services, ctx, params }) => services.partners.rotateTokens(partner(ctx), params.orgId),
  }),
  route({
    method: "GET",
    path: "/partner/orgs/:orgId/projects",
    modes: ["cloud"],
    response: returns(T.Array(R.Project)),
    access: "partner",
    handler: async ({ services, ctx, params }) => (await services.partners.projectsOf(partner(ctx), params.orgId)).map(projectView),
  }),
  route({
    method: "POST",
    path: "/partner/orgs/:orgId/projects",
    modes: ["cloud"],
    response: returnsCreated(R.Project, "The project, with a Default Agent"),
    access: "partner",
    body: PartnerProjectBody,
    handler: async ({ services, ctx, params, body }) => {
      const name = body.name.trim();
      if (name.length < 2 || name.length > 50 || !/[\p{L}\p{N}]/u.test(name)) throw ApiError.flat(400, PROJECT_NAME);
      return created(projectView(await services.partners.createProject(partner(ctx), params.orgId, name)));
    },
  }),
  route({
    method: "DELETE",
    path: "/partner/orgs/:orgId/projects/:projectId",
    modes: ["cloud"],
    response: returnsNothing(),
    access: "partner",
    handler: async ({ services, ctx, params }) => {
      await services.partners.deleteProject(partner(ctx), params.orgId, params.projectId);
      return noContent();
    },
  }),
];

export const BudgetBody = T.Object({
  limitCents: T.Integer({ minimum: 1, maximum: 100000000, error: "limitCents must be between 1 and 100000000" }),
  period: T.Optional(T.Union([T.Literal("monthly"), T.Literal("total")], { error: "period must be one of: monthly, total" })),
});

/** Spend budgets of a partner's LLM keys, per organization (docs/budgets.md#partner-budgets; metering and admission: docs/budgets.md#admission). */
export const partnerBudgetRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/partner/orgs/:orgId/budgets",
    modes: ["cloud"],
    response: returns(T.Array(R.SpendBudget), "The organization's budgets, each with its spend this period"),
    access: "partner",
    handler: async ({ services, ctx, params }) => {
      const org = await services.partners.organization(partner(ctx), params.orgId);
      return services.partnerBudgets.list(org.id);
    },
  }),
  route({
    method: "POST",
    path: "/partner/orgs/:orgId/secrets/:secretId/budget",
    modes: ["cloud"],
    response: returns(R.SpendBudget, "The budget, created or replaced"),
    access: "partner",
    role: "admin",
    body: BudgetBody,
    handler: async ({ services, ctx, params, body }) => {
      const org = await services.partners.organization(partner(ctx), params.orgId);
      const secret = await services.secrets.find({ scope: "partner", partnerId: partner(ctx) }, params.secretId);
      if (secret.type === "generic") throw badRequest("Budgets are only supported for LLM keys");
      return services.partnerBudgets.set(secret.id, org.id, body.limitCents, body.period ?? "monthly");
    },
  }),
  route({
    method: "DELETE",
    path: "/partner/orgs/:orgId/secrets/:secretId/budget",
    modes: ["cloud"],
    response: returnsNothing(),
    access: "partner",
    role: "admin",
    handler: async ({ services, ctx, params }) => {
      const org = await services.partners.organization(partner(ctx), params.orgId);
      const secret = await services.secrets.find({ scope: "partner", partnerId: partner(ctx) }, params.secretId);
      if (!(await services.partnerBudgets.delete(secret.id, org.id))) throw notFound("Budget not found");
      return noContent();
    },
  }),
];

export const PartnerMemberBody = T.Object({
  email: T.String({ trim: true, maxLength: 255, format: "email" }),
  role: T.Optional(T.Union([T.Literal("admin"), T.Literal("member")], { error: "role must be one of: admin, member" })),
});
export const PartnerRoleBody = T.Object({ role: T.Union([T.Literal("admin"), T.Literal("member")], { error: "role must be one of: admin, member" }) });

/** The partner's people (docs/api.md#partners): any member reads the list; owner and admins manage it. */
export const partnerMemberRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/partner/members",
    modes: ["cloud"],
    response: returns(T.Array(R.PartnerMember)),
    access: "partner",
    handler: ({ services, ctx }) => services.partners.members(partner(ctx)),
  }),
  route({
    method: "POST",
    path: "/partner/members",
    modes: ["cloud"],
    response: returns(R.PartnerMemberAdded, "The member, with an invite URL when the person has no password yet"),
    access: "partner",
    role: "admin",
    body: PartnerMemberBody,
    handler: ({ services, ctx, body }) => services.partners.addMember(partner(ctx), body.email, body.role ?? "member"),
  }),
  route({
    method: "PATCH",
    path: "/partner/members/:userId/role",
    modes: ["cloud"],
    response: returns(R.Success),
    access: "partner",
    role: "admin",
    body: PartnerRoleBody,
    handler: async ({ services, ctx, params, body }) => {
      await services.partners.setMemberRole(partner(ctx), params.userId, body.role);
      return R.SUCCESS;
    },
  }),
  route({
    method: "DELETE",
    path: "/partner/members/:userId",
    modes: ["cloud"],
    response: returnsNothing(),
    access: "partner",
    role: "admin",
    handler: async ({ services, ctx, params }) => {
      await services.partners.removeMember(partner(ctx), params.userId);
      return noContent();
    },
  }),
];
