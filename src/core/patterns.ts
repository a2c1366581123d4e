// Host and path patterns (docs/injection.md#host-and-path-patterns): validation with the documented messages, and matchers compiled
// once so the gateway's hot path only runs string comparisons or one precompiled regex.
import { parse as parseDomain } from "tldts";

export const HOST_MESSAGES = {
  required: "Host pattern is required",
  tooLong: "hostPattern must be at most 255 characters",
  url: "Enter a hostname, not a URL (remove http:// or https://)",
  path: "Enter a hostname only, not a path (use the path pattern field for paths)",
  spaces: "Host pattern must not contain spaces",
  wildcard: "Wildcards are only allowed as a leading subdomain, e.g. *.example.com",
  publicSuffix: "A wildcard can't cover a public suffix like *.com; use a specific domain, e.g. *.example.com",
  invalid: "Enter a valid hostname, e.g. api.example.com",
} as const;

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/i;
const IPV4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

function isHostname(host: string): boolean {
  const h = host.endsWith(".") ? host.slice(0, -1) : host;
  if (h.length === 0 || h.length > 253) return false;
  if (IPV4.test(h)) return true;
  const bare = h.startsWith("[") && h.endsWith("]") ? h.slice(1, -1) : h;
  if (bare.includes(":")) return /^[0-9a-f:.]+$/i.test(bare) && bare.split(":").length >= 3;
  return h.split(".").every((label) => LABEL.test(label));
}

/** True when X is listed in the Public Suffix List (ICANN or private section), e.g. `com`, `co.uk`, `github.io`. */
function isListedPublicSuffix(x: string): boolean {
  const info = parseDomain(x, { allowPrivateDomains: true });
  return info.publicSuffix === x.toLowerCase() && (info.isIcann === true || info.isPrivate === true);
}

/**
 * Validates a host pattern; returns the first failure message (docs/injection.md#host-and-path-patterns order) or null.
 * `allowAny` admits the bare `*` of policy network targets.
 */
export function hostPatternError(raw: unknown, opts: { allowAny?: boolean } = {}): string | null {
  const p = typeof raw === "string" ? raw.trim() : "";
  if (p === "") return HOST_MESSAGES.required;
  if (p.length > 255) return HOST_MESSAGES.tooLong;
  if (p.includes("://")) return HOST_MESSAGES.url;
  if (p.includes("/")) return HOST_MESSAGES.path;
  if (/\s/.test(p)) return HOST_MESSAGES.spaces;
  if (p === "*" && opts.allowAny) return null;
  const wildcard = p.startsWith("*.");
  const rest = wildcard ? p.slice(2) : p;
  if (rest.includes("*")) return HOST_MESSAGES.wildcard;
  if (wildcard && isListedPublicSuffix(rest.replace(/\.$/, ""))) return HOST_MESSAGES.publicSuffix;
  if (!isHostname(rest)) return HOST_MESSAGES.invalid;
  return null;
}

/** The host the patterns compare against: lowercase, no port, no trailing dot, no IPv6 brackets. */
export function normalizeHost(hostWithPort: string): string {
  let h = hostWithPort.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    h = end === -1 ? h.slice(1) : h.slice(1, end);
  } else {
    const colon = h.indexOf(":");
    // A single colon separates the port; several colons are a bare IPv6 literal.
    if (colon !== -1 && h.indexOf(":", colon + 1) === -1) h = h.slice(0, colon);
  }
  return h.endsWith(".") ? h.slice(0, -1) : h;
}

export type HostMatcher = (normalizedHost: string) => boolean;

/** Compiles a stored host pattern. The matcher takes a host already passed through normalizeHost. */
export function compileHostPattern(pattern: string): HostMatcher {
  const p = normalizeHost(pattern.startsWith("*.") ? pattern : pattern.replace(/^\[|\]$/g, ""));
  if (p === "*") return () => true;
  if (p.startsWith("*.")) {
    const suffix = p.slice(1); // ".example.com"
    return (host) => host.length > suffix.length && host.endsWith(suffix);
  }
  return (host) => host === p;
}

export function matchHostPattern(pattern: string, host: string): boolean {
  return compileHostPattern(pattern)(normalizeHost(host));
}

export const PATH_PATTERN_MESSAGE = "pathPattern must be * or start with /";

/** Path pattern rule of docs/injection.md#secrets: `*`, or starting with `/`; ≤1000 characters. Blank means "unset". */
export function pathPatternError(raw: string): string | null {
  const p = raw.trim();
  if (p === "" || p === "*") return null;
  if (p.length > 1000) return "pathPattern must be at most 1000 characters";
  return p.startsWith("/") ? null : PATH_PATTERN_MESSAGE;
}

export type PathMatcher = (pathWithoutQuery: string) => boolean;

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function segmentGlob(segment: string): (s: string) => boolean {
  if (segment === "*") return () => true;
  if (!segment.includes("*")) return (s) => s === segment;
  const re = new RegExp(`^${segment.split("*").map(escapeRegex).join("[^/]*")}$`);
  return (s) => re.test(s);
}

function segmentsMatcher(pattern: string): (segments: string[], exact: boolean) => boolean {
  const globs = pattern.split("/").map(segmentGlob);
  return (segments, exact) => {
    if (exact ? segments.length !== globs.length : segments.length < globs.length) return false;
    for (let i = 0; i < globs.length; i++) if (!globs[i]!(segments[i]!)) return false;
    return true;
  };
}

/**
 * Compiles a path pattern (docs/injection.md#host-and-path-patterns). The first applicable rule decides: unset/`*` → all; trailing `/*` → the
 * prefix itself or anything below it; a final `*` → raw prefix; `*` elsewhere → segment globs; else equality.
 */
export function compilePathPattern(pattern: string | null | undefined): PathMatcher {
  const p = pattern?.trim() ?? "";
  if (p === "" || p === "*") return () => true;
  if (p.endsWith("/*")) {
    const prefix = p.slice(0, -2);
    if (prefix === "") return () => true;
    if (!prefix.includes("*")) return (path) => path === prefix || path.startsWith(prefix + "/");
    const match = segmentsMatcher(prefix);
    return (path) => match(path.split("/"), false);
  }
  const star = p.indexOf("*");
  if (star === p.length - 1) {
    const prefix = p.slice(0, -1);
    return (path) => path.startsWith(prefix);
  }
  if (star !== -1) {
    const match = segmentsMatcher(p);
    return (path) => match(path.split("/"), true);
  }
  return (path) => path === p;
}

/** The path without its query string or fragment: what path patterns are matched against. */
export function pathWithoutQuery(pathAndQuery: string): string {
  const q = pathAndQuery.search(/[?#]/);
  return q === -1 ? pathAndQuery : pathAndQuery.slice(0, q);
}

export function matchPathPattern(pattern: string | null | undefined, pathAndQuery: string): boolean {
  return compilePathPattern(pattern)(pathWithoutQuery(pathAndQuery));
}
