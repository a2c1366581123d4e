// Notifications (docs/policy.md#notifications): channels and deliveries.
// Part of the one table declaration (index.ts).
import { boolean, index, integer, json, table, text, uniqueIndex } from "./define.ts";

/**
 * Notification channels (docs/policy.md#notifications): where a project's (or, with no project, an
 * organization's) events are sent. The URL is sealed (a Slack or ntfy URL is itself a credential), and so is a
 * webhook's signing secret.
 */
export const notificationChannels = table(
  "notification_channels",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    /** Null for an organization's channel. */
    projectId: text("project_id").references("projects.id", "cascade"),
    kind: text("kind").type("ChannelKind").notNull(),
    urlSealed: text("url_sealed").notNull(),
    events: json("events").type("NotificationEvent[]").notNull(),
    enabled: boolean("enabled").notNull(),
    signingSecretSealed: text("signing_secret_sealed"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  { indexes: [index("notification_channels_owner", ["organizationId", "projectId"])] },
);

/**
 * One delivery of one event to one channel, written once (unique per event and channel) by the process that
 * raised the event, and sent by whichever process claims it first (a lease set by compare-and-swap), so an
 * event reaches each channel once however many processes and instances share the store. The payload is sealed:
 * an approval's links carry its token.
 */
export const notificationDeliveries = table(
  "notification_deliveries",
  {
    id: text("id").primaryKey(),
    eventId: text("event_id").notNull(),
    channelId: text("channel_id").notNull().references("notificationChannels.id", "cascade"),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    /** The channel's project (null for an organization's channel). */
    projectId: text("project_id"),
    event: text("event").type("NotificationEvent").notNull(),
    /** For `approval.requested`: the approval whose end stops the retries. */
    approvalId: text("approval_id"),
    payloadSealed: text("payload_sealed").notNull(),
    status: text("status").type("DeliveryStatus").notNull(),
    attempts: integer("attempts").notNull(),
    lastStatus: integer("last_status"),
    lastError: text("last_error"),
    nextAttemptAt: text("next_attempt_at").notNull(),
    /** Set while a process sends it; another may take it over once this has passed. */
    leaseUntil: text("lease_until"),
    leasedBy: text("leased_by"),
    createdAt: text("created_at").notNull(),
  },
  {
    indexes: [
      uniqueIndex("notification_deliveries_event_channel", ["eventId", "channelId"]),
      index("notification_deliveries_due", ["status", "nextAttemptAt"]),
      index("notification_deliveries_owner", ["organizationId", "projectId", "createdAt"]),
      index("notification_deliveries_approval", ["approvalId"]),
    ],
  },
);
