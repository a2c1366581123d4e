// The organization's audit log (admins and owners; docs/operations.md#audit-log): every management write, newest
// first — who, what, on which target, from where, and the fields it changed — filtered by actor, target, action
// and time, paged with the API's cursor ("Load more"). The filters live in the URL, so a filtered view is a link.
import { badge, empty, form, formatTime, notice, table } from "../components.ts";
import { filteredList, toInput } from "../filteredList.ts";
import { h, replace } from "../h.ts";
import type { AuditEvent } from "../api-types.ts";
import type { PageFn } from "../types.ts";
import { isAdmin, orgTabs } from "./orgTabs.ts";

const FILTERS = ["actorId", "targetId", "action", "since", "until"] as const;

const ACTOR_KIND: Record<string, string> = { user: "user", project_key: "project key", org_key: "organization key", partner_key: "partner key", cli: "command line" };

const shown = (v: unknown) => (v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v));

function changesList(changes: AuditEvent["changes"]): HTMLElement | string {
  const fields = Object.entries(changes);
  if (fields.length === 0) return "—";
  return h(
    "ul",
    { class: "changes" },
    ...fields.map(([field, [before, after]]) => h("li", null, h("code", null, field), ": ", h("span", { class: "before" }, shown(before)), " → ", h("span", { class: "after" }, shown(after)))),
  );
}

export const auditPage: PageFn = async (ctx) => {
  const title = h("h1", { tabindex: "-1" }, "Audit log");
  if (!isAdmin(ctx)) return [title, orgTabs(ctx), notice("info", "Only organization admins and owners read the audit log.")];
  const q = ctx.query;
  const results = h("div");
  const rows: AuditEvent[] = [];

  const draw = () =>
    replace(
      results,
      rows.length === 0
        ? empty("No events match. Every change made through the API, the dashboard or the command line appears here.")
        : table(
            "Audit log",
            ["Time", "Actor", "Action", "Target", "Address", "Changes"],
            rows.map((e) => [
              formatTime(e.at),
              h("span", null, badge(ACTOR_KIND[e.actor.kind] ?? e.actor.kind, e.actor.kind), " ", e.actor.email ?? h("code", null, e.actor.id)),
              h("code", { class: "wrap" }, e.action),
              h("span", null, e.targetType, e.targetId ? [" ", h("code", null, e.targetId)] : null),
              e.address ?? "—",
              changesList(e.changes),
            ]),
          ),
    );

  const list = filteredList<AuditEvent>(ctx, { path: "/org/audit", filters: FILTERS, rows, draw, endText: "End of the audit log." });

  const filters = form({
    fields: [
      { name: "actorId", label: "Actor id", value: q.get("actorId") ?? "", placeholder: "user, key or CLI user id", match: /^actor/i },
      { name: "targetId", label: "Target id", value: q.get("targetId") ?? "", match: /^target/i },
      { name: "action", label: "Action", value: q.get("action") ?? "", placeholder: "PATCH /v1/secrets/{secretId}", match: /^action/i },
      { name: "since", label: "From", type: "datetime-local", value: toInput(q.get("since")), match: /^since/i },
      { name: "until", label: "To", type: "datetime-local", value: toInput(q.get("until")), match: /^until/i },
    ],
    submitLabel: "Apply filters",
    onSubmit: (v) => list.apply(v),
  });
  filters.classList.add("filters");
  await list.reload();
  return [
    title,
    orgTabs(ctx),
    h("p", { class: "lead" }, "Every change to the organization, newest first. Secret values, keys and passwords are never shown: a change of one reads <redacted>."),
    h("div", { role: "search", "aria-label": "Filter the audit log" }, filters),
    results,
    list.more,
  ];
};
