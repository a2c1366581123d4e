// The organization (admins and owners): its name, the caller's organization API key, organization
// connections, and links to the organization's secrets and policy, which apply across all its projects.
import { attempt, button, confirmAction, copyButton, empty, errorText, form, notice } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import { connectionsTable, type ConnectionRecord } from "./apps.ts";
import { isAdmin, orgTabs } from "./orgTabs.ts";
import { orgPartnerSection } from "./orgPartner.ts";
import { policyView } from "./policy.ts";
import { secretsView } from "./secrets.ts";
import type { ApiKey, Organization } from "../api-types.ts";

const notAdmin = (ctx: PageCtx, title: string) => [h("h1", { tabindex: "-1" }, title), orgTabs(ctx), notice("info", "Only organization admins and owners manage the organization.")];

export const organizationPage: PageFn = async (ctx) => {
  if (!isAdmin(ctx)) return notAdmin(ctx, "Organization");
  const [org, conns] = await Promise.all([ctx.api.get<Organization>("/org/settings"), ctx.api.get<ConnectionRecord[]>("/org/connections")]);
  const status = h("div");
  const keyBox = h("div");
  const keyStatus = h("div");
  let key: string | null = null;
  // A project key's session never reaches the organization key (docs/api.md#credentials).
  const projectScoped = ctx.session?.scope.kind === "project";
  const drawKey = (): void => {
    if (projectScoped) {
      replace(keyBox, notice("info", "This session was signed in with a project key, which never reaches the organization key. Sign in with your password or the organization key to see it."));
      return;
    }
    replace(
      keyBox,
      h("p", null, "The organization key (", h("code", null, "svc_org_…"), ") acts across every project of the organization with your role. It is yours alone."),
      key ? h("div", { class: "field" }, h("label", { for: "org-key" }, "Organization API key"), h("input", { id: "org-key", readOnly: true, value: key, class: "mono" })) : null,
      h(
        "div",
        { class: "actions" },
        key ? copyButton(() => key!, "Copy key") : button("Show key", () => attempt(keyStatus, async () => ((key = (await ctx.api.get<ApiKey>("/org/api-key")).apiKey), drawKey()))),
        button("Regenerate key", async () => {
          if (!(await confirmAction("Regenerate the organization key?", "The current key stops working at once.", "Regenerate"))) return;
          await attempt(keyStatus, async () => {
            key = (await ctx.api.send<ApiKey>("POST", "/org/api-key/regenerate")).apiKey;
            drawKey();
            replace(keyStatus, notice("success", "New key created; the old one no longer works."));
          });
        }, { kind: "danger" }),
      ),
    );
  };
  drawKey();
  const connBox = h("div");
  const loadConns = async () => {
    const rows = await ctx.api.get<ConnectionRecord[]>("/org/connections");
    replace(connBox, rows.length === 0 ? empty("No organization connections. They are shared by every project.") : connectionsTable(ctx, rows, "/org/connections", "organization", status, loadConns));
  };
  replace(connBox, conns.length === 0 ? empty("No organization connections. They are shared by every project.") : connectionsTable(ctx, conns, "/org/connections", "organization", status, loadConns));
  return [
    h("h1", { tabindex: "-1" }, "Organization"),
    orgTabs(ctx),
    status,
    h(
      "section",
      { class: "card", "aria-labelledby": "org-settings-h" },
      h("h2", { id: "org-settings-h" }, "Settings"),
      form({
        fields: [{ name: "name", label: "Organization name", value: org.name, required: true, match: /^name/i }],
        submitLabel: "Save",
        async onSubmit(v) {
          await ctx.api.send("PATCH", "/org/settings", { name: String(v.name).trim() });
          await ctx.signedIn();
          replace(status, notice("success", "Saved."));
        },
      }),
    ),
    h("section", { class: "card", "aria-labelledby": "org-key-h" }, h("h2", { id: "org-key-h" }, "Organization API key"), keyStatus, keyBox),
    await orgPartnerSection(ctx),
    h("section", { "aria-labelledby": "org-conn-h" }, h("h2", { id: "org-conn-h" }, "Organization connections"), connBox),
  ];
};

export const orgSecretsPage: PageFn = async (ctx) => {
  if (!isAdmin(ctx)) return notAdmin(ctx, "Organization secrets");
  return [h("h1", { tabindex: "-1" }, "Organization secrets"), orgTabs(ctx), h("p", { class: "lead" }, "Injected for every project of the organization; a project secret on the same header wins."), ...(await secretsView(ctx, "organization"))];
};

export const orgPolicyPage: PageFn = async (ctx) => {
  if (!isAdmin(ctx)) return notAdmin(ctx, "Organization policy");
  try {
    return [h("h1", { tabindex: "-1" }, "Organization policy"), orgTabs(ctx), h("p", { class: "lead" }, "Applies to every project; the stricter of the organization's and the project's decisions wins."), ...(await policyView(ctx, "/org/policy"))];
  } catch (err) {
    return [h("h1", { tabindex: "-1" }, "Organization policy"), notice("error", errorText(err))];
  }
};
