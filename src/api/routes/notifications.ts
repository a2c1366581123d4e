// Notification channels and their delivery log (docs/policy.md#notifications): `/notifications/*` for a
// project (project·admin), `/org/notifications/*` for the organization's own channels (organization·admin), which receive the
// events of every project of the organization.
import { ApiError } from "../../core/errors.ts";
import { CHANNEL_KINDS, NOTIFICATION_EVENTS } from "../../core/model.ts";
import { channelUrlError, EVENTS_MESSAGE, URL_MAX, type ChannelOwner } from "../../services/notifications/channels.ts";
import { created, noContent, route, type ContextFor, type RouteDef } from "../route.ts";
import { returns, returnsCreated, returnsNothing } from "../responses.ts";
import * as S from "../schemas.ts";
import * as R from "../../core/records/index.ts";
import { Type as T } from "@sinclair/typebox";

// Mode-independent here; the service also refuses plain http in cloud mode.
const url = T.String({ maxLength: URL_MAX, trim: true, refine: (v: string) => channelUrlError(v, null) });
const events = T.Array(T.Union(NOTIFICATION_EVENTS.map((e) => T.Literal(e))), { minItems: 1, error: EVENTS_MESSAGE });

const CreateChannelBody = T.Object({
  kind: T.Union(CHANNEL_KINDS.map((k) => T.Literal(k))),
  url,
  events: T.Optional(events),
});

const UpdateChannelBody = T.Object({
  kind: T.Optional(T.Unknown({ refine: () => "kind cannot be changed" })),
  url: T.Optional(url),
  events: T.Optional(events),
  enabled: T.Optional(T.Boolean()),
});

function limitOf(raw: string | null): number {
  if (raw === null || raw === "") return 100;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n < 1 || n > 500) throw ApiError.flat(400, "limit must be between 1 and 500");
  return n;
}

function channelRoutes<A extends "project" | "organization">(prefix: "/notifications" | "/org/notifications", access: A, owner: (ctx: ContextFor<A>) => ChannelOwner): RouteDef[] {
  const role = "admin" as const;
  return [
    route({
      method: "GET",
      path: `${prefix}/channels`,
      response: returns(T.Array(R.NotificationChannel), "Oldest first"),
      access,
      role,
      handler: async ({ services, ctx }) => (await services.notifications.channels.list(owner(ctx))).map((r) => services.notifications.channels.view(r)),
    }),
    route({
      method: "POST",
      path: `${prefix}/channels`,
      response: returnsCreated(R.NotificationChannelCreated, "A webhook channel's signingSecret is shown here only"),
      access,
      role,
      body: CreateChannelBody,
      handler: async ({ services, ctx, body }) => created(await services.notifications.channels.create(owner(ctx), body)),
    }),
    route({
      method: "PATCH",
      path: `${prefix}/channels/:channelId`,
      response: returns(R.NotificationChannel),
      access,
      role,
      body: UpdateChannelBody,
      emptyBody: ApiError.flat(400, "No fields to update"),
      handler: ({ services, ctx, params, body }) => services.notifications.channels.update(owner(ctx), params.channelId, body),
    }),
    route({
      method: "DELETE",
      path: `${prefix}/channels/:channelId`,
      response: returnsNothing(),
      access,
      role,
      handler: async ({ services, ctx, params }) => {
        await services.notifications.channels.delete(owner(ctx), params.channelId);
        return noContent();
      },
    }),
    route({
      method: "POST",
      path: `${prefix}/channels/:channelId/test`,
      response: returns(R.ChannelTestResult, "Sent now (even when the channel is disabled); not recorded as a delivery"),
      access,
      role,
      handler: ({ services, ctx, params }) => services.notifications.test(owner(ctx), params.channelId),
    }),
    route({
      method: "GET",
      path: `${prefix}/deliveries`,
      query: S.DeliveriesQuery,
      response: returns(R.DeliveryPage, "Newest first"),
      access,
      role,
      handler: ({ services, ctx, query }) =>
        services.notifications.deliveries.list(owner(ctx), { channelId: query.get("channelId") || undefined, limit: limitOf(query.get("limit")), cursor: query.get("cursor") || undefined }),
    }),
  ];
}

export const notificationsRoutes: RouteDef[] = [
  ...channelRoutes("/notifications", "project", (ctx) => ({ organizationId: ctx.organizationId, projectId: ctx.projectId })),
  ...channelRoutes("/org/notifications", "organization", (ctx) => ({ organizationId: ctx.organizationId, projectId: null })),
];
