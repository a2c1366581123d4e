// Catalog entries compiled into matchers once (host rules, tools), so the gateway and policy evaluation only
// run precompiled comparisons. Host and path semantics are those of docs/injection.md#host-and-path-patterns.
import { compileHostPattern, compilePathPattern, type HostMatcher, type PathMatcher } from "../core/patterns.ts";
import type { PolicyRequest } from "../core/policy.ts";
import { APPS, findApp } from "./index.ts";
import type { AppDefinition, AppHostRule } from "./types.ts";

export interface CompiledHostRule {
  rule: AppHostRule;
  host: HostMatcher;
  paths: PathMatcher[] | null;
}

export interface CompiledApp {
  app: AppDefinition;
  hostRules: CompiledHostRule[];
  /** True when any host rule names the host (whatever the path). */
  servesHost: HostMatcher;
  tools: Map<string, (r: Pick<PolicyRequest, "method" | "host" | "path">) => boolean>;
}

export function compileApp(app: AppDefinition): CompiledApp {
  const hostRules = app.hosts.map((rule) => ({ rule, host: compileHostPattern(rule.host), paths: rule.paths ? rule.paths.map((p) => compilePathPattern(p)) : null }));
  const tools = new Map(
    app.tools.map((t) => {
      const host = compileHostPattern(t.host);
      const path = compilePathPattern(t.path);
      const method = t.method.toUpperCase();
      return [t.id, (r: Pick<PolicyRequest, "method" | "host" | "path">) => r.method.toUpperCase() === method && host(r.host) && path(r.path)] as const;
    }),
  );
  return { app, hostRules, servesHost: (h) => hostRules.some((r) => r.host(h)), tools };
}

const COMPILED = new Map(APPS.map((a) => [a.id, compileApp(a)]));

export function compiledApp(provider: string): CompiledApp | null {
  return COMPILED.get(provider) ?? (findApp(provider) ? compileApp(findApp(provider)!) : null);
}

/**
 * The host rule of an app that serves this host and path, or null. Given every reading of the path, the rule
 * must serve each of them: it grants the connection's credential (docs/injection.md#every-reading-of-a-path).
 */
export function hostRuleFor(app: CompiledApp, host: string, path: string | readonly string[]): CompiledHostRule | null {
  const readings = typeof path === "string" ? [path] : path;
  return app.hostRules.find((r) => r.host(host) && (r.paths === null || readings.every((reading) => r.paths!.some((p) => p(reading))))) ?? null;
}

const SERVING = new Map<string, CompiledApp[]>();
const SERVING_MAX = 10_000;

/** The apps whose host rules serve this host (any path), remembered per host: every request asks. */
export function appsServingHost(host: string): CompiledApp[] {
  let apps = SERVING.get(host);
  if (apps === undefined) {
    apps = [...COMPILED.values()].filter((a) => a.servesHost(host));
    if (SERVING.size >= SERVING_MAX) SERVING.clear();
    SERVING.set(host, apps);
  }
  return apps;
}

/** A concrete request path that a tool's path pattern matches, for evaluating rules per tool. */
export function samplePath(pattern: string): string {
  let p = pattern.trim();
  if (p === "" || p === "*") return "/";
  // `/emails/*` stands for one item below the prefix (`/emails/x`), not the prefix itself (`list_emails`).
  if (p.endsWith("/*")) p = `${p.slice(0, -2)}/x`;
  else if (p.endsWith("*") && !p.slice(0, -1).includes("*")) p = p.slice(0, -1);
  return p
    .split("/")
    .map((seg) => seg.replace(/\*/g, "x"))
    .join("/");
}
