// Response bodies of the management API as TypeBox schemas (docs/api.md#records; every endpoint's answer is
// listed in docs/api-reference.md).
// Routes name them in their `response` (src/api/route.ts); src/api/openapi.ts publishes them; the API tests
// check every real response against them (test/support/openapiCheck.ts), so they stay true.
import { Type as T, type TSchema } from "@sinclair/typebox";

const Nullable = <S extends TSchema>(s: S) => T.Union([s, T.Null()]);
const Enum = (...values: string[]) => T.Union(values.map((v) => T.Literal(v)));
const Timestamp = T.String({ format: "date-time", description: "ISO 8601 UTC with milliseconds" });
const Uuid = T.String({ format: "uuid" });
const AnyObject = T.Object({}, { additionalProperties: true });
const StringMap = T.Record(T.String(), T.String());

export const OpenApiDocument = T.Object({ openapi: T.String(), info: AnyObject, paths: AnyObject }, { additionalProperties: true });

export const Success = T.Object({ success: T.Literal(true) }, { $id: "Success" });

export const Health = T.Object({ status: T.Literal("ok"), version: T.String(), timestamp: Timestamp }, { $id: "Health" });
export const Counts = T.Object({ agents: T.Integer(), apps: T.Integer(), llms: T.Integer(), secrets: T.Integer() }, { $id: "Counts" });

export const User = T.Object({ id: Uuid, email: T.String(), name: Nullable(T.String()), createdAt: Timestamp }, { $id: "User" });
export const UserUpdated = T.Object({ id: Uuid, email: T.String(), name: Nullable(T.String()) });
export const ApiKey = T.Object({ apiKey: T.String() }, { $id: "ApiKey" });
export const Session = T.Object({
  user: User,
  organizations: T.Array(T.Object({ id: T.String(), name: T.String(), role: Enum("owner", "admin", "member") })),
  projects: T.Array(T.Object({ id: T.String(), name: T.String(), organizationId: T.String() })),
  partner: Nullable(T.Object({ id: T.String(), name: T.String(), role: Enum("owner", "admin", "member") })),
});
export const Login = T.Object({ user: User });
export const Signup = T.Object({ user: User, organizationId: T.String(), projectId: T.String() });
export const Claimed = T.Object({ kind: Enum("organization", "provision"), organizationId: T.String(), projectId: T.String() });

export const Project = T.Object(
  { id: T.String(), name: T.String(), slug: T.String(), organizationId: T.String(), createdAt: Timestamp, updatedAt: Timestamp },
  { $id: "Project" },
);
export const ProjectCreated = T.Object({ id: T.String(), name: T.String(), slug: T.String(), organizationId: T.String(), createdAt: Timestamp, updatedAt: Timestamp, apiKey: T.String() });
export const TeamMember = T.Object(
  { userId: Uuid, email: T.String(), name: Nullable(T.String()), role: Enum("owner", "admin", "member"), status: Enum("active", "pending"), joinedAt: Timestamp },
  { $id: "TeamMember" },
);
export const PartnerOrganization = T.Object(
  {
    id: T.String(),
    name: T.String(),
    slug: T.String(),
    status: Enum("unclaimed", "claimed", "detached"),
    claimedByEmail: Nullable(T.String()),
    claimedAt: Nullable(Timestamp),
    createdAt: Timestamp,
    projects: T.Array(Project),
  },
  { $id: "PartnerOrganization" },
);
export const PartnerOrgCreated = T.Object({
  organizationId: T.String(),
  projectId: T.String(),
  agentId: Uuid,
  orgApiKey: T.String(),
  projectApiKey: T.String(),
  agentToken: T.String(),
  claimUrl: T.String(),
});
export const OrgPartnerStatus = T.Object({ partnerManaged: T.Boolean(), detached: T.Boolean(), partnerName: Nullable(T.String()) });
export const SpendBudget = T.Object(
  { secretId: Uuid, organizationId: T.String(), limitCents: T.Integer(), period: Enum("monthly", "total"), spentCents: T.Integer() },
  { $id: "SpendBudget" },
);
/** A budget of an organization, a project or an agent (docs/budgets.md#budgets-for-every-scope). */
export const Budget = T.Object(
  {
    id: Uuid,
    scope: Enum("organization", "project", "agent"),
    organizationId: T.String(),
    projectId: Nullable(T.String()),
    agentId: Nullable(Uuid),
    secretType: Nullable(Enum("llm_a", "llm_b")),
    limitCents: T.Integer(),
    period: Enum("day", "week", "month", "total"),
    alertPercents: T.Array(T.Integer({ minimum: 1, maximum: 100 })),
    spentCents: T.Integer({ description: "floor of the current window's spend" }),
    resetsAt: Nullable(T.String({ format: "date-time", description: "the end of the current window; null for total" })),
    createdAt: Timestamp,
  },
  { $id: "Budget" },
);
/** `GET /spend` (docs/budgets.md#spend-report). */
export const SpendReport = T.Object(
  {
    data: T.Array(T.Object({ key: T.String(), requests: T.Integer(), inputTokens: T.Integer(), outputTokens: T.Integer(), costUsd: T.Number() })),
    totalUsd: T.Number(),
  },
  { $id: "SpendReport" },
);
export const PartnerMember = T.Object({ userId: Uuid, email: T.String(), role: Enum("owner", "admin", "member"), createdAt: Timestamp }, { $id: "PartnerMember" });
export const PartnerMemberAdded = T.Object({ userId: Uuid, email: T.String(), role: Enum("owner", "admin", "member"), createdAt: Timestamp, inviteUrl: Nullable(T.String()) });
export const ClaimLink = T.Object({ claimUrl: T.String() });
export const RotatedTokens = T.Object({ orgApiKey: T.String(), projectApiKey: T.String(), agentToken: T.String() });
export const Provision = T.Object({ id: Uuid, userId: Uuid, projectId: T.String(), apiKey: T.String(), claimUrl: T.String(), expiresAt: Timestamp }, { $id: "Provision" });

export const Organization = T.Object(
  {
    id: T.String({ pattern: "^[a-z]{16}$" }),
    name: T.String(),
    slug: T.String(),
    partnerManaged: T.Boolean(),
    partnerDetached: T.Boolean(),
    claimed: T.Boolean(),
    createdAt: Timestamp,
  },
  { $id: "Organization" },
);

const AgentMode = Enum("all", "grants");
export const Agent = T.Object(
  {
    id: Uuid,
    name: T.String(),
    identifier: T.String(),
    mode: AgentMode,
    isDefault: T.Boolean(),
    accessToken: T.Optional(T.String({ description: "agt_…; only in the list, /agents/default and token regeneration" })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    lastSeenAt: Nullable(Timestamp),
  },
  { $id: "Agent" },
);
export const AgentCreated = T.Object({ id: Uuid, name: T.String(), identifier: T.String(), mode: AgentMode, isDefault: T.Boolean(), createdAt: Timestamp });
export const AccessToken = T.Object({ accessToken: T.String() });

const SecretType = Enum("llm_a", "llm_b", "generic");
const SecretScope = Enum("project", "organization", "partner");
const ValueSource = Enum("inline", "external_vault");
export const InjectionConfig = T.Union(
  [
    T.Object({ headerName: T.String(), valueFormat: T.Optional(T.String()) }),
    T.Object({ paramName: T.String(), paramFormat: T.Optional(T.String()) }),
    T.Object({ pathTemplate: T.String() }),
    T.Object({ pathRegex: T.String(), pathReplacement: T.String() }),
  ],
  { $id: "InjectionConfig" },
);
const SecretMetadata = T.Object({
  authMode: T.Optional(Enum("api-key", "oauth")),
  accountId: T.Optional(T.String()),
  opDisplay: T.Optional(T.Object({ vault: T.Optional(T.String()), item: T.Optional(T.String()), field: T.Optional(T.String()) })),
});
export const Secret = T.Object(
  {
    id: Uuid,
    name: T.String(),
    type: SecretType,
    valueSource: ValueSource,
    opRef: Nullable(T.String()),
    hostPattern: T.String(),
    pathPattern: Nullable(T.String()),
    injectionConfig: Nullable(InjectionConfig),
    metadata: Nullable(SecretMetadata),
    scope: SecretScope,
    typeLabel: T.String(),
    createdAt: Timestamp,
  },
  { $id: "Secret" },
);
export const SecretCreated = T.Object(
  {
    id: Uuid,
    name: T.String(),
    type: SecretType,
    valueSource: ValueSource,
    opRef: Nullable(T.String()),
    hostPattern: T.String(),
    pathPattern: Nullable(T.String()),
    createdAt: Timestamp,
    preview: T.Optional(T.String({ description: "inline secrets only: first 4 + •••••••• + last 4, or •••••••• for short values" })),
  },
  { $id: "SecretCreated" },
);

const RequestLog = T.Object({
  id: Uuid,
  projectId: T.String(),
  agentId: Uuid,
  method: T.String(),
  host: T.String(),
  path: T.String(),
  provider: Nullable(T.String()),
  status: T.Integer(),
  latencyMs: T.Integer(),
  injectionCount: T.Integer(),
  decision: T.String(),
  matchedRuleLogicalId: Nullable(T.String()),
  matchedRuleName: Nullable(T.String()),
  approvalId: Nullable(T.String()),
  costNanos: Nullable(T.Integer()),
  createdAt: Timestamp,
  requestId: Nullable(T.String({ description: "the request's x-request-id" })),
});
export const RequestLogPage = T.Object({ data: T.Array(RequestLog), nextCursor: Nullable(T.String()) }, { $id: "RequestLogPage" });

const Resources = Nullable(T.Record(T.String(), T.Array(T.String()), { description: "granular resource scope, e.g. {repositories:[…]}; null = unrestricted" }));
const ConnectionScope = Enum("project", "organization");
export const GrantSet = T.Object(
  {
    agentId: Uuid,
    mode: AgentMode,
    connections: T.Array(
      T.Object({
        connectionId: T.String(),
        provider: T.String(),
        label: Nullable(T.String()),
        scope: ConnectionScope,
        access: Enum("full", "custom"),
        allow: T.Array(T.String()),
        ask: T.Array(T.String()),
        resources: Resources,
      }),
    ),
    secrets: T.Array(T.Object({ secretId: Uuid, name: T.String(), type: SecretType, scope: SecretScope })),
  },
  { $id: "GrantSet" },
);
export const ConnectionGrants = T.Object({
  connectionId: T.String(),
  agents: T.Array(T.Object({ agentId: Uuid, agentName: T.String(), access: Enum("full", "custom"), allow: T.Array(T.String()), ask: T.Array(T.String()) })),
});
export const AgentConnectionAssignments = T.Array(T.Object({ appConnectionId: T.String(), sessionPolicy: Resources }));
const CredentialStatus = Enum("not_granted", "blocked", "limited", "usable");
export const EffectiveCredentials = T.Object({
  agentId: Uuid,
  mode: AgentMode,
  secrets: T.Array(T.Object({ id: Uuid, name: T.String(), type: SecretType, scope: SecretScope, hostPattern: T.String(), status: CredentialStatus })),
  connections: T.Array(
    T.Object({ id: T.String(), provider: T.String(), label: Nullable(T.String()), scope: ConnectionScope, status: CredentialStatus, access: Nullable(Enum("full", "custom")) }),
  ),
});

const RuleTarget = T.Union([
  T.Object({ kind: T.Literal("network"), hostPattern: T.String(), pathPattern: T.Optional(T.String()), method: T.Optional(T.String()) }),
  T.Object({ kind: T.Literal("app"), provider: T.String(), tools: T.Array(T.String()) }),
  T.Object({ kind: T.Literal("connection"), connectionId: T.String(), tools: T.Array(T.String()) }),
  T.Object({ kind: T.Literal("secret"), secretId: T.Optional(T.String()), secretScope: T.Optional(Enum("project", "organization")) }),
]);
export const PolicyRule = T.Object(
  {
    id: T.String({ description: "uuid; empty for the virtual Default Rule" }),
    logicalId: T.String(),
    scope: Enum("project", "organization"),
    status: Enum("draft", "published"),
    generation: T.Integer(),
    priority: T.Integer(),
    enabled: T.Boolean(),
    isDefault: T.Boolean(),
    source: Enum("custom", "grant", "blocklist", "default"),
    name: T.String(),
    description: Nullable(T.String()),
    action: Enum("allow", "block"),
    rateLimit: Nullable(T.Integer()),
    rateLimitWindow: Nullable(Enum("minute", "hour", "day")),
    requireApproval: T.Boolean(),
    conditions: Nullable(T.Array(T.Object({ target: T.Literal("body"), operator: T.Literal("contains"), value: T.String() }))),
    identities: T.Array(T.Object({ type: T.Literal("agent"), id: T.String() })),
    targets: T.Array(RuleTarget),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: "PolicyRule" },
);
export const PublishResult = T.Object({ generation: T.Integer(), ruleCount: T.Integer() });
export const LastPublish = Nullable(
  T.Object({ generation: T.Integer(), ruleCount: T.Integer(), appliedAt: Timestamp, appliedBy: Nullable(T.Object({ name: Nullable(T.String()), email: T.String() })) }),
);
export const EffectiveAppPermissions = T.Object({
  provider: T.String(),
  agentId: Nullable(T.String()),
  connectionId: Nullable(T.String()),
  groups: T.Array(
    T.Object({
      category: Enum("read", "write"),
      tools: T.Array(
        T.Object({
          toolId: T.String(),
          verdict: Enum("allow", "approval", "block", "rate_limited"),
          rateLimit: Nullable(T.Integer()),
          rateLimitWindow: Nullable(Enum("minute", "hour", "day")),
          decidedBy: Nullable(T.Object({ scope: Enum("project", "organization"), logicalId: T.String(), name: T.String() })),
        }),
      ),
    }),
  ),
});

const ApprovalRequest = T.Object(
  {
    id: Uuid,
    projectId: T.String(),
    method: T.String(),
    url: T.String(),
    host: T.String(),
    path: T.String(),
    headers: StringMap,
    bodyPreview: Nullable(T.String()),
    summary: Nullable(T.Object({ action: T.String(), details: T.Array(T.Object({ label: T.String(), value: T.String() })) })),
    agent: T.Object({ id: Uuid, name: T.String(), externalId: T.String() }),
    createdAt: Timestamp,
    expiresAt: Timestamp,
  },
  { $id: "ApprovalRequest" },
);
export const PendingApprovals = T.Object({ requests: T.Array(ApprovalRequest), timeoutSeconds: T.Number() });
export const ApprovalRecord = T.Composite([
  ApprovalRequest,
  T.Object({
    status: Enum("pending", "approved", "denied", "expired", "cancelled"),
    decidedAt: Nullable(Timestamp),
    decidedBy: Nullable(T.Object({ userId: Nullable(T.String()), email: T.String() })),
  }),
]);

const DecidedBy = T.Union([T.Object({ userId: Nullable(T.String()), email: Nullable(T.String()) }), T.Object({ kind: T.Literal("link") })]);
export const DecisionResult = T.Object({
  success: T.Literal(true),
  rememberedUntil: T.Optional(Nullable(T.String({ format: "date-time", description: "with `remember`: the end of the remembered approval (null when the approval names no rule)" }))),
});
export const RememberedApproval = T.Object(
  { id: Uuid, agentId: Uuid, ruleId: T.String({ description: "the rule's logicalId" }), ruleName: T.String(), expiresAt: Timestamp, createdBy: DecidedBy },
  { $id: "RememberedApproval" },
);

const NotificationEvent = Enum("approval.requested", "approval.decided", "budget.threshold");
export const NotificationChannel = T.Object(
  { id: Uuid, kind: Enum("webhook", "slack", "ntfy"), url: T.String(), events: T.Array(NotificationEvent), enabled: T.Boolean(), createdAt: Timestamp },
  { $id: "NotificationChannel" },
);
export const NotificationChannelCreated = T.Composite([
  NotificationChannel,
  T.Object({ signingSecret: T.Optional(T.String({ pattern: "^whsec_[0-9a-f]{64}$", description: "webhook channels only; shown once" })) }),
]);
export const ChannelTestResult = T.Object({ delivered: T.Boolean(), status: Nullable(T.Integer()), error: Nullable(T.String()) });
export const DeliveryPage = T.Object(
  {
    data: T.Array(
      T.Object({
        id: Uuid,
        channelId: Uuid,
        event: NotificationEvent,
        status: Enum("delivered", "retrying", "failed"),
        attempts: T.Integer(),
        lastStatus: Nullable(T.Integer()),
        lastError: Nullable(T.String()),
        createdAt: Timestamp,
      }),
    ),
    nextCursor: Nullable(T.String()),
  },
  { $id: "DeliveryPage" },
);

const ConnectionStatus = Enum("connected", "expired", "error", "revoked");
export const Connection = T.Object(
  {
    id: T.String(),
    provider: T.String(),
    label: Nullable(T.String()),
    status: ConnectionStatus,
    scopes: T.Array(T.String()),
    scope: ConnectionScope,
    metadata: Nullable(AnyObject),
    connectedAt: Timestamp,
  },
  { $id: "Connection" },
);
export const OrganizationConnection = T.Object(
  { id: T.String(), provider: T.String(), label: Nullable(T.String()), status: ConnectionStatus, scopes: T.Array(T.String()), scope: ConnectionScope, connectedAt: Timestamp },
  { $id: "OrganizationConnection" },
);
export const ConnectionRenamed = T.Object({ id: T.String(), provider: T.String(), status: ConnectionStatus, label: Nullable(T.String()) });

export const AppConfig = T.Object(
  { settings: StringMap, hasCredentials: T.Boolean(), enabled: T.Boolean(), source: T.Optional(T.Literal("organization")) },
  { $id: "AppConfig" },
);
export const AppItem = T.Object(
  {
    id: T.String(),
    name: T.String(),
    description: T.String(),
    available: T.Boolean(),
    connectionType: Enum("oauth", "api_key"),
    /** The credential fields a person types in: API-key fields, or the BYOC OAuth client fields. */
    fields: T.Array(T.Object({ name: T.String(), label: T.String(), secret: T.Boolean() })),
    configurable: T.Boolean(),
    config: Nullable(AppConfig),
    connections: T.Array(T.Object({ id: T.String(), label: Nullable(T.String()), status: ConnectionStatus, scopes: T.Array(T.String()), connectedAt: Timestamp })),
  },
  { $id: "AppItem" },
);
export const PermissionDefinition = T.Object(
  {
    provider: T.String(),
    groups: T.Array(T.Object({ category: Enum("read", "write"), tools: T.Array(T.Object({ id: T.String(), name: T.String(), description: T.String() })) })),
  },
  { $id: "PermissionDefinition" },
);
export const Connected = T.Object({ success: T.Literal(true), connection: T.Object({ id: T.String(), label: Nullable(T.String()) }) });
export const BlocklistEntry = T.Object(
  {
    hostId: T.String(),
    ruleId: Nullable(T.String()),
    enabled: T.Boolean(),
    custom: T.Boolean(),
    name: T.String(),
    hostPattern: T.String(),
    scope: Nullable(Enum("project", "organization")),
  },
  { $id: "BlocklistEntry" },
);

export const MigrationResult = T.Object(
  {
    imported: T.Object({ secrets: T.Integer(), agents: T.Integer(), agentSecrets: T.Integer(), rules: T.Integer() }),
    skipped: T.Array(T.Object({ type: T.String(), name: T.String(), reason: T.String() })),
  },
  { $id: "MigrationResult" },
);

export const GatewayUrl = T.Object({ url: T.String() });
export const ContainerConfig = T.Object(
  {
    env: StringMap,
    caCertificate: T.String(),
    caCertificateContainerPath: T.String(),
    credentialStubs: T.Array(T.Object({ containerPath: T.String(), content: T.String() })),
    warnings: T.Optional(T.Array(T.String())),
  },
  { $id: "ContainerConfig" },
);
export const CredentialStubList = T.Object({ agents: T.Array(T.String()) });
export const CredentialStub = T.Object(
  { agent: T.String(), filePath: T.String(), content: T.String(), authMode: Enum("api-key", "oauth"), permissions: T.String({ pattern: "^0[0-7]{3}$" }) },
  { $id: "CredentialStub" },
);

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
