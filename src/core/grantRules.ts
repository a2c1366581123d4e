// Grants compiled to managed project-scope rules (docs/policy.md#managed-rules), evaluated after the custom
// rules: a secret grant → one allow rule; a `full` connection grant → one allow rule on the connection; a
// `custom` one → allow on its `allow` tools, allow + approval on its `ask` tools, block on everything else.
import type { RuleInput } from "./policy.ts";

export interface GrantAgent {
  id: string;
  name: string;
}

export interface SecretGrantRef {
  secretId: string;
  name: string;
}

export interface ConnectionGrantRef {
  connectionId: string;
  /** The connection's label, or its provider when it has none. */
  display: string;
  access: "full" | "custom";
  allow: string[];
  ask: string[];
}

function managed(agent: GrantAgent, key: string, name: string, fields: Pick<RuleInput, "action" | "requireApproval" | "targets">): RuleInput {
  const id = `grant:${agent.id}:${key}`;
  return {
    id,
    logicalId: id,
    scope: "project",
    name,
    enabled: true,
    isDefault: false,
    source: "grant",
    rateLimit: null,
    rateLimitWindow: null,
    conditions: null,
    identities: [{ id: agent.id }],
    ...fields,
  };
}

export function secretGrantRule(agent: GrantAgent, g: SecretGrantRef): RuleInput {
  return managed(agent, g.secretId, `Grant: ${agent.name} · ${g.name}`, { action: "allow", requireApproval: false, targets: [{ kind: "secret", secretId: g.secretId }] });
}

export function connectionGrantRules(agent: GrantAgent, g: ConnectionGrantRef): RuleInput[] {
  const base = `Grant: ${agent.name} · ${g.display}`;
  const on = (tools: string[]) => [{ kind: "connection" as const, connectionId: g.connectionId, tools }];
  if (g.access === "full") return [managed(agent, g.connectionId, base, { action: "allow", requireApproval: false, targets: on([]) })];
  const rules: RuleInput[] = [];
  if (g.allow.length > 0) rules.push(managed(agent, `${g.connectionId}:allow`, `${base} — allowed`, { action: "allow", requireApproval: false, targets: on(g.allow) }));
  if (g.ask.length > 0) rules.push(managed(agent, `${g.connectionId}:ask`, `${base} — needs approval`, { action: "allow", requireApproval: true, targets: on(g.ask) }));
  rules.push(managed(agent, `${g.connectionId}:rest`, `${base} — everything else`, { action: "block", requireApproval: false, targets: on([]) }));
  return rules;
}

/** Every grant of an agent as managed rules: secrets first, then connections, each in grant order. */
export function grantSetRules(agent: GrantAgent, grants: { secrets: SecretGrantRef[]; connections: (Omit<ConnectionGrantRef, "display"> & { label: string | null; provider: string })[] }): RuleInput[] {
  const out: RuleInput[] = [];
  for (const g of grants.secrets) out.push(secretGrantRule(agent, g));
  for (const g of grants.connections) out.push(...connectionGrantRules(agent, { ...g, display: g.label ?? g.provider }));
  return out;
}
