// Granular resource scopes of a connection grant (docs/injection.md#resource-limits `resources`/`sessionPolicy`, docs/injection.md#resource-limits
// guard): validation of the provider-specific shape, and the check of one request against it. Pure.

export type ResourceKind = "repositories" | "folders";
export type Resources = Partial<Record<ResourceKind, string[]>>;

const LIMITS: Record<ResourceKind, { max: number }> = { repositories: { max: 1000 }, folders: { max: 100 } };
const REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

/**
 * Validates a `resources` (or legacy `sessionPolicy`) value for an app whose resource kind is `kind`.
 * `null`, absent and `{}` mean unrestricted. Returns the normalized value or an error message.
 */
export function parseResources(
  value: unknown,
  kind: ResourceKind | undefined,
  provider: string,
  field: "resources" | "sessionPolicy",
): { ok: true; value: Resources | null } | { ok: false; message: string } {
  if (value === null || value === undefined) return { ok: true, value: null };
  if (typeof value !== "object" || Array.isArray(value)) return { ok: false, message: `${field} must be an object` };
  const keys = Object.keys(value);
  if (keys.length === 0) return { ok: true, value: null };
  if (!kind) return { ok: false, message: `${field} is not supported for ${provider}` };
  const unknown = keys.find((k) => k !== kind);
  if (unknown !== undefined) return { ok: false, message: `${field} has unknown field "${unknown}"` };
  const list = (value as Record<string, unknown>)[kind];
  const path = `${field}.${kind}`;
  if (!Array.isArray(list)) return { ok: false, message: `${path} must be an array` };
  if (list.length < 1 || list.length > LIMITS[kind].max) return { ok: false, message: `${path} must have 1-${LIMITS[kind].max} items` };
  const out: string[] = [];
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    if (typeof item !== "string") return { ok: false, message: `${path}[${i}] must be a string` };
    const v = item.trim();
    if (kind === "repositories" && !REPO.test(v)) return { ok: false, message: `${path}[${i}] must look like owner/repo` };
    if (kind === "folders") {
      if (v.length > 1024) return { ok: false, message: `${path}[${i}] must be at most 1024 characters` };
      if (!v.startsWith("/")) return { ok: false, message: `${path}[${i}] must be an absolute path` };
    }
    out.push(v);
  }
  return { ok: true, value: { [kind]: out } };
}

export type GuardVerdict = { ok: true } | { ok: false; resource: string };

// ── github repositories ─────────────────────────────────────────────────────────────────────────────

/** The `owner/repo` a GitHub request names, or null when it names none. */
export function githubRepository(host: string, path: string): string | null {
  const segs = path.split("/");
  if (host === "api.github.com" || host === "uploads.github.com") {
    return segs[1] === "repos" && segs[2] && segs[3] ? `${decodeSeg(segs[2])}/${decodeSeg(segs[3])}` : null;
  }
  if (host === "github.com" || host === "raw.githubusercontent.com") {
    return segs[1] && segs[2] ? `${decodeSeg(segs[1])}/${decodeSeg(segs[2]).replace(/\.git$/i, "")}` : null;
  }
  return null;
}

function decodeSeg(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function checkRepositories(allowed: string[], host: string, method: string, path: string): GuardVerdict {
  // GraphQL can reach any repository in one call, so a repository-scoped grant cannot allow it.
  if (host === "api.github.com" && method === "POST" && path === "/graphql") return { ok: false, resource: "the GraphQL API" };
  // `/repositories/{id}/…` names a repository by its numeric id, which cannot be matched to a name: fail closed.
  const byId = (host === "api.github.com" || host === "uploads.github.com") && /^\/repositories\/([^/]+)/.exec(path);
  if (byId) return { ok: false, resource: `repository id ${decodeSeg(byId[1]!)}` };
  const repo = githubRepository(host, path);
  if (repo === null) return { ok: true };
  const lower = repo.toLowerCase();
  return allowed.some((a) => a.toLowerCase() === lower) ? { ok: true } : { ok: false, resource: repo };
}

// ── dropbox folders ─────────────────────────────────────────────────────────────────────────────────

const PATH_FIELDS = ["path", "from_path", "to_path"] as const;

/** Dropbox paths are case-insensitive; compare lowercased, without a trailing slash. */
function normFolder(p: string): string {
  const lower = p.toLowerCase();
  return lower.length > 1 && lower.endsWith("/") ? lower.slice(0, -1) : lower;
}

function within(path: string, folder: string): boolean {
  // `.` and `..` segments could climb out of the folder; no legitimate Dropbox path needs them.
  if (path.split("/").some((seg) => seg === "." || seg === "..")) return false;
  const p = normFolder(path);
  const f = normFolder(folder);
  if (f === "/") return p === "" || p.startsWith("/");
  return p === f || p.startsWith(`${f}/`);
}

/** The path fields named by a Dropbox request: in its JSON body and its `Dropbox-API-Arg` header. */
export function dropboxPaths(bodyText: string | null, apiArg: string | null): string[] | "unreadable" {
  const out: string[] = [];
  for (const text of [bodyText, apiArg]) {
    if (!text || !text.trim()) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Only JSON bodies name paths; an upload body is file content, its path is in the header.
      if (text === apiArg) return "unreadable";
      continue;
    }
    collectPaths(parsed, out);
  }
  return out;
}

function collectPaths(value: unknown, out: string[]): void {
  if (Array.isArray(value)) {
    for (const v of value) collectPaths(v, out);
    return;
  }
  if (!value || typeof value !== "object") return;
  for (const [k, v] of Object.entries(value)) {
    if ((PATH_FIELDS as readonly string[]).includes(k) && typeof v === "string") out.push(v);
    else if (typeof v === "object") collectPaths(v, out);
  }
}

export function checkFolders(allowed: string[], paths: string[] | "unreadable"): GuardVerdict {
  if (paths === "unreadable") return { ok: false, resource: "this request" };
  for (const p of paths) {
    // Ids (`id:…`), revisions and namespace-relative paths cannot be placed in a folder: fail closed.
    if (!allowed.some((f) => within(p, f))) return { ok: false, resource: p === "" ? "/" : p };
  }
  return { ok: true };
}
