// The controls of a member row, shared by the organization's team and the partner's members: the role as a
// select that saves on change (or a badge where it cannot change), and removal after a confirmation, with the
// owner fixed.
import { attempt, badge, button, confirmAction, notice } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx } from "../types.ts";

export interface MemberRow {
  /** How the member is named in labels and messages. */
  who: string;
  role: string;
  /** PATCH target taking `{role}`. */
  rolePath: string;
  /** DELETE target. */
  removePath: string;
}

/** A select of `roles` that saves the choice, or the role as a badge when `editable` is false. */
export function roleControl(ctx: PageCtx, m: MemberRow, roles: [value: string, label: string][], editable: boolean, status: HTMLElement): HTMLElement {
  if (!editable) return badge(m.role);
  const select = h("select", { "aria-label": `Role of ${m.who}` }, ...roles.map(([v, l]) => h("option", { value: v, selected: v === m.role }, l)));
  select.addEventListener("change", () =>
    attempt(status, async () => {
      await ctx.api.send("PATCH", m.rolePath, { role: select.value });
      replace(status, notice("success", `${m.who} is now ${select.value === "admin" ? "an admin" : "a member"}.`));
    }),
  );
  return select;
}

/** The removal button (asking first, saying `consequence`), or why the owner stays. */
export function removeControl(ctx: PageCtx, m: MemberRow, consequence: string, status: HTMLElement, reload: () => Promise<void>): HTMLElement {
  if (m.role === "owner") return h("span", { class: "hint" }, "The owner cannot be changed or removed");
  return button(
    "Remove",
    () =>
      attempt(status, async () => {
        if (!(await confirmAction(`Remove ${m.who}?`, consequence, "Remove member"))) return;
        await ctx.api.send("DELETE", m.removePath);
        await reload();
      }),
    { kind: "danger", label: `Remove ${m.who}` },
  );
}
