// The agent token from `Proxy-Authorization: Basic base64("x:<token>")` (docs/gateway.md#proxy-authentication): the password when
// non-empty, else the username; with no colon, the whole decoded text.

export function proxyToken(header: string | null | undefined): string | null {
  if (!header) return null;
  const m = /^\s*basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!m) return null;
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon === -1) return decoded || null;
  const password = decoded.slice(colon + 1);
  return password || decoded.slice(0, colon) || null;
}
