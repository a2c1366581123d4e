// Applying one credential to an outbound request (docs/injection.md#injection-variants). Pure: it edits the headers (HeaderEdits) and
// returns the new path; the caller decides order and precedence. Every applied action is counted.
import { isPathSafeValue, type AuthMode, type InjectionConfigShape, type SecretTypeName } from "./secretRules.ts";

export interface Injectable {
  type: SecretTypeName;
  authMode: AuthMode;
  accountId?: string;
  injection: InjectionConfigShape | null;
  /** The compiled `pathRegex` of a regex injection. */
  pathRegex?: RegExp;
}

/** The result: the (possibly rewritten) path+query, and how many actions were applied. */
export type InjectionOutcome = { ok: true; pathAndQuery: string; count: number } | { ok: false; reason: "unsafe_path_value" };

function splitTarget(pathAndQuery: string): { path: string; query: string | null; fragment: string } {
  const hash = pathAndQuery.indexOf("#");
  const fragment = hash === -1 ? "" : pathAndQuery.slice(hash);
  const rest = hash === -1 ? pathAndQuery : pathAndQuery.slice(0, hash);
  const q = rest.indexOf("?");
  return q === -1 ? { path: rest, query: null, fragment } : { path: rest.slice(0, q), query: rest.slice(q + 1), fragment };
}

function joinTarget(path: string, query: string | null, fragment: string): string {
  return path + (query === null ? "" : `?${query}`) + fragment;
}

/** application/x-www-form-urlencoded encoding of one component. */
function formEncode(s: string): string {
  return new URLSearchParams([["", s]]).toString().slice(1);
}

function formDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, " "));
  } catch {
    return s;
  }
}

/** Replaces the first parameter named `name` (other bytes verbatim), or appends it. */
export function setQueryParam(pathAndQuery: string, name: string, value: string): string {
  const { path, query, fragment } = splitTarget(pathAndQuery);
  const pair = `${formEncode(name)}=${formEncode(value)}`;
  if (query) {
    const parts = query.split("&");
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      const eq = part.indexOf("=");
      const key = eq === -1 ? part : part.slice(0, eq);
      if (formDecode(key) === name) {
        parts[i] = `${key}=${formEncode(value)}`;
        return joinTarget(path, parts.join("&"), fragment);
      }
    }
    return joinTarget(path, `${query}&${pair}`, fragment);
  }
  return joinTarget(path, pair, fragment);
}

/** `{pathTemplate:"/bot{value}"}`: the hole after the literal prefix, up to the next `/`, becomes the value. */
function applyPathTemplate(path: string, template: string, value: string): string | null {
  const [prefix, suffix] = template.split("{value}") as [string, string];
  if (!path.startsWith(prefix)) return null;
  const holeEnd = path.indexOf("/", prefix.length);
  const end = holeEnd === -1 ? path.length : holeEnd;
  // A suffix inside the same segment (e.g. "/key-{value}.json") must close the hole and is kept.
  const inSegment = suffix !== "" && !suffix.startsWith("/");
  if (inSegment && !path.slice(prefix.length, end).endsWith(suffix)) return null;
  return prefix + value + (inSegment ? suffix : "") + path.slice(end);
}

/** `{pathRegex, pathReplacement}`: first match only; `$1`…`$9` expand before the value goes in. */
function applyPathRegex(path: string, re: RegExp, replacement: string, value: string): string | null {
  const m = re.exec(path);
  if (!m) return null;
  const expanded = replacement.replace(/\$(\d)/g, (_, d: string) => m[Number(d)] ?? "");
  const out = path.slice(0, m.index) + expanded.split("{value}").join(value) + path.slice(m.index + m[0].length);
  return out;
}

/** The edits injection makes to a request's headers (a Headers object, or the gateway's header lines). */
export interface HeaderEdits {
  has(name: string): boolean;
  set(name: string, value: string): void;
  delete(name: string): void;
}

function setHeader(headers: HeaderEdits, name: string, value: string): number {
  headers.set(name, value);
  return 1;
}

/** The last value each format was filled with: a credential's header is the same text request after request. */
const lastFilled = new WeakMap<InjectionConfigShape, { value: string; format: string; filled: string }>();

/** `format` with every `{value}` replaced by `value`. */
function fill(cfg: InjectionConfigShape, format: string, value: string): string {
  const last = lastFilled.get(cfg);
  if (last !== undefined && last.value === value && last.format === format) return last.filled;
  const filled = format.split("{value}").join(value);
  lastFilled.set(cfg, { value, format, filled });
  return filled;
}

function removeHeader(headers: HeaderEdits, name: string): number {
  if (!headers.has(name)) return 0;
  headers.delete(name);
  return 1;
}

export function applyInjection(secret: Injectable, value: string, headers: HeaderEdits, pathAndQuery: string): InjectionOutcome {
  let count = 0;
  if (secret.type === "llm_a") {
    if (secret.authMode === "oauth") count += setHeader(headers, "authorization", `Bearer ${value}`) + removeHeader(headers, "x-api-key");
    else count += setHeader(headers, "x-api-key", value) + removeHeader(headers, "authorization");
    return { ok: true, pathAndQuery, count };
  }
  if (secret.type === "llm_b") {
    count += setHeader(headers, "authorization", `Bearer ${value}`);
    if (secret.authMode === "oauth" && secret.accountId) count += setHeader(headers, "chatgpt-account-id", secret.accountId);
    return { ok: true, pathAndQuery, count };
  }
  const cfg = secret.injection;
  // A placeholder is replaced where the agent wrote it, body included: the placeholder stage's work. Signed and
  // minted variants are applied by their own gateway stages (docs/injection.md#signed-and-minted-credentials). A
  // database password never goes into HTTP (docs/databases.md#the-database-secret), nor an SSH key (docs/ssh.md#the-ssh-secret).
  if (!cfg || cfg.placeholder !== undefined || cfg.awsSigV4 !== undefined || cfg.githubApp !== undefined || cfg.database !== undefined || cfg.ssh !== undefined || cfg.gcpServiceAccount !== undefined || cfg.azureClientSecret !== undefined) {
    return { ok: true, pathAndQuery, count };
  }
  if (cfg.headerName !== undefined) {
    return { ok: true, pathAndQuery, count: setHeader(headers, cfg.headerName, fill(cfg, cfg.valueFormat ?? "{value}", value)) };
  }
  if (cfg.paramName !== undefined) {
    return { ok: true, pathAndQuery: setQueryParam(pathAndQuery, cfg.paramName, (cfg.paramFormat ?? "{value}").split("{value}").join(value)), count: 1 };
  }
  // Path injections: the value must not be able to change the path's structure.
  if (!isPathSafeValue(value)) return { ok: false, reason: "unsafe_path_value" };
  const { path, query, fragment } = splitTarget(pathAndQuery);
  const rewritten =
    cfg.pathTemplate !== undefined
      ? applyPathTemplate(path, cfg.pathTemplate, value)
      : applyPathRegex(path, secret.pathRegex ?? new RegExp(cfg.pathRegex!), cfg.pathReplacement!, value);
  if (rewritten === null) return { ok: true, pathAndQuery, count: 0 };
  if (!rewritten.startsWith("/")) return { ok: false, reason: "unsafe_path_value" };
  return { ok: true, pathAndQuery: joinTarget(rewritten, query, fragment), count: 1 };
}
