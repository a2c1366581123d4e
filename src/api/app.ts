// The management API application: every route module mounted under `/v1` and its `/api` alias, with the
// unknown-route 404 and the error mapping of docs/api.md#error-shapes. Routes not served in the running mode are not
// mounted at all, so they answer exactly like unknown routes (before authentication).
import { metrics } from "../observability/metrics.ts";
import { log } from "../observability/log.ts";
import { answerWithRequestId } from "../observability/requestId.ts";
import { TRACEPARENT_HEADER } from "../observability/traceContext.ts";
import type { Tracer } from "../observability/tracing.ts";
import type { Services } from "../services/index.ts";
import type { Principal } from "./auth.ts";
import { dashboardResponse } from "../dashboard/serve.ts";
import { approvalLinkResponse } from "./approvalLinkPage.ts";
import { errorResponse, unknownRoute } from "./errors.ts";
import { METRICS_PATH, metricsResponse } from "./metrics.ts";
import { openApiDocument } from "./openapi.ts";
import { returns } from "./responses.ts";
import { OpenApiDocument } from "./schemas.ts";
import { VERSION } from "../runtime/version.ts";
import { requestTarget } from "./requestTarget.ts";
import { route, runRoute, type RouteDef } from "./route.ts";
import { Router } from "./router.ts";
import { agentSetupRoutes } from "./routes/agentSetup.ts";
import { appBlocklistRoutes } from "./routes/appBlocklist.ts";
import { appsRoutes } from "./routes/apps.ts";
import { connectionsRoutes } from "./routes/connections.ts";
import { agentsRoutes } from "./routes/agents.ts";
import { gatewayRoutes } from "./routes/gateway.ts";
import { approvalsRoutes } from "./routes/approvals.ts";
import { auditRoutes } from "./routes/audit.ts";
import { grantsRoutes } from "./routes/grants.ts";
import { policyRoutes } from "./routes/policy.ts";
import { authRoutes } from "./routes/auth.ts";
import { logsRoutes } from "./routes/logs.ts";
import { projectRoutes } from "./routes/projects.ts";
import { teamRoutes } from "./routes/team.ts";
import { partnerBudgetRoutes, partnerMemberRoutes, partnerRoutes } from "./routes/partner.ts";
import { budgetsRoutes } from "./routes/budgets.ts";
import { orgPartnerRoutes } from "./routes/orgPartner.ts";
import { mcpServersRoutes } from "./routes/mcpServers.ts";
import { migrationRoutes } from "./routes/migration.ts";
import { notificationsRoutes } from "./routes/notifications.ts";
import { organizationRoutes } from "./routes/organization.ts";
import { secretsRoutes } from "./routes/secrets.ts";
import { sshKeyRoutes } from "./routes/sshKeys.ts";
import { userRoutes } from "./routes/user.ts";
import { utilityRoutes } from "./routes/utility.ts";

export const API_PREFIXES = ["/v1", "/api"] as const;

export function allRoutes(): RouteDef[] {
  return [...utilityRoutes, ...authRoutes, ...userRoutes, ...organizationRoutes, ...agentsRoutes, ...sshKeyRoutes, ...secretsRoutes, ...logsRoutes, ...grantsRoutes, ...policyRoutes, ...approvalsRoutes, ...notificationsRoutes, ...budgetsRoutes, ...appsRoutes, ...appBlocklistRoutes, ...connectionsRoutes, ...mcpServersRoutes, ...migrationRoutes, ...projectRoutes, ...teamRoutes, ...partnerRoutes, ...partnerBudgetRoutes, ...partnerMemberRoutes, ...orgPartnerRoutes, ...auditRoutes];
}

/** Routes that serve the gateway's CA certificate (agent setup), built once the CA is loaded. */
export function caRoutes(caPem: string): RouteDef[] {
  return [...gatewayRoutes(caPem), ...agentSetupRoutes(caPem)];
}

/** The TCP peer of a request, when the listener knows it (`/metrics` is open to loopback peers). */
export interface ClientInfo {
  address: string;
}

/**
 * `GET /v1/openapi.json`: the description of `routes` (every mode's), built on each request: it is asked for
 * rarely, and kept it would sit in the gateway's heap (~0.4 MB), which JSC's young generation is sized from.
 */
function openApiRoute(routes: () => RouteDef[]): RouteDef {
  return route({
    method: "GET",
    path: "/openapi.json",
    access: "none",
    response: returns(OpenApiDocument, "This document (OpenAPI 3.1)"),
    handler: () => openApiDocument(routes(), VERSION),
  });
}

/**
 * The document `GET /v1/openapi.json` serves, built without a server or a store: every route of every mode
 * (the CA routes' paths do not depend on the certificate). `scripts/gen-api-reference.ts` renders it.
 */
export function describeApi(): Record<string, unknown> {
  const routes = [...allRoutes(), ...caRoutes("")];
  routes.push(openApiRoute(() => routes));
  return openApiDocument(routes, VERSION);
}

/** Paths longer than this are cut in a span. */
const MAX_TRACED_PATH = 2048;

export type ApiApp = { handle(request: Request, client?: ClientInfo): Promise<Response> };

/**
 * `tracer`: when tracing is on (docs/operations.md#traces), every request is a SERVER span `credgate.api <METHOD>
 * <route template>` continuing the client's `traceparent`, with the host, path, route, status and the kind of
 * credential (never the key).
 */
export function createApiApp(services: Services, extraRoutes: RouteDef[] = [], tracer: Tracer | null = null): ApiApp {
  const mode = services.deps.config.mode;
  // The route template each request matched, for the per-route metric and the request's log line.
  const matched = new WeakMap<Request, string>();
  const router = new Router<{ def: RouteDef; template: string }>();
  // The client's address, for the audit events of writes.
  const addresses = new WeakMap<Request, string>();
  // The kind of credential a traced request authenticated with.
  const principals = new WeakMap<Request, Principal["via"]>();
  const routes = [...allRoutes(), ...extraRoutes];
  routes.push(openApiRoute(() => routes));
  for (const def of routes) {
    if (def.modes && !def.modes.includes(mode)) continue;
    for (const prefix of API_PREFIXES) router.add(def.method, prefix + def.path, { def, template: prefix + def.path });
  }
  /** The route the path names; HEAD is answered by the GET route, with its length and without its body. */
  const api = async (request: Request, url: URL): Promise<Response> => {
    const head = request.method === "HEAD";
    const found = router.find(head ? "GET" : request.method, url.pathname);
    if (!found) return unknownRoute(request.method, url);
    matched.set(request, found.value.template);
    const seen = tracer === null ? undefined : (p: Principal) => void principals.set(request, p.via);
    const response = await runRoute(found.value.def, services, request, url, found.params, addresses.get(request) ?? null, seen);
    if (!head) return response;
    const length = (await response.arrayBuffer()).byteLength;
    const headers = new Headers(response.headers);
    headers.set("content-length", String(length));
    return new Response(null, { status: response.status, statusText: response.statusText, headers });
  };
  const metricsToken = services.deps.config.metricsToken;
  const dashboard = { publicUrl: services.deps.config.publicUrl, mode };
  const serve = async (request: Request, client?: ClientInfo): Promise<Response> => {
    const url = requestTarget(request.url);
    if (request.method === "GET" && url.pathname === METRICS_PATH) return metricsResponse(request, client?.address, metricsToken);
    // The approval link's page; the dashboard's pages and assets (src/dashboard); everything else, `/v1/…`
    // included, is the API's.
    return (await approvalLinkResponse(services, request, url.pathname)) ?? dashboardResponse(request.method, url.pathname, dashboard) ?? api(request, url);
  };
  return {
    handle: (request, client) =>
      answerWithRequestId(request, async (_, requestId) => {
        if (client) addresses.set(request, client.address);
        const started = performance.now();
        const span = tracer === null ? null : tracer.serverSpan(`credgate.api ${request.method}`, request.headers.get(TRACEPARENT_HEADER), started);
        // A traced request's log lines carry its trace id.
        const served = span === null ? serve(request, client) : log.withContext({ traceId: span.traceId }, serve, request, client);
        const response = await served.catch((err) => errorResponse(err, request, (e) => services.deps.store.isUnavailable(e)));
        const seconds = (performance.now() - started) / 1000;
        const template = matched.get(request);
        const route = template ?? (response.status === 404 ? "unmatched" : "other");
        metrics.apiRequests.inc({ route, method: request.method, status: String(response.status) });
        metrics.apiLatency.observe(seconds);
        const fields: Record<string, unknown> = { method: request.method, route, status: response.status, ms: Math.round(seconds * 1000) };
        if (span !== null) fields.traceId = span.traceId;
        log.info("api request", fields);
        if (span !== null) {
          if (template !== undefined) span.name = `credgate.api ${request.method} ${template}`;
          // The path without its query (an approval link's token is in its query).
          const target = URL.parse(request.url);
          span
            .set("http.request.method", request.method)
            .set("server.address", target?.hostname)
            .set("url.path", target === null ? undefined : target.pathname.slice(0, MAX_TRACED_PATH))
            .set("http.route", template)
            .set("http.response.status_code", response.status)
            .set("credgate.principal", principals.get(request) ?? "none")
            .set("credgate.request_id", requestId);
          if (response.status >= 500) span.fail();
          span.finish();
        }
        return response;
      }),
  };
}
