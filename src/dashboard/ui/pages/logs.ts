// Request logs: one row per proxied request, newest first, filtered by agent, host, decision, status and
// time, paged with the API's cursor ("Load more"). The filters live in the URL, so a filtered view is a link.
import { badge, empty, form, formatTime, table } from "../components.ts";
import { filteredList, toInput } from "../filteredList.ts";
import { h, replace } from "../h.ts";
import type { PageFn } from "../types.ts";
import type { Agent, RequestLog } from "../api-types.ts";

const DECISIONS = ["allowed", "blocked", "blocked_by_default_policy", "rate_limited", "approval_pending", "approval_approved", "approval_denied", "approval_expired", "approval_cancelled", "approved_by_memory", "budget_exceeded", "claim_required", "error"];
const FILTERS = ["agentId", "host", "decision", "status", "since", "until"] as const;

export const logsPage: PageFn = async (ctx) => {
  const agents = await ctx.api.get<Agent[]>("/agents");
  const names = new Map(agents.map((a) => [a.id, a.name]));
  const q = ctx.query;
  const results = h("div");
  const rows: RequestLog[] = [];

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

  const list = filteredList<RequestLog>(ctx, { path: "/logs", filters: FILTERS, rows, draw, endText: "End of the log." });

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
    onSubmit: (v) => list.apply(v),
  });
  filters.classList.add("filters");
  await list.reload();
  return [h("h1", { tabindex: "-1" }, "Logs"), h("div", { role: "search", "aria-label": "Filter the logs" }, filters), results, list.more];
};
