// The internal HTTP server behind the gateway's front listener, on 127.0.0.1 with an ephemeral port. The
// front pipes every accepted connection into it; `requestIP(req).port` names the loopback connection, and
// the registry says what it is: an intercepted tunnel, a forward-proxy connection or a control connection.
import type { Server } from "bun";
import type { ApiApp } from "../api/app.ts";
import { API_PREFIXES } from "../api/app.ts";
import { unknownRoute } from "../api/errors.ts";
import { VERSION } from "../version.ts";
import type { GatewayContext } from "./context.ts";
import { gatewayJson } from "./errors.ts";
import { handleProxied } from "./pipeline.ts";

/** Origin-form paths the gateway port serves (CONTRACT §6.1), below each API prefix. */
const CONTROL_PATHS = [/^\/approvals(\/|$)/, /^\/org\/approvals\/pending$/, /^\/health$/, /^\/gateway\/ca$/, /^\/gateway-url$/];

export function isControlPath(path: string): boolean {
  const prefix = API_PREFIXES.find((p) => path.startsWith(`${p}/`));
  return prefix !== undefined && CONTROL_PATHS.some((re) => re.test(path.slice(prefix.length)));
}

function control(request: Request, api: ApiApp): Response | Promise<Response> {
  const path = new URL(request.url).pathname;
  if (path === "/healthz" && request.method === "GET") return Response.json({ status: "ok", version: VERSION });
  if (isControlPath(path)) return api.handle(request);
  return unknownRoute(request.method, request.url);
}

export function startInternalServer(g: GatewayContext, api: ApiApp): Server<undefined> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    reusePort: false,
    // Streams are long-lived (SSE, uploads, held approvals); the front decides when a connection dies.
    idleTimeout: 0,
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch(request, server) {
      const port = server.requestIP(request)?.port;
      const conn = port === undefined ? undefined : g.registry.get(port);
      if (!conn) return gatewayJson(403, { error: "forbidden", message: "Connect through the gateway port." }, { connection: "close" });
      if (conn.kind === "control") return control(request, api);
      return handleProxied(request, conn, g);
    },
  });
}
