// What an agent may do with a granted connection (docs/injection.md#grants): every tool, or chosen tools each
// allowed, paused for approval or blocked (tools the app adds later arrive blocked); and for GitHub and
// Dropbox, the repositories or folders it may reach.
import { form, openDialog, type FieldSpec } from "../components.ts";
import type { PageCtx } from "../types.ts";
import type { PermissionDefinition } from "../api-types.ts";
import type { GrantSet } from "../api-types.ts";

export type ConnectionGrant = GrantSet["connections"][number];

/** The resource scope each provider supports, as the grant's `resources` key. */
const RESOURCES: Record<string, { key: string; label: string; hint: string }> = {
  github: { key: "repositories", label: "Repositories", hint: "One owner/repo per line; empty: every repository the connection reaches." },
  dropbox: { key: "folders", label: "Folders", hint: "One absolute path per line, e.g. /Reports; empty: the whole Dropbox." },
};

const TOOL_CHOICES: [string, string][] = [
  ["allow", "Allowed"],
  ["ask", "Needs approval"],
  ["block", "Blocked"],
];

export async function openAccessDialog(ctx: PageCtx, agentId: string, grant: ConnectionGrant, onSaved: () => Promise<void>): Promise<void> {
  // Apps without a permission catalog only have full access.
  const definition = await ctx.api.get<PermissionDefinition>(`/apps/${grant.provider}/permission-definition`).catch(() => null);
  const tools = definition?.groups.flatMap((g) => g.tools.map((t) => ({ ...t, category: g.category }))) ?? [];
  const resource = RESOURCES[grant.provider];
  const fields: FieldSpec[] = [
    {
      name: "access",
      label: "Access",
      type: "select",
      value: grant.access,
      options: definition ? [["full", "Every tool"], ["custom", "Chosen tools"]] : [["full", "Every tool"]],
      hint: definition ? undefined : "This app has no per-tool permissions: the agent gets every tool.",
      match: /access/i,
    },
    ...tools.map(
      (t): FieldSpec => ({
        name: `tool:${t.id}`,
        label: t.name,
        type: "select",
        value: grant.allow.includes(t.id) ? "allow" : grant.ask.includes(t.id) ? "ask" : "block",
        options: TOOL_CHOICES,
        hint: `${t.category === "read" ? "Reads" : "Writes"} · ${t.description}`,
        when: (v) => v.access === "custom",
      }),
    ),
  ];
  if (resource) {
    fields.push({ name: "resources", label: resource.label, type: "textarea", value: (grant.resources?.[resource.key] ?? []).join("\n"), hint: resource.hint, match: /resources|repositor|folder/i });
  }
  const name = grant.label ?? grant.provider;
  openDialog(`Access to ${name}`, (close) =>
    form({
      fields,
      submitLabel: "Save access",
      onCancel: close,
      async onSubmit(v) {
        const picked = (choice: string) => tools.filter((t) => v[`tool:${t.id}`] === choice).map((t) => t.id);
        const list = resource ? String(v.resources ?? "").split("\n").map((x) => x.trim()).filter(Boolean) : [];
        const resources = resource ? (list.length ? { [resource.key]: list } : null) : undefined;
        const body = v.access === "custom" ? { access: "custom", allow: picked("allow"), ask: picked("ask"), resources } : { access: "full", resources };
        await ctx.api.send("PUT", `/agents/${agentId}/grants/connections/${grant.connectionId}`, body);
        close();
        await onSaved();
      },
    }),
  );
}
