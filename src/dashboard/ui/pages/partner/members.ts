// The partner's members: who may use the portal, with which role. Owners and admins add people (someone
// without a password gets an invitation link to set one), change roles and remove members; the owner is fixed.
import { button, empty, form, formatTime, notice, openDialog, shownOnce, table } from "../../components.ts";
import { removeControl, roleControl, type MemberRow } from "../memberControls.ts";
import { h, replace } from "../../h.ts";
import type { PageFn } from "../../types.ts";
import { managesPartner, partnerGate } from "./shared.ts";
import type { PartnerMember, PartnerMemberAdded } from "../../api-types.ts";

const ROLES: [string, string][] = [
  ["member", "Member: organizations, secrets and projects"],
  ["admin", "Admin: also members and budgets"],
];

export const partnerMembersPage: PageFn = async (ctx) => {
  const gate = partnerGate(ctx, "Members");
  if (gate) return gate;
  const manage = managesPartner(ctx);
  const status = h("div");
  const list = h("div");
  const load = async () => {
    const rows = await ctx.api.get<PartnerMember[]>("/partner/members");
    replace(
      list,
      rows.length === 0
        ? empty("No members.")
        : table(
            "Members of the partner",
            manage ? ["Email", "Role", "Added", "Actions"] : ["Email", "Role", "Added"],
            rows.map((m) => {
              const row: MemberRow = { who: m.email, role: m.role, rolePath: `/partner/members/${m.userId}/role`, removePath: `/partner/members/${m.userId}` };
              return [
                m.email,
                roleControl(ctx, row, ROLES.map(([v]) => [v, v]), manage && m.role !== "owner", status),
                formatTime(m.createdAt),
                manage ? removeControl(ctx, row, "They lose access to the partner portal at once.", status, load) : null,
              ].filter((c) => c !== null);
            }),
          ),
    );
  };
  const add = () =>
    openDialog("Add member", (close) =>
      form({
        fields: [
          { name: "email", label: "Email", type: "email", required: true, match: /email|user/i },
          { name: "role", label: "Role", type: "select", value: "member", options: ROLES, match: /role/i },
        ],
        submitLabel: "Add member",
        onCancel: close,
        async onSubmit(v) {
          const r = await ctx.api.send<PartnerMemberAdded>("POST", "/partner/members", { email: String(v.email).trim(), role: v.role });
          close();
          replace(
            status,
            r.inviteUrl
              ? shownOnce(`${r.email} was added. Send them this invitation link to choose a password; it is shown only once and works for 7 days.`, [["Invitation link", r.inviteUrl]])
              : notice("success", `${r.email} was added; they sign in with their existing password.`),
          );
          await load();
        },
      }),
    );
  await load();
  return [
    h("h1", { tabindex: "-1" }, "Members"),
    h("p", { class: "lead" }, `People who work in the portal of ${ctx.session?.partner?.name ?? "the partner"}.`),
    manage ? h("div", { class: "toolbar" }, button("Add member", add, { kind: "primary" })) : h("p", { class: "hint" }, "Partner owners and admins manage members."),
    status,
    list,
  ];
};
