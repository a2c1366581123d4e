// Apps: the catalog (each app with its connection state) and every connection of the project and its
// organization, with status, rename and delete. `?connect=<provider>&agent_name=…` opens that app's connect
// dialog, as the gateway's "app_not_connected" guidance promises.
import { badge, button, confirmAction, empty, errorText, form, formatTime, notice, openDialog, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import { openConnect, type AppItem } from "./connect.ts";
import type { Connection, OrganizationConnection } from "../api-types.ts";

/** A project's connection (`/connections`) or an organization's (`/org/connections`). */
export type ConnectionRecord = Connection | OrganizationConnection;

/** The connections table with rename and delete (project or organization endpoints). */
export function connectionsTable(ctx: PageCtx, rows: ConnectionRecord[], base: "/connections" | "/org/connections", scope: string, status: HTMLElement, reload: () => Promise<void>): HTMLElement {
  const rename = (c: ConnectionRecord) =>
    openDialog(`Rename ${c.label ?? c.provider}`, (close) =>
      form({
        fields: [{ name: "label", label: "Label", value: c.label ?? "", required: true, match: /label/i }],
        submitLabel: "Rename",
        onCancel: close,
        async onSubmit(v) {
          await ctx.api.send("PATCH", `${base}/${c.id}`, { label: String(v.label).trim() });
          close();
          await reload();
        },
      }),
    );
  const remove = async (c: ConnectionRecord) => {
    if (!(await confirmAction(`Delete ${c.label ?? c.provider}?`, "Agents lose this connection and its grants at once.", "Delete connection"))) return;
    try {
      await ctx.api.send("DELETE", `${base}/${c.id}`);
      replace(status, notice("success", `Deleted ${c.label ?? c.provider}.`));
      await reload();
    } catch (err) {
      replace(status, notice("error", errorText(err)));
    }
  };
  return table(
    "Connections",
    ["Connection", "App", "Status", "Scope", "Connected", "Actions"],
    rows.map((c) => [
      c.label ?? "—",
      h("a", { href: ctx.link(`/apps/${c.provider}`) }, c.provider),
      badge(c.status, c.status),
      c.scope,
      formatTime(c.connectedAt),
      c.scope === scope
        ? h("div", { class: "row-actions" }, button("Rename", () => rename(c), { label: `Rename ${c.label ?? c.provider}` }), button("Delete", () => remove(c), { kind: "danger", label: `Delete ${c.label ?? c.provider}` }))
        : h("span", { class: "hint" }, "Managed by the organization"),
    ]),
  );
}

export const appsPage: PageFn = async (ctx) => {
  const status = h("div");
  const catalog = h("div", { class: "grid" });
  const connections = h("div");
  let apps: AppItem[] = [];
  const load = async () => {
    const [items, conns] = await Promise.all([ctx.api.get<AppItem[]>("/apps"), ctx.api.get<ConnectionRecord[]>("/connections")]);
    apps = items;
    replace(
      catalog,
      ...items.map((a) =>
        h(
          "article",
          { class: "card app", "aria-labelledby": `app-${a.id}` },
          h("h3", { id: `app-${a.id}` }, h("a", { href: ctx.link(`/apps/${a.id}`) }, a.name)),
          h("p", { class: "hint" }, a.description),
          h("p", null, a.connections.length ? badge(`${a.connections.length} connected`, "connected") : a.available ? badge("Not connected") : badge("Needs OAuth client", "warn")),
          button("Connect", () => connect(a), { label: `Connect ${a.name}` }),
        ),
      ),
    );
    replace(connections, conns.length === 0 ? empty("No connections yet. Connect an app above; agents granted a connection call the app's API with placeholder credentials.") : connectionsTable(ctx, conns, "/connections", "project", status, load));
  };
  const connect = (a: AppItem, agentName?: string | null) =>
    openConnect(ctx, a, {
      agentName,
      onDone: (m) => {
        replace(status, notice("success", m));
        void load();
      },
      onClose: () => ctx.setQuery({ connect: null, agent_name: null }),
    });
  await load();
  const wanted = ctx.query.get("connect");
  if (wanted) {
    const app = apps.find((a) => a.id === wanted);
    if (app) queueMicrotask(() => connect(app, ctx.query.get("agent_name")));
    else replace(status, notice("error", `Unknown app: ${wanted}`));
  }
  return [
    h("h1", { tabindex: "-1" }, "Apps"),
    status,
    h("section", { "aria-labelledby": "catalog-h" }, h("h2", { id: "catalog-h" }, "Catalog"), catalog),
    h("section", { "aria-labelledby": "connections-h" }, h("h2", { id: "connections-h" }, "Connections"), connections),
  ];
};
