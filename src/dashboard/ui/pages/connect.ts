// Connecting an app, shared by the catalog (`?connect=<provider>&agent_name=…`, the gateway's guidance link)
// and the app's page: OAuth apps leave for the provider's consent screen through /v1/apps/<p>/authorize and
// come back to the app page (via /app-connect); API-key apps take the app's own fields here.
import { button, form, notice, openDialog } from "../components.ts";
import { h } from "../h.ts";
import type { PageCtx } from "../types.ts";
import { CONNECT_PROJECT_KEY } from "./appConnect.ts";
import type { Agent, AppItem, Connected } from "../api-types.ts";

export type { AppItem };

/** Starts the OAuth flow in this tab; the session cookie authenticates and `_project` names the project. */
export function startOAuth(ctx: PageCtx, app: AppItem, opts: { agentName?: string | null; connectionId?: string } = {}): void {
  sessionStorage.setItem(CONNECT_PROJECT_KEY, ctx.project!.id);
  const q = new URLSearchParams({ _project: ctx.project!.id });
  if (opts.agentName) q.set("agent_name", opts.agentName);
  if (opts.connectionId) q.set("connectionId", opts.connectionId);
  location.assign(`/v1/apps/${encodeURIComponent(app.id)}/authorize?${q}`);
}

async function grantToAgent(ctx: PageCtx, identifier: string, connectionId: string): Promise<string | null> {
  const agent = (await ctx.api.get<Agent[]>("/agents")).find((a) => a.identifier === identifier);
  if (!agent) return null;
  await ctx.api.send("PUT", `/agents/${agent.id}/grants/connections/${connectionId}`, { access: "full" });
  return agent.name;
}

export function openConnect(ctx: PageCtx, app: AppItem, opts: { agentName?: string | null; onDone: (message: string) => void; onClose?: () => void }): void {
  const { dialog } = openDialog(`Connect ${app.name}`, (close) => {
    if (app.connectionType === "oauth") {
      return [
        h("p", null, app.description),
        app.available
          ? [
              h("p", null, `You will sign in to ${app.name} and come back here.`, opts.agentName ? ` The connection is granted to agent ${opts.agentName}.` : ""),
              h("div", { class: "actions" }, button(`Continue to ${app.name}`, () => startOAuth(ctx, app, { agentName: opts.agentName }), { kind: "primary" }), button("Cancel", close)),
            ]
          : [
              notice("info", `${app.name} needs an OAuth client first: register one with ${app.name} (redirect URI `, h("code", null, `${location.origin}/v1/apps/${app.id}/callback`), ") and enter it on the app's page."),
              h("div", { class: "actions" }, h("a", { class: "btn primary", href: ctx.link(`/apps/${app.id}`) }, "Set up the OAuth client"), button("Cancel", close)),
            ],
      ];
    }
    return form({
      fields: [
        ...app.fields.map((f) => ({ name: f.name, label: f.label, type: f.secret ? ("password" as const) : ("text" as const), required: true, match: new RegExp(`^${f.label} is required`) })),
        { name: "label", label: "Label", placeholder: app.name, hint: "Tells several connections of one app apart." },
      ],
      submitLabel: `Connect ${app.name}`,
      onCancel: close,
      extra: opts.agentName ? h("p", { class: "hint" }, `The connection will be granted to agent ${opts.agentName}.`) : null,
      async onSubmit(v) {
        const fields = Object.fromEntries(app.fields.map((f) => [f.name, String(v[f.name] ?? "")]));
        const label = String(v.label ?? "").trim();
        const r = await ctx.api.send<Connected>("POST", `/apps/${app.id}/connect`, { fields, ...(label ? { label } : {}) });
        const granted = opts.agentName ? await grantToAgent(ctx, opts.agentName, r.connection.id) : null;
        close();
        opts.onDone(`${app.name} is connected as ${r.connection.label}.${granted ? ` Granted to agent ${granted}.` : ""}`);
      },
    });
  });
  dialog.addEventListener("close", () => opts.onClose?.());
}
