// What an agent really receives (GET /agents/{id}/effective-credentials): each secret and connection with
// its status after grants and published policy, so a person sees at a glance why a credential is missing.
import { badge, empty, table } from "../components.ts";
import { h } from "../h.ts";
import type { PageCtx } from "../types.ts";
import type { EffectiveCredentials } from "../api-types.ts";

type Status = EffectiveCredentials["secrets"][number]["status"];

const STATUS: Record<Status, [text: string, kind: string]> = {
  usable: ["usable", "connected"],
  limited: ["limited by policy", "warn"],
  blocked: ["blocked by policy", "blocked"],
  not_granted: ["not granted", ""],
};

const statusBadge = (s: Status) => badge(...STATUS[s]);

export async function effectiveCredentials(ctx: PageCtx, agentId: string): Promise<HTMLElement> {
  const e = await ctx.api.get<EffectiveCredentials>(`/agents/${agentId}/effective-credentials`);
  const rows = [
    ...e.secrets.map((s) => [s.name, "Secret", h("code", null, s.hostPattern), s.scope, statusBadge(s.status)]),
    ...e.connections.map((c) => [c.label ?? c.provider, `Connection (${c.provider})`, c.access === "custom" ? "Chosen tools" : c.access === "full" ? "Every tool" : "—", c.scope, statusBadge(c.status)]),
  ];
  return h(
    "div",
    null,
    h("h3", null, "What this agent receives"),
    rows.length === 0 ? empty("No secrets or connections apply to this project yet.") : table("Effective credentials", ["Credential", "Kind", "Host or access", "Scope", "Status"], rows),
  );
}
