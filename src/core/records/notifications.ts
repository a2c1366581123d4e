// Notification channels and their deliveries (docs/policy.md#notifications).
import { Type as T, type Static } from "@sinclair/typebox";
import { Enum, Nullable, Timestamp, Uuid } from "./common.ts";

export const NotificationEvent = Enum("approval.requested", "approval.decided", "budget.threshold");

export const NotificationChannel = T.Object(
  { id: Uuid, kind: Enum("webhook", "slack", "ntfy"), url: T.String(), events: T.Array(NotificationEvent), enabled: T.Boolean(), createdAt: Timestamp },
  { $id: "NotificationChannel" },
);
export type NotificationChannel = Static<typeof NotificationChannel>;

export const NotificationChannelCreated = T.Composite(
  [NotificationChannel, T.Object({ signingSecret: T.Optional(T.String({ pattern: "^whsec_[0-9a-f]{64}$", description: "webhook channels only; shown once" })) })],
  { $id: "NotificationChannelCreated" },
);
export type NotificationChannelCreated = Static<typeof NotificationChannelCreated>;

export const ChannelTestResult = T.Object({ delivered: T.Boolean(), status: Nullable(T.Integer()), error: Nullable(T.String()) }, { $id: "ChannelTestResult" });
export type ChannelTestResult = Static<typeof ChannelTestResult>;

export const Delivery = T.Object(
  {
    id: Uuid,
    channelId: Uuid,
    event: NotificationEvent,
    status: Enum("delivered", "retrying", "failed"),
    attempts: T.Integer(),
    lastStatus: Nullable(T.Integer()),
    lastError: Nullable(T.String()),
    createdAt: Timestamp,
  },
  { $id: "Delivery" },
);
export const DeliveryPage = T.Object({ data: T.Array(Delivery), nextCursor: Nullable(T.String()) }, { $id: "DeliveryPage" });
export type DeliveryPage = Static<typeof DeliveryPage>;
