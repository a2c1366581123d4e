// What each notification event carries (docs/policy.md#notifications). The webhook body is
// `{id, event, createdAt, data}` with `data` as below; Slack and ntfy messages are written from the same data.
import type { ApprovalSummary, ChannelKind, NotificationEvent } from "../../core/model.ts";

export type DecidedBy = { userId: string | null; email: string | null } | { kind: "link" };

export interface ApprovalRequestedData {
  approvalId: string;
  projectId: string;
  agent: { id: string; name: string };
  method: string;
  host: string;
  /** Without the query. */
  path: string;
  summary: ApprovalSummary | null;
  expiresAt: string;
  approveUrl: string;
  denyUrl: string;
}

export interface ApprovalDecidedData {
  approvalId: string;
  decision: "approve" | "deny";
  decidedBy: DecidedBy;
  /** When a remembered approval was made with the decision, its end; else null. */
  rememberedUntil: string | null;
  /** Context for people reading the message (beyond the contract's fields; receivers ignore unknown fields). */
  projectId: string;
  agent: { id: string; name: string };
  method: string;
  host: string;
  path: string;
}

export interface BudgetThresholdData {
  budgetId: string;
  scope: string;
  percent: number;
  spentCents: number;
  limitCents: number;
  /** `daily`, `weekly`, `monthly` or `total` (docs/budgets.md). */
  period: string;
  resetsAt: string | null;
}

export interface EventData {
  "approval.requested": ApprovalRequestedData;
  "approval.decided": ApprovalDecidedData;
  "budget.threshold": BudgetThresholdData;
}

/** A test send (`POST …/channels/{id}/test`): not one of the events a channel subscribes to. */
export const TEST_EVENT = "test";
export interface TestData {
  channelId: string;
  message: string;
}

export type AnyEvent = NotificationEvent | typeof TEST_EVENT;

/** The webhook body, and what every channel's message is written from. */
export interface Payload<E extends AnyEvent = AnyEvent> {
  /** The event's id: the same for every channel the event goes to. */
  id: string;
  event: E;
  createdAt: string;
  data: E extends NotificationEvent ? EventData[E] : TestData;
}

export interface ChannelTarget {
  kind: ChannelKind;
  url: string;
  signingSecret: string | null;
}
