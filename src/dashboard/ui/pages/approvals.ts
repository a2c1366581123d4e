// Approvals: requests held at the gateway appear here live. The page keeps one long-poll open
// (GET /v1/approvals/pending, excluding what it already shows), so a new request shows up within moments
// without a reload; Approve and Deny release or refuse it, and "Approve for 15 min / 1 h" also lets the same
// agent's later requests under the same rule through without asking until then (remembered approvals, listed
// here with a revoke button: docs/policy.md#remembered-approvals). History comes from the request logs.
import { queryString } from "../api.ts";
import { attempt, badge, button, confirmAction, empty, errorText, formatTime, loading, notice, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import type { ApprovalRequest, PendingApprovals, RememberedApproval, RequestLogPage } from "../api-types.ts";

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((r) => {
  const t = setTimeout(r, ms);
  signal.addEventListener("abort", () => (clearTimeout(t), r()), { once: true });
});

type Remembered = RememberedApproval;

type Decide = (a: ApprovalRequest, decision: "approve" | "deny", rememberMinutes?: number) => void;

function card(a: ApprovalRequest, decide: Decide): HTMLElement {
  const what = `${a.method} ${a.host}${a.path}`;
  return h(
    "article",
    { class: "card approval", "aria-label": `Approval request ${what}` },
    h("h3", null, h("span", { class: "method" }, a.method), " ", h("span", { class: "host" }, a.host), h("span", { class: "path" }, a.path)),
    h("p", { class: "meta" }, `Agent ${a.agent.name} (${a.agent.externalId}) · requested ${formatTime(a.createdAt)} · expires ${formatTime(a.expiresAt)}`),
    a.summary ? h("dl", { class: "details" }, ...a.summary.details.flatMap((d) => [h("dt", null, d.label), h("dd", null, d.value)])) : null,
    a.bodyPreview ? h("details", null, h("summary", null, "Body preview (redacted)"), h("pre", { class: "preview" }, a.bodyPreview)) : null,
    h("details", null, h("summary", null, "Headers"), h("pre", { class: "preview" }, Object.entries(a.headers).map(([k, v]) => `${k}: ${v}`).join("\n"))),
    h(
      "div",
      { class: "actions" },
      button("Approve", () => decide(a, "approve"), { kind: "primary", label: `Approve ${what}` }),
      button("Approve for 15 min", () => decide(a, "approve", 15), { label: `Approve for 15 minutes: ${what} and later ones like it` }),
      button("Approve for 1 h", () => decide(a, "approve", 60), { label: `Approve for 1 hour: ${what} and later ones like it` }),
      button("Deny", () => decide(a, "deny"), { kind: "danger", label: `Deny ${what}` }),
    ),
  );
}

async function history(ctx: PageCtx, where: HTMLElement): Promise<void> {
  try {
    const page = await ctx.api.get<RequestLogPage>(`/logs${queryString({ limit: 200 })}`);
    const rows = page.data.filter((r) => r.approvalId);
    replace(
      where,
      rows.length === 0
        ? empty("No approval decisions yet. Requests held by a rule that requires approval appear above.")
        : table(
            "Approval history",
            ["Time", "Agent", "Request", "Decision", "Status"],
            rows.map((r) => [formatTime(r.createdAt), agentName(ctx, r.agentId), `${r.method} ${r.host}${r.path}`, badge(r.decision.replace("approval_", ""), r.decision), String(r.status)]),
          ),
    );
  } catch (err) {
    if ((err as Error).name !== "AbortError") replace(where, notice("error", errorText(err)));
  }
}

const agentNames = new Map<string, string>();
const agentName = (_ctx: PageCtx, id: string) => agentNames.get(id) ?? id;

const creator = (by: Remembered["createdBy"]) => ("kind" in by ? "an approval link" : (by.email ?? "an API key"));

async function remembered(ctx: PageCtx, where: HTMLElement, status: HTMLElement): Promise<void> {
  const rows = await ctx.api.get<Remembered[]>("/approvals/remembered");
  const revoke = async (r: Remembered) => {
    if (!(await confirmAction("End this remembered approval?", `${agentName(ctx, r.agentId)}'s requests under “${r.ruleName}” wait for a person again from now on.`, "End it"))) return;
    await attempt(status, async () => {
      await ctx.api.send("DELETE", `/approvals/remembered/${r.id}`);
      replace(status, notice("success", "Ended: those requests are held for approval again."));
      await remembered(ctx, where, status);
    });
  };
  replace(
    where,
    rows.length === 0
      ? empty("None. “Approve for 15 min” or “Approve for 1 h” lets an agent's later requests under the same rule through without asking, until then.")
      : table(
          "Remembered approvals",
          ["Agent", "Rule", "Until", "Approved by", "Actions"],
          rows.map((r) => [agentName(ctx, r.agentId), r.ruleName, formatTime(r.expiresAt), creator(r.createdBy), button("End now", () => revoke(r), { kind: "danger", label: `End the remembered approval of ${agentName(ctx, r.agentId)} under ${r.ruleName}` })]),
        ),
  );
}

export const approvalsPage: PageFn = async (ctx) => {
  for (const a of await ctx.api.get<any[]>("/agents")) agentNames.set(a.id, a.name);
  const shown = new Map<string, ApprovalRequest>();
  const list = h("div", { class: "approvals", "aria-live": "polite" }, loading("Waiting for requests…"));
  const status = h("div");
  const historyBox = h("div", null, loading());
  const rememberedBox = h("div", null, loading());
  const showRemembered = () => remembered(ctx, rememberedBox, status).catch((err) => replace(rememberedBox, notice("error", errorText(err))));

  const draw = () => {
    const now = Date.now();
    for (const [id, a] of shown) if (Date.parse(a.expiresAt) < now) shown.delete(id);
    replace(list, shown.size === 0 ? empty("No requests are waiting. When an agent's request needs approval it appears here at once.") : [...shown.values()].map((a) => card(a, decide)));
  };

  const decide: Decide = async (a, decision, rememberMinutes) => {
    replace(status);
    try {
      const remember = rememberMinutes === undefined ? {} : { remember: { minutes: rememberMinutes } };
      const res = await ctx.api.send<{ rememberedUntil?: string | null }>("POST", `/approvals/${a.id}/decision`, { decision, ...remember });
      const until = res.rememberedUntil ? ` Later requests like it pass without asking until ${formatTime(res.rememberedUntil)}.` : "";
      replace(status, notice("success", `${decision === "approve" ? "Approved" : "Denied"}: ${a.method} ${a.host}${a.path}.${until}`));
      if (res.rememberedUntil) void showRemembered();
    } catch (err) {
      const gone = (err as { status?: number }).status === 410 || (err as { status?: number }).status === 404;
      replace(status, notice("error", gone ? "This request was already decided or has expired." : errorText(err)));
      if (!gone) return;
    }
    shown.delete(a.id);
    draw();
    setTimeout(() => void history(ctx, historyBox), 5500); // request logs are written in batches
  };

  // Two calls per round: without `exclude` to resync with what is still pending (it holds only when nothing
  // is), then with `exclude` to wait for anything new.
  const poll = async () => {
    let first = true;
    while (!ctx.signal.aborted) {
      try {
        const all = await ctx.api.get<PendingApprovals>("/approvals/pending");
        shown.clear();
        for (const a of all.requests) shown.set(a.id, a);
        draw();
        if (first) first = false;
        const fresh = await ctx.api.get<PendingApprovals>(`/approvals/pending${queryString({ exclude: [...shown.keys()].join(",") })}`);
        for (const a of fresh.requests) shown.set(a.id, a);
        draw();
      } catch (err) {
        if (ctx.signal.aborted || (err as Error).name === "AbortError") return;
        replace(status, notice("error", `Live updates paused: ${errorText(err)} Retrying…`));
        await sleep(3000, ctx.signal);
      }
    }
  };
  // The first poll answers at once when anything is pending, so the empty state is right until it does.
  draw();
  void poll();
  void history(ctx, historyBox);
  void showRemembered();
  return [
    h("h1", { tabindex: "-1" }, "Approvals"),
    h("p", { class: "lead" }, "Requests held at the gateway by a rule that requires approval. The agent waits until you decide or the request expires."),
    status,
    h("section", { "aria-labelledby": "pending-h" }, h("h2", { id: "pending-h" }, "Pending"), list),
    h("section", { "aria-labelledby": "remembered-h" }, h("h2", { id: "remembered-h" }, "Remembered approvals"), rememberedBox),
    h("section", { "aria-labelledby": "history-h" }, h("h2", { id: "history-h" }, "History"), historyBox),
  ];
};
