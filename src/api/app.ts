// The management API application: every route module mounted under `/v1` and its `/api` alias, with the
// unknown-route 404 and the error mapping of CONTRACT §2. Routes not served in the running mode are not
// mounted at all, so they answer exactly like unknown routes (before authentication).
import { Elysia } from "elysia";
import type { Services } from "../services/index.ts";
import { appConnectPage } from "./appConnectPage.ts";
import { errorResponse, unknownRoute } from "./errors.ts";
import { runRoute, type RouteDef } from "./route.ts";
import { agentSetupRoutes } from "./routes/agentSetup.ts";
import { appBlocklistRoutes } from "./routes/appBlocklist.ts";
import { appsRoutes } from "./routes/apps.ts";
import { connectionsRoutes } from "./routes/connections.ts";
import { agentsRoutes } from "./routes/agents.ts";
import { gatewayRoutes } from "./routes/gateway.ts";
import { approvalsRoutes } from "./routes/approvals.ts";
import { grantsRoutes } from "./routes/grants.ts";
import { policyRoutes } from "./routes/policy.ts";
import { authRoutes } from "./routes/auth.ts";
import { logsRoutes } from "./routes/logs.ts";
import { migrationRoutes } from "./routes/migration.ts";
import { organizationRoutes } from "./routes/organization.ts";
import { secretsRoutes } from "./routes/secrets.ts";
import { userRoutes } from "./routes/user.ts";
import { utilityRoutes } from "./routes/utility.ts";

export const API_PREFIXES = ["/v1", "/api"] as const;

export function allRoutes(): RouteDef[] {
  return [...utilityRoutes, ...authRoutes, ...userRoutes, ...organizationRoutes, ...agentsRoutes, ...secretsRoutes, ...logsRoutes, ...grantsRoutes, ...policyRoutes, ...approvalsRoutes, ...appsRoutes, ...appBlocklistRoutes, ...connectionsRoutes, ...migrationRoutes];
}

/** Routes that serve the gateway's CA certificate (agent setup), built once the CA is loaded. */
export function caRoutes(caPem: string): RouteDef[] {
  return [...gatewayRoutes(caPem), ...agentSetupRoutes(caPem)];
}

export type ApiApp = { handle(request: Request): Promise<Response> };

export function createApiApp(services: Services, extraRoutes: RouteDef[] = []): ApiApp {
  const mode = services.deps.config.mode;
  const app = new Elysia({ normalize: false })
    .onError(({ code, request, error }) =>
      code === "NOT_FOUND" ? unknownRoute(request.method, request.url) : errorResponse(error, request, (e) => services.deps.store.isUnavailable(e)),
    );
  for (const def of [...allRoutes(), ...extraRoutes]) {
    if (def.modes && !def.modes.includes(mode)) continue;
    for (const prefix of API_PREFIXES) {
      app.route(def.method, prefix + def.path, ({ request, params }) => runRoute(def, services, request, params as Record<string, string>), {
        parse: "none",
      });
    }
  }
  app.get("/app-connect/:provider", ({ request, params }) => appConnectPage(params.provider, new URL(request.url).searchParams));
  app.compile();
  return { handle: (request) => app.handle(request) };
}
