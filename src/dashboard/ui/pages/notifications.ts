// Notification channels (docs/policy.md#notifications) of a project (`/notifications`) or of the organization
// (`/org/notifications`, which receives the events of every project): add one (a webhook's signing secret is
// shown once, in the dialog that created it), enable or disable, send a test, delete; and the delivery log.
import { attempt, badge, button, confirmAction, empty, errorText, form, formatTime, notice, openDialog, shownOnce, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import type { Delivery, NotificationChannel } from "../api-types.ts";
import { isAdmin, orgTabs } from "./orgTabs.ts";

type Channel = NotificationChannel;

const EVENTS: [string, string][] = [
  ["approval.requested", "A request waits for approval"],
  ["approval.decided", "An approval was decided"],
  ["budget.threshold", "A budget crossed an alert threshold"],
];
const KINDS: [string, string][] = [
  ["webhook", "Webhook (signed JSON)"],
  ["slack", "Slack incoming webhook"],
  ["ntfy", "ntfy topic"],
];
const kindLabel = (kind: string) => KINDS.find(([k]) => k === kind)?.[1] ?? kind;
const DELIVERY_BADGE = { delivered: "allowed", retrying: "warn", failed: "blocked" } as const;

/** The URL as shown in lists: scheme and host (the path of a Slack or ntfy URL is itself a secret). */
function shortUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}/…`;
  } catch {
    return url;
  }
}

function notificationsView(ctx: PageCtx, base: string, scopeLabel: string): HTMLElement[] {
  const status = h("div");
  const list = h("div");
  const log = h("div");
  let channels: Channel[] = [];

  const loadLog = async () => {
    const page = await ctx.api.get<{ data: Delivery[] }>(`${base}/deliveries?limit=50`);
    const byId = new Map(channels.map((c) => [c.id, c]));
    replace(
      log,
      page.data.length === 0
        ? empty("Nothing sent yet. Each event a channel receives appears here, with its attempts.")
        : table(
            `Deliveries of the ${scopeLabel}'s channels`,
            ["Time", "Channel", "Event", "Status", "Attempts", "Last answer", "Last error"],
            page.data.map((d) => {
              const c = byId.get(d.channelId);
              return [
                formatTime(d.createdAt),
                c ? `${kindLabel(c.kind)} · ${shortUrl(c.url)}` : d.channelId,
                h("code", null, d.event),
                badge(d.status, DELIVERY_BADGE[d.status]),
                String(d.attempts),
                d.lastStatus === null ? "—" : String(d.lastStatus),
                d.lastError ?? "—",
              ];
            }),
          ),
    );
  };

  const load = async () => {
    channels = await ctx.api.get<Channel[]>(`${base}/channels`);
    replace(
      list,
      channels.length === 0
        ? empty("No channels yet. Add one so people hear of requests waiting for approval where they are: a webhook, Slack or ntfy.", " ", button("Add channel", openCreate, { kind: "primary" }))
        : [
            table(
              `Notification channels of the ${scopeLabel}`,
              ["Kind", "URL", "Events", "State", "Created", "Actions"],
              channels.map((c) => [
                kindLabel(c.kind),
                h("code", { title: c.url }, shortUrl(c.url)),
                h("span", null, ...c.events.flatMap((e, i) => [i > 0 ? " " : null, h("code", null, e)])),
                badge(c.enabled ? "enabled" : "disabled", c.enabled ? "allowed" : "expired"),
                formatTime(c.createdAt),
                h(
                  "div",
                  { class: "row-actions" },
                  button("Send test", () => sendTest(c), { label: `Send a test to ${kindLabel(c.kind)} ${shortUrl(c.url)}` }),
                  button(c.enabled ? "Disable" : "Enable", () => toggle(c), { label: `${c.enabled ? "Disable" : "Enable"} ${kindLabel(c.kind)} ${shortUrl(c.url)}` }),
                  button("Delete", () => remove(c), { kind: "danger", label: `Delete ${kindLabel(c.kind)} ${shortUrl(c.url)}` }),
                ),
              ]),
            ),
            h("div", { class: "actions" }, button("Add channel", openCreate, { kind: "primary" })),
          ],
    );
    await loadLog();
  };

  const sendTest = (c: Channel) =>
    attempt(status, async () => {
      const r = await ctx.api.send<{ delivered: boolean; status: number | null; error: string | null }>("POST", `${base}/channels/${c.id}/test`);
      replace(status, r.delivered ? notice("success", `Test delivered (HTTP ${r.status}).`) : notice("error", `Test not delivered: ${r.error ?? `HTTP ${r.status}`}`));
    });

  const toggle = (c: Channel) =>
    attempt(status, async () => {
      await ctx.api.send("PATCH", `${base}/channels/${c.id}`, { enabled: !c.enabled });
      replace(status, notice("success", c.enabled ? "Channel disabled: it receives nothing until enabled again." : "Channel enabled."));
      await load();
    });

  const remove = async (c: Channel) => {
    if (!(await confirmAction("Delete this channel?", "It stops receiving events at once, and its deliveries leave the log.", "Delete channel"))) return;
    await attempt(status, async () => {
      await ctx.api.send("DELETE", `${base}/channels/${c.id}`);
      replace(status, notice("success", "Channel deleted."));
      await load();
    });
  };

  function openCreate(): void {
    openDialog("Add a notification channel", (close) => {
      const box = h("div");
      replace(
        box,
        form({
          fields: [
            { name: "kind", label: "Kind", type: "select", value: "webhook", options: KINDS },
            {
              name: "url",
              label: "URL",
              required: true,
              placeholder: "https://hooks.example.com/credgate",
              hint: "https:// only (http:// to this machine is accepted self-hosted). Slack: the incoming-webhook URL; ntfy: the topic URL.",
              match: /^url/i,
            },
            { name: "events", label: "Events", type: "select", multiple: true, options: EVENTS, values: EVENTS.map(([e]) => e), match: /^events/i },
          ],
          submitLabel: "Add channel",
          onCancel: close,
          async onSubmit(v) {
            const created = await ctx.api.send<Channel & { signingSecret?: string }>("POST", `${base}/channels`, {
              kind: v.kind,
              url: String(v.url).trim(),
              events: String(v.events).split("\n").filter(Boolean),
            });
            await load();
            if (!created.signingSecret) {
              close();
              replace(status, notice("success", `${kindLabel(created.kind)} added.`));
              return;
            }
            replace(
              box,
              shownOnce("Copy the signing secret now: it is not shown again. Your receiver checks each request's X-Credgate-Signature with it.", [["Signing secret", created.signingSecret]]),
              h("div", { class: "actions" }, button("Done", close, { kind: "primary" })),
            );
          },
        }),
      );
      return box;
    });
  }

  void load().catch((err) => replace(list, notice("error", errorText(err))));
  return [
    status,
    h("section", { "aria-labelledby": "channels-h" }, h("h2", { id: "channels-h" }, "Channels"), list),
    h(
      "section",
      { "aria-labelledby": "deliveries-h" },
      h("h2", { id: "deliveries-h" }, "Deliveries"),
      h("div", { class: "actions" }, button("Refresh", () => attempt(status, load))),
      log,
    ),
  ];
}

const LEAD = "People hear of requests waiting for their approval where they are, with links that approve or deny in one tap.";

export const notificationsPage: PageFn = (ctx) => {
  if (!isAdmin(ctx)) return [h("h1", { tabindex: "-1" }, "Notifications"), notice("info", "Only organization admins and owners manage notification channels.")];
  return [h("h1", { tabindex: "-1" }, "Notifications"), h("p", { class: "lead" }, LEAD), ...notificationsView(ctx, "/notifications", "project")];
};

export const orgNotificationsPage: PageFn = (ctx) => {
  if (!isAdmin(ctx)) return [h("h1", { tabindex: "-1" }, "Organization notifications"), orgTabs(ctx), notice("info", "Only organization admins and owners manage the organization.")];
  return [
    h("h1", { tabindex: "-1" }, "Organization notifications"),
    orgTabs(ctx),
    h("p", { class: "lead" }, `${LEAD} These channels receive the events of every project of the organization.`),
    ...notificationsView(ctx, "/org/notifications", "organization"),
  ];
};
