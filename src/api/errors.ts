// The one place where failures become responses: ApiError → its shape; anything else → a logged 500.
import { ApiError } from "../core/errors.ts";
import { log } from "../observability/log.ts";
import { requestTarget } from "./requestTarget.ts";

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", ...headers } });
}

/** `url` is the request's URL, or its target as requestTarget read it. */
export function unknownRoute(method: string, url: string | URL): Response {
  const path = (typeof url === "string" ? requestTarget(url) : url).pathname;
  return json({ error: { message: `Unrecognized request URL (${method}: ${path}).`, type: "not_found_error" } }, 404);
}

/** Whether a failure means the store cannot be reached (Store.isUnavailable). */
export type UnavailableCheck = (err: unknown) => boolean;

export const DATABASE_UNAVAILABLE = "Database unavailable";

export function errorResponse(err: unknown, request?: Request, unavailable?: UnavailableCheck): Response {
  if (err instanceof ApiError) return json(err.body(), err.status, err.headers);
  // The database is down (several instances on PostgreSQL): a clear, retryable answer instead of a 500.
  if (unavailable?.(err)) {
    log.warn("database unavailable", { method: request?.method, path: request ? requestTarget(request.url).pathname : undefined });
    return json({ error: { message: DATABASE_UNAVAILABLE, type: "api_error" } }, 503, { "retry-after": "5" });
  }
  log.error("unhandled API error", {
    method: request?.method,
    path: request ? requestTarget(request.url).pathname : undefined,
    error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
  });
  return json({ error: { message: "An unexpected error occurred.", type: "api_error" } }, 500);
}
