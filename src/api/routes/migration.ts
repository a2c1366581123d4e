// Migration (docs/api.md#migration): `POST /migrate/export` on self-hosted, `POST /migrate/import` on the cloud, both
// project·admin. Import items are validated one by one here: a bad item becomes a skip entry, never a failure.
import { Type as T, type Static, type TSchema } from "@sinclair/typebox";
import type { ImportEntry } from "../../services/migration.ts";
import { cloudApiKeyError, cloudUrlError } from "../../services/migration.ts";
import { route, type RouteDef } from "../route.ts";
import { validate } from "../validate.ts";
import { CreateAgentBody } from "./agents.ts";
import { CreateSecretBody } from "./secrets.ts";
import { MigrationResult } from "../../core/records/migration.ts";
import { returns } from "../responses.ts";

export const ExportBody = T.Object({
  cloudApiKey: T.String({ trim: true, blankIsAbsent: true, refine: cloudApiKeyError }),
  cloudUrl: T.String({ trim: true, blankIsAbsent: true, refine: cloudUrlError }),
});

const UNSUPPORTED_VERSION = "Unsupported migration version";

export const ImportBody = T.Object({
  version: T.Unknown({ missing: UNSUPPORTED_VERSION, refine: (v: unknown) => (v === 1 ? null : UNSUPPORTED_VERSION) }),
  // Arrays of anything: each item is checked on its own below, so one bad item cannot fail the request.
  secrets: T.Optional(T.Unknown({ refine: (v: unknown) => (Array.isArray(v) ? null : "secrets must be an array") })),
  agents: T.Optional(T.Unknown({ refine: (v: unknown) => (Array.isArray(v) ? null : "agents must be an array") })),
});

const S = CreateSecretBody.properties;
/** An imported secret: the inline create rules of docs/injection.md#secrets, plus the account id of an `llm_b` OAuth token. */
const ImportSecretItemSchema = T.Object({
  name: S.name,
  type: S.type,
  // Always inline: required whatever else the item says.
  value: T.String({ minLength: 1, maxLength: 10000, trim: true, blankIsAbsent: true, missing: "value is required" }),
  hostPattern: S.hostPattern,
  pathPattern: S.pathPattern,
  injectionConfig: S.injectionConfig,
  metadata: T.Optional(
    T.Union([
      T.Null(),
      T.Object({
        authMode: T.Optional(T.Union([T.Literal("api-key"), T.Literal("oauth")])),
        accountId: T.Optional(T.String({ minLength: 1, maxLength: 255 })),
      }),
    ]),
  ),
});

const A = CreateAgentBody.properties;
const ImportAgentItemSchema = T.Object({ name: A.name, identifier: A.identifier, mode: A.mode, isDefault: T.Optional(T.Boolean()) });

const SECRET_TYPES = new Set(["llm_a", "llm_b", "generic"]);

/** A readable name for a skip entry, even when the item's own name is unusable. */
function itemName(item: unknown, fallback: string): string {
  const name = typeof item === "object" && item !== null ? (item as { name?: unknown }).name : undefined;
  if (typeof name !== "string" || name.trim() === "") return fallback;
  const trimmed = name.trim();
  return trimmed.length > 255 ? `${trimmed.slice(0, 255)}…` : trimmed;
}

/** `items` (an array, or absent) item by item: each valid one, or the skip entry saying why not. */
function entries<S extends TSchema>(items: unknown, schema: S, field: string, typeOf: (item: unknown) => string): ImportEntry<Static<S>>[] {
  return (Array.isArray(items) ? items : []).map((item: unknown, i) => {
    const skip = (reason: string): ImportEntry<Static<S>> => ({ ok: false, skip: { type: typeOf(item), name: itemName(item, `${field}[${i}]`), reason } });
    if (typeof item !== "object" || item === null || Array.isArray(item)) return skip(`${field}[${i}] must be an object`);
    const r = validate(schema, item);
    if (r.ok) return { ok: true, item: r.value };
    return skip(typeof r.message === "string" ? r.message : r.message.message);
  });
}

function secretType(item: unknown): string {
  const type = typeof item === "object" && item !== null ? (item as { type?: unknown }).type : undefined;
  return typeof type === "string" && SECRET_TYPES.has(type) ? type : "secret";
}

export const migrationRoutes: RouteDef[] = [
  route({
    method: "POST",
    path: "/migrate/export",
    response: returns(MigrationResult),
    modes: ["self-hosted"],
    access: "project",
    role: "admin",
    body: ExportBody,
    handler: ({ services, ctx, body }) =>
      services.migration.export({ projectId: ctx.projectId, organizationId: ctx.organizationId }, { cloudUrl: body.cloudUrl, cloudApiKey: body.cloudApiKey }),
  }),
  route({
    method: "POST",
    path: "/migrate/import",
    response: returns(MigrationResult),
    modes: ["cloud"],
    access: "project",
    role: "admin",
    body: ImportBody,
    handler: ({ services, ctx, body }) => {
      const project = { projectId: ctx.projectId, organizationId: ctx.organizationId };
      return services.migration.import(project, {
        secrets: entries(body.secrets, ImportSecretItemSchema, "secrets", secretType),
        agents: entries(body.agents, ImportAgentItemSchema, "agents", () => "agent"),
      });
    },
  }),
];
