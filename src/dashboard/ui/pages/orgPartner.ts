// The organization's partner (cloud, docs/api.md#partners): who manages it, the partner's secrets it inherits, and
// detaching (after a claim) so that the partner's secrets stop applying. Nothing shows for an organization no
// partner set up.
import { attempt, badge, button, confirmAction, notice, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx } from "../types.ts";
import type { SecretRecord } from "./secretForm.ts";
import type { OrgPartnerStatus } from "../api-types.ts";

export async function orgPartnerSection(ctx: PageCtx): Promise<HTMLElement | null> {
  if (ctx.mode !== "cloud") return null;
  const [st, inherited] = await Promise.all([ctx.api.get<OrgPartnerStatus>("/org/partner/status"), ctx.api.get<SecretRecord[]>("/org/partner/inherited-secrets")]);
  if (!st.partnerManaged) return null;
  const status = h("div");
  const partner = st.partnerName ?? "a partner";
  const detach = button("Detach from the partner", () =>
    attempt(status, async () => {
      if (!(await confirmAction(`Detach from ${partner}?`, "The partner's secrets stop being injected for your agents at once. This cannot be undone.", "Detach"))) return;
      await ctx.api.send("POST", "/org/partner/detach");
      ctx.navigate(location.pathname, { replace: true });
    }), { kind: "danger" });
  return h(
    "section",
    { class: "card", "aria-labelledby": "org-partner-h" },
    h("h2", { id: "org-partner-h" }, "Partner"),
    status,
    st.detached
      ? h("p", null, `Set up by ${partner}; `, badge("detached"), " its secrets no longer apply.")
      : [
          h("p", null, `This organization was set up by ${partner}. Its secrets below are injected for your agents, after your own.`),
          inherited.length
            ? table("Secrets inherited from the partner", ["Name", "Type", "Host"], inherited.map((s) => [s.name, s.typeLabel, h("code", null, s.hostPattern)]))
            : h("p", { class: "hint" }, "The partner shares no secrets at the moment."),
          h("div", { class: "actions" }, detach),
        ],
  );
}
