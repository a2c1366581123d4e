// Overview: the project's counts and a chart of gateway requests over the last 24 hours by decision, built
// from the request logs (GET /v1/logs, paged with the cursor).
import { queryString } from "../api.ts";
import { empty, loading, errorText, notice } from "../components.ts";
import { h, replace, svg } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import type { Counts } from "../api-types.ts";

const GROUPS: [key: string, label: string, test: (d: string) => boolean][] = [
  ["allowed", "Allowed", (d) => d === "allowed" || d === "approval_approved" || d === "approved_by_memory"],
  ["blocked", "Blocked", (d) => d.startsWith("blocked") || d === "approval_denied" || d === "budget_exceeded" || d === "claim_required"],
  ["limited", "Rate limited", (d) => d === "rate_limited"],
  ["pending", "Waiting or expired approval", (d) => d === "approval_pending" || d === "approval_expired" || d === "approval_cancelled"],
  ["error", "Error", (d) => d === "error"],
];
const groupOf = (d: string) => GROUPS.find(([, , t]) => t(d))?.[0] ?? "error";
const HOURS = 24;

async function recentLogs(ctx: PageCtx, since: string): Promise<{ createdAt: string; decision: string }[]> {
  const out = [];
  let cursor: string | null = null;
  for (let page = 0; page < 10; page++) {
    const r: { data: any[]; nextCursor: string | null } = await ctx.api.get(`/logs${queryString({ since, limit: 500, cursor })}`);
    out.push(...r.data);
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  return out;
}

function chart(rows: { createdAt: string; decision: string }[], start: number): HTMLElement {
  const hour = 3600_000;
  const buckets = Array.from({ length: HOURS }, () => new Map<string, number>());
  for (const r of rows) {
    const i = Math.floor((Date.parse(r.createdAt) - start) / hour);
    if (i < 0 || i >= HOURS) continue;
    const g = groupOf(r.decision);
    buckets[i]!.set(g, (buckets[i]!.get(g) ?? 0) + 1);
  }
  const max = Math.max(1, ...buckets.map((b) => [...b.values()].reduce((a, c) => a + c, 0)));
  const W = 720, H = 200, pad = 28, bw = (W - pad) / HOURS;
  const bars = buckets.flatMap((b, i) => {
    let y = H - 20;
    return GROUPS.flatMap(([key, label]) => {
      const n = b.get(key) ?? 0;
      if (!n) return [];
      const hgt = (n / max) * (H - 40);
      y -= hgt;
      const at = new Date(start + i * hour);
      return [svg("rect", { x: pad + i * bw + 1, y, width: Math.max(1, bw - 2), height: hgt, class: `bar ${key}` }, svg("title", null, `${at.getHours()}:00 — ${label}: ${n}`))];
    });
  });
  const ticks = [0, 6, 12, 18, 23].map((i) => svg("text", { x: pad + i * bw, y: H - 4, class: "tick" }, `${new Date(start + i * hour).getHours()}:00`));
  const total = rows.length;
  const summary = GROUPS.map(([key, label]) => `${label}: ${rows.filter((r) => groupOf(r.decision) === key).length}`).join(", ");
  return h(
    "figure",
    { class: "chart" },
    svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `Gateway requests per hour, last 24 hours. ${total} in total. ${summary}.` },
      svg("text", { x: 0, y: 12, class: "tick" }, String(max)),
      svg("line", { x1: pad, x2: W, y1: H - 20, y2: H - 20, class: "axis" }),
      ...bars,
      ...ticks,
    ),
    h("figcaption", null, h("ul", { class: "legend" }, ...GROUPS.map(([key, label]) => h("li", null, h("span", { class: `swatch ${key}`, "aria-hidden": "true" }), label)))),
  );
}

export const overviewPage: PageFn = async (ctx) => {
  const counts = await ctx.api.get<Counts>("/counts");
  const chartBox = h("section", { "aria-labelledby": "chart-h" }, h("h2", { id: "chart-h" }, "Gateway requests, last 24 hours"), loading());
  const start = Math.floor(Date.now() / 3600_000) * 3600_000 - (HOURS - 1) * 3600_000;
  recentLogs(ctx, new Date(start).toISOString())
    .then((rows) =>
      replace(chartBox, h("h2", { id: "chart-h" }, "Gateway requests, last 24 hours"), rows.length === 0 ? empty("No gateway requests yet. ", h("a", { href: ctx.link("/agents") }, "Connect an agent"), " and its requests show up here.") : chart(rows, start)),
    )
    .catch((err) => {
      if ((err as Error).name !== "AbortError") replace(chartBox, notice("error", errorText(err)));
    });
  const stat = (label: string, n: number, rest: string) => h("a", { class: "stat", href: ctx.link(rest) }, h("span", { class: "n" }, String(n)), h("span", { class: "l" }, label));
  return [
    h("h1", { tabindex: "-1" }, ctx.project?.name ?? "Overview"),
    h("div", { class: "stats", role: "list" },
      h("div", { role: "listitem" }, stat("Agents", counts.agents, "/agents")),
      h("div", { role: "listitem" }, stat("Connected apps", counts.apps, "/apps")),
      h("div", { role: "listitem" }, stat("LLM keys", counts.llms, "/secrets")),
      h("div", { role: "listitem" }, stat("Secrets", counts.secrets, "/secrets")),
    ),
    chartBox,
  ];
};
