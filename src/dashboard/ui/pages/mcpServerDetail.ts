// One MCP server (`/p/<id>/mcp-servers/<serverId>`; the login comes back here): its status, Connect (the login
// credgate runs, docs/mcp.md#the-login), its tools, and each agent's grant of them (docs/mcp.md#tool-grants).
import { attempt, badge, button, confirmAction, empty, form, formatTime, notice, openDialog, table, type FieldSpec } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import type { Agent, McpServer, McpServerGrants } from "../api-types.ts";
import { AUTH_LABEL, STATUS_KIND } from "./mcpServers.ts";

/** Set before the browser leaves for the consent page, so the landing page returns to this project. */
export const MCP_CONNECT_PROJECT_KEY = "credgate.mcpConnectProject";

type Holder = McpServerGrants["agents"][number];

const TOOL_CHOICES: [string, string][] = [
  ["allow", "Allowed"],
  ["ask", "Needs approval"],
  ["block", "Blocked"],
];

function accessText(g: Holder | undefined, agent: Agent): string {
  if (!g) return agent.mode === "all" ? "Every tool (all-matching agent)" : "No access";
  if (g.access === "full") return "Every tool";
  return `${g.allow.length} allowed · ${g.ask.length} need approval`;
}

function openGrantDialog(ctx: PageCtx, server: McpServer, agent: Agent, grant: Holder | undefined, onSaved: () => Promise<void>): void {
  const fields: FieldSpec[] = [
    {
      name: "access",
      label: "Access",
      type: "select",
      value: grant?.access ?? "none",
      options: server.tools.length ? [["none", "No access"], ["full", "Every tool"], ["custom", "Chosen tools"]] : [["none", "No access"], ["full", "Every tool"]],
      hint: server.tools.length ? undefined : "No tools are known yet: connect the server or refresh its tools to choose them one by one.",
      match: /access|tool/i,
    },
    ...server.tools.map(
      (t): FieldSpec => ({
        name: `tool:${t.name}`,
        label: t.name,
        type: "select",
        value: grant?.allow.includes(t.name) ? "allow" : grant?.ask.includes(t.name) ? "ask" : "block",
        options: TOOL_CHOICES,
        hint: [t.readOnlyHint ? "Read-only (as the server says)" : null, t.description].filter(Boolean).join(" · ") || undefined,
        when: (v) => v.access === "custom",
      }),
    ),
    {
      name: "arguments",
      label: "Argument rules",
      type: "textarea",
      value: grant && Object.keys(grant.arguments).length ? JSON.stringify(grant.arguments, null, 2) : "",
      hint: 'Optional. Per tool, a JSON pointer into its arguments and the glob the value must match, e.g. {"read_file": {"/path": "/srv/**"}}.',
      when: (v) => v.access === "custom",
      match: /arguments/i,
    },
  ];
  openDialog(`Access of ${agent.name} to ${server.name}`, (close) =>
    form({
      fields,
      submitLabel: "Save access",
      onCancel: close,
      async onSubmit(v) {
        const picked = (choice: string) => server.tools.filter((t) => v[`tool:${t.name}`] === choice).map((t) => t.name);
        const rules = String(v.arguments ?? "").trim();
        let args: unknown = {};
        if (v.access === "custom" && rules) {
          try {
            args = JSON.parse(rules);
          } catch {
            throw new Error("arguments must be JSON: an object of tools, each an object of JSON pointers and globs");
          }
        }
        if (v.access === "none") await ctx.api.send("DELETE", `/agents/${agent.id}/grants/mcp-servers/${server.id}`);
        else
          await ctx.api.send(
            "PUT",
            `/agents/${agent.id}/grants/mcp-servers/${server.id}`,
            v.access === "custom" ? { access: "custom", allow: picked("allow"), ask: picked("ask"), arguments: args } : { access: "full" },
          );
        close();
        await onSaved();
      },
    }),
  );
}

async function grantsSection(ctx: PageCtx, server: McpServer): Promise<HTMLElement> {
  const box = h("section", { "aria-labelledby": "grants-h" });
  const draw = async () => {
    const [agents, holders] = await Promise.all([ctx.api.get<Agent[]>("/agents"), ctx.api.get<McpServerGrants>(`/mcp-servers/${server.id}/grants`)]);
    const byAgent = new Map(holders.agents.map((g) => [g.agentId, g]));
    replace(
      box,
      h("h2", { id: "grants-h" }, "Agents"),
      h("p", { class: "hint" }, "Which tools each agent may call. Tools the server adds later arrive blocked for agents with chosen tools."),
      table(
        "Agents' access",
        ["Agent", "Access", "Action"],
        agents.map((a) => [a.name, accessText(byAgent.get(a.id), a), button("Edit access", () => openGrantDialog(ctx, server, a, byAgent.get(a.id), draw), { label: `Edit access of ${a.name}` })]),
      ),
    );
  };
  await draw();
  return box;
}

export const mcpServerDetailPage: PageFn = async (ctx) => {
  const id = ctx.params.serverId!;
  const server = await ctx.api.get<McpServer>(`/mcp-servers/${encodeURIComponent(id)}`);
  const status = h("div", { role: "status" });
  const reload = () => ctx.navigate(location.pathname, { replace: true });
  if (ctx.query.get("status") === "success") replace(status, notice("success", `${server.name} is connected.`));
  else if (ctx.query.get("status") === "error") replace(status, notice("error", `${server.name} could not be connected: ${ctx.query.get("message") ?? "the login did not complete"}`));
  const connect = () => {
    sessionStorage.setItem(MCP_CONNECT_PROJECT_KEY, ctx.project?.id ?? "");
    location.assign(`/v1/mcp-servers/${encodeURIComponent(server.id)}/authorize?_project=${encodeURIComponent(ctx.project?.id ?? "")}`);
  };
  const actions = h(
    "div",
    { class: "toolbar" },
    server.authKind === "oauth" ? button(server.status === "pending" ? "Connect" : "Connect again", connect, { kind: "primary" }) : null,
    button("Refresh tools", () => attempt(status, async () => {
      await ctx.api.send("POST", `/mcp-servers/${server.id}/refresh-tools`);
      reload();
    })),
    button("Delete", () => attempt(status, async () => {
      if (!(await confirmAction(`Delete ${server.name}?`, "Agents lose access to its tools at once, and their grants of it are removed.", "Delete"))) return;
      await ctx.api.send("DELETE", `/mcp-servers/${server.id}`);
      ctx.navigate(ctx.link("/mcp-servers"));
    }), { kind: "danger" }),
  );
  return [
    h("p", { class: "crumbs" }, h("a", { href: ctx.link("/mcp-servers") }, "MCP servers"), " / ", server.name),
    h("h1", { tabindex: "-1" }, server.name),
    h("p", null, h("code", { class: "wrap" }, server.url), " · ", AUTH_LABEL[server.authKind], " · ", badge(server.status, STATUS_KIND[server.status])),
    status,
    server.error ? notice("error", server.error) : null,
    actions,
    h(
      "section",
      { "aria-labelledby": "tools-h" },
      h("h2", { id: "tools-h" }, "Tools"),
      server.toolsRefreshedAt ? h("p", { class: "hint" }, `Listed ${formatTime(server.toolsRefreshedAt)}.`) : null,
      server.tools.length === 0
        ? empty(server.status === "pending" ? "Connect the server to list its tools." : "The server listed no tools.")
        : table("Tools", ["Tool", "Description", "Read-only"], server.tools.map((t) => [h("code", null, t.name), t.description ?? "", t.readOnlyHint === null ? "—" : t.readOnlyHint ? "Yes" : "No"])),
    ),
    await grantsSection(ctx, server),
  ];
};

/**
 * Where the login lands (`/mcp-servers/<id>?status=…`, or `/mcp-servers?status=error…` when the callback could not
 * tell which server): on to that page in the project the login started from.
 */
export const mcpServerLandingPage: PageFn = async (ctx) => {
  const id = ctx.params.serverId;
  const projects = ctx.session?.projects ?? [];
  const q = new URLSearchParams(ctx.query);
  if (projects.length > 0) {
    const remembered = sessionStorage.getItem(MCP_CONNECT_PROJECT_KEY);
    sessionStorage.removeItem(MCP_CONNECT_PROJECT_KEY);
    const project = projects.find((p) => p.id === remembered) ?? projects[0]!;
    queueMicrotask(() => ctx.navigate(`/p/${project.id}/mcp-servers${id ? `/${encodeURIComponent(id)}` : ""}?${q}`, { replace: true }));
    return h("p", { role: "status" }, "Opening the MCP server…");
  }
  const ok = ctx.query.get("status") === "success";
  return [
    h("h1", { tabindex: "-1" }, ok ? "The MCP server is connected" : "The MCP server could not be connected"),
    ok ? notice("success", "credgate holds its tokens now.") : notice("error", ctx.query.get("message") ?? "The login did not complete."),
    h("p", null, h("a", { href: "/sign-in" }, "Sign in to the dashboard")),
  ];
};
