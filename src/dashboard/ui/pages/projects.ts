// The organization's projects (cloud): create (the creator gets the new project's key, shown once), rename
// and delete (owners; the last project stays). The project switcher follows every change.
import { attempt, button, confirmAction, form, formatTime, notice, openDialog, shownOnce, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageFn } from "../types.ts";
import { isAdmin, orgTabs } from "./orgTabs.ts";
import type { Project, ProjectCreated } from "../api-types.ts";

export const projectsPage: PageFn = async (ctx) => {
  const title = h("h1", { tabindex: "-1" }, "Projects");
  if (ctx.mode !== "cloud") return [title, notice("info", "Self-hosted credgate has one project; several projects belong to credgate cloud.")];
  const admin = isAdmin(ctx);
  const owner = ctx.organization?.role === "owner";
  const status = h("div");
  const list = h("div");
  const load = async () => {
    const rows = await ctx.api.get<Project[]>("/projects");
    replace(
      list,
      table(
        "Projects of the organization",
        admin ? ["Name", "Slug", "Created", "Actions"] : ["Name", "Slug", "Created"],
        rows.map((p) => [
          h("a", { href: `/p/${p.id}` }, p.name),
          h("code", null, p.slug),
          formatTime(p.createdAt),
          admin
            ? h(
                "div",
                { class: "row-actions" },
                button("Rename", () => rename(p), { label: `Rename ${p.name}` }),
                owner ? button("Delete", () => remove(p), { kind: "danger", label: `Delete ${p.name}` }) : null,
              )
            : null,
        ].filter((c) => c !== null)),
      ),
    );
  };
  const nameField = (value = "") => ({ name: "name", label: "Project name", value, required: true, hint: "2-50 characters with at least one letter or number.", match: /name|slug/i });
  const create = () =>
    openDialog("Create project", (close) =>
      form({
        fields: [nameField()],
        submitLabel: "Create project",
        onCancel: close,
        async onSubmit(v) {
          const r = await ctx.api.send<ProjectCreated>("POST", "/projects", { name: String(v.name).trim() });
          close();
          await ctx.signedIn();
          replace(status, h("div", null, shownOnce(`Created ${r.name} with a Default agent. Your key for it is shown only once:`, [["Project API key", r.apiKey]]), h("p", null, h("a", { href: `/p/${r.id}` }, `Open ${r.name}`))));
          await load();
        },
      }),
    );
  const rename = (p: Project) =>
    openDialog(`Rename ${p.name}`, (close) =>
      form({
        fields: [nameField(p.name)],
        submitLabel: "Save",
        onCancel: close,
        async onSubmit(v) {
          await ctx.api.send("PATCH", `/projects/${p.id}`, { name: String(v.name).trim() });
          close();
          await ctx.signedIn();
          ctx.navigate(ctx.link("/org/projects"), { replace: true });
        },
      }),
    );
  const remove = (p: Project) =>
    attempt(status, async () => {
      if (!(await confirmAction(`Delete ${p.name}?`, "Its agents, secrets, connections, rules and logs are deleted.", "Delete project"))) return;
      await ctx.api.send("DELETE", `/projects/${p.id}`);
      const session = await ctx.signedIn();
      // Deleting the project this page belongs to: carry on in one that remains.
      const next = p.id === ctx.project?.id ? session?.projects[0]?.id : ctx.project?.id;
      ctx.navigate(next ? `/p/${next}/org/projects` : "/", { replace: true });
    });
  await load();
  return [
    title,
    orgTabs(ctx),
    admin ? h("div", { class: "toolbar" }, button("Create project", create, { kind: "primary" })) : h("p", { class: "hint" }, "Organization admins create and rename projects; owners delete them."),
    status,
    list,
  ];
};
