// App blocklists (docs/policy.md#app-blocklists blocklist rows; docs/api.md#organization-level-routes organization variant): list, activate a predefined
// host or add a custom rule, toggle, delete. Entries are managed block rules, live at once.
import { Type as T } from "@sinclair/typebox";
import { ApiError } from "../../core/errors.ts";
import { hostPatternError } from "../../core/patterns.ts";
import { appOrThrow } from "../../services/apps.ts";
import type { PolicyOwner } from "../../services/policy.ts";
import type { RequestContext } from "../auth.ts";
import { noContent, route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns, returnsNothing } from "../responses.ts";

const EITHER = "Provide either { hostId } or { name, hostPattern }";

const AddBody = T.Object({
  hostId: T.Optional(T.String({ maxLength: 300, trim: true })),
  name: T.Optional(T.String({ maxLength: 255, trim: true })),
  hostPattern: T.Optional(T.String({ trim: true })),
});

function blocklistRoutes(prefix: "/apps" | "/org/apps", access: "project" | "organization", owner: (ctx: RequestContext) => PolicyOwner): RouteDef[] {
  const role = access === "organization" ? "admin" : "any";
  return [
    route({
      method: "GET",
      path: `${prefix}/:provider/blocklist`,
      response: returns(T.Array(R.BlocklistEntry), "Every predefined host plus the custom rules"),
      access,
      role,
      handler: ({ services, ctx, params }) => services.blocklist.list(owner(ctx), appOrThrow(params.provider)),
    }),
    route({
      method: "POST",
      path: `${prefix}/:provider/blocklist`,
      response: returns(R.BlocklistEntry, "The entry, enabled"),
      access,
      role,
      body: AddBody,
      handler: ({ services, ctx, params, body }) => {
        const app = appOrThrow(params.provider);
        const hostId = body.hostId || null;
        const name = body.name || null;
        const hostPattern = body.hostPattern || null;
        if (hostId !== null && name === null && hostPattern === null) return services.blocklist.activate(owner(ctx), app, hostId);
        if (hostId !== null || name === null || hostPattern === null) throw ApiError.flat(400, EITHER);
        const bad = hostPatternError(hostPattern);
        if (bad) throw ApiError.flat(400, bad);
        return services.blocklist.addCustom(owner(ctx), app, name, hostPattern.toLowerCase());
      },
    }),
    route({
      method: "PATCH",
      path: `${prefix}/:provider/blocklist/:ruleId`,
      response: returns(R.Success),
      access,
      role,
      body: T.Object({ enabled: T.Boolean() }),
      handler: async ({ services, ctx, params, body }) => {
        const app = appOrThrow(params.provider);
        await services.blocklist.setEnabled(owner(ctx), app.id, params.ruleId, body.enabled);
        return R.SUCCESS;
      },
    }),
    route({
      method: "DELETE",
      path: `${prefix}/:provider/blocklist/:ruleId`,
      response: returnsNothing(),
      access,
      role,
      handler: async ({ services, ctx, params }) => {
        const app = appOrThrow(params.provider);
        await services.blocklist.delete(owner(ctx), app.id, params.ruleId);
        return noContent();
      },
    }),
  ];
}

export const appBlocklistRoutes: RouteDef[] = [
  ...blocklistRoutes("/apps", "project", (ctx) => ({ scope: "project", projectId: ctx.projectId, organizationId: ctx.organizationId })),
  ...blocklistRoutes("/org/apps", "organization", (ctx) => ({ scope: "organization", organizationId: ctx.organizationId })),
];
