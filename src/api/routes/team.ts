// The organization's team (docs/api.md#projects-and-team, cloud only): provisions (a placeholder member with a project and a key
// that work at once, and a claim link), the member list, role changes and removal.
import { Type as T } from "@sinclair/typebox";
import { created, noContent, route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns, returnsCreated, returnsNothing } from "../responses.ts";

export const ProvisionBody = T.Object({
  role: T.Optional(T.Union([T.Literal("admin"), T.Literal("member")], { error: "role must be one of: admin, member" })),
  skipOnboarding: T.Optional(T.Boolean()),
});
export const RoleBody = T.Object({ role: T.Union([T.Literal("admin"), T.Literal("member")], { error: "role must be one of: admin, member" }) });

export const teamRoutes: RouteDef[] = [
  route({
    method: "POST",
    path: "/team/provisions",
    modes: ["cloud"],
    response: returnsCreated(R.Provision, "A placeholder member, its project `Default`, its key and a claim link (7 days)"),
    access: "organization",
    role: "admin",
    body: ProvisionBody,
    handler: async ({ services, ctx, body }) => created(await services.team.provision(ctx.organizationId, body.role ?? "member")),
  }),
  route({
    method: "GET",
    path: "/team/members",
    modes: ["cloud"],
    response: returns(T.Array(R.TeamMember)),
    access: "organization",
    handler: ({ services, ctx }) => services.team.members(ctx.organizationId),
  }),
  route({
    method: "PATCH",
    path: "/team/members/:userId",
    modes: ["cloud"],
    response: returns(R.TeamMember),
    access: "organization",
    role: "admin",
    body: RoleBody,
    handler: ({ services, ctx, params, body }) => services.team.setRole(ctx.organizationId, params.userId, body.role),
  }),
  route({
    method: "DELETE",
    path: "/team/members/:userId",
    modes: ["cloud"],
    response: returnsNothing("Removed; their keys in the organization and their sessions are revoked"),
    access: "organization",
    role: "admin",
    handler: async ({ services, ctx, params }) => {
      await services.team.remove(ctx.organizationId, params.userId);
      return noContent();
    },
  }),
];
