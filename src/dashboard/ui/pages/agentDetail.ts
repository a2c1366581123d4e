// One agent (`/p/<id>/agents/<agentId>`, the gateway's "access_restricted" link): rename, credential mode,
// default agent, token regeneration (shown once), grants of secrets and connections, and how to connect it.
import { attempt, badge, button, confirmAction, copyButton, empty, errorText, form, notice, openDialog, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import { MODES } from "./agents.ts";
import { openAccessDialog } from "./connectionAccess.ts";
import { effectiveCredentials } from "./effectiveCredentials.ts";
import type { AccessToken, Agent, GatewayUrl, GrantSet } from "../api-types.ts";

function connectPanel(ctx: PageCtx, agent: Agent, gatewayUrl: string): HTMLElement {
  const proxy = (token: string) => {
    const u = new URL(gatewayUrl);
    return `${u.protocol}//x:${token}@${u.host}`;
  };
  const shownProxy = proxy("agt_••••••••");
  const run = `credgate run --agent ${agent.identifier} -- <your command>`;
  return h(
    "section",
    { class: "card", "aria-labelledby": "connect-h" },
    h("h2", { id: "connect-h" }, "Connect your agent"),
    h("p", null, "Point the agent's HTTPS proxy at the gateway and trust credgate's CA; the agent then uses placeholder keys (", h("code", null, "credgate-managed"), ") and the gateway injects the real ones."),
    h("dl", { class: "details" },
      h("dt", null, "Proxy URL"),
      h("dd", null, h("code", { class: "wrap" }, shownProxy), " ", agent.accessToken ? copyButton(() => proxy(agent.accessToken!), "Copy proxy URL") : h("span", { class: "hint" }, "Regenerate the token to get a proxy URL with it.")),
      h("dt", null, "CA certificate"),
      h("dd", null, h("a", { href: "/v1/gateway/ca", download: "credgate-gateway-ca.pem" }, "Download the gateway CA (PEM)")),
      h("dt", null, "Run a command as this agent"),
      h("dd", null, h("code", { class: "wrap" }, run), " ", copyButton(() => run, "Copy command")),
    ),
  );
}

function showToken(token: string): void {
  openDialog("New agent token", (close) => [
    notice("info", "Copy this token now: it is shown only once. The previous token stopped working."),
    h("div", { class: "field" }, h("label", { for: "new-token" }, "Agent token"), h("input", { id: "new-token", type: "text", readOnly: true, value: token, class: "mono" })),
    h("div", { class: "actions" }, copyButton(() => token, "Copy token"), button("Done", close, { kind: "primary" })),
  ]);
}

async function grantsSection(ctx: PageCtx, agent: Agent): Promise<HTMLElement> {
  const box = h("section", { "aria-labelledby": "grants-h" });
  const status = h("div");
  const draw = async () => {
    const [grants, secrets, connections, effective] = await Promise.all([
      ctx.api.get<GrantSet>(`/agents/${agent.id}/grants`),
      ctx.api.get<any[]>("/secrets"),
      ctx.api.get<any[]>("/connections"),
      effectiveCredentials(ctx, agent.id),
    ]);
    const grantedSecrets = new Set(grants.secrets.map((s) => s.secretId));
    const grantedConnections = new Map(grants.connections.map((c) => [c.connectionId, c]));
    const toggle = (kind: "secrets" | "connections", id: string, on: boolean) =>
      attempt(status, async () => {
        await ctx.api.send(on ? "PUT" : "DELETE", `/agents/${agent.id}/grants/${kind}/${id}`, on && kind === "connections" ? { access: "full" } : undefined);
        await draw();
      });
    const check = (label: string, on: boolean, fn: (on: boolean) => void) => {
      const input = h("input", { type: "checkbox", checked: on, "aria-label": label });
      input.addEventListener("change", () => fn(input.checked));
      return input;
    };
    replace(
      box,
      h("h2", { id: "grants-h" }, "Grants"),
      agent.mode === "all"
        ? notice("info", "This agent receives every matching secret and connection (mode “all”); grants apply once it is switched to “granted only”.")
        : null,
      status,
      effective,
      h("h3", null, "Secrets"),
      secrets.length === 0
        ? empty("No secrets in this project yet. ", h("a", { href: ctx.link("/secrets") }, "Add a secret"), ".")
        : table("Secret grants", ["Granted", "Secret", "Host", "Scope"], secrets.map((s) => [check(`Grant ${s.name}`, grantedSecrets.has(s.id), (on) => void toggle("secrets", s.id, on)), s.name, h("code", null, s.hostPattern), s.scope])),
      h("h3", null, "Connections"),
      connections.length === 0
        ? empty("No app connections yet. ", h("a", { href: ctx.link("/apps") }, "Connect an app"), ".")
        : table(
            "Connection grants",
            ["Granted", "Connection", "App", "Access"],
            connections.map((c) => {
              const g = grantedConnections.get(c.id);
              return [
                check(`Grant ${c.label ?? c.provider}`, !!g, (on) => void toggle("connections", c.id, on)),
                c.label ?? c.provider,
                c.provider,
                g
                  ? h(
                      "div",
                      { class: "row-actions" },
                      h("span", null, g.access === "full" ? "Every tool" : `${g.allow.length} allowed, ${g.ask.length} need approval`, g.resources ? ` · ${Object.values(g.resources).flat().length} resource(s)` : ""),
                      button("Edit access", () => attempt(status, () => openAccessDialog(ctx, agent.id, g, draw)), { label: `Edit access to ${c.label ?? c.provider}` }),
                    )
                  : "—",
              ];
            }),
          ),
    );
  };
  await draw();
  return box;
}

export const agentDetailPage: PageFn = async (ctx) => {
  const id = ctx.params.agentId!;
  const [agent, list, gateway] = await Promise.all([
    ctx.api.get<Agent>(`/agents/${id}`),
    ctx.api.get<Agent[]>("/agents"),
    ctx.api.get<GatewayUrl>("/gateway-url"),
  ]);
  const withToken = list.find((a) => a.id === id) ?? agent;
  const status = h("div");
  const reload = () => ctx.navigate(location.pathname + location.search, { replace: true });
  const settings = form({
    fields: [
      { name: "name", label: "Name", value: agent.name, required: true, match: /^name /i },
      { name: "mode", label: "Credentials", type: "select", value: agent.mode, options: MODES },
    ],
    submitLabel: "Save",
    async onSubmit(v) {
      await ctx.api.send("PATCH", `/agents/${id}`, { name: String(v.name).trim(), mode: v.mode });
      replace(status, notice("success", "Saved."));
      setTimeout(reload, 600);
    },
  });
  const regenerate = button("Regenerate token", async () => {
    if (!(await confirmAction("Regenerate the token?", "The current token stops working at once; running agents must be given the new one.", "Regenerate"))) return;
    await attempt(status, async () => {
      const r = await ctx.api.send<AccessToken>("POST", `/agents/${id}/regenerate-token`);
      showToken(r.accessToken);
      (withToken as { accessToken?: string }).accessToken = r.accessToken;
    });
  });
  const makeDefault = agent.isDefault
    ? null
    : button("Make default", () =>
        attempt(status, async () => {
          await ctx.api.send("POST", `/agents/${id}/set-default`);
          reload();
        }),
      );
  const remove = agent.isDefault
    ? null
    : button(
        "Delete agent",
        async () => {
          if (!(await confirmAction(`Delete ${agent.name}?`, "Its token stops working and its grants are removed.", "Delete agent"))) return;
          await attempt(status, async () => {
            await ctx.api.send("DELETE", `/agents/${id}`);
            ctx.navigate(ctx.link("/agents"));
          });
        },
        { kind: "danger" },
      );
  let grants: HTMLElement;
  try {
    grants = await grantsSection(ctx, agent);
  } catch (err) {
    grants = notice("error", errorText(err));
  }
  return [
    h("p", { class: "crumbs" }, h("a", { href: ctx.link("/agents") }, "Agents"), " / ", agent.name),
    h("h1", { tabindex: "-1" }, agent.name, agent.isDefault ? [" ", badge("default")] : null),
    h("p", { class: "meta" }, "Identifier ", h("code", null, agent.identifier)),
    status,
    connectPanel(ctx, withToken, gateway.url),
    h("section", { class: "card", "aria-labelledby": "settings-h" }, h("h2", { id: "settings-h" }, "Settings"), settings, h("div", { class: "actions" }, regenerate, makeDefault, remove)),
    grants,
  ];
};
