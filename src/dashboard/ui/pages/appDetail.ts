// One app (`/p/<id>/apps/<provider>`; the OAuth flow returns here): connect or reconnect, its connections,
// the bring-your-own OAuth client (BYOC) and the blocklist of its hosts.
import { attempt, badge, button, empty, form, notice, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import { connectionsTable, type ConnectionRecord } from "./apps.ts";
import { openConnect, startOAuth, type AppItem } from "./connect.ts";
import type { AppConfig, BlocklistEntry } from "../api-types.ts";

async function byocSection(ctx: PageCtx, app: AppItem, reload: () => void): Promise<HTMLElement> {
  const config = await ctx.api.get<AppConfig>(`/apps/${app.id}/config`);
  const status = h("div");
  const fromOrg = config.source === "organization";
  return h(
    "section",
    { class: "card", "aria-labelledby": "byoc-h" },
    h("h2", { id: "byoc-h" }, "OAuth client"),
    h("p", null, "Register an OAuth app with ", app.name, " using the redirect URI ", h("code", { class: "wrap" }, `${location.origin}/v1/apps/${app.id}/callback`), ", then enter its client here."),
    fromOrg ? notice("info", "The organization's OAuth client applies to this project.") : null,
    config.hasCredentials && !fromOrg ? h("p", null, badge(config.enabled ? "Configured" : "Configured, disabled", config.enabled ? "connected" : "warn")) : null,
    status,
    form({
      fields: app.fields.map((f) => ({
        name: f.name,
        label: f.label,
        type: f.secret ? ("password" as const) : ("text" as const),
        value: f.secret ? "" : (config.settings[f.name] ?? ""),
        hint: f.secret && config.hasCredentials ? "Leave empty to keep the stored value." : undefined,
      })),
      submitLabel: "Save OAuth client",
      async onSubmit(v) {
        await ctx.api.send("POST", `/apps/${app.id}/config`, Object.fromEntries(app.fields.map((f) => [f.name, String(v[f.name] ?? "")])));
        reload();
      },
    }),
    config.hasCredentials && !fromOrg
      ? h(
          "div",
          { class: "actions" },
          button(config.enabled ? "Disable" : "Enable", () => attempt(status, async () => {
            await ctx.api.send("PATCH", `/apps/${app.id}/config/toggle`, { enabled: !config.enabled });
            reload();
          })),
          button("Remove OAuth client", () => attempt(status, async () => {
            await ctx.api.send("DELETE", `/apps/${app.id}/config`);
            reload();
          }), { kind: "danger" }),
        )
      : null,
  );
}

async function blocklistSection(ctx: PageCtx, app: AppItem): Promise<HTMLElement> {
  const box = h("section", { class: "card", "aria-labelledby": "block-h" });
  const status = h("div");
  const draw = async () => {
    const entries = await ctx.api.get<BlocklistEntry[]>(`/apps/${app.id}/blocklist`);
    const act = (e: BlocklistEntry) =>
      attempt(status, async () => {
        if (!e.ruleId) await ctx.api.send("POST", `/apps/${app.id}/blocklist`, { hostId: e.hostId });
        else if (e.custom) await ctx.api.send("DELETE", `/apps/${app.id}/blocklist/${e.ruleId}`);
        else await ctx.api.send("PATCH", `/apps/${app.id}/blocklist/${e.ruleId}`, { enabled: !e.enabled });
        await draw();
      });
    replace(
      box,
      h("h2", { id: "block-h" }, "Blocklist"),
      h("p", { class: "hint" }, "Blocked hosts are refused at the gateway for every agent, at once (no publish)."),
      status,
      entries.length === 0
        ? empty("No hosts to block for this app yet.")
        : table(
            "Blocklist",
            ["Name", "Host", "State", "Action"],
            entries.map((e) => [
              e.name,
              h("code", null, e.hostPattern),
              e.ruleId && e.enabled ? badge("Blocked", "blocked") : "Allowed",
              e.scope === "organization"
                ? h("span", { class: "hint" }, "Set by the organization")
                : button(!e.ruleId ? "Block" : e.custom ? "Remove" : e.enabled ? "Unblock" : "Block", () => void act(e), { label: `${!e.ruleId || !e.enabled ? "Block" : e.custom ? "Remove" : "Unblock"} ${e.name}` }),
            ]),
          ),
      h("h3", null, "Block another host"),
      form({
        fields: [
          { name: "name", label: "Name", required: true, match: /^name/i },
          { name: "hostPattern", label: "Host", required: true, placeholder: "uploads.example.com", match: /host|wildcard|public suffix|already blocked/i },
        ],
        submitLabel: "Block host",
        async onSubmit(v) {
          await ctx.api.send("POST", `/apps/${app.id}/blocklist`, { name: String(v.name).trim(), hostPattern: String(v.hostPattern).trim() });
          await draw();
        },
      }),
    );
  };
  await draw();
  return box;
}

export const appDetailPage: PageFn = async (ctx) => {
  const provider = ctx.params.provider!;
  const app = await ctx.api.get<AppItem>(`/apps/${encodeURIComponent(provider)}`);
  const status = h("div");
  const connected = ctx.query.get("connected");
  const failed = ctx.query.get("error");
  const agent = ctx.query.get("agent");
  if (connected !== null) replace(status, notice("success", `${app.name} is connected.${agent ? ` Granted to agent ${agent}.` : ""}`));
  else if (failed) replace(status, notice("error", `${app.name} could not be connected: ${failed}`));
  const reload = () => ctx.navigate(location.pathname, { replace: true });
  const conns = (await ctx.api.get<ConnectionRecord[]>(`/connections?provider=${encodeURIComponent(app.id)}`)) ?? [];
  const sections: HTMLElement[] = [];
  if (app.connectionType === "oauth") sections.push(await byocSection(ctx, app, reload));
  sections.push(await blocklistSection(ctx, app));
  const reconnect = app.connectionType === "oauth" && app.available ? conns.filter((c) => c.scope === "project") : [];
  return [
    h("p", { class: "crumbs" }, h("a", { href: ctx.link("/apps") }, "Apps"), " / ", app.name),
    h("h1", { tabindex: "-1" }, app.name),
    h("p", { class: "lead" }, app.description),
    status,
    h("div", { class: "toolbar" }, button(`Connect ${app.name}`, () => openConnect(ctx, app, { onDone: (m) => (replace(status, notice("success", m)), setTimeout(reload, 800)) }), { kind: "primary" })),
    h(
      "section",
      { "aria-labelledby": "conn-h" },
      h("h2", { id: "conn-h" }, "Connections"),
      conns.length === 0 ? empty(`No ${app.name} connection yet.`) : connectionsTable(ctx, conns, "/connections", "project", status, async () => reload()),
      reconnect.length ? h("div", { class: "actions" }, ...reconnect.map((c) => button(`Reconnect ${c.label ?? app.name}`, () => startOAuth(ctx, app, { connectionId: c.id })))) : null,
    ),
    ...sections,
  ];
};
