// The rules that bear on one agent's traffic, per scope in evaluation order (docs/policy.md#evaluation): managed
// blocklist rules → published custom rules → managed grant rules (project only); plus each scope's Default
// Rule. Used by the gateway snapshot and by the API reads that explain a decision, so both agree.
import { compiledApp } from "../apps/match.ts";
import { grantSetRules } from "../core/grantRules.ts";
import type { HostMatcher, PathMatcher } from "../core/patterns.ts";
import { compileRule, type CompiledRule, type RuleInput, type TargetResolver } from "../core/policy.ts";
import type { BlocklistService } from "./blocklist.ts";
import type { ConnectionService } from "./connections.ts";
import type { GrantService } from "./grants.ts";
import type { PolicyService } from "./policy.ts";
import type { SecretService } from "./secrets.ts";

export interface ScopeRules {
  ordered: RuleInput[];
  fallback: RuleInput | null;
}

export interface AgentRules {
  organization: ScopeRules;
  project: ScopeRules;
}

export interface RulesAgent {
  id: string;
  name: string;
  projectId: string;
  organizationId: string;
}

export async function agentRules(
  services: { policy: PolicyService; blocklist: BlocklistService; grants: GrantService; connections: ConnectionService; secrets: SecretService },
  organizationId: string,
  projectId: string | null,
  agent: RulesAgent | null,
): Promise<AgentRules> {
  const published = await services.policy.publishedForOrganization(organizationId);
  const blocklist = await services.blocklist.managedRules(organizationId, projectId);
  const applies = (r: RuleInput) => r.enabled && (agent === null ? r.identities.length === 0 : r.identities.length === 0 || r.identities.some((i) => i.id === agent.id));
  const split = (rows: RuleInput[], managedFirst: RuleInput[], managedLast: RuleInput[]): ScopeRules => ({
    ordered: [...managedFirst, ...rows.filter((r) => !r.isDefault && applies(r)), ...managedLast],
    fallback: rows.find((r) => r.isDefault) ?? null,
  });
  const grantRules = agent ? await agentGrantRules(services, agent) : [];
  return {
    organization: split(published.organization, blocklist.organization, []),
    project: split(projectId ? (published.projects.get(projectId) ?? []) : [], blocklist.project, grantRules),
  };
}

/** Every grant of the agent as managed rules, secrets first, in grant order. */
async function agentGrantRules(services: { grants: GrantService }, agent: RulesAgent): Promise<RuleInput[]> {
  return grantSetRules(agent, await services.grants.grantSet(agent.projectId, agent.id));
}

/** A secret as rule targets see it. */
export interface TargetSecret {
  id: string;
  scope: string;
  hostMatch: HostMatcher;
  pathMatch: PathMatcher;
}

/** What rule targets resolve against: these secrets and connections, and the app catalog. */
export function targetResolver(secrets: TargetSecret[], connections: { id: string; provider: string }[]): TargetResolver {
  return {
    secret: (id) => secrets.find((s) => s.id === id) ?? null,
    secretsOfScope: (scope) => secrets.filter((s) => s.scope === scope),
    appHosts: (provider) => compiledApp(provider)?.servesHost ?? null,
    tool: (provider, toolId) => compiledApp(provider)?.tools.get(toolId) ?? null,
    connectionProvider: (id) => connections.find((c) => c.id === id)?.provider ?? null,
  };
}

export interface CompiledScope {
  ordered: CompiledRule[];
  fallback: CompiledRule | null;
}

/** Both scopes' rules compiled into matchers. */
export function compileAgentRules(rules: AgentRules, resolver: TargetResolver): { organization: CompiledScope; project: CompiledScope } {
  const compile = (scope: ScopeRules): CompiledScope => ({
    ordered: scope.ordered.map((r) => compileRule(r, resolver)),
    fallback: scope.fallback ? compileRule(scope.fallback, resolver) : null,
  });
  return { organization: compile(rules.organization), project: compile(rules.project) };
}
