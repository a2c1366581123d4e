// Policy evaluation (docs/policy.md#evaluation, docs/policy.md#rate-limits), pure: rules compiled into matchers once, then each request is
// evaluated per scope (first match wins, else the scope's Default Rule) and the two scopes are combined
// with the stricter decision winning (block < approval < rate-limit < allow; tie → organization).
import { compileHostPattern, compilePathPattern, type HostMatcher, type PathMatcher } from "./patterns.ts";
import type { PolicyScope, RateWindow, RuleAction, RuleSource, RuleTarget } from "./model.ts";

export interface RuleInput {
  id: string;
  logicalId: string;
  scope: PolicyScope;
  name: string;
  enabled: boolean;
  isDefault: boolean;
  source: RuleSource;
  action: RuleAction;
  rateLimit: number | null;
  rateLimitWindow: RateWindow | null;
  requireApproval: boolean;
  conditions: { value: string }[] | null;
  identities: { id: string }[];
  targets: RuleTarget[];
}

/** What a target may need to know beyond the request itself; unknown things never match (fail closed). */
export interface TargetResolver {
  secret(id: string): { hostMatch: HostMatcher; pathMatch: PathMatcher } | null;
  secretsOfScope(scope: "project" | "organization"): { hostMatch: HostMatcher; pathMatch: PathMatcher }[];
  /** The hosts of a catalog app, or null for an unknown provider. */
  appHosts(provider: string): HostMatcher | null;
  /** A matcher for one tool of an app (method, host, path), or null when unknown. */
  tool(provider: string, toolId: string): ((r: PolicyRequest) => boolean) | null;
  /** The provider of a connection, or null when it does not exist. */
  connectionProvider(connectionId: string): string | null;
}

export interface PolicyRequest {
  host: string;
  /** Path without query. */
  path: string;
  /** WebSocket upgrades are evaluated as GET. */
  method: string;
  agentId: string;
  /** The winning connection's id, if any. */
  connectionId: string | null;
  /** The first 16 KiB of the body, lowercased; null when no loaded rule has conditions or the body is empty. */
  body: string | null;
}

export interface CompiledRule extends RuleInput {
  matches(r: PolicyRequest): boolean;
}

export type Verdict = "block" | "approval" | "rate" | "allow";
const STRICTNESS: Record<Verdict, number> = { block: 0, approval: 1, rate: 2, allow: 3 };

export interface ScopeDecision {
  verdict: Verdict;
  /** The rule that decided; null for the implicit allow of a scope without a Default Rule. */
  rule: CompiledRule | null;
}

export const BODY_PEEK_BYTES = 16 * 1024;
// SQL and SSH are the methods of the database broker's statements and the SSH gateway's commands
// (docs/databases.md, docs/ssh.md): a rule naming one applies to those only, and a rule naming an HTTP method
// never to them.
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "SQL", "SSH"]);
export const POLICY_METHODS = [...METHODS];

function compileTarget(t: RuleTarget, resolver: TargetResolver): (r: PolicyRequest) => boolean {
  const never = () => false;
  switch (t.kind) {
    case "network": {
      const host = compileHostPattern(t.hostPattern);
      const path = compilePathPattern(t.pathPattern ?? null);
      const method = t.method?.toUpperCase() ?? null;
      return (r) => host(r.host) && path(r.path) && (method === null || r.method === method);
    }
    case "app":
    case "connection": {
      const provider = t.kind === "app" ? t.provider : resolver.connectionProvider(t.connectionId);
      if (provider === null) return never;
      const onConnection = t.kind === "connection" ? (r: PolicyRequest) => r.connectionId === t.connectionId : () => true;
      if (t.tools.length === 0) {
        if (t.kind === "connection") return onConnection;
        const hosts = resolver.appHosts(provider);
        return hosts ? (r) => hosts(r.host) : never;
      }
      const tools = t.tools.map((id) => resolver.tool(provider, id));
      if (tools.some((m) => m === null)) return never;
      return (r) => onConnection(r) && tools.some((m) => m!(r));
    }
    case "secret": {
      const list = t.secretId !== undefined ? [resolver.secret(t.secretId)] : t.secretScope ? resolver.secretsOfScope(t.secretScope) : [];
      const known = list.filter((s) => s !== null);
      if (known.length === 0 || known.length !== list.length) return never;
      return (r) => known.some((s) => s.hostMatch(r.host) && s.pathMatch(r.path));
    }
  }
}

export function compileRule(rule: RuleInput, resolver: TargetResolver): CompiledRule {
  const targets = rule.targets.map((t) => compileTarget(t, resolver));
  const identities = rule.identities.length === 0 ? null : new Set(rule.identities.map((i) => i.id));
  const conditions = rule.conditions && rule.conditions.length > 0 ? rule.conditions.map((c) => c.value.toLowerCase()) : null;
  return {
    ...rule,
    matches(r) {
      if (identities && !identities.has(r.agentId)) return false;
      if (!targets.some((t) => t(r))) return false;
      if (conditions) return r.body !== null && r.body !== "" && conditions.every((c) => r.body!.includes(c));
      return true;
    },
  };
}

export function verdictOf(rule: RuleInput): Verdict {
  if (rule.action === "block") return "block";
  if (rule.requireApproval) return "approval";
  if (rule.rateLimit !== null && rule.rateLimitWindow !== null) return "rate";
  return "allow";
}

/**
 * One scope: `ordered` are the enabled non-default rules in evaluation order (blocklist, custom by
 * priority, grant); `fallback` is the published Default Rule, if any.
 */
export function evaluateScope(ordered: CompiledRule[], fallback: CompiledRule | null, r: PolicyRequest): ScopeDecision {
  for (const rule of ordered) if (rule.matches(r)) return { verdict: verdictOf(rule), rule };
  if (fallback) return { verdict: fallback.action === "block" ? "block" : "allow", rule: fallback };
  return { verdict: "allow", rule: null };
}

/**
 * The stricter of the two decisions; on a tie the organization's — unless only the project matched an
 * explicit rule (the organization merely had none), so that the rule that actually decided is reported.
 */
export function combine(org: ScopeDecision, project: ScopeDecision): ScopeDecision {
  if (STRICTNESS[project.verdict] !== STRICTNESS[org.verdict]) return STRICTNESS[project.verdict] < STRICTNESS[org.verdict] ? project : org;
  return org.rule === null && project.rule !== null && !project.rule.isDefault ? project : org;
}

/** What the policy decided over every reading of a request's path (docs/injection.md#every-reading-of-a-path). */
export interface PolicyOutcome extends ScopeDecision {
  /**
   * Every rule that reached the outcome's verdict on some reading (the deciding one first): with `rate`, each
   * counts the request; with `approval`, each must have been remembered for the hold to be skipped.
   */
  rules: readonly CompiledRule[];
}

/**
 * Both scopes combined, for each reading of the path (`r.path` is set to each in turn); the strictest verdict
 * over the readings wins, and on a tie the first reading's rule (the path as sent) is the one reported.
 * An allow rule therefore only opens a Default `block` when it matches every reading.
 */
export function evaluateReadings(
  scopes: { organization: { ordered: CompiledRule[]; fallback: CompiledRule | null }; project: { ordered: CompiledRule[]; fallback: CompiledRule | null } },
  r: PolicyRequest,
  readings: readonly string[],
): PolicyOutcome {
  let best: ScopeDecision | null = null;
  let rules: CompiledRule[] = [];
  for (const path of readings) {
    r.path = path;
    const d = combine(evaluateScope(scopes.organization.ordered, scopes.organization.fallback, r), evaluateScope(scopes.project.ordered, scopes.project.fallback, r));
    if (best === null || STRICTNESS[d.verdict] < STRICTNESS[best.verdict]) {
      best = d;
      rules = d.rule ? [d.rule] : [];
    } else if (d.verdict === best.verdict && d.rule && !rules.includes(d.rule)) rules.push(d.rule);
  }
  return { ...best!, rules };
}

export function needsBody(rules: Iterable<CompiledRule>): boolean {
  for (const r of rules) if (r.conditions && r.conditions.length > 0) return true;
  return false;
}

export const WINDOW_SECONDS: Record<RateWindow, number> = { minute: 60, hour: 3600, day: 86400 };

/** The fixed, epoch-aligned window of `nowMs` and the seconds until it ends (at least 1). */
export function rateWindow(window: RateWindow, nowMs: number): { index: number; retryAfter: number } {
  const size = WINDOW_SECONDS[window];
  const seconds = nowMs / 1000;
  const index = Math.floor(seconds / size);
  return { index, retryAfter: Math.max(1, Math.ceil((index + 1) * size - seconds)) };
}

// ── How published rules bear on one credential (effective-credentials, docs/injection.md#agent-modes) ─────────────────────────

type Coverage = "full" | "partial" | "none";

function hostCoverage(target: string, host: string): Coverage {
  const t = target.toLowerCase().replace(/\.$/, "");
  const h = host.toLowerCase().replace(/\.$/, "");
  if (t === "*" || t === h) return "full";
  if (t.startsWith("*.")) {
    const suffix = t.slice(1);
    if (h.endsWith(suffix) && h.length > suffix.length) return "full";
    if (h.startsWith("*.") && suffix.endsWith(h.slice(1))) return "partial";
    return "none";
  }
  if (h.startsWith("*.") && t.endsWith(h.slice(1)) && t.length > h.length - 1) return "partial";
  return "none";
}

const CATCH_ALL = new Set(["", "*", "/*"]);

/** How much of a credential's traffic (its host and path patterns) a rule's targets cover. */
export function ruleCoverage(rule: RuleInput, secret: { id: string; scope: string; hostPattern: string; pathPattern: string | null }): Coverage {
  let best: Coverage = "none";
  for (const t of rule.targets) {
    let c: Coverage = "none";
    if (t.kind === "secret") c = t.secretId === secret.id || t.secretScope === secret.scope ? "full" : "none";
    else if (t.kind === "network") {
      c = hostCoverage(t.hostPattern, secret.hostPattern);
      const pathAll = CATCH_ALL.has((t.pathPattern ?? "").trim());
      const samePath = (t.pathPattern ?? "").trim() === (secret.pathPattern ?? "").trim();
      if (c === "full" && ((!pathAll && !samePath) || t.method)) c = "partial";
    }
    if (c === "full") best = "full";
    else if (c === "partial" && best === "none") best = "partial";
  }
  if (best === "full" && rule.conditions && rule.conditions.length > 0) return "partial";
  return best;
}

export type CredentialStatus = "blocked" | "limited" | "usable";

/** The effect of one scope's rules (already filtered to the agent) on a credential. */
function scopeStatus(ordered: RuleInput[], fallback: RuleInput | null, secret: Parameters<typeof ruleCoverage>[1]): CredentialStatus {
  let limited = false;
  for (const rule of ordered) {
    const c = ruleCoverage(rule, secret);
    if (c === "none") continue;
    const v = verdictOf(rule);
    if (c === "full") {
      if (v === "block") return limited ? "limited" : "blocked";
      return v === "allow" && !limited ? "usable" : "limited";
    }
    if (v !== "allow") limited = true;
    else if (fallback?.action === "block") limited = true;
  }
  if (fallback?.action === "block") return limited ? "limited" : "blocked";
  return limited ? "limited" : "usable";
}

export function credentialStatus(
  scopes: { ordered: RuleInput[]; fallback: RuleInput | null }[],
  secret: Parameters<typeof ruleCoverage>[1],
): CredentialStatus {
  const statuses = scopes.map((s) => scopeStatus(s.ordered, s.fallback, secret));
  if (statuses.includes("blocked")) return "blocked";
  return statuses.includes("limited") ? "limited" : "usable";
}
