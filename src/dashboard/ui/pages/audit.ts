// The organization's audit log (admins and owners; docs/operations.md#audit-log): every management write, newest
// first — who, what, on which target, from where, and the fields it changed — filtered by actor, target, action
// and time, paged with the API's cursor ("Load more"). The filters live in the URL, so a filtered view is a link.
import { queryString } from "../api.ts";
import { badge, button, empty, errorText, form, formatTime, notice, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageFn } from "../types.ts";
import { isAdmin, orgTabs } from "./orgTabs.ts";

const FILTERS = ["actorId", "targetId", "action", "since", "until"] as const;

interface AuditEvent {
  id: string;
  at: string;
  actor: { kind: string; id: string; email: string | null };
  action: string;
  targetType: string;
  targetId: string | null;
  projectId: string | null;
  address: string | null;
  changes: Record<string, [unknown, unknown]>;
}

const ACTOR_KIND: Record<string, string> = { user: "user", project_key: "project key", org_key: "organization key", partner_key: "partner key", cli: "command line" };

const toInput = (iso: string | null) => {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};
const fromInput = (v: string) => (v ? new Date(v).toISOString() : null);

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
  const more = h("div", { class: "actions" });
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

  const load = async (cursor: string | null) => {
    const params: Record<string, string | null> = {};
    for (const k of FILTERS) params[k] = q.get(k);
    const page = await ctx.api.get<{ data: AuditEvent[]; nextCursor: string | null }>(`/org/audit${queryString({ ...params, limit: 50, cursor })}`);
    rows.push(...page.data);
    draw();
    replace(
      more,
      page.nextCursor
        ? button("Load more", async (ev) => {
            (ev.currentTarget as HTMLButtonElement).disabled = true;
            try {
              await load(page.nextCursor);
            } catch (err) {
              replace(more, notice("error", errorText(err)));
            }
          })
        : rows.length > 0
          ? h("p", { class: "hint" }, "End of the audit log.")
          : null,
    );
  };

  const filters = form({
    fields: [
      { name: "actorId", label: "Actor id", value: q.get("actorId") ?? "", placeholder: "user, key or CLI user id", match: /^actor/i },
      { name: "targetId", label: "Target id", value: q.get("targetId") ?? "", match: /^target/i },
      { name: "action", label: "Action", value: q.get("action") ?? "", placeholder: "PATCH /v1/secrets/{secretId}", match: /^action/i },
      { name: "since", label: "From", type: "datetime-local", value: toInput(q.get("since")), match: /^since/i },
      { name: "until", label: "To", type: "datetime-local", value: toInput(q.get("until")), match: /^until/i },
    ],
    submitLabel: "Apply filters",
    async onSubmit(v) {
      const next: Record<string, string | null> = {};
      for (const k of FILTERS) {
        const raw = String(v[k] ?? "").trim();
        next[k] = k === "since" || k === "until" ? fromInput(raw) : raw || null;
      }
      ctx.setQuery(next);
      for (const k of [...q.keys()]) q.delete(k);
      for (const [k, val] of Object.entries(next)) if (val) q.set(k, val);
      rows.length = 0;
      await load(null);
    },
  });
  filters.classList.add("filters");
  await load(null);
  return [
    title,
    orgTabs(ctx),
    h("p", { class: "lead" }, "Every change to the organization, newest first. Secret values, keys and passwords are never shown: a change of one reads <redacted>."),
    h("div", { role: "search", "aria-label": "Filter the audit log" }, filters),
    results,
    more,
  ];
};
