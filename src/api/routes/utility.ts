// Health and the project's resource counts (CONTRACT §5.10).
import { VERSION } from "../../version.ts";
import { route, type RouteDef } from "../route.ts";

export const utilityRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/health",
    access: "none",
    handler: () => ({ status: "ok", version: VERSION, timestamp: new Date().toISOString() }),
  }),
  route({
    method: "GET",
    path: "/counts",
    access: "P",
    handler: ({ services, ctx }) => {
      const secrets = services.secrets.listForProject(ctx.projectId, ctx.organizationId);
      return {
        agents: services.agents.list(ctx.projectId).length,
        apps: services.connections.listForProject(ctx.projectId, ctx.organizationId).filter((c) => services.connections.effectiveStatus(c) === "connected").length,
        llms: secrets.filter((s) => s.type !== "generic").length,
        secrets: secrets.filter((s) => s.type === "generic").length,
      };
    },
  }),
];
