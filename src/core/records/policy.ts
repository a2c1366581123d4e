// Policy rules, publishing, and the per-tool verdicts of an app (docs/policy.md#rules, docs/policy.md#draft-and-publish).
import { Type as T, type Static } from "@sinclair/typebox";
import { Enum, Nullable, Timestamp } from "./common.ts";

export const PolicyScope = Enum("project", "organization");
export const RateWindow = Enum("minute", "hour", "day");

export const RuleTarget = T.Union(
  [
    T.Object({ kind: T.Literal("network"), hostPattern: T.String(), pathPattern: T.Optional(T.String()), method: T.Optional(T.String()) }),
    T.Object({ kind: T.Literal("app"), provider: T.String(), tools: T.Array(T.String()) }),
    T.Object({ kind: T.Literal("connection"), connectionId: T.String(), tools: T.Array(T.String()) }),
    T.Object({ kind: T.Literal("secret"), secretId: T.Optional(T.String()), secretScope: T.Optional(PolicyScope) }),
  ],
  { $id: "RuleTarget" },
);
export type RuleTarget = Static<typeof RuleTarget>;

export const PolicyRule = T.Object(
  {
    id: T.String({ description: "uuid; empty for the virtual Default Rule" }),
    logicalId: T.String(),
    scope: PolicyScope,
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
    rateLimitWindow: Nullable(RateWindow),
    requireApproval: T.Boolean(),
    conditions: Nullable(T.Array(T.Object({ target: T.Literal("body"), operator: T.Literal("contains"), value: T.String() }))),
    identities: T.Array(T.Object({ type: T.Literal("agent"), id: T.String() })),
    targets: T.Array(RuleTarget),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: "PolicyRule" },
);
export type PolicyRule = Static<typeof PolicyRule>;

export const PublishResult = T.Object({ generation: T.Integer(), ruleCount: T.Integer() }, { $id: "PublishResult" });
export type PublishResult = Static<typeof PublishResult>;

export const LastPublish = T.Union(
  [
    T.Object({ generation: T.Integer(), ruleCount: T.Integer(), appliedAt: Timestamp, appliedBy: Nullable(T.Object({ name: Nullable(T.String()), email: T.String() })) }),
    T.Null(),
  ],
  { $id: "LastPublish" },
);
export type LastPublish = Static<typeof LastPublish>;

export const ToolVerdict = Enum("allow", "approval", "block", "rate_limited");
export const EffectiveAppPermissions = T.Object(
  {
    provider: T.String(),
    agentId: Nullable(T.String()),
    connectionId: Nullable(T.String()),
    groups: T.Array(
      T.Object({
        category: Enum("read", "write"),
        tools: T.Array(
          T.Object({
            toolId: T.String(),
            verdict: ToolVerdict,
            rateLimit: Nullable(T.Integer()),
            rateLimitWindow: Nullable(RateWindow),
            decidedBy: Nullable(T.Object({ scope: PolicyScope, logicalId: T.String(), name: T.String() })),
          }),
        ),
      }),
    ),
  },
  { $id: "EffectiveAppPermissions" },
);
export type EffectiveAppPermissions = Static<typeof EffectiveAppPermissions>;
