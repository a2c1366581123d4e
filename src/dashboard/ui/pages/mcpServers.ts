// A project's MCP servers (`/p/<id>/mcp-servers`, docs/mcp.md#registering): the list, and adding one with a
// static bearer token or header, or for the login credgate runs (then its page offers Connect).
import { badge, button, empty, form, formatTime, notice, openDialog, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageFn } from "../types.ts";
import type { McpServer } from "../api-types.ts";

export const STATUS_KIND: Record<McpServer["status"], string> = { connected: "connected", pending: "warn", error: "blocked", revoked: "blocked" };
export const AUTH_LABEL: Record<McpServer["authKind"], string> = { oauth: "OAuth login", bearer: "Bearer token", header: "Header" };

const AUTH_CHOICES: [string, string][] = [
  ["oauth", "Log in with OAuth (credgate registers itself)"],
  ["bearer", "A bearer token"],
  ["header", "A header"],
];

export const mcpServersPage: PageFn = async (ctx) => {
  const list = h("div");
  const load = async () => {
    const servers = await ctx.api.get<McpServer[]>("/mcp-servers");
    replace(
      list,
      servers.length === 0
        ? empty("No MCP server yet. Add one to let agents use its tools without its token.")
        : table(
            "MCP servers",
            ["Name", "URL", "Authentication", "Status", "Tools", "Added"],
            servers.map((s) => [
              h("a", { href: ctx.link(`/mcp-servers/${s.id}`) }, s.name),
              h("code", { class: "wrap" }, s.url),
              AUTH_LABEL[s.authKind],
              badge(s.status, STATUS_KIND[s.status]),
              String(s.tools.length),
              formatTime(s.createdAt),
            ]),
          ),
    );
  };
  const add = () =>
    openDialog("Add MCP server", (close) =>
      form({
        fields: [
          { name: "name", label: "Name", required: true, match: /^name /i },
          { name: "url", label: "URL", required: true, placeholder: "https://mcp.example.com/mcp", hint: "The server's Streamable HTTP endpoint, or its SSE stream for older servers.", match: /^url /i },
          { name: "auth", label: "Authentication", type: "select", value: "oauth", options: AUTH_CHOICES },
          { name: "bearer", label: "Token", type: "password", required: true, when: (v) => v.auth === "bearer", match: /auth\.bearer/i },
          { name: "header", label: "Header name", required: true, placeholder: "X-Api-Key", when: (v) => v.auth === "header", match: /auth\.header/i },
          { name: "value", label: "Header value", type: "password", required: true, when: (v) => v.auth === "header", match: /auth\.value/i },
        ],
        submitLabel: "Add MCP server",
        onCancel: close,
        async onSubmit(v) {
          const auth = v.auth === "bearer" ? { bearer: String(v.bearer) } : v.auth === "header" ? { header: String(v.header).trim(), value: String(v.value) } : undefined;
          const s = await ctx.api.send<McpServer>("POST", "/mcp-servers", { name: String(v.name).trim(), url: String(v.url).trim(), ...(auth ? { auth } : {}) });
          close();
          ctx.navigate(ctx.link(`/mcp-servers/${s.id}`));
        },
      }),
    );
  await load();
  const failed = ctx.query.get("status") === "error" ? notice("error", `The login did not complete: ${ctx.query.get("message") ?? "unknown error"}`) : null;
  return [
    h("h1", { tabindex: "-1" }, "MCP servers"),
    failed,
    h("p", { class: "lead" }, "Remote MCP servers your agents use through the gateway: credgate holds the login, and each agent sees and calls only the tools you grant it."),
    h("div", { class: "toolbar" }, button("Add MCP server", add, { kind: "primary" })),
    list,
  ];
};
