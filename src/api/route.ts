// A route is data: method, path, access marker, role gate, body schema and a short handler. `runRoute`
// applies the steps every route shares, in order: authenticate → context and role → cross-site check →
// read and validate the body → handler → response.
import type { TSchema, Static } from "@sinclair/typebox";
import { ApiError, forbidden, unauthorized } from "../core/errors.ts";
import { auditedWrite } from "./auditedWrite.ts";
import type { Mode } from "../runtime/config.ts";
import type { Services } from "../services/index.ts";
import { authenticate, resolveContext, resolvePartnerContext, sessionIdOf, type RouteAccess, type PartnerContext, type Principal, type RequestContext, type RoleGate } from "./auth.ts";
import { readJsonBody } from "./body.ts";
import { errorResponse, json, unknownRoute } from "./errors.ts";
import type { EmptyDoc, JsonDoc, ResponseDoc } from "./responses.ts";
import { validate } from "./validate.ts";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** The `:name` segments of a path template as an object: `/agents/:agentId` → `{ agentId: string }`. */
export type PathParams<P extends string> = { [K in ParamName<Segments<P>>]: string };
type Segments<P extends string> = P extends `${infer Head}/${infer Rest}` ? Head | Segments<Rest> : P;
type ParamName<S extends string> = S extends `:${infer Name}` ? Name : never;

/** What `ctx` holds on a route of access `A`: nothing on `none` and `session` routes. */
export type ContextFor<A extends RouteAccess> = A extends "none" | "session" ? null : A extends "partner" ? PartnerContext : RequestContext;

/** The body a route's schema admits, once validated; `undefined` on routes without a body. */
export type BodyOf<B extends TSchema | undefined> = B extends TSchema ? Static<B> : undefined;

export interface HandlerInput<P extends string, A extends RouteAccess, B extends TSchema | undefined> {
  services: Services;
  request: Request;
  params: PathParams<P>;
  query: URLSearchParams;
  body: BodyOf<B>;
  ctx: ContextFor<A>;
  principal: Principal | null;
}

/** An answer with its status and headers: `ok(x, headers)` → 200, `created(x)` → 201, `noContent()` → 204. */
export class Result<T, S extends 200 | 201 | 204> {
  constructor(
    readonly status: S,
    readonly body: T,
    readonly headers: Record<string, string> = {},
  ) {}
}
export const ok = <T>(body: T, headers?: Record<string, string>) => new Result(200 as const, body, headers);
export const created = <T>(body: T, headers?: Record<string, string>) => new Result(201 as const, body, headers);
export const noContent = (headers?: Record<string, string>) => new Result(204 as const, null, headers);

/**
 * What a handler may answer for its response doc: the documented body (or `ok(body)`) for 200, `created(body)`
 * for 201, `noContent()` for 204, a Response for a redirect or a non-JSON body.
 */
export type HandlerAnswer<R extends ResponseDoc> = R extends JsonDoc<infer S, 200>
  ? Static<S> | Result<Static<S>, 200>
  : R extends JsonDoc<infer S, 201>
    ? Result<Static<S>, 201>
    : R extends EmptyDoc
      ? Result<null, 204>
      : Response;

/** A route as written: its types tie the handler's params, body and ctx to the path, schema and access, and its answer to the response doc. */
export interface TypedRoute<P extends string, A extends RouteAccess, B extends TSchema | undefined, R extends ResponseDoc> {
  method: Method;
  /** Path below the version prefix, parameters as `:name` (`/agents/:agentId`). */
  path: P;
  access: A;
  role?: RoleGate;
  /** Deployments that serve the route; elsewhere it does not exist (404 before auth, docs/api.md#base-path-and-modes). */
  modes?: Mode[];
  body?: B;
  /** The query parameters the route reads (documentation: handlers parse the query themselves). */
  query?: TSchema;
  /** The success answer (src/api/responses.ts), published in /v1/openapi.json and checked by the API tests. */
  response: R;
  /** The failure for an absent or `{}` body (e.g. PATCH's `No fields to update`). */
  emptyBody?: ApiError;
  /** Policy routes report every validation failure as a 422 envelope instead of a flat 400. */
  unprocessable?: boolean;
  /** Browser routes (OAuth start): `_token`, `_project`, `_org` query parameters stand in for absent headers (docs/api.md#how-a-request-is-authenticated). */
  queryBridge?: boolean;
  /**
   * A door to a session (sign-in, sign-up, invite, claim): refused, before anything else, when another site could
   * have made the browser send it (docs/api.md#accounts-and-sessions).
   */
  signIn?: boolean;
  handler(input: HandlerInput<P, A, B>): NoInfer<HandlerAnswer<R> | Promise<HandlerAnswer<R>>>;
}

/** A route in the table, its types erased (the table holds routes of every shape). */
export interface RouteDef extends Omit<TypedRoute<string, RouteAccess, TSchema | undefined, ResponseDoc>, "handler"> {
  handler(input: HandlerInput<string, RouteAccess, TSchema | undefined>): unknown;
}

/** Declares a route; see docs/architecture.md#routes. */
export function route<const P extends string, A extends RouteAccess, B extends TSchema | undefined = undefined, R extends ResponseDoc = ResponseDoc>(
  def: TypedRoute<P, A, B, R>,
): RouteDef {
  return def;
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
 * A request another site made the browser send (docs/api.md#how-a-request-is-authenticated): its `Origin` is not
 * ours, or the browser says so in `Sec-Fetch-Site` (sent even where `Origin` is not). `same-site` is not
 * refused: a sibling subdomain is the operator's own.
 */
function isCrossSite(headers: Headers, publicUrl: string): boolean {
  const origin = headers.get("origin");
  if (origin && origin !== publicUrl) return true;
  return headers.get("sec-fetch-site")?.trim().toLowerCase() === "cross-site";
}

/** `application/json`, with or without parameters: a type no HTML form can send without the page's own script. */
function isJsonBody(headers: Headers): boolean {
  const type = headers.get("content-type");
  if (type === null) return headers.get("content-length") === "0" || (!headers.has("content-length") && !headers.has("transfer-encoding"));
  return type.split(";")[0]!.trim().toLowerCase() === "application/json";
}

/**
 * Login CSRF (docs/api.md#accounts-and-sessions): another site's page could sign the visitor in to an account
 * of the attacker's choosing. Its request has a foreign Origin or `Sec-Fetch-Site: cross-site` — or, from a
 * browser that sends neither, a form's body (text/plain, urlencoded, multipart): only our page sends JSON.
 */
function refuseForeignSignIn(request: Request, publicUrl: string): void {
  if (isCrossSite(request.headers, publicUrl) || !isJsonBody(request.headers)) throw forbidden("Cross-site request rejected");
}

/**
 * A query value as a header value: unchanged when it is one, else percent-encoded — still a value that names
 * no key, project or organization (and so fails like any unknown one), where Headers would throw.
 */
const asHeaderValue = (v: string) => (/^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v));

/** Copies the browser bridge's query parameters into the headers they stand for, when those are absent. */
function bridgeQuery(request: Request, url: URL): Request {
  const query = url.searchParams;
  const headers = new Headers(request.headers);
  const token = query.get("_token");
  if (token && !headers.has("authorization")) headers.set("authorization", `Bearer ${asHeaderValue(token)}`);
  const project = query.get("_project");
  if (project && !headers.has("x-project-id")) headers.set("x-project-id", asHeaderValue(project));
  const org = query.get("_org") ?? query.get("org");
  if (org && !headers.has("x-organization-id")) headers.set("x-organization-id", asHeaderValue(org));
  return new Request(url.href, { method: request.method, headers });
}

/**
 * Runs `def` for a request whose target (requestTarget.ts) is `url` and whose path gave `params`. `address`: the
 * client's IP address, when the listener knows it (recorded in audit events). `seen` hears who authenticated
 * (the request's span records the kind of credential).
 */
export async function runRoute(
  def: RouteDef,
  services: Services,
  request: Request,
  url: URL,
  params: Record<string, string>,
  address: string | null = null,
  seen?: (principal: Principal) => void,
): Promise<Response> {
  // A URL holding a NUL byte names nothing we store (and PostgreSQL cannot even compare it): no such route.
  if (Object.values(params).some((p) => p.includes("\u0000")) || url.search.toLowerCase().includes("%00")) {
    return unknownRoute(request.method, url);
  }
  try {
    let principal: Principal | null = null;
    let ctx: RequestContext | PartnerContext | null = null;
    if (def.queryBridge) request = bridgeQuery(request, url);
    if (def.signIn) refuseForeignSignIn(request, services.deps.config.publicUrl);
    if (def.access !== "none") {
      principal = await authenticate(services, request.headers);
      seen?.(principal);
      if (def.access === "partner") ctx = await resolvePartnerContext(services, principal, def.role ?? "any");
      else if (def.access === "session") {
        if (sessionIdOf(principal) === null) throw unauthorized();
      } else {
        ctx = await resolveContext(services, principal, request.headers, def.access, def.role ?? "any");
      }
      if (sessionIdOf(principal) !== null && MUTATING.has(request.method) && isCrossSite(request.headers, services.deps.config.publicUrl)) {
        throw forbidden("Cross-site request rejected");
      }
    }
    const body = await readBody(def, request).catch((err) => {
      throw def.unprocessable && err instanceof ApiError && err.status === 400 && err.shape === "flat" ? ApiError.envelope(422, err.message) : err;
    });
    const handle = async (): Promise<unknown> =>
      def.handler({
        services,
        request,
        params,
        query: url.searchParams,
        body,
        ctx,
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
