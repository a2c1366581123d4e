// App connections as a resource (docs/injection.md#app-connections) and at organization level (docs/api.md#organization-level-routes): list, read, rename,
// delete. A project sees its own connections and its organization's.
import { Type as T } from "@sinclair/typebox";
import { forbidden } from "../../core/errors.ts";
import type { Services } from "../../services/index.ts";
import type { RequestContext } from "../auth.ts";
import { noContent, route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import * as S from "../schemas.ts";
import { returns, returnsNothing } from "../responses.ts";

/**
 * A connection the caller's project may change: its own, or an organization connection when the caller is an
 * admin or owner (organization-wide resources follow the organization's admin gate, docs/api.md#roles).
 */
async function changeable(services: Services, ctx: RequestContext, id: string) {
  const row = await services.connections.visibleToProject(ctx.projectId, ctx.organizationId, id);
  if (row.scope === "organization" && ctx.role === "member") throw forbidden();
  return row;
}

/** Each row's view, in order (a read may store an `expired` status it discovers). */
async function views<R, V>(rows: R[], view: (row: R) => Promise<V>): Promise<V[]> {
  const out: V[] = [];
  for (const row of rows) out.push(await view(row));
  return out;
}

const LabelBody = T.Object({ label: T.String({ minLength: 1, maxLength: 255, trim: true, blankIsAbsent: true, missing: "Label is required" }) });

export const connectionsRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/connections",
    query: S.ProviderFilterQuery,
    response: returns(T.Array(R.Connection), "The project's and the organization's connections, newest first"),
    access: "project",
    handler: async ({ services, ctx, query }) => views(await services.connections.listForProject(ctx.projectId, ctx.organizationId, query.get("provider")), (r) => services.connections.view(r)),
  }),
  route({
    method: "GET",
    path: "/connections/:connectionId",
    response: returns(R.Connection),
    access: "project",
    handler: async ({ services, ctx, params }) => services.connections.view(await services.connections.visibleToProject(ctx.projectId, ctx.organizationId, params.connectionId)),
  }),
  route({
    method: "PATCH",
    path: "/connections/:connectionId",
    response: returns(R.ConnectionRenamed),
    access: "project",
    body: LabelBody,
    handler: async ({ services, ctx, params, body }) => services.connections.rename(await changeable(services, ctx, params.connectionId), body.label),
  }),
  route({
    method: "DELETE",
    path: "/connections/:connectionId",
    response: returnsNothing("Deleted, with its grants"),
    access: "project",
    handler: async ({ services, ctx, params }) => {
      await services.connections.delete(await changeable(services, ctx, params.connectionId));
      return noContent();
    },
  }),
  route({
    method: "GET",
    path: "/org/connections",
    query: S.ProviderFilterQuery,
    response: returns(T.Array(R.OrganizationConnection)),
    access: "organization",
    role: "admin",
    handler: async ({ services, ctx, query }) =>
      views(await services.connections.listForOwner({ scope: "organization", organizationId: ctx.organizationId }, query.get("provider")), (r) => services.connections.orgView(r)),
  }),
  // One path position serves a provider (GET) and a connection id (PATCH, DELETE), as the API names them.
  route({
    method: "GET",
    path: "/org/connections/:key",
    response: returns(T.Array(R.OrganizationConnection), "The organization's connections of the provider named by {key}"),
    access: "organization",
    role: "admin",
    handler: async ({ services, ctx, params }) =>
      views(await services.connections.listForOwner({ scope: "organization", organizationId: ctx.organizationId }, params.key), (r) => services.connections.orgView(r)),
  }),
  route({
    method: "PATCH",
    path: "/org/connections/:key",
    response: returns(R.ConnectionRenamed, "{key} is the connection id"),
    access: "organization",
    role: "admin",
    body: LabelBody,
    handler: async ({ services, ctx, params, body }) => services.connections.rename(await services.connections.owned({ scope: "organization", organizationId: ctx.organizationId }, params.key), body.label),
  }),
  route({
    method: "DELETE",
    path: "/org/connections/:key",
    response: returnsNothing("{key} is the connection id"),
    access: "organization",
    role: "admin",
    handler: async ({ services, ctx, params }) => {
      await services.connections.delete(await services.connections.owned({ scope: "organization", organizationId: ctx.organizationId }, params.key));
      return noContent();
    },
  }),
];
