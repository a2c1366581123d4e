// The agents of a project: the list, and creating one (its page then shows how to connect it).
import { badge, button, empty, form, formatTime, openDialog, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageFn } from "../types.ts";
import type { Agent } from "../api-types.ts";

export const MODES: [string, string][] = [
  ["grants", "Only granted secrets and connections"],
  ["all", "Every matching secret and connection"],
];

export const agentsPage: PageFn = async (ctx) => {
  const list = h("div");
  const load = async () => {
    const agents = await ctx.api.get<Agent[]>("/agents");
    replace(
      list,
      agents.length === 0
        ? empty("No agents yet. Create one to get a token for the gateway.")
        : table(
            "Agents",
            ["Name", "Identifier", "Credentials", "Last request", "Created"],
            agents.map((a) => [
              h("span", null, h("a", { href: ctx.link(`/agents/${a.id}`) }, a.name), a.isDefault ? [" ", badge("default")] : null),
              h("code", null, a.identifier),
              a.mode === "all" ? "All matching" : "Granted only",
              a.lastSeenAt ? formatTime(a.lastSeenAt) : "Never",
              formatTime(a.createdAt),
            ]),
          ),
    );
  };
  const create = () =>
    openDialog("Create agent", (close) =>
      form({
        fields: [
          { name: "name", label: "Name", required: true, match: /^name /i },
          { name: "identifier", label: "Identifier", required: true, hint: "Lowercase letters, numbers and hyphens, e.g. research-bot. Used by `credgate run --agent`.", match: /identifier/i },
          { name: "mode", label: "Credentials", type: "select", value: "grants", options: MODES },
        ],
        submitLabel: "Create agent",
        onCancel: close,
        async onSubmit(v) {
          const a = await ctx.api.send<Agent>("POST", "/agents", { name: String(v.name).trim(), identifier: String(v.identifier).trim(), mode: v.mode });
          close();
          ctx.navigate(ctx.link(`/agents/${a.id}`));
        },
      }),
    );
  await load();
  return [
    h("h1", { tabindex: "-1" }, "Agents"),
    h("p", { class: "lead" }, "Each agent has its own gateway token. In “granted only” mode it receives just the secrets and connections you grant it."),
    h("div", { class: "toolbar" }, button("Create agent", create, { kind: "primary" })),
    list,
  ];
};
