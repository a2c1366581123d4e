// The organization's team (cloud): members with their role and status, role changes and removal by admins,
// and provisions: a new member's seat (a Default project, its key and a claim link good for 7 days) handed to
// the person who will claim it. The owner is fixed.
import { badge, button, form, formatTime, notice, openDialog, shownOnce, table } from "../components.ts";
import { removeControl, roleControl, type MemberRow } from "./memberControls.ts";
import { h, replace } from "../h.ts";
import type { PageFn } from "../types.ts";
import { isAdmin, orgTabs } from "./orgTabs.ts";
import type { Provision, TeamMember } from "../api-types.ts";

const ROLES: [string, string][] = [
  ["member", "Member"],
  ["admin", "Admin"],
];

export const teamPage: PageFn = async (ctx) => {
  const title = h("h1", { tabindex: "-1" }, "Team");
  if (ctx.mode !== "cloud") return [title, notice("info", "Self-hosted credgate has one owner; team members belong to credgate cloud.")];
  const admin = isAdmin(ctx);
  const status = h("div");
  const list = h("div");
  const load = async () => {
    const rows = await ctx.api.get<TeamMember[]>("/team/members");
    replace(
      list,
      table(
        "Members of the organization",
        admin ? ["Member", "Role", "Status", "Joined", "Actions"] : ["Member", "Role", "Status", "Joined"],
        rows.map((m) => {
          const who = m.status === "pending" ? "Provisioned seat (not claimed yet)" : (m.name ? `${m.name} <${m.email}>` : m.email);
          const row: MemberRow = { who, role: m.role, rolePath: `/team/members/${m.userId}`, removePath: `/team/members/${m.userId}` };
          return [
            who,
            roleControl(ctx, row, ROLES, admin && m.role !== "owner", status),
            badge(m.status, m.status === "pending" ? "warn" : "connected"),
            formatTime(m.joinedAt),
            admin ? removeControl(ctx, row, "Their API keys and sessions stop working at once.", status, load) : null,
          ].filter((c) => c !== null);
        }),
      ),
    );
  };
  const provision = () =>
    openDialog("Provision a member", (close) =>
      form({
        fields: [
          { name: "role", label: "Role", type: "select", value: "member", options: ROLES, match: /role/i },
        ],
        extra: h("p", { class: "hint" }, "Creates a seat with a Default project, an agent and a project key. Whoever opens the claim link within 7 days takes the seat and its keys."),
        submitLabel: "Provision",
        onCancel: close,
        async onSubmit(v) {
          const r = await ctx.api.send<Provision>("POST", "/team/provisions", { role: v.role });
          close();
          replace(status, shownOnce(`Copy these now: they are shown only once. The claim link works until ${formatTime(r.expiresAt)}.`, [["Claim link", r.claimUrl], ["Project API key", r.apiKey]]));
          await load();
        },
      }),
    );
  await load();
  return [
    title,
    orgTabs(ctx),
    admin ? h("div", { class: "toolbar" }, button("Provision a member", provision, { kind: "primary" })) : h("p", { class: "hint" }, "Organization admins and owners manage the team."),
    status,
    list,
  ];
};
