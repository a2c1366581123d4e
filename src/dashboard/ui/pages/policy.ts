// Policy rules (project `/policy`, organization `/org/policy`): the draft list in evaluation order, create and
// edit (targets, agents, rate limit, approval, body conditions), reorder, and publish after reviewing what
// changes against the published generation. Only published rules are enforced.
import { attempt, badge, button, confirmAction, empty, errorText, form, formatTime, notice, openDialog, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import { loadTargetChoices, targetFields, targetsFrom, targetText, type Target } from "./policyTargets.ts";
import type { Agent, LastPublish, PolicyRule, PublishResult } from "../api-types.ts";

function describe(r: PolicyRule): string {
  const mods = [r.requireApproval ? "needs approval" : "", r.rateLimit ? `${r.rateLimit} per ${r.rateLimitWindow}` : "", r.enabled ? "" : "disabled"].filter(Boolean);
  return `${r.action}${mods.length ? ` (${mods.join(", ")})` : ""}`;
}

/** What publishing would change: rules added, removed or edited since the published generation. */
function diff(draft: PolicyRule[], published: PolicyRule[], draftDefault: PolicyRule, publishedDefault: PolicyRule): HTMLElement {
  const key = (r: PolicyRule) => JSON.stringify([r.name, r.description, r.enabled, r.action, r.rateLimit, r.rateLimitWindow, r.requireApproval, r.conditions, r.identities, r.targets, r.priority]);
  const before = new Map(published.map((r) => [r.logicalId, r]));
  const after = new Map(draft.map((r) => [r.logicalId, r]));
  const items: HTMLElement[] = [];
  for (const r of draft) {
    const old = before.get(r.logicalId);
    if (!old) items.push(h("li", { class: "added" }, "Added: ", h("strong", null, r.name), ` — ${describe(r)}`));
    else if (key(old) !== key(r)) items.push(h("li", { class: "changed" }, "Changed: ", h("strong", null, r.name), ` — ${describe(old)} → ${describe(r)}`));
  }
  for (const r of published) if (!after.has(r.logicalId)) items.push(h("li", { class: "removed" }, "Removed: ", h("strong", null, r.name)));
  if (draftDefault.action !== publishedDefault.action) items.push(h("li", { class: "changed" }, `Default rule: ${publishedDefault.action} → ${draftDefault.action}`));
  return items.length ? h("ul", { class: "diff" }, ...items) : h("p", null, "No changes since the last publish; publishing creates a new generation with the same rules.");
}

export async function policyView(ctx: PageCtx, base: "/policy" | "/org/policy"): Promise<HTMLElement[]> {
  const status = h("div");
  const list = h("div");
  const last = h("p", { class: "meta" });
  const [agents, choices] = await Promise.all([
    base === "/policy" ? ctx.api.get<Agent[]>("/agents") : Promise.resolve([]),
    loadTargetChoices(ctx, base === "/policy" ? "project" : "organization"),
  ]);
  const agentName = (id: string) => agents.find((a) => a.id === id)?.name ?? id;
  let rules: PolicyRule[] = [];
  let defaultRule: PolicyRule;

  const load = async () => {
    [rules, defaultRule] = await Promise.all([ctx.api.get<PolicyRule[]>(`${base}/rules`), ctx.api.get<PolicyRule>(`${base}/default`)]);
    const lp = await ctx.api.get<LastPublish>(`${base}/last-publish`);
    replace(last, lp ? `Last published: generation ${lp.generation}, ${lp.ruleCount} rules, ${formatTime(lp.appliedAt)}${lp.appliedBy ? ` by ${lp.appliedBy.email}` : ""}.` : "Not published yet: no custom rule is enforced.");
    const defaultSelect = h("select", { id: "default-action", "aria-label": "Default rule action" }, h("option", { value: "allow", selected: defaultRule.action === "allow" }, "Allow"), h("option", { value: "block", selected: defaultRule.action === "block" }, "Block"));
    defaultSelect.addEventListener("change", () => void attempt(status, async () => {
      await ctx.api.send("PATCH", `${base}/default`, { action: defaultSelect.value });
      replace(status, notice("info", "Default rule changed in the draft. Publish to apply it."));
    }));
    replace(
      list,
      rules.length === 0
        ? empty("No rules yet. Without rules every request is allowed; add a rule to block a host, require approval or rate-limit.")
        : table(
            "Draft rules in evaluation order",
            ["Order", "Name", "Action", "Targets", "Agents", "Actions"],
            rules.map((r, i) => [
              String(i + 1),
              h("span", null, r.name, r.enabled ? null : [" ", badge("disabled")]),
              badge(describe(r), r.action),
              r.targets.map((t) => targetText(t, choices)).join("; "),
              r.identities.length ? r.identities.map((x) => agentName(x.id)).join(", ") : "All agents",
              h(
                "div",
                { class: "row-actions" },
                button("↑", () => move(i, -1), { label: `Move ${r.name} up`, disabled: i === 0 }),
                button("↓", () => move(i, 1), { label: `Move ${r.name} down`, disabled: i === rules.length - 1 }),
                button("Edit", () => edit(r), { label: `Edit ${r.name}` }),
                button("Delete", () => remove(r), { kind: "danger", label: `Delete ${r.name}` }),
              ),
            ]),
          ),
      h("div", { class: "field inline" }, h("label", { for: "default-action" }, "Default rule (requests no rule matches)"), defaultSelect),
    );
  };

  const move = (i: number, by: number) =>
    attempt(status, async () => {
      const ids = rules.map((r) => r.id);
      [ids[i], ids[i + by]] = [ids[i + by]!, ids[i]!];
      await ctx.api.send("PUT", `${base}/rules/order`, { orderedIds: ids });
      await load();
    });

  const remove = async (r: PolicyRule) => {
    if (!(await confirmAction(`Delete ${r.name}?`, "The rule leaves the draft; it stops applying at the next publish.", "Delete rule"))) return;
    await attempt(status, async () => {
      await ctx.api.send("DELETE", `${base}/rules/${r.id}`);
      await load();
    });
  };

  const edit = (r?: PolicyRule) => {
    openDialog(r ? `Edit ${r.name}` : "Add rule", (close) =>
      form({
        fields: [
          { name: "name", label: "Name", value: r?.name ?? "", required: true, match: /^name /i },
          { name: "description", label: "Description", value: r?.description ?? "", match: /^description/i },
          { name: "action", label: "Action", type: "select", value: r?.action ?? "block", options: [["block", "Block"], ["allow", "Allow"]], match: /modifiers require/i },
          { name: "requireApproval", label: "Require approval", type: "checkbox", value: r?.requireApproval ?? false, when: (v) => v.action === "allow" },
          { name: "rateLimit", label: "Rate limit (requests)", type: "number", value: r?.rateLimit ? String(r.rateLimit) : "", when: (v) => v.action === "allow", match: /rateLimit/ },
          { name: "rateLimitWindow", label: "Per", type: "select", value: r?.rateLimitWindow ?? "minute", options: [["minute", "Minute"], ["hour", "Hour"], ["day", "Day"]], when: (v) => v.action === "allow" },
          ...targetFields(choices, r?.targets ?? []),
          ...(base === "/policy"
            ? [{ name: "agents", label: "Agents (none chosen: all)", type: "select" as const, multiple: true, options: agents.map((a): [string, string] => [a.id, a.name]), values: (r?.identities ?? []).map((x) => x.id) }]
            : []),
          { name: "conditions", label: "Only when the body contains", type: "textarea", value: (r?.conditions ?? []).map((c) => c.value).join("\n"), hint: "One value per line; all must appear (case-insensitive).", match: /conditions/i },
          { name: "enabled", label: "Enabled", type: "checkbox", value: r?.enabled ?? true },
        ],
        submitLabel: r ? "Save rule" : "Add rule",
        onCancel: close,
        async onSubmit(v) {
          const allow = v.action === "allow";
          const limit = allow && String(v.rateLimit).trim() ? Number(v.rateLimit) : null;
          const identities = base === "/policy" ? String(v.agents ?? "").split("\n").filter(Boolean).map((id) => ({ type: "agent", id })) : (r?.identities ?? []);
          const conditions = String(v.conditions ?? "").split("\n").map((x) => x.trim()).filter(Boolean).map((value) => ({ target: "body", operator: "contains", value }));
          const body = {
            name: String(v.name).trim(),
            description: String(v.description ?? "").trim() || null,
            action: v.action,
            enabled: v.enabled === true,
            requireApproval: allow && v.requireApproval === true,
            rateLimit: limit,
            rateLimitWindow: limit ? v.rateLimitWindow : null,
            targets: targetsFrom(v, r?.targets ?? []),
            identities,
            conditions: conditions.length ? conditions : null,
          };
          if (r) await ctx.api.send("PATCH", `${base}/rules/${r.id}`, body);
          else await ctx.api.send("POST", `${base}/rules`, { ...body, description: body.description ?? undefined, rateLimit: body.rateLimit ?? undefined, rateLimitWindow: body.rateLimitWindow ?? undefined, conditions: body.conditions ?? undefined });
          close();
          replace(status, notice("info", `${r ? "Saved" : "Added"} ${body.name} in the draft. Publish to enforce it.`));
          await load();
        },
      }),
    );
  };

  const publish = () =>
    attempt(status, async () => {
      const [published, publishedDefault] = await Promise.all([ctx.api.get<PolicyRule[]>(`${base}/rules?status=published`), ctx.api.get<PolicyRule>(`${base}/default?status=published`)]);
      openDialog("Publish policy", (close) => [
        h("p", null, "These changes take effect at the gateway as soon as you publish:"),
        diff(rules, published, defaultRule, publishedDefault),
        h(
          "div",
          { class: "actions" },
          button("Publish", () =>
            attempt(status, async () => {
              const r = await ctx.api.send<PublishResult>("POST", `${base}/publish`);
              close();
              replace(status, notice("success", `Published generation ${r.generation} (${r.ruleCount} rules).`));
              await load();
            }), { kind: "primary" }),
          button("Cancel", close),
        ),
      ]);
    });

  await load();
  return [
    status,
    last,
    h("div", { class: "toolbar" }, button("Add rule", () => edit(), { kind: "primary" }), button("Review and publish", publish)),
    list,
  ];
}

export const policyPage: PageFn = async (ctx) => {
  try {
    return [
      h("h1", { tabindex: "-1" }, "Policy"),
      h("p", { class: "lead" }, "Rules are evaluated top to bottom; the first match decides. Edits stay in the draft until you publish."),
      ...(await policyView(ctx, "/policy")),
    ];
  } catch (err) {
    return [h("h1", { tabindex: "-1" }, "Policy"), notice("error", errorText(err))];
  }
};
