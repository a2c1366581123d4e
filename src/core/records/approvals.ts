// Approval requests and records (docs/policy.md#approvals).
import { Type as T, type Static } from "@sinclair/typebox";
import { Enum, Nullable, StringMap, Timestamp, Uuid } from "./common.ts";

export const ApprovalRequest = T.Object(
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
export type ApprovalRequest = Static<typeof ApprovalRequest>;

export const PendingApprovals = T.Object({ requests: T.Array(ApprovalRequest), timeoutSeconds: T.Number() }, { $id: "PendingApprovals" });
export type PendingApprovals = Static<typeof PendingApprovals>;

export const ApprovalRecord = T.Composite(
  [
    ApprovalRequest,
    T.Object({
      status: Enum("pending", "approved", "denied", "expired", "cancelled"),
      decidedAt: Nullable(Timestamp),
      decidedBy: Nullable(T.Object({ userId: Nullable(T.String()), email: T.String() })),
    }),
  ],
  { $id: "ApprovalRecord" },
);
export type ApprovalRecord = Static<typeof ApprovalRecord>;

/** Who decided: a person (API or dashboard), or the approval link (docs/policy.md#approval-links). */
const DecidedBy = T.Union([T.Object({ userId: Nullable(T.String()), email: Nullable(T.String()) }), T.Object({ kind: T.Literal("link") })]);

export const DecisionResult = T.Object(
  {
    success: T.Literal(true),
    rememberedUntil: T.Optional(Nullable(T.String({ format: "date-time", description: "with `remember`: the end of the remembered approval (null when the approval names no rule)" }))),
  },
  { $id: "DecisionResult" },
);
export type DecisionResult = Static<typeof DecisionResult>;

export const RememberedApproval = T.Object(
  { id: Uuid, agentId: Uuid, ruleId: T.String({ description: "the rule's logicalId" }), ruleName: T.String(), expiresAt: Timestamp, createdBy: DecidedBy },
  { $id: "RememberedApproval" },
);
export type RememberedApproval = Static<typeof RememberedApproval>;
