// Organization settings and the caller's organization API key (docs/api.md#organization-level-routes). organization·admin.
import { Type as T } from "@sinclair/typebox";
import { forbidden, notFound } from "../../core/errors.ts";
import type { Services } from "../../services/index.ts";
import type { RequestContext } from "../auth.ts";
import { route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns } from "../responses.ts";

export const UpdateOrgBody = T.Object({ name: T.String({ minLength: 1, maxLength: 255, trim: true }) });

async function organizationView(services: Services, id: string) {
  const org = await services.orgs.getOrganization(id);
  if (!org) throw notFound("Organization not found");
  return {
    id: org.id,
    name: org.name,
    slug: org.slug,
    partnerManaged: org.partnerId !== null,
    partnerDetached: org.partnerDetached,
    claimed: org.claimed,
    createdAt: org.createdAt,
  };
}

/**
 * The caller's organization-key holder. A project key (or a session made from one) is refused whatever its
 * holder's role (docs/api.md#credentials): a key for one project must not become a key for all of them.
 */
function orgKeyHolder(ctx: RequestContext) {
  if (ctx.principal.via === "project_key") throw forbidden();
  return { kind: "organization" as const, userId: ctx.userId, organizationId: ctx.organizationId };
}

export const organizationRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/org/settings",
    response: returns(R.Organization),
    access: "organization",
    role: "admin",
    handler: ({ services, ctx }) => organizationView(services, ctx.organizationId),
  }),
  route({
    method: "PATCH",
    path: "/org/settings",
    response: returns(R.Organization),
    access: "organization",
    role: "admin",
    body: UpdateOrgBody,
    handler: async ({ services, ctx, body }) => {
      await services.orgs.rename(ctx.organizationId, body.name);
      return organizationView(services, ctx.organizationId);
    },
  }),
  route({
    method: "GET",
    path: "/org/api-key",
    response: returns(R.ApiKey, "The caller's organization key, created if missing"),
    access: "organization",
    role: "admin",
    handler: async ({ services, ctx }) => ({ apiKey: await services.apiKeys.keyFor(orgKeyHolder(ctx)) }),
  }),
  route({
    method: "POST",
    path: "/org/api-key/regenerate",
    response: returns(R.ApiKey, "The new key; the old one is invalid at once"),
    access: "organization",
    role: "admin",
    handler: async ({ services, ctx }) => ({ apiKey: await services.apiKeys.regenerate(orgKeyHolder(ctx)) }),
  }),
];
