// `GET /metrics` on the API port (docs/operations.md#metrics): the Prometheus exposition, open to loopback clients and, from
// elsewhere, to `Authorization: Bearer $CREDGATE_METRICS_TOKEN`. Everyone else learns nothing: the answer is
// the unknown-route 404, as if the endpoint did not exist.
import { createHash, timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import { METRICS_CONTENT_TYPE, metricsText } from "../observability/metrics.ts";
import { unknownRoute } from "./errors.ts";

export const METRICS_PATH = "/metrics";

/** 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopbackAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "").toLowerCase();
  const v4 = bare.startsWith("::ffff:") ? bare.slice(7) : bare;
  if (isIP(v4) === 4) return v4.startsWith("127.");
  return bare === "::1" || bare === "0:0:0:0:0:0:0:1";
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

function bearerMatches(header: string | null, token: string): boolean {
  const m = header === null ? null : /^bearer\s+(.+)$/i.exec(header.trim());
  return m !== null && timingSafeEqual(digest(m[1]!.trim()), digest(token));
}

/** The exposition for an allowed client, else the unknown-route 404. `clientAddress` is the TCP peer (unknown → not loopback). */
export async function metricsResponse(request: Request, clientAddress: string | undefined, token: string | null): Promise<Response> {
  const allowed = (clientAddress !== undefined && isLoopbackAddress(clientAddress)) || (token !== null && bearerMatches(request.headers.get("authorization"), token));
  if (!allowed) return unknownRoute(request.method, request.url);
  return new Response(await metricsText(), { headers: { "content-type": METRICS_CONTENT_TYPE, "cache-control": "no-store" } });
}
