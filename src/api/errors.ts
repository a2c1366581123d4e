// The one place where failures become responses: ApiError → its shape; anything else → a logged 500.
import { ApiError } from "../core/errors.ts";
import { log } from "../log.ts";

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", ...headers } });
}

export function unknownRoute(method: string, url: string): Response {
  const path = new URL(url).pathname;
  return json({ error: { message: `Unrecognized request URL (${method}: ${path}).`, type: "not_found_error" } }, 404);
}

export function errorResponse(err: unknown, request?: Request): Response {
  if (err instanceof ApiError) return json(err.body(), err.status, err.headers);
  log.error("unhandled API error", {
    method: request?.method,
    path: request ? new URL(request.url).pathname : undefined,
    error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
  });
  return json({ error: { message: "An unexpected error occurred.", type: "api_error" } }, 500);
}
