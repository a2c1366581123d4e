// Every way an origin may read one request path (docs/injection.md#every-reading-of-a-path). The target goes
// upstream byte for byte, but origins differ in how they read it: one takes `/x/../admin` literally (S3 keys),
// another removes the dot segments and serves `/admin`; one decodes `%61dmin`, another routes `%2F` as `/` or
// drops `;v=1` segment parameters. Whatever judges the path (policy, secret and catalog path patterns, resource
// guards, metering, approvals) judges every reading: the strictest verdict wins, and a pattern that grants must
// match them all. Pure; computed once per request, and most paths have exactly one reading.

/** The readings of a path (without its query), the path as sent first; never empty, no duplicates. */
export type PathReadings = readonly string[];

/** Nothing any origin could read differently: no percent-encoding, `;`, backslash, dot segment or empty segment. */
const MAY_DIFFER = /[%;\\]|\/\.|^\.|\/\//;

/**
 * The path as sent; its RFC 3986 §6.2.2 normal form (percent-encoded unreserved characters decoded, the hex of
 * the others uppercased, dot segments removed); and each of the two also read with `%2F`, `%5C` and `\` as
 * separators and `;` segment parameters stripped (in either order), alone and then normalised again with
 * repeated slashes merged (as nginx does), so that `/x/..%2F/admin` also reads `/admin`.
 */
export function pathReadings(path: string): PathReadings {
  if (!MAY_DIFFER.test(path)) return [path];
  const out = new Set<string>([path]);
  const normal = normalForm(path);
  out.add(normal);
  for (const base of [path, normal]) {
    for (const alt of [stripParameters(slashesDecoded(base)), slashesDecoded(stripParameters(base))]) {
      out.add(alt);
      out.add(normalForm(alt.replace(/\/{2,}/g, "/")));
    }
  }
  return [...out];
}

/**
 * The readings of a request target's path. A `#` has no place in a request target, and origins disagree about
 * one that arrives anyway: most end the path there (as the path the gateway logs does), others (Go's
 * net/http) keep it in the path and clean it, serving `/x#/../admin` as `/admin`. Both are read.
 */
export function targetReadings(target: string): PathReadings {
  const q = target.indexOf("?");
  const path = q === -1 ? target : target.slice(0, q);
  const hash = path.indexOf("#");
  if (hash === -1) return pathReadings(path);
  return [...new Set([...pathReadings(path.slice(0, hash)), ...pathReadings(path)])];
}

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** RFC 3986 §6.2.2: case of percent-encodings, percent-encoded unreserved characters, dot segments. */
export function normalForm(path: string): string {
  const decoded = path.includes("%")
    ? path.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => {
        const c = String.fromCharCode(parseInt(hex, 16));
        return UNRESERVED.test(c) ? c : `%${hex.toUpperCase()}`;
      })
    : path;
  return removeDotSegments(decoded);
}

/** RFC 3986 §5.2.4 for an absolute path; anything not starting with `/` (`*`) is left as it is. */
export function removeDotSegments(path: string): string {
  if (!path.startsWith("/") || !/(^|\/)\.\.?(\/|$)/.test(path)) return path;
  const segments = path.split("/");
  const out: string[] = [];
  for (let i = 1; i < segments.length; i++) {
    const s = segments[i]!;
    const last = i === segments.length - 1;
    if (s === "." || s === "..") {
      if (s === "..") out.pop();
      // `/a/.` and `/a/b/..` end in a slash: `/a/`.
      if (last) out.push("");
      continue;
    }
    out.push(s);
  }
  return `/${out.join("/")}`;
}

/** `%2F`, `%5C` and a bare `\` read as `/` (origins that decode before routing, or treat `\` as a separator). */
function slashesDecoded(path: string): string {
  return path.replace(/%2F|%5C|\\/gi, "/");
}

/** `;` segment parameters dropped: `/admin;v=1/x` → `/admin/x` (servlet containers, some routers). */
function stripParameters(path: string): string {
  return path.includes(";") ? path.replace(/;[^/]*/g, "") : path;
}
