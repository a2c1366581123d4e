// `GET /v1/openapi.json` (docs/api-reference.md): an OpenAPI 3.1 description of the management API generated from the
// route table — every route of every mode, with its access, body, query, success answer and the error
// shapes of docs/api.md#error-shapes. Routes are data (src/api/route.ts), so the document cannot drift from what is served.
import { OptionalKind, type TSchema } from "@sinclair/typebox";
import type { RouteAccess } from "./auth.ts";
import type { RouteDef } from "./route.ts";
import { EnvelopeError, FlatError } from "./schemas.ts";

export const OPENAPI_VERSION = "3.1.0";
/** The API description version (docs/api.md#base-path-and-modes, seed). */
export const API_DESCRIPTION_VERSION = "1.0";

type Json = Record<string, unknown>;

/** JSON Schema keywords kept when publishing a TypeBox schema; the validator's own options (refine, trim…) are not. */
const KEYWORDS = new Set([
  "type", "properties", "required", "items", "anyOf", "oneOf", "allOf", "enum", "const", "minLength", "maxLength", "pattern",
  "format", "minimum", "maximum", "minItems", "maxItems", "additionalProperties", "patternProperties", "description", "default",
]);

/** A TypeBox schema as plain JSON Schema; named schemas (`$id`) become component references. */
function publish(schema: TSchema, components: Json, root = true): Json {
  const id = schema.$id as string | undefined;
  if (id !== undefined && !root) {
    if (!(id in components)) {
      components[id] = {};
      components[id] = publish(schema, components, true);
    }
    return { $ref: `#/components/schemas/${id}` };
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!KEYWORDS.has(key) || typeof value === "function") continue;
    if (key === "properties" || key === "patternProperties") {
      out[key] = Object.fromEntries(Object.entries(value as Record<string, TSchema>).map(([k, v]) => [k, publish(v, components, false)]));
    } else if (key === "items" || (key === "additionalProperties" && typeof value === "object")) {
      out[key] = publish(value as TSchema, components, false);
    } else if (key === "anyOf" || key === "oneOf" || key === "allOf") {
      out[key] = (value as TSchema[]).map((v) => publish(v, components, false));
    } else {
      out[key] = value;
    }
  }
  if ((schema as { trim?: boolean }).trim) out.description = [out.description, "Trimmed."].filter(Boolean).join(" ");
  return out;
}

/** The named component for a route-level schema: named schemas by reference, others inline. */
function schemaRef(schema: TSchema, components: Json): Json {
  return schema.$id !== undefined ? publish(schema, components, false) : publish(schema, components, true);
}

const ACCESS_TEXT: Record<RouteAccess, string> = {
  project: "project context (a project key; an organization key or session with X-Project-Id)",
  "project-explicit": "project context; an organization key without X-Project-Id gets 400 `X-Project-Id header is required`",
  organization: "organization context (no project header needed)",
  partner: "partner context",
  session: "a dashboard session (cookie)",
  none: "no authentication",
};

function operationId(def: RouteDef): string {
  const words = def.path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return def.method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
}

const errorRef = (name: string) => ({ $ref: `#/components/responses/${name}` });
const eitherShape = { oneOf: [{ $ref: "#/components/schemas/FlatError" }, { $ref: "#/components/schemas/EnvelopeError" }] };
const envelope = { $ref: "#/components/schemas/EnvelopeError" };

function errorResponses(): Json {
  const json = (schema: Json, description: string) => ({ description, content: { "application/json": { schema } } });
  return {
    BadRequest: json(eitherShape, "Invalid input: flat `{error}` from route-level validation, envelope from service checks"),
    Unauthorized: json(envelope, "`Invalid API key or token.`"),
    Forbidden: json(envelope, "`Insufficient permissions`, `Not a member of this organization` or `Cross-site request rejected`"),
    NotFound: json(eitherShape, "Not found (also every route that the running mode does not serve: `Unrecognized request URL (…)`)"),
    PayloadTooLarge: json(envelope, "`Request body too large` (over 1 MiB)"),
    Unprocessable: json(envelope, "Policy validation failure"),
    TooManyRequests: json(envelope, "`Too many attempts, try again later`"),
    ServerError: json(envelope, "`An unexpected error occurred.` (retryable with backoff)"),
    Unavailable: json(envelope, "`Database unavailable` (several instances on PostgreSQL; retry after the Retry-After seconds)"),
    OtherError: json(eitherShape, "Another error (e.g. 409 conflicts, 410 for a decided approval); always one of the two shapes"),
  };
}

function successResponse(def: RouteDef, components: Json): Json {
  const r = def.response;
  if ("schema" in r) return { description: r.description, content: { "application/json": { schema: schemaRef(r.schema, components) } } };
  if ("contentType" in r) return { description: r.description, content: { [r.contentType]: { schema: { type: "string" } } } };
  if (r.status === 302) return { description: r.description, headers: { Location: { schema: { type: "string" } } } };
  return { description: r.description };
}

function parameters(def: RouteDef, components: Json): Json[] {
  const out: Json[] = [];
  for (const m of def.path.matchAll(/:([A-Za-z0-9_]+)/g)) out.push({ name: m[1], in: "path", required: true, schema: { type: "string" } });
  if (def.access === "project" || def.access === "project-explicit") out.push({ $ref: "#/components/parameters/ProjectId" });
  if (def.access === "project" || def.access === "project-explicit" || def.access === "organization" || def.access === "session") out.push({ $ref: "#/components/parameters/OrganizationId" });
  const props = (def.query?.properties ?? {}) as Record<string, TSchema>;
  for (const [name, schema] of Object.entries(props)) {
    const { description, ...rest } = publish(schema, components);
    out.push({ name, in: "query", required: schema[OptionalKind] !== "Optional", ...(description ? { description } : {}), schema: rest });
  }
  return out;
}

function operation(def: RouteDef, components: Json): Json {
  const authenticated = def.access !== "none";
  const access = `${def.access}${def.role && def.role !== "any" ? `·${def.role}` : ""}`;
  const notes = [`Access: ${access} — ${ACCESS_TEXT[def.access]}${def.role && def.role !== "any" ? `, role ${def.role} or above` : ""}.`];
  if (def.modes) notes.push(`Available in ${def.modes.join(" and ")} mode only; elsewhere the path answers 404 like an unknown route.`);
  const responses: Json = { [String(def.response.status)]: successResponse(def, components), "400": errorRef("BadRequest") };
  if (authenticated) Object.assign(responses, { "401": errorRef("Unauthorized"), "403": errorRef("Forbidden") });
  responses["404"] = errorRef("NotFound");
  if (def.body) responses["413"] = errorRef("PayloadTooLarge");
  if (def.unprocessable) responses["422"] = errorRef("Unprocessable");
  if (def.path === "/auth/login") responses["429"] = errorRef("TooManyRequests");
  Object.assign(responses, { "500": errorRef("ServerError"), "503": errorRef("Unavailable"), default: errorRef("OtherError") });
  const op: Json = {
    operationId: operationId(def),
    tags: [def.path.split("/")[1] === "org" ? `org/${def.path.split("/")[2]}` : def.path.split("/")[1]!],
    description: notes.join(" "),
    "x-credgate-access": access,
    ...(def.modes ? { "x-credgate-modes": def.modes } : {}),
    security: def.access === "none" ? [] : def.access === "session" ? [{ sessionCookie: [] }] : [{ bearerKey: [] }, { sessionCookie: [] }],
    parameters: parameters(def, components),
    responses,
  };
  if ((op.parameters as Json[]).length === 0) delete op.parameters;
  if (def.body) {
    const required = def.emptyBody !== undefined || (Array.isArray(def.body.required) && def.body.required.length > 0);
    op.requestBody = { required, content: { "application/json": { schema: schemaRef(def.body, components) } } };
  }
  return op;
}

/** The OpenAPI document for `routes` (paths below the `/v1` server URL). */
export function openApiDocument(routes: RouteDef[], version: string) {
  const schemas: Json = {};
  publish(FlatError, schemas, false);
  publish(EnvelopeError, schemas, false);
  const paths: Record<string, Json> = {};
  for (const def of routes) {
    const path = def.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
    const item = (paths[path] ??= {});
    const method = def.method.toLowerCase();
    if (method in item) throw new Error(`openapi: ${def.method} ${def.path} is defined twice`);
    item[method] = operation(def, schemas);
  }
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: "credgate management API",
      version: API_DESCRIPTION_VERSION,
      description: [
        `credgate ${version}. Every path is also served under /api (an alias of /v1).`,
        "Errors have one of two shapes: flat `{\"error\": \"<message>\"}` or envelope `{\"error\": {\"message\", \"type\"}}`; clients read `error` when it is a string, else `error.message`.",
        "Every response carries `x-request-id`. Operations outside /v1: `GET /metrics` (Prometheus text; loopback or CREDGATE_METRICS_TOKEN) and `GET /healthz` on the gateway port.",
      ].join("\n\n"),
    },
    servers: [{ url: "/v1" }],
    paths,
    components: {
      schemas,
      responses: errorResponses(),
      parameters: {
        ProjectId: { name: "X-Project-Id", in: "header", required: false, description: "the project, for organization keys and sessions", schema: { type: "string" } },
        OrganizationId: { name: "X-Organization-Id", in: "header", required: false, description: "the organization, for a session in several organizations", schema: { type: "string" } },
      },
      securitySchemes: {
        bearerKey: { type: "http", scheme: "bearer", description: "An API key: svc_… (project), svc_org_… (organization) or svc_partner_… (partner)" },
        sessionCookie: { type: "apiKey", in: "cookie", name: "credgate_session", description: "A dashboard session (POST /auth/login)" },
      },
    },
  };
}
