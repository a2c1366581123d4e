// The path and query of an API request, read from its request target only, never from the Host header
// (docs/api.md#routing). Bun makes `request.url` of the Host header and the target when the Host is a valid
// host name ("http://x/v1/agents"), and is the bare target otherwise ("/v1/agents" for an empty or malformed
// Host); the gateway builds one the same way for its control paths. So the authority, whatever its length
// or content, is skipped up to the first character that ends it, and the target is parsed below one fixed
// origin: every Host yields the same path and query.
const ORIGIN = "http://localhost";
/** What ends a URL's authority (the WHATWG parser reads `\` as `/` in http and https URLs). */
const AUTHORITY_END = new Set(["/", "?", "#", "\\"]);

export function requestTarget(url: string): URL {
  let start = 0;
  if (!url.startsWith("/")) {
    const scheme = url.indexOf("://");
    if (scheme !== -1) start = scheme + 3;
    while (start < url.length && !AUTHORITY_END.has(url[start]!)) start++;
  }
  const target = url.slice(start);
  const rooted = target.startsWith("/") || target.startsWith("\\");
  return URL.parse(ORIGIN + (rooted ? "" : "/") + target) ?? new URL(ORIGIN);
}
