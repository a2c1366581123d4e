// The calling user (docs/api.md#users-and-keys): profile and personal project API key.
import { Type as T } from "@sinclair/typebox";
import { notFound } from "../../core/errors.ts";
import type { RequestContext } from "../auth.ts";
import type { Services } from "../../services/index.ts";
import { route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns } from "../responses.ts";

export const UpdateUserBody = T.Object({ name: T.String({ minLength: 1, maxLength: 255, trim: true }) });

async function currentUser(services: Services, ctx: RequestContext) {
  const user = ctx.userId ? await services.orgs.getUser(ctx.userId) : undefined;
  if (!user) throw notFound("User not found");
  return user;
}

const projectKeyHolder = (ctx: RequestContext) => ({ kind: "project" as const, userId: ctx.userId, projectId: ctx.projectId, organizationId: ctx.organizationId });

export const userRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/user",
    response: returns(R.User),
    access: "organization",
    handler: async ({ services, ctx }) => {
      const u = await currentUser(services, ctx);
      return { id: u.id, email: u.email, name: u.name, createdAt: u.createdAt };
    },
  }),
  route({
    method: "PATCH",
    path: "/user",
    response: returns(R.UserUpdated),
    access: "organization",
    body: UpdateUserBody,
    handler: async ({ services, ctx, body }) => {
      const u = (await services.orgs.updateUserName((await currentUser(services, ctx)).id, body.name))!;
      return { id: u.id, email: u.email, name: u.name };
    },
  }),
  route({
    method: "GET",
    path: "/user/api-key",
    response: returns(R.ApiKey, "The caller's key for the project, created if missing"),
    access: "project-explicit",
    handler: async ({ services, ctx }) => ({ apiKey: await services.apiKeys.keyFor(projectKeyHolder(ctx)) }),
  }),
  route({
    method: "POST",
    path: "/user/api-key/regenerate",
    response: returns(R.ApiKey, "The new key; the old one is invalid at once"),
    access: "project-explicit",
    handler: async ({ services, ctx }) => ({ apiKey: await services.apiKeys.regenerate(projectKeyHolder(ctx)) }),
  }),
];
