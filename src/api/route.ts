// A route is data: method, path, access marker, role gate, body schema and a short handler. `runRoute`
// applies the steps every route shares, in order: authenticate → context and role → cross-site check →
// read and validate the body → handler → response.
import type { TSchema, Static } from "@sinclair/typebox";
import { ApiError, forbidden, unauthorized } from "../core/errors.ts";
import { auditedWrite } from "./auditedWrite.ts";
import type { Mode } from "../runtime/config.ts";
import type { Services } from "../services/index.ts";
import { authenticate, resolveContext, resolvePartnerContext, type Access, type Principal, type RequestContext, type RoleGate } from "./auth.ts";
import { readJsonBody } from "./body.ts";
import { errorResponse, json, unknownRoute } from "./errors.ts";
import type { ResponseDoc } from "./responses.ts";
import { validate } from "./validate.ts";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface HandlerInput<B> {
  services: Services;
  request: Request;
  params: Record<string, string>;
  query: URLSearchParams;
  body: B;
  /** Null on `none` and `session` routes. */
  ctx: RequestContext;
  principal: Principal | null;
}

/** A non-200 result: `created(x)` → 201, `noContent()` → 204. A Response is returned untouched. */
export class Result {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}
export const created = (body: unknown): Result => new Result(201, body);
export const noContent = (): Result => new Result(204, null);

export interface RouteDef<S extends TSchema | undefined = TSchema | undefined> {
  method: Method;
  /** Path below the version prefix, Elysia syntax (`/agents/:agentId`). */
  path: string;
  access: Access;
  role?: RoleGate;
  /** Deployments that serve the route; elsewhere it does not exist (404 before auth, CONTRACT §0.1). */
  modes?: Mode[];
  body?: S;
  /** The query parameters the route reads (documentation: handlers parse the query themselves). */
  query?: TSchema;
  /** The success answer (src/api/responses.ts), published in /v1/openapi.json and checked by the API tests. */
  response: ResponseDoc;
  /** The failure for an absent or `{}` body (e.g. PATCH's `No fields to update`). */
  emptyBody?: ApiError;
  /** Policy routes report every validation failure as a 422 envelope instead of a flat 400. */
  unprocessable?: boolean;
  /** Browser routes (OAuth start): `_token`, `_project`, `_org` query parameters stand in for absent headers (§1.2 step 5). */
  queryBridge?: boolean;
  handler: (input: HandlerInput<S extends TSchema ? Static<S> : undefined>) => unknown | Promise<unknown>;
}

export function route<S extends TSchema | undefined = undefined>(def: RouteDef<S>): RouteDef {
  return def as unknown as RouteDef;
}

function hasRequiredFields(schema: TSchema): boolean {
  return Array.isArray(schema.required) && schema.required.length > 0;
}

async function readBody(def: RouteDef, request: Request): Promise<unknown> {
  if (!def.body) return undefined;
  const raw = await readJsonBody(request);
  const empty = raw === undefined || (typeof raw === "object" && raw !== null && !Array.isArray(raw) && Object.keys(raw).length === 0);
  if (empty && def.emptyBody) throw def.emptyBody;
  const value = raw === undefined && !hasRequiredFields(def.body) ? {} : raw;
  const result = validate(def.body, value);
  if (!result.ok) throw typeof result.message === "string" ? ApiError.flat(400, result.message) : result.message;
  return result.value;
}

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * A query value as a header value: unchanged when it is one, else percent-encoded — still a value that names
 * no key, project or organization (and so fails like any unknown one), where Headers would throw.
 */
const asHeaderValue = (v: string) => (/^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v));

/** Copies the browser bridge's query parameters into the headers they stand for, when those are absent. */
function bridgeQuery(request: Request): Request {
  const query = new URL(request.url).searchParams;
  const headers = new Headers(request.headers);
  const token = query.get("_token");
  if (token && !headers.has("authorization")) headers.set("authorization", `Bearer ${asHeaderValue(token)}`);
  const project = query.get("_project");
  if (project && !headers.has("x-project-id")) headers.set("x-project-id", asHeaderValue(project));
  const org = query.get("_org") ?? query.get("org");
  if (org && !headers.has("x-organization-id")) headers.set("x-organization-id", asHeaderValue(org));
  return new Request(request.url, { method: request.method, headers });
}

/** `address`: the client's IP address, when the listener knows it (recorded in audit events). */
export async function runRoute(def: RouteDef, services: Services, request: Request, params: Record<string, string>, address: string | null = null): Promise<Response> {
  // A URL holding a NUL byte names nothing we store (and PostgreSQL cannot even compare it): no such route.
  if (Object.values(params ?? {}).some((p) => typeof p === "string" && p.includes("\u0000")) || new URL(request.url).search.toLowerCase().includes("%00")) {
    return unknownRoute(request.method, request.url);
  }
  try {
    let principal: Principal | null = null;
    let ctx: RequestContext | null = null;
    if (def.queryBridge) request = bridgeQuery(request);
    if (def.access !== "none") {
      principal = await authenticate(services, request.headers);
      if (def.access === "Pt") ctx = await resolvePartnerContext(services, principal, def.role ?? "any");
      else if (def.access === "session") {
        if (principal.via !== "session") throw unauthorized();
      } else {
        ctx = await resolveContext(services, principal, request.headers, def.access, def.role ?? "any");
      }
      const origin = request.headers.get("origin");
      if (principal.via === "session" && MUTATING.has(request.method) && origin && origin !== services.deps.config.publicUrl) {
        throw forbidden("Cross-site request rejected");
      }
    }
    const body = await readBody(def, request).catch((err) => {
      throw def.unprocessable && err instanceof ApiError && err.status === 400 && err.shape === "flat" ? ApiError.envelope(422, err.message) : err;
    });
    const handle = async () =>
      def.handler({
        services,
        request,
        params,
        query: new URL(request.url).searchParams,
        body: body as never,
        ctx: ctx as RequestContext,
        principal,
      });
    // Every successful write is an audit event (docs/operations.md#audit-log).
    const out = MUTATING.has(request.method) ? await auditedWrite(services, def, request, principal, ctx, params, address, handle) : await handle();
    // A write is answered once every gateway worker has applied its change events (read-your-writes).
    if (MUTATING.has(request.method)) await services.deps.events.settled();
    if (out instanceof Response) return out;
    if (out instanceof Result) return out.status === 204 ? new Response(null, { status: 204, headers: out.headers }) : json(out.body, out.status, out.headers);
    return json(out);
  } catch (err) {
    return errorResponse(err, request, (e) => services.deps.store.isUnavailable(e));
  }
}
