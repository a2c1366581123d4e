// Health and the project's resource counts (docs/api.md#utility-endpoints).
import { VERSION } from "../../runtime/version.ts";
import { route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns } from "../responses.ts";

export const utilityRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/health",
    response: returns(R.Health),
    access: "none",
    handler: () => ({ status: "ok" as const, version: VERSION, timestamp: new Date().toISOString() }),
  }),
  route({
    method: "GET",
    path: "/counts",
    response: returns(R.Counts),
    access: "project",
    handler: async ({ services, ctx }) => {
      const secrets = await services.secrets.listForProject(ctx.projectId, ctx.organizationId);
      let apps = 0;
      for (const c of await services.connections.listForProject(ctx.projectId, ctx.organizationId)) {
        if ((await services.connections.effectiveStatus(c)) === "connected") apps++;
      }
      return {
        agents: (await services.agents.list(ctx.projectId)).length,
        apps,
        llms: secrets.filter((s) => s.type !== "generic").length,
        secrets: secrets.filter((s) => s.type === "generic").length,
      };
    },
  }),
];
