// The organization's side of its partner (docs/api.md#partners, cloud only): the partner secrets it inherits, its
// partner status, and detaching from the partner (after which partner secrets no longer apply).
import { Type as T } from "@sinclair/typebox";
import { badRequest, notFound } from "../../core/errors.ts";
import type { Services } from "../../services/index.ts";
import { route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns } from "../responses.ts";

async function organization(services: Services, id: string) {
  const org = await services.orgs.getOrganization(id);
  if (!org) throw notFound("Organization not found");
  return org;
}

export const orgPartnerRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/org/partner/inherited-secrets",
    modes: ["cloud"],
    response: returns(T.Array(R.Secret), "The partner's secrets that apply to this organization ([] without a partner, or detached)"),
    access: "organization",
    handler: async ({ services, ctx }) => {
      const org = await organization(services, ctx.organizationId);
      if (!org.partnerId || org.partnerDetached) return [];
      return services.secrets.list({ scope: "partner", partnerId: org.partnerId });
    },
  }),
  route({
    method: "GET",
    path: "/org/partner/status",
    modes: ["cloud"],
    response: returns(R.OrgPartnerStatus),
    access: "organization",
    role: "admin",
    handler: async ({ services, ctx }) => {
      const org = await organization(services, ctx.organizationId);
      const partnerName = org.partnerId ? await services.orgs.partnerName(org.partnerId) : null;
      return { partnerManaged: org.partnerId !== null, detached: org.partnerDetached, partnerName };
    },
  }),
  route({
    method: "POST",
    path: "/org/partner/detach",
    modes: ["cloud"],
    response: returns(R.Success, "Detached: the partner's secrets stop applying"),
    access: "organization",
    role: "admin",
    handler: async ({ services, ctx }) => {
      const org = await organization(services, ctx.organizationId);
      if (!org.partnerId) throw badRequest("Organization is not partner-managed");
      if (!org.claimed) throw badRequest("Organization must be claimed before detaching");
      if (org.partnerDetached) throw badRequest("Partner already detached");
      await services.orgs.detachFromPartner(org.id);
      return R.SUCCESS;
    },
  }),
];
