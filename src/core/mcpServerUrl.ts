// Which requests belong to a registered MCP server (docs/mcp.md#at-the-gateway): same origin as its URL, and a
// path equal to its path or below it. The origin is normalized as the gateway sees requests: lowercase scheme and
// host, default port omitted; the path prefix has no trailing slash ("" for the whole origin).

export interface McpServerScope {
  origin: string;
  pathPrefix: string;
  /** The origin's host as the gateway compares hosts: lowercase, no port, brackets or trailing dot. */
  host: string;
}

export function mcpServerScope(url: string): McpServerScope {
  const u = new URL(url);
  // URL already lowercases the scheme and host and drops a default port.
  const host = u.hostname.replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "");
  return { origin: u.origin, pathPrefix: u.pathname.replace(/\/+$/, ""), host };
}

/** Whether a request path (without its query) is the server's path or below it. */
export function underPathPrefix(path: string, prefix: string): boolean {
  return prefix === "" || path === prefix || path.startsWith(`${prefix}/`);
}
