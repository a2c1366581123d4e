// The organization area's tabs and its gate: settings, secrets, policy, notifications, budgets and the audit
// log for admins; team and projects on cloud, where an organization has several people and projects.
import { h } from "../h.ts";
import type { PageCtx } from "../types.ts";

export const isAdmin = (ctx: PageCtx) => ctx.organization?.role === "admin" || ctx.organization?.role === "owner";

export function orgTabs(ctx: PageCtx): HTMLElement {
  const tabs: [string, string][] = [
    ["/org", "Settings"],
    ["/org/secrets", "Secrets"],
    ["/org/policy", "Policy"],
    ["/org/notifications", "Notifications"],
    ["/org/budgets", "Budgets"],
    ...(ctx.mode === "cloud" ? ([["/org/team", "Team"], ["/org/projects", "Projects"]] as [string, string][]) : []),
    ["/org/audit", "Audit log"],
  ];
  const here = location.pathname;
  return h("nav", { "aria-label": "Organization", class: "tabs" }, ...tabs.map(([rest, label]) => h("a", { href: ctx.link(rest), "aria-current": here === ctx.link(rest) ? "page" : null }, label)));
}
