// App connections as a resource (CONTRACT §5.9) and at organization level (§5.13): list, read, rename,
// delete. A project sees its own connections and its organization's.
import { t } from "elysia";
import { noContent, route, type RouteDef } from "../route.ts";

const LabelBody = t.Object({ label: t.String({ minLength: 1, maxLength: 255, trim: true, blankIsAbsent: true, missing: "Label is required" }) });

export const connectionsRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/connections",
    access: "P",
    handler: ({ services, ctx, query }) => services.connections.listForProject(ctx.projectId, ctx.organizationId, query.get("provider")).map((r) => services.connections.view(r)),
  }),
  route({
    method: "GET",
    path: "/connections/:connectionId",
    access: "P",
    handler: ({ services, ctx, params }) => services.connections.view(services.connections.visibleToProject(ctx.projectId, ctx.organizationId, params.connectionId!)),
  }),
  route({
    method: "PATCH",
    path: "/connections/:connectionId",
    access: "P",
    body: LabelBody,
    handler: ({ services, ctx, params, body }) => services.connections.rename(services.connections.visibleToProject(ctx.projectId, ctx.organizationId, params.connectionId!), body.label),
  }),
  route({
    method: "DELETE",
    path: "/connections/:connectionId",
    access: "P",
    handler: ({ services, ctx, params }) => {
      services.connections.delete(services.connections.visibleToProject(ctx.projectId, ctx.organizationId, params.connectionId!));
      return noContent();
    },
  }),
  route({
    method: "GET",
    path: "/org/connections",
    access: "O",
    role: "admin",
    handler: ({ services, ctx, query }) =>
      services.connections.listForOwner({ scope: "organization", organizationId: ctx.organizationId }, query.get("provider")).map((r) => services.connections.orgView(r)),
  }),
  // One path position serves a provider (GET) and a connection id (PATCH, DELETE), as the contract names them.
  route({
    method: "GET",
    path: "/org/connections/:key",
    access: "O",
    role: "admin",
    handler: ({ services, ctx, params }) =>
      services.connections.listForOwner({ scope: "organization", organizationId: ctx.organizationId }, params.key!).map((r) => services.connections.orgView(r)),
  }),
  route({
    method: "PATCH",
    path: "/org/connections/:key",
    access: "O",
    role: "admin",
    body: LabelBody,
    handler: ({ services, ctx, params, body }) => services.connections.rename(services.connections.owned({ scope: "organization", organizationId: ctx.organizationId }, params.key!), body.label),
  }),
  route({
    method: "DELETE",
    path: "/org/connections/:key",
    access: "O",
    role: "admin",
    handler: ({ services, ctx, params }) => {
      services.connections.delete(services.connections.owned({ scope: "organization", organizationId: ctx.organizationId }, params.key!));
      return noContent();
    },
  }),
];
