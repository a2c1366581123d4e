// Budgets and spend (docs/budgets.md#budgets-for-every-scope, docs/budgets.md#spend-report): the project's
// budgets and its agents' (`/budgets`), or the organization's own (`/org/budgets`), each with its spend in the
// current window against the limit and when the window resets; admins create, edit and delete them. Below, the
// spend of a chosen range: a chart per day (inline SVG) and the totals per agent and model (per project and
// model for the organization).
import { queryString } from "../api.ts";
import { attempt, badge, button, confirmAction, empty, errorText, form, formatTime, loading, notice, openDialog, spendBar, table } from "../components.ts";
import { h, replace, svg } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import type { Agent, Budget, SpendReport } from "../api-types.ts";
import { isAdmin, orgTabs } from "./orgTabs.ts";

const PERIODS: [string, string][] = [
  ["day", "Daily"],
  ["week", "Weekly (from Monday)"],
  ["month", "Monthly"],
  ["total", "Total (never resets)"],
];
const TYPES: [string, string][] = [
  ["", "Both LLM key types"],
  ["llm_a", "llm_a (Anthropic-style)"],
  ["llm_b", "llm_b (OpenAI-style)"],
];
const periodLabel = (p: string) => PERIODS.find(([k]) => k === p)?.[1].replace(/ \(.*\)$/, "") ?? p;
const typeLabel = (t: string | null) => TYPES.find(([k]) => k === (t ?? ""))?.[1] ?? String(t);
const usd = (amount: number) => `$${amount.toFixed(amount !== 0 && amount < 0.01 ? 4 : 2)}`;

/** "80, 100" → [80, 100]; anything that is not a list of integers is sent as is for the API to refuse. */
function percents(text: string): unknown {
  const parts = text.split(/[\s,%]+/).filter(Boolean);
  return parts.every((p) => /^\d+$/.test(p)) ? parts.map(Number) : text;
}

/** Dollars as typed ("5", "5.50", "$12") → cents; NaN when it is not an amount (the API names the field). */
function cents(text: string): number {
  const m = /^\s*\$?\s*(\d+)(?:\.(\d{1,2}))?\s*$/.exec(text);
  return m ? Number(m[1]) * 100 + Number((m[2] ?? "").padEnd(2, "0")) : Number.NaN;
}

interface Scope {
  /** `/budgets` or `/org/budgets`. */
  base: string;
  spend: string;
  org: boolean;
  canEdit: boolean;
}

function budgetsView(ctx: PageCtx, scope: Scope): HTMLElement[] {
  const status = h("div");
  const list = h("div", null, loading());
  let agents: Agent[] = [];
  const agentName = (id: string | null) => agents.find((a) => a.id === id)?.name ?? id ?? "";

  const load = async () => {
    if (!scope.org) agents = await ctx.api.get<Agent[]>("/agents");
    const budgets = await ctx.api.get<Budget[]>(scope.base);
    const whose = (b: Budget) => (b.scope === "agent" ? `Agent ${agentName(b.agentId)}` : b.scope === "project" ? "Project" : "Organization");
    replace(
      list,
      budgets.length === 0
        ? empty(
            scope.org ? "No organization budget yet: the spend of all projects together is not limited." : "No budgets yet: agents may spend without limit. Cap an agent, or the whole project, per day, week, month or in total.",
            scope.canEdit ? [" ", button("Add budget", openCreate, { kind: "primary" })] : null,
          )
        : [
            table(
              scope.org ? "Budgets of the organization" : "Budgets of the project and its agents",
              ["Applies to", "Key type", "Period", "Spent", "Resets", "Alerts at", ...(scope.canEdit ? ["Actions"] : [])],
              budgets.map((b) => [
                whose(b),
                typeLabel(b.secretType),
                periodLabel(b.period),
                spendBar(`Spend of the ${periodLabel(b.period).toLowerCase()} budget of ${whose(b)}`, b.spentCents, b.limitCents),
                b.resetsAt ? formatTime(b.resetsAt) : badge("never"),
                b.alertPercents.length ? b.alertPercents.map((p) => `${p} %`).join(", ") : "—",
                ...(scope.canEdit
                  ? [
                      h(
                        "div",
                        { class: "row-actions" },
                        button("Edit", () => openEdit(b, whose(b)), { label: `Edit the ${periodLabel(b.period).toLowerCase()} budget of ${whose(b)}` }),
                        button("Delete", () => remove(b, whose(b)), { kind: "danger", label: `Delete the ${periodLabel(b.period).toLowerCase()} budget of ${whose(b)}` }),
                      ),
                    ]
                  : []),
              ]),
            ),
            scope.canEdit ? h("div", { class: "actions" }, button("Add budget", openCreate, { kind: "primary" })) : null,
          ],
    );
  };

  const remove = async (b: Budget, whose: string) => {
    if (!(await confirmAction("Delete this budget?", `${whose}'s ${periodLabel(b.period).toLowerCase()} budget stops limiting spend at once.`, "Delete budget"))) return;
    await attempt(status, async () => {
      await ctx.api.send("DELETE", `${scope.base}/${b.id}`);
      await load();
      replace(status, notice("success", "Budget deleted."));
    });
  };

  const limitField = (value: string) => ({ name: "limit", label: "Limit (USD)", required: true, value, placeholder: "5.00", hint: "Requests are refused once the window's spend, with what is in flight, would pass it.", match: /^limitCents/i });
  const alertField = (value: string) => ({ name: "alerts", label: "Alert at (% of the limit)", value, hint: "budget.threshold notifications go to the notification channels; a refusal reports 100 %.", match: /^alertPercents/i });

  function openEdit(b: Budget, whose: string): void {
    openDialog(`Edit ${whose}'s ${periodLabel(b.period).toLowerCase()} budget`, (close) =>
      form({
        fields: [limitField((b.limitCents / 100).toFixed(2)), alertField(b.alertPercents.join(", "))],
        submitLabel: "Save",
        onCancel: close,
        async onSubmit(v) {
          await ctx.api.send("PATCH", `${scope.base}/${b.id}`, { limitCents: cents(String(v.limit)), alertPercents: percents(String(v.alerts)) });
          close();
          await load();
          replace(status, notice("success", "Budget saved."));
        },
      }),
    );
  }

  function openCreate(): void {
    openDialog("Add a budget", (close) =>
      form({
        fields: [
          ...(scope.org
            ? []
            : [
                {
                  name: "scope",
                  label: "Applies to",
                  type: "select" as const,
                  value: "project",
                  options: [
                    ["project", "The whole project"],
                    ["agent", "One agent"],
                  ] as [string, string][],
                },
                { name: "agentId", label: "Agent", type: "select" as const, options: agents.map((a) => [a.id, a.name] as [string, string]), when: (v: Record<string, string | boolean>) => v.scope === "agent", match: /^agent/i },
              ]),
          { name: "period", label: "Period", type: "select", value: "day", options: PERIODS, match: /^period/i },
          { name: "secretType", label: "Key type", type: "select", value: "", options: TYPES, match: /^secretType/i },
          limitField(""),
          alertField("80, 100"),
        ],
        submitLabel: "Add budget",
        onCancel: close,
        async onSubmit(v) {
          await ctx.api.send("POST", scope.base, {
            ...(scope.org ? {} : { scope: v.scope }),
            ...(v.scope === "agent" ? { agentId: v.agentId } : {}),
            period: v.period,
            secretType: v.secretType || null,
            limitCents: cents(String(v.limit)),
            alertPercents: percents(String(v.alerts)),
          });
          close();
          await load();
          replace(status, notice("success", "Budget added."));
        },
      }),
    );
  }

  void load().catch((err) => replace(list, notice("error", errorText(err))));
  return [status, h("section", { "aria-labelledby": "budgets-h" }, h("h2", { id: "budgets-h" }, "Budgets"), list)];
}

const DAY = 86_400_000;

/** The ranges the spend section offers: [since, until) in UTC, or the API's default (this month). */
function rangeOf(key: string, now = Date.now()): { since?: string; until?: string; days: [number, number] } {
  const d = new Date(now);
  const monthStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  if (key === "last-month") {
    const since = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1);
    return { since: new Date(since).toISOString(), until: new Date(monthStart).toISOString(), days: [since, monthStart] };
  }
  if (key === "30d") {
    const until = Math.floor(now / DAY) * DAY + DAY;
    return { since: new Date(until - 30 * DAY).toISOString(), until: new Date(until).toISOString(), days: [until - 30 * DAY, until] };
  }
  return { days: [monthStart, Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)] };
}

/** Spend per UTC day as bars (one per day of the range, empty days included). */
function spendChart(report: SpendReport, [from, to]: [number, number]): HTMLElement {
  const byDay = new Map(report.data.map((r) => [r.key, r]));
  const days: { key: string; cost: number; requests: number }[] = [];
  for (let t = from; t < to; t += DAY) {
    const key = new Date(t).toISOString().slice(0, 10);
    days.push({ key, cost: byDay.get(key)?.costUsd ?? 0, requests: byDay.get(key)?.requests ?? 0 });
  }
  const max = Math.max(...days.map((d) => d.cost), 0);
  const W = 720, H = 200, pad = 44, bw = (W - pad) / Math.max(1, days.length);
  const bars = days.flatMap((d, i) => {
    if (d.cost <= 0) return [];
    const hgt = Math.max(1, (d.cost / max) * (H - 40));
    return [svg("rect", { x: pad + i * bw + 1, y: H - 20 - hgt, width: Math.max(1, bw - 2), height: hgt, class: "bar spent" }, svg("title", null, `${d.key}: ${usd(d.cost)}, ${d.requests} requests`))];
  });
  const step = Math.max(1, Math.ceil(days.length / 8));
  const ticks = days.flatMap((d, i) => (i % step === 0 ? [svg("text", { x: pad + i * bw, y: H - 4, class: "tick" }, d.key.slice(5))] : []));
  const busiest = days.reduce((a, d) => (d.cost > a.cost ? d : a), days[0]!);
  return h(
    "figure",
    { class: "chart" },
    svg(
      "svg",
      { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `LLM spend per day (UTC), ${days[0]!.key} to ${days[days.length - 1]!.key}: ${usd(report.totalUsd)} in total${max > 0 ? `; the most on ${busiest.key}, ${usd(busiest.cost)}` : ""}.` },
      svg("text", { x: 0, y: 12, class: "tick" }, usd(max)),
      svg("line", { x1: pad, x2: W, y1: H - 20, y2: H - 20, class: "axis" }),
      ...bars,
      ...ticks,
    ),
    h("figcaption", { class: "hint" }, `Total ${usd(report.totalUsd)}. Each bar is one UTC day; hover a bar for its figures.`),
  );
}

function spendView(ctx: PageCtx, scope: Scope): HTMLElement {
  const box = h("div", null, loading());
  const rangeSelect = h(
    "select",
    { id: "spend-range" },
    h("option", { value: "month", selected: true }, "This month"),
    h("option", { value: "last-month" }, "Last month"),
    h("option", { value: "30d" }, "Last 30 days"),
  );
  const groupTable = (caption: string, what: string, report: SpendReport | null, name: (key: string) => string) =>
    !report || report.data.length === 0
      ? null
      : [h("h3", null, caption), table(caption, [what, "Requests", "Input tokens", "Output tokens", "Cost"], report.data.map((r) => [name(r.key), String(r.requests), r.inputTokens.toLocaleString(), r.outputTokens.toLocaleString(), usd(r.costUsd)]))];

  const load = async () => {
    const range = rangeOf(rangeSelect.value);
    const q = (groupBy: string) => `${scope.spend}${queryString({ groupBy, since: range.since, until: range.until })}`;
    // The organization's spend is told per project (its agents live in the projects' own pages).
    const [days, byAgent, byModel, byProject, agents] = await Promise.all([
      ctx.api.get<SpendReport>(q("day")),
      scope.org ? null : ctx.api.get<SpendReport>(q("agent")),
      ctx.api.get<SpendReport>(q("model")),
      scope.org ? ctx.api.get<SpendReport>(q("project")) : null,
      scope.org ? ([] as Agent[]) : ctx.api.get<Agent[]>("/agents"),
    ]);
    const projects = ctx.session?.projects ?? [];
    const agentName = (id: string) => agents.find((a) => a.id === id)?.name ?? id;
    const projectName = (id: string) => projects.find((p) => p.id === id)?.name ?? id;
    replace(
      box,
      days.data.length === 0
        ? empty("No metered LLM spend in this range. Requests of agents through credgate with an LLM key appear here within seconds.")
        : [
            spendChart(days, range.days),
            groupTable("Spend per project", "Project", byProject, projectName),
            groupTable("Spend per agent", "Agent", byAgent, agentName),
            groupTable("Spend per model", "Model (as reported)", byModel, (k) => k),
          ],
    );
  };
  rangeSelect.addEventListener("change", () => void load().catch((err) => replace(box, notice("error", errorText(err)))));
  void load().catch((err) => replace(box, notice("error", errorText(err))));
  return h(
    "section",
    { "aria-labelledby": "spend-h" },
    h("h2", { id: "spend-h" }, "Spend"),
    h("div", { class: "field inline" }, h("label", { for: "spend-range" }, "Range"), rangeSelect),
    box,
  );
}

const LEAD = "Cap what agents spend on LLM calls per day, week, month or in total. A request that would pass a budget is refused before it leaves, with a message the agent understands.";

export const budgetsPage: PageFn = (ctx) => {
  const scope: Scope = { base: "/budgets", spend: "/spend", org: false, canEdit: isAdmin(ctx) };
  return [
    h("h1", { tabindex: "-1" }, "Budgets"),
    h("p", { class: "lead" }, LEAD),
    scope.canEdit ? null : notice("info", "Only organization admins and owners change budgets."),
    ...budgetsView(ctx, scope),
    spendView(ctx, scope),
  ];
};

export const orgBudgetsPage: PageFn = (ctx) => {
  if (!isAdmin(ctx)) return [h("h1", { tabindex: "-1" }, "Organization budgets"), orgTabs(ctx), notice("info", "Only organization admins and owners manage the organization.")];
  const scope: Scope = { base: "/org/budgets", spend: "/org/spend", org: true, canEdit: true };
  return [
    h("h1", { tabindex: "-1" }, "Organization budgets"),
    orgTabs(ctx),
    h("p", { class: "lead" }, `${LEAD} An organization budget counts the spend of every project together; projects and agents have their own budgets on their Budgets page.`),
    ...budgetsView(ctx, scope),
    spendView(ctx, scope),
  ];
};
