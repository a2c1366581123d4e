// The API's own schemas: its description document, the two error shapes and the query parameters routes
// read. The records it answers with live in src/core/records (one declaration each, shared with services).
import { Type as T } from "@sinclair/typebox";
import { AnyObject, Enum } from "../core/records/common.ts";

export const OpenApiDocument = T.Object({ openapi: T.String(), info: AnyObject, paths: AnyObject }, { additionalProperties: true });

/** The two error shapes of docs/api.md#error-shapes. */
export const FlatError = T.Object({ error: T.String() }, { $id: "FlatError", description: "flat shape: route-level validation, grant endpoints, catalog lookups, approval decisions" });
export const EnvelopeError = T.Object(
  {
    error: T.Object({
      message: T.String(),
      type: Enum("invalid_request_error", "authentication_error", "not_found_error", "validation_error", "rate_limit_error", "api_error"),
    }),
  },
  { $id: "EnvelopeError", description: "envelope shape: authentication, service errors, policy 422, 413, 429, 500, 503" },
);

// ── query parameters (documentation; handlers parse and check the query themselves) ──
const q = (description: string, extra: object = {}) => T.Optional(T.String({ description, ...extra }));
export const LogsQuery = T.Object({
  agentId: q("only this agent's requests"),
  host: q("host, with a non-default port"),
  decision: q("request-log decision, e.g. allowed, blocked"),
  status: q("HTTP status, 100-599"),
  since: q("timestamp (inclusive)"),
  until: q("timestamp (inclusive)"),
  limit: q("1-500, default 100"),
  cursor: q("nextCursor of the previous page"),
});
export const OrgLogsQuery = T.Object({ ...LogsQuery.properties, projectId: q("only this project's requests") });
export const ProviderFilterQuery = T.Object({ provider: q("only connections of this app") });
export const RulesQuery = T.Object({ status: q("draft (default) or published"), include: q("managed: append the live managed rules, read-only") });
export const StatusQuery = T.Object({ status: q("draft (default) or published") });
export const EffectivePermissionsQuery = T.Object({
  provider: T.String({ description: "app id (required)" }),
  agentId: q("project variant only: evaluate for this agent"),
  connectionId: q("project variant only: evaluate for this connection"),
});
export const PendingQuery = T.Object({ exclude: q("comma-separated approval ids to skip") });
export const SpendQuery = T.Object({
  since: q("timestamp (inclusive); default: the start of the current UTC month"),
  until: q("timestamp (exclusive); default: the start of the next UTC month"),
  groupBy: q("agent (default), model or day"),
});
export const OrgSpendQuery = T.Object({ ...SpendQuery.properties, groupBy: q("project (default), agent, model or day") });
export const DeliveriesQuery = T.Object({ channelId: q("only this channel's deliveries"), limit: q("1-500, default 100"), cursor: q("nextCursor of the previous page") });
export const AuthorizeQuery = T.Object({
  connectionId: q("reconnect this connection instead of creating one"),
  agent_name: q("agent identifier to grant the new connection to", { maxLength: 128 }),
  _token: q("browser bridge: stands in for Authorization: Bearer"),
  _project: q("browser bridge: stands in for X-Project-Id"),
  _org: q("browser bridge: stands in for X-Organization-Id"),
});
export const OrgAuthorizeQuery = T.Object({
  connectionId: q("reconnect this connection instead of creating one"),
  org: q("target organization id, for callers in several organizations"),
  _token: q("browser bridge: stands in for Authorization: Bearer"),
});
export const CallbackQuery = T.Object({ code: q("authorization code"), state: q("signed state"), error: q("the provider's error code") });
export const ContainerConfigQuery = T.Object({ agent: q("agent identifier; default: the project's default agent") });
export const SkillQuery = T.Object({ agent_framework: q("the agent framework reading the skill") });
