// One partner organization: its status and claim link, new credentials, its projects, and the spend budgets
// of the partner's LLM keys in it (limit against what was spent this period). Claimed organizations belong to
// the customer: their link and credentials can no longer be reissued, and they cannot be deleted.
import { attempt, badge, button, confirmAction, empty, form, formatTime, notice, openDialog, shownOnce, spendBar, table } from "../../components.ts";
import { h, replace } from "../../h.ts";
import type { PageCtx, PageFn } from "../../types.ts";
import { managesPartner, partnerGate, STATUS_TEXT } from "./shared.ts";
import type { ClaimLink, PartnerOrganization, Project, RotatedTokens, Secret, SpendBudget } from "../../api-types.ts";

const PERIODS: [string, string][] = [
  ["monthly", "Monthly (resets on the 1st, UTC)"],
  ["total", "Total (never resets)"],
];

export const partnerOrgPage: PageFn = async (ctx) => {
  const gate = partnerGate(ctx, "Organization");
  if (gate) return gate;
  const id = ctx.params.orgId!;
  const org = await ctx.api.get<PartnerOrganization>(`/partner/orgs/${id}`);
  const status = h("div");
  const reveal = h("div");
  const unclaimed = org.status === "unclaimed";

  const claimLink = () =>
    attempt(status, async () => {
      if (!(await confirmAction("Issue a new claim link?", "The previous link stops working at once.", "Issue new link"))) return;
      const r = await ctx.api.send<ClaimLink>("POST", `/partner/orgs/${id}/claim-link`);
      replace(reveal, shownOnce("Give this link to your customer. It is shown only once; the previous link no longer works.", [["Claim link", r.claimUrl]]));
    });
  const rotate = () =>
    attempt(status, async () => {
      if (!(await confirmAction("Rotate the credentials?", "The organization key, the project key and the agent token are replaced; the old ones stop working at once.", "Rotate"))) return;
      const r = await ctx.api.send<RotatedTokens>("POST", `/partner/orgs/${id}/rotate-tokens`);
      replace(reveal, shownOnce("Copy these now: they are shown only once. The old values no longer work.", [["Organization API key", r.orgApiKey], ["Project API key", r.projectApiKey], ["Agent token", r.agentToken]]));
    });
  const remove = () =>
    attempt(status, async () => {
      if (!(await confirmAction(`Delete ${org.name}?`, "The organization, its projects, agents and secrets are deleted.", "Delete organization"))) return;
      await ctx.api.send("DELETE", `/partner/orgs/${id}`);
      ctx.navigate("/partner");
    });

  return [
    h("p", { class: "crumbs" }, h("a", { href: "/partner" }, "Organizations"), " / "),
    h("h1", { tabindex: "-1" }, org.name),
    status,
    h(
      "section",
      { class: "card", "aria-labelledby": "org-status-h" },
      h("h2", { id: "org-status-h" }, "Status"),
      h(
        "dl",
        { class: "details" },
        h("dt", null, "Status"),
        h("dd", null, badge(org.status, unclaimed ? "warn" : "connected"), " ", STATUS_TEXT[org.status]),
        h("dt", null, "Claimed by"),
        h("dd", null, org.claimedByEmail ? `${org.claimedByEmail} (${formatTime(org.claimedAt)})` : "—"),
        h("dt", null, "Created"),
        h("dd", null, formatTime(org.createdAt)),
      ),
      unclaimed
        ? h("div", { class: "actions" }, button("New claim link", claimLink), button("Rotate credentials", rotate), button("Delete organization", remove, { kind: "danger" }))
        : h("p", { class: "hint" }, "The customer owns this organization now: its claim link and credentials are theirs."),
      reveal,
    ),
    await projectsSection(ctx, org),
    await budgetsSection(ctx, org),
  ];
};

async function projectsSection(ctx: PageCtx, org: PartnerOrganization): Promise<HTMLElement> {
  const status = h("div");
  const list = h("div");
  const base = `/partner/orgs/${org.id}/projects`;
  const editable = org.status === "unclaimed";
  const load = async () => {
    const rows = await ctx.api.get<Project[]>(base);
    replace(
      list,
      rows.length === 0
        ? empty("No projects.")
        : table(
            `Projects of ${org.name}`,
            editable ? ["Name", "Slug", "Created", "Actions"] : ["Name", "Slug", "Created"],
            rows.map((p) => [
              p.name,
              h("code", null, p.slug),
              formatTime(p.createdAt),
              editable
                ? button("Delete", () =>
                    attempt(status, async () => {
                      if (!(await confirmAction(`Delete the project ${p.name}?`, "Its agents, secrets and rules are deleted.", "Delete project"))) return;
                      await ctx.api.send("DELETE", `${base}/${p.id}`);
                      await load();
                    }), { kind: "danger", label: `Delete project ${p.name}` })
                : null,
            ].filter((c) => c !== null)),
          ),
    );
  };
  const create = () =>
    openDialog("Add project", (close) =>
      form({
        fields: [{ name: "name", label: "Project name", required: true, hint: "2-50 characters.", match: /name/i }],
        submitLabel: "Add project",
        onCancel: close,
        async onSubmit(v) {
          await ctx.api.send("POST", base, { name: String(v.name).trim() });
          close();
          await load();
        },
      }),
    );
  await load();
  return h("section", { "aria-labelledby": "projects-h" }, h("h2", { id: "projects-h" }, "Projects"), status, editable ? h("div", { class: "toolbar" }, button("Add project", create)) : null, list);
}

async function budgetsSection(ctx: PageCtx, org: PartnerOrganization): Promise<HTMLElement> {
  const status = h("div");
  const list = h("div");
  const manage = managesPartner(ctx);
  const load = async () => {
    const [secrets, budgets] = await Promise.all([ctx.api.get<Secret[]>("/partner/secrets"), ctx.api.get<SpendBudget[]>(`/partner/orgs/${org.id}/budgets`)]);
    const keys = secrets.filter((s) => s.type === "llm_a" || s.type === "llm_b");
    replace(
      list,
      keys.length === 0
        ? empty("Budgets cap what an organization may spend through one of your LLM keys. Add an LLM key under ", h("a", { href: "/partner/secrets" }, "Partner secrets"), " first.")
        : table(
            `Spend budgets of ${org.name}`,
            manage ? ["LLM key", "Period", "Spent of limit", "Actions"] : ["LLM key", "Period", "Spent of limit"],
            keys.map((s) => {
              const b = budgets.find((x) => x.secretId === s.id);
              return [
                h("span", null, s.name, h("span", { class: "hint" }, ` · ${s.typeLabel}`)),
                b ? (b.period === "monthly" ? "This month" : "Total") : "—",
                b ? spendBar(`Spend of ${s.name}`, b.spentCents, b.limitCents) : h("span", { class: "hint" }, "No budget: spend is not limited"),
                manage
                  ? h(
                      "div",
                      { class: "row-actions" },
                      button(b ? "Change budget" : "Set budget", () => edit(s, b), { label: `${b ? "Change" : "Set"} the budget of ${s.name}` }),
                      b ? button("Remove budget", () => removeBudget(s), { kind: "danger", label: `Remove the budget of ${s.name}` }) : null,
                    )
                  : null,
              ].filter((c) => c !== null);
            }),
          ),
    );
  };
  const edit = (s: Secret, existing?: SpendBudget) =>
    openDialog(`Budget for ${s.name}`, (close) =>
      form({
        fields: [
          { name: "limit", label: "Limit (US dollars)", type: "number", required: true, value: existing ? (existing.limitCents / 100).toFixed(2) : "", hint: "Requests are refused once the spend would pass it.", match: /limit/i },
          { name: "period", label: "Period", type: "select", value: existing?.period ?? "monthly", options: PERIODS, match: /period/i },
        ],
        submitLabel: "Save budget",
        onCancel: close,
        async onSubmit(v) {
          const dollars = Number(v.limit);
          if (!Number.isFinite(dollars) || dollars < 0.01 || dollars > 1_000_000) throw new Error("The limit must be between $0.01 and $1,000,000.");
          await ctx.api.send("POST", `/partner/orgs/${org.id}/secrets/${s.id}/budget`, { limitCents: Math.round(dollars * 100), period: v.period });
          close();
          replace(status, notice("success", `Budget saved for ${s.name}.`));
          await load();
        },
      }),
    );
  const removeBudget = (s: Secret) =>
    attempt(status, async () => {
      if (!(await confirmAction(`Remove the budget of ${s.name}?`, "The organization's spend through this key is no longer limited.", "Remove budget"))) return;
      await ctx.api.send("DELETE", `/partner/orgs/${org.id}/secrets/${s.id}/budget`);
      await load();
    });
  await load();
  return h(
    "section",
    { "aria-labelledby": "budgets-h" },
    h("h2", { id: "budgets-h" }, "Spend budgets"),
    h("p", { class: "lead" }, manage ? "What this organization may spend through each of your LLM keys." : "What this organization may spend through each of your LLM keys. Partner owners and admins change budgets."),
    status,
    list,
  );
}
