// Policy evaluation (docs/policy.md#evaluation, docs/policy.md#rate-limits), pure: target matching, first match per scope, the Default Rule,
// combining scopes (stricter wins, tie → organization), epoch-aligned rate windows and counters.
import { describe, expect, test } from "bun:test";
import { combine, compileRule, evaluateReadings, evaluateScope, needsBody, rateWindow, verdictOf, type PolicyRequest, type RuleInput, type TargetResolver } from "../../src/core/policy.ts";
import { compileHostPattern, compilePathPattern } from "../../src/core/patterns.ts";
import { pathReadings } from "../../src/core/pathReadings.ts";
import type { RuleTarget } from "../../src/core/model.ts";

const secret = (host: string, path: string | null = null) => ({ hostMatch: compileHostPattern(host), pathMatch: compilePathPattern(path) });
const resolver: TargetResolver = {
  secret: (id) => (id === "s-proj" ? secret("api.x.com", "/v1/*") : null),
  secretsOfScope: (scope) => (scope === "project" ? [secret("api.x.com", "/v1/*")] : []),
  appHosts: () => null,
  tool: () => null,
  connectionProvider: () => null,
};

let n = 0;
function rule(over: Partial<RuleInput> & { targets: RuleTarget[] }): RuleInput {
  n++;
  return {
    id: `id-${n}`,
    logicalId: `logical-${n}`,
    scope: "project",
    name: `rule ${n}`,
    enabled: true,
    isDefault: false,
    source: "custom",
    action: "allow",
    rateLimit: null,
    rateLimitWindow: null,
    requireApproval: false,
    conditions: null,
    identities: [],
    ...over,
  };
}
const req = (over: Partial<PolicyRequest> = {}): PolicyRequest => ({ host: "api.x.com", path: "/v1/items", method: "GET", agentId: "agent-1", connectionId: null, body: null, ...over });
const matches = (r: RuleInput, q: Partial<PolicyRequest> = {}) => compileRule(r, resolver).matches(req(q));
const net = (hostPattern: string, extra: Partial<Extract<RuleTarget, { kind: "network" }>> = {}): RuleTarget => ({ kind: "network", hostPattern, ...extra });

describe("target matching", () => {
  test("network: host (wildcards, any), path pattern and method", async () => {
    expect(matches(rule({ targets: [net("api.x.com")] }))).toBe(true);
    expect(matches(rule({ targets: [net("*.x.com")] }))).toBe(true);
    expect(matches(rule({ targets: [net("*.x.com")] }), { host: "x.com" })).toBe(false);
    expect(matches(rule({ targets: [net("*")] }), { host: "anything.example" })).toBe(true);
    expect(matches(rule({ targets: [net("api.x.com", { pathPattern: "/v1/*" })] }), { path: "/v1" })).toBe(true);
    expect(matches(rule({ targets: [net("api.x.com", { pathPattern: "/v1/*" })] }), { path: "/v1beta/x" })).toBe(false);
    expect(matches(rule({ targets: [net("api.x.com", { method: "POST" })] }), { method: "POST" })).toBe(true);
    expect(matches(rule({ targets: [net("api.x.com", { method: "POST" })] }), { method: "GET" })).toBe(false);
  });

  test("any target matching is enough; no targets match nothing", async () => {
    expect(matches(rule({ targets: [net("api.y.com"), net("api.x.com")] }))).toBe(true);
    expect(matches(rule({ targets: [] }))).toBe(false);
  });

  test("secret targets follow the secret's host and path; unknown secrets and empty levels never match (fail closed)", async () => {
    expect(matches(rule({ targets: [{ kind: "secret", secretId: "s-proj" }] }), { path: "/v1/pay" })).toBe(true);
    expect(matches(rule({ targets: [{ kind: "secret", secretId: "s-proj" }] }), { path: "/v2/pay" })).toBe(false);
    expect(matches(rule({ targets: [{ kind: "secret", secretId: "gone" }] }))).toBe(false);
    expect(matches(rule({ targets: [{ kind: "secret", secretScope: "project" }] }), { path: "/v1/a" })).toBe(true);
    expect(matches(rule({ targets: [{ kind: "secret", secretScope: "organization" }] }), { path: "/v1/a" })).toBe(false);
  });

  test("app and connection targets with an unknown provider or connection never match", async () => {
    expect(matches(rule({ targets: [{ kind: "app", provider: "github", tools: [] }] }), { host: "api.github.com" })).toBe(false);
    expect(matches(rule({ targets: [{ kind: "connection", connectionId: "c1", tools: [] }] }), { connectionId: "c1" })).toBe(false);
  });

  test("identities: empty means every agent; otherwise only the named ones", async () => {
    expect(matches(rule({ targets: [net("*")], identities: [] }), { agentId: "anyone" })).toBe(true);
    expect(matches(rule({ targets: [net("*")], identities: [{ id: "agent-2" }] }), { agentId: "agent-1" })).toBe(false);
    expect(matches(rule({ targets: [net("*")], identities: [{ id: "agent-2" }, { id: "agent-1" }] }), { agentId: "agent-1" })).toBe(true);
  });

  test("conditions: all must hold, case-insensitive on the (lowercased) body; an empty or absent body never matches", async () => {
    const r = rule({ targets: [net("*")], conditions: [{ value: "Urgent" }, { value: "PAY" }] });
    expect(matches(r, { body: "please pay, urgent!" })).toBe(true);
    expect(matches(r, { body: "please pay" })).toBe(false);
    expect(matches(r, { body: "" })).toBe(false);
    expect(matches(r, { body: null })).toBe(false);
    expect(needsBody([compileRule(r, resolver)])).toBe(true);
    expect(needsBody([compileRule(rule({ targets: [net("*")], conditions: [] }), resolver)])).toBe(false);
  });
});

describe("decisions", () => {
  test("verdict of a matched rule: block, else approval (rate not considered), else rate, else allow", async () => {
    expect(verdictOf(rule({ targets: [], action: "block" }))).toBe("block");
    expect(verdictOf(rule({ targets: [], requireApproval: true, rateLimit: 1, rateLimitWindow: "minute" }))).toBe("approval");
    expect(verdictOf(rule({ targets: [], rateLimit: 1, rateLimitWindow: "minute" }))).toBe("rate");
    expect(verdictOf(rule({ targets: [] }))).toBe("allow");
  });

  test("per scope the first match decides, else the Default Rule, else an implicit allow", async () => {
    const a = compileRule(rule({ name: "allow admin", targets: [net("api.x.com", { pathPattern: "/admin/*" })] }), resolver);
    const b = compileRule(rule({ name: "block host", action: "block", targets: [net("api.x.com")] }), resolver);
    const def = compileRule(rule({ name: "Default Rule", isDefault: true, source: "default", action: "block", targets: [] }), resolver);
    expect(evaluateScope([a, b], def, req({ path: "/admin/x" }))).toMatchObject({ verdict: "allow", rule: { name: "allow admin" } });
    expect(evaluateScope([a, b], def, req())).toMatchObject({ verdict: "block", rule: { name: "block host" } });
    expect(evaluateScope([a, b], def, req({ host: "other.com" }))).toMatchObject({ verdict: "block", rule: { name: "Default Rule" } });
    const allowDefault = compileRule(rule({ isDefault: true, source: "default", action: "allow", targets: [] }), resolver);
    expect(evaluateScope([], allowDefault, req()).verdict).toBe("allow");
    expect(evaluateScope([], null, req())).toEqual({ verdict: "allow", rule: null });
  });

  test("across scopes the stricter wins (block < approval < rate < allow); a tie goes to the organization", async () => {
    const d = (verdict: "block" | "approval" | "rate" | "allow", name: string) => ({ verdict, rule: compileRule(rule({ name, targets: [] }), resolver) });
    expect(combine(d("allow", "org"), d("block", "proj")).rule!.name).toBe("proj");
    expect(combine(d("block", "org"), d("allow", "proj")).rule!.name).toBe("org");
    expect(combine(d("rate", "org"), d("approval", "proj")).rule!.name).toBe("proj");
    expect(combine(d("approval", "org"), d("rate", "proj")).rule!.name).toBe("org");
    expect(combine(d("allow", "org"), d("rate", "proj")).rule!.name).toBe("proj");
    for (const v of ["block", "approval", "rate", "allow"] as const) expect(combine(d(v, "org"), d(v, "proj")).rule!.name).toBe("org");
  });

  test("a tie where only the project matched a rule reports the project's rule (the organization just had none)", async () => {
    const proj = { verdict: "allow" as const, rule: compileRule(rule({ name: "proj", targets: [] }), resolver) };
    expect(combine({ verdict: "allow", rule: null }, proj).rule!.name).toBe("proj");
    expect(combine({ verdict: "allow", rule: null }, { verdict: "allow", rule: null }).rule).toBeNull();
    // A project's Default Rule is no explicit decision: the tie stays with the organization.
    const projDefault = { verdict: "allow" as const, rule: compileRule(rule({ name: "Default Rule", isDefault: true, source: "default", targets: [] }), resolver) };
    expect(combine({ verdict: "allow", rule: null }, projDefault).rule).toBeNull();
  });
});

describe("rate limits", () => {
  test("fixed windows aligned to the epoch; Retry-After is the time left, at least 1", async () => {
    expect(rateWindow("minute", 0)).toEqual({ index: 0, retryAfter: 60 });
    expect(rateWindow("minute", 59_999)).toEqual({ index: 0, retryAfter: 1 });
    expect(rateWindow("minute", 60_000)).toEqual({ index: 1, retryAfter: 60 });
    expect(rateWindow("hour", 3_600_000 * 5 + 1_500)).toEqual({ index: 5, retryAfter: 3599 });
    expect(rateWindow("day", 86_400_000 - 1)).toEqual({ index: 0, retryAfter: 1 });
  });

});

describe("every reading of the path (docs/injection.md#every-reading-of-a-path)", () => {
  const compile = (r: RuleInput) => compileRule(r, resolver);
  const scopes = (project: RuleInput[], fallback: RuleInput | null = null, organization: RuleInput[] = []) => ({
    organization: { ordered: organization.map(compile), fallback: null },
    project: { ordered: project.map(compile), fallback: fallback && compile(fallback) },
  });
  const judge = (s: ReturnType<typeof scopes>, path: string) => evaluateReadings(s, req(), pathReadings(path));

  test("a block rule matched by any reading blocks, even when the path as sent matches an allow rule before it", () => {
    const s = scopes([rule({ name: "open docs", targets: [net("api.x.com", { pathPattern: "/docs/*" })] }), rule({ name: "no admin", action: "block", targets: [net("api.x.com", { pathPattern: "/admin/*" })] })]);
    for (const path of ["/%61dmin/x", "/./admin/x", "/docs/../admin/x", "/docs/%2e%2e/admin/x", "/admin%2Fx", "/admin;v=1/x"]) {
      const d = judge(s, path);
      expect({ path, verdict: d.verdict, rule: d.rule?.name }).toEqual({ path, verdict: "block", rule: "no admin" });
    }
    expect(judge(s, "/docs/a").verdict).toBe("allow");
    // Paths stay case-sensitive.
    expect(judge(s, "/ADMIN/x").verdict).toBe("allow");
  });

  test("under a Default block an allow rule must match every reading", () => {
    const deny = rule({ name: "Default", isDefault: true, action: "block", targets: [] });
    const s = scopes([rule({ name: "public", targets: [net("api.x.com", { pathPattern: "/public/*" })] })], deny);
    expect(judge(s, "/public/a").verdict).toBe("allow");
    expect(judge(s, "/public/%61").verdict).toBe("allow");
    const d = judge(s, "/public/../private/a");
    expect(d.verdict).toBe("block");
    expect(d.rule?.isDefault).toBe(true);
  });

  test("approval beats a rate limit, which beats allow; every rule reaching the winning verdict is listed, the deciding one first", () => {
    const ask = rule({ name: "ask", requireApproval: true, targets: [net("api.x.com", { pathPattern: "/send/*" })] });
    const rate = rule({ name: "rate", rateLimit: 5, rateLimitWindow: "minute", targets: [net("api.x.com", { pathPattern: "/x/*" })] });
    const ask2 = rule({ name: "ask too", requireApproval: true, targets: [net("api.x.com", { pathPattern: "/x/*" })] });
    const s = scopes([ask, rate]);
    const d = judge(s, "/x/../send/1");
    expect(d.verdict).toBe("approval");
    expect(d.rules.map((r) => r.name)).toEqual(["ask"]);
    const both = judge(scopes([ask, ask2]), "/x/../send/1");
    expect(both.verdict).toBe("approval");
    expect(both.rules.map((r) => r.name)).toEqual(["ask too", "ask"]);
    const rate2 = rule({ name: "rate too", rateLimit: 1, rateLimitWindow: "hour", targets: [net("api.x.com", { pathPattern: "/y/*" })] });
    const limited = judge(scopes([rate, rate2]), "/x/..%2Fy/1");
    expect(limited.verdict).toBe("rate");
    expect(limited.rules.map((r) => r.name)).toEqual(["rate", "rate too"]);
  });

  test("secret targets judge each reading too", () => {
    const s = scopes([rule({ name: "block the key", action: "block", targets: [{ kind: "secret", secretId: "s-proj" }] })]);
    expect(judge(s, "/v2/../v1/pay").verdict).toBe("block");
    expect(judge(s, "/v2/pay").verdict).toBe("allow");
  });

  test("one reading: the same decision as evaluating the scopes directly", () => {
    const s = scopes([rule({ name: "no admin", action: "block", targets: [net("api.x.com", { pathPattern: "/admin/*" })] })]);
    const direct = combine(evaluateScope(s.organization.ordered, null, req({ path: "/admin/x" })), evaluateScope(s.project.ordered, null, req({ path: "/admin/x" })));
    const d = judge(s, "/admin/x");
    expect({ verdict: d.verdict, rule: d.rule }).toEqual({ verdict: direct.verdict, rule: direct.rule });
    expect(d.rules).toEqual([direct.rule!]);
  });
});
