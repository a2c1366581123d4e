// Request logs: one row per proxied request, newest first, filtered by agent, host, decision, status and
// time, paged with the API's cursor ("Load more"). The filters live in the URL, so a filtered view is a link.
import { queryString } from "../api.ts";
import { badge, button, empty, errorText, form, formatTime, notice, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageFn } from "../types.ts";
import type { Agent, RequestLogPage } from "../api-types.ts";

const DECISIONS = ["allowed", "blocked", "blocked_by_default_policy", "rate_limited", "approval_pending", "approval_approved", "approval_denied", "approval_expired", "approval_cancelled", "approved_by_memory", "budget_exceeded", "claim_required", "error"];
const FILTERS = ["agentId", "host", "decision", "status", "since", "until"] as const;

const toInput = (iso: string | null) => {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const local = new Date(d.getTime() - d.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
};
const fromInput = (v: string) => (v ? new Date(v).toISOString() : null);

export const logsPage: PageFn = async (ctx) => {
  const agents = await ctx.api.get<Agent[]>("/agents");
  const names = new Map(agents.map((a) => [a.id, a.name]));
  const q = ctx.query;
  const results = h("div");
  const more = h("div", { class: "actions" });
  const rows: any[] = [];

  const draw = () =>
    replace(
      results,
      rows.length === 0
        ? empty("No requests match. Requests appear here a few seconds after an agent sends them through the gateway.")
        : table(
            "Request logs",
            ["Time", "Agent", "Request", "Status", "Decision", "Rule", "Injected", "Latency"],
            rows.map((r) => [
              formatTime(r.createdAt),
              names.get(r.agentId) ?? r.agentId,
              h("code", { class: "wrap" }, `${r.method} ${r.host}${r.path}`),
              String(r.status),
              badge(r.decision, r.decision),
              r.matchedRuleName ?? "—",
              String(r.injectionCount),
              `${r.latencyMs} ms`,
            ]),
          ),
    );

  const load = async (cursor: string | null) => {
    const params: Record<string, string | null> = {};
    for (const k of FILTERS) params[k] = q.get(k);
    const page = await ctx.api.get<RequestLogPage>(`/logs${queryString({ ...params, limit: 50, cursor })}`);
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
          ? h("p", { class: "hint" }, "End of the log.")
          : null,
    );
  };

  const filters = form({
    fields: [
      { name: "agentId", label: "Agent", type: "select", value: q.get("agentId") ?? "", options: [["", "Any agent"], ...agents.map((a): [string, string] => [a.id, a.name])] },
      { name: "host", label: "Host", value: q.get("host") ?? "", placeholder: "api.example.com" },
      { name: "decision", label: "Decision", type: "select", value: q.get("decision") ?? "", options: [["", "Any decision"], ...DECISIONS.map((d): [string, string] => [d, d])] },
      { name: "status", label: "Status", type: "number", value: q.get("status") ?? "", placeholder: "403", match: /^status/i },
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
  return [h("h1", { tabindex: "-1" }, "Logs"), h("div", { role: "search", "aria-label": "Filter the logs" }, filters), results, more];
};
