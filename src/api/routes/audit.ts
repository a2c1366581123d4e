// The audit log (docs/operations.md#audit-log): `GET /org/audit` (organization·admin), the organization's events newest first.
import { Type as T, type TSchema } from "@sinclair/typebox";
import { ApiError } from "../../core/errors.ts";
import type { AuditQuery } from "../../services/auditQuery.ts";
import type { RequestContext } from "../auth.ts";
import { returns } from "../responses.ts";
import { route, type RouteDef } from "../route.ts";

const Nullable = <S extends TSchema>(s: S) => T.Union([s, T.Null()]);
const q = (description: string) => T.Optional(T.String({ description }));

export const AuditQuerySchema = T.Object({
  actorId: q("only this actor's events (a user id, an API key id, or the CLI's user)"),
  targetId: q("only events on this target"),
  action: q("only this action, e.g. PATCH /v1/secrets/{secretId}"),
  since: q("timestamp (inclusive)"),
  until: q("timestamp (inclusive)"),
  limit: q("1-500, default 100"),
  cursor: q("nextCursor of the previous page"),
});

const AuditEvent = T.Object(
  {
    id: T.String({ format: "uuid" }),
    at: T.String({ format: "date-time" }),
    actor: T.Object({
      kind: T.Union(["user", "project_key", "org_key", "partner_key", "cli"].map((k) => T.Literal(k))),
      id: T.String(),
      email: Nullable(T.String()),
    }),
    action: T.String({ description: "METHOD /v1/path/{param} as in this document, or `credgate <command>`" }),
    targetType: T.String(),
    targetId: Nullable(T.String()),
    projectId: Nullable(T.String()),
    address: Nullable(T.String({ description: "the client's IP address" })),
    changes: T.Record(T.String(), T.Tuple([T.Unknown(), T.Unknown()]), { description: '{field: [before, after]}; secret values read "<redacted>"' }),
    hash: T.String({ pattern: "^[0-9a-f]{64}$", description: "SHA-256 of the previous event's hash and this event's canonical JSON" }),
  },
  { $id: "AuditEvent" },
);
export const AuditEventPage = T.Object({ data: T.Array(AuditEvent), nextCursor: Nullable(T.String()) }, { $id: "AuditEventPage" });

function timestamp(name: string, raw: string | null): string | undefined {
  if (raw === null || raw === "") return undefined;
  const t = Date.parse(raw);
  if (Number.isNaN(t)) throw ApiError.flat(400, `${name} must be a valid timestamp`);
  return new Date(t).toISOString();
}

function limitOf(raw: string | null): number {
  if (raw === null || raw === "") return 100;
  const n = Number(raw);
  if (!/^-?\d+$/.test(raw.trim()) || n < 1 || n > 500) throw ApiError.flat(400, "limit must be between 1 and 500");
  return n;
}

/** Query parameters in the contract's order: actorId, targetId, action, since, until, limit, cursor. */
export function parseAuditQuery(query: URLSearchParams, ctx: RequestContext): AuditQuery {
  return {
    organizationId: ctx.organizationId,
    actorId: query.get("actorId") || undefined,
    targetId: query.get("targetId") || undefined,
    action: query.get("action") || undefined,
    since: timestamp("since", query.get("since")),
    until: timestamp("until", query.get("until")),
    limit: limitOf(query.get("limit")),
    cursor: query.get("cursor") || undefined,
  };
}

export const auditRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/org/audit",
    query: AuditQuerySchema,
    response: returns(AuditEventPage, "The organization's management writes, newest first"),
    access: "organization",
    role: "admin",
    handler: ({ services, ctx, query }) => services.deps.audit.list(parseAuditQuery(query, ctx)),
  }),
];
