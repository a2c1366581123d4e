// The partner portal's home: the organizations the partner set up for its customers, with their status, and
// creating one. A new organization's keys, agent token and claim link are shown once, right after creation.
import { badge, button, empty, form, formatTime, openDialog, shownOnce, table } from "../../components.ts";
import { h, replace } from "../../h.ts";
import type { PageFn } from "../../types.ts";
import { partnerGate, STATUS_TEXT } from "./shared.ts";
import type { PartnerOrganization, PartnerOrgCreated } from "../../api-types.ts";

export const partnerOrgsPage: PageFn = async (ctx) => {
  const gate = partnerGate(ctx, "Organizations");
  if (gate) return gate;
  const created = h("div");
  const list = h("div");
  const load = async () => {
    const orgs = await ctx.api.get<PartnerOrganization[]>("/partner/orgs");
    replace(
      list,
      orgs.length === 0
        ? empty("No organizations yet. Create one for a customer: you get its keys and agent token to set it up, and a claim link to hand it over.")
        : table(
            "Organizations of the partner",
            ["Name", "Status", "Projects", "Claimed by", "Created"],
            orgs.map((o) => [
              h("a", { href: `/partner/orgs/${o.id}` }, o.name),
              h("span", { title: STATUS_TEXT[o.status] }, badge(o.status, o.status === "unclaimed" ? "warn" : o.status === "claimed" ? "connected" : "")),
              String(o.projects.length),
              o.claimedByEmail ?? "—",
              formatTime(o.createdAt),
            ]),
          ),
    );
  };
  const create = () =>
    openDialog("Create organization", (close) =>
      form({
        fields: [{ name: "name", label: "Organization name", required: true, hint: "Usually your customer's name.", match: /name/i }],
        submitLabel: "Create organization",
        onCancel: close,
        async onSubmit(v) {
          const r = await ctx.api.send<PartnerOrgCreated>("POST", "/partner/orgs", { name: String(v.name).trim() });
          close();
          replace(
            created,
            h(
              "section",
              { class: "card", "aria-labelledby": "created-h" },
              h("h2", { id: "created-h" }, `Created ${String(v.name).trim()}`),
              shownOnce("Copy these now: they are shown only once. Give the claim link to your customer; until they claim, the organization's agents reach only LLM APIs.", [
                ["Claim link", r.claimUrl],
                ["Organization API key", r.orgApiKey],
                ["Project API key", r.projectApiKey],
                ["Agent token", r.agentToken],
              ]),
              h("p", null, h("a", { href: `/partner/orgs/${r.organizationId}` }, "Open the organization")),
            ),
          );
          await load();
        },
      }),
    );
  await load();
  return [
    h("h1", { tabindex: "-1" }, "Organizations"),
    h("p", { class: "lead" }, "Organizations you run for your customers. Your partner secrets apply to each of them until it is detached."),
    h("div", { class: "toolbar" }, button("Create organization", create, { kind: "primary" })),
    created,
    list,
  ];
};
