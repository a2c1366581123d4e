// Where an MCP server's logins happen (docs/mcp.md#the-login): its protected-resource metadata (RFC 9728, named by
// the `WWW-Authenticate` of a 401 or found at `/.well-known/oauth-protected-resource`), then its authorization
// server's metadata (RFC 8414, or OpenID discovery). A server without protected-resource metadata (the MCP
// specification's first version) is its own authorization server. Every URL found is held to the rule for the
// server's own URL (https, or http to loopback when self-hosted) before credgate sends anything to it.
import type { Mode } from "../../runtime/config.ts";
import { channelUrlError } from "../notifications/channels.ts";
import { boundedJson, OutboundRefused, type McpFetch } from "./egressFetch.ts";
import { PROTOCOL_VERSION } from "./toolList.ts";

const MAX_METADATA_BYTES = 256 * 1024;

export interface AuthorizationServer {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  registrationEndpoint: string | null;
  tokenAuthMethods: string[] | null;
}

export interface Discovered {
  /** The RFC 8707 resource indicator to ask tokens for. */
  resource: string;
  scope: string | null;
  server: AuthorizationServer;
}

/** `url` as credgate will send to it: https, or http to loopback in self-hosted mode. */
export function checkedUrl(raw: unknown, mode: Mode, what: string): URL {
  if (typeof raw !== "string" || channelUrlError(raw, mode) !== null) throw new OutboundRefused(`${what} is not an https:// URL`);
  return new URL(raw);
}

/** `key="value"` parameters of a `WWW-Authenticate: Bearer …` challenge. */
export function challengeParams(header: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const m of header.matchAll(/([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) out[m[1]!.toLowerCase()] = (m[2] ?? m[3] ?? "").replace(/\\(.)/g, "$1");
  return out;
}

async function getJson(fetch: McpFetch, url: URL, what: string): Promise<Record<string, unknown> | null> {
  const res = await fetch(url, { method: "GET", headers: { accept: "application/json", "mcp-protocol-version": PROTOCOL_VERSION, "user-agent": "credgate" } });
  if (res.status !== 200) {
    void res.body?.cancel().catch(() => {});
    return null;
  }
  return boundedJson(res, MAX_METADATA_BYTES, what);
}

/** The challenge a request without credentials gets: the `WWW-Authenticate` of a 401, or null. */
async function probe(fetch: McpFetch, url: URL): Promise<string | null> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "user-agent": "credgate" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "credgate", version: "probe" } } }),
  });
  void res.body?.cancel().catch(() => {});
  return res.status === 401 ? res.headers.get("www-authenticate") : null;
}

/** The resource's metadata URLs to try: the challenge's, else the path-aware well-known URL, then the root one. */
function resourceMetadataUrls(server: URL, challenge: Record<string, string>, mode: Mode): URL[] {
  // The metadata may live elsewhere; what it says is held to the server's origin below (its `resource`).
  if (challenge.resource_metadata) return [checkedUrl(challenge.resource_metadata, mode, "The server's resource_metadata URL")];
  const path = server.pathname.replace(/\/+$/, "");
  const urls = [new URL(`/.well-known/oauth-protected-resource${path}`, server.origin)];
  if (path) urls.push(new URL("/.well-known/oauth-protected-resource", server.origin));
  return urls;
}

/** RFC 8414 §3.1 and OpenID discovery, for an issuer with or without a path. */
function authorizationMetadataUrls(issuer: URL): URL[] {
  const path = issuer.pathname.replace(/\/+$/, "");
  if (!path) return [new URL("/.well-known/oauth-authorization-server", issuer.origin), new URL("/.well-known/openid-configuration", issuer.origin)];
  return [
    new URL(`/.well-known/oauth-authorization-server${path}`, issuer.origin),
    new URL(`/.well-known/openid-configuration${path}`, issuer.origin),
    new URL(`${path}/.well-known/openid-configuration`, issuer.origin),
  ];
}

const sameIssuer = (a: string, b: string) => a.replace(/\/+$/, "") === b.replace(/\/+$/, "");

export async function discover(fetch: McpFetch, serverUrl: string, mode: Mode): Promise<Discovered> {
  const server = new URL(serverUrl);
  const challenge = challengeParams(await probe(fetch, server));
  let resource = serverUrl;
  let scope: string | null = challenge.scope?.trim() || null;
  let issuer: URL = new URL(server.origin);
  for (const url of resourceMetadataUrls(server, challenge, mode)) {
    const prm = await getJson(fetch, url, "The server's protected-resource metadata");
    if (!prm) continue;
    if (typeof prm.resource === "string") {
      // The token is asked for this resource: it must be the server, or a prefix of its URL on its origin.
      let named: URL;
      try {
        named = new URL(prm.resource);
      } catch {
        throw new OutboundRefused("The server's protected-resource metadata names an invalid resource");
      }
      const prefix = named.pathname.replace(/\/+$/, "");
      if (named.origin !== server.origin || !(server.pathname === prefix || server.pathname.startsWith(`${prefix}/`) || prefix === ""))
        throw new OutboundRefused(`The server's protected-resource metadata is for another resource (${prm.resource})`);
      resource = prm.resource;
    }
    const servers = Array.isArray(prm.authorization_servers) ? prm.authorization_servers : [];
    if (servers.length === 0) throw new OutboundRefused("The server's protected-resource metadata names no authorization server");
    issuer = checkedUrl(servers[0], mode, "The authorization server's URL");
    if (!scope && Array.isArray(prm.scopes_supported)) scope = prm.scopes_supported.filter((s): s is string => typeof s === "string").join(" ") || null;
    break;
  }
  return { resource, scope, server: await authorizationServer(fetch, issuer, mode) };
}

async function authorizationServer(fetch: McpFetch, issuer: URL, mode: Mode): Promise<AuthorizationServer> {
  for (const url of authorizationMetadataUrls(issuer)) {
    const meta = await getJson(fetch, url, "The authorization server's metadata");
    if (!meta) continue;
    if (typeof meta.issuer !== "string" || !sameIssuer(meta.issuer, issuer.href)) throw new OutboundRefused(`The authorization server's metadata names another issuer (${String(meta.issuer)})`);
    const methods = meta.code_challenge_methods_supported;
    if (Array.isArray(methods) && !methods.includes("S256")) throw new OutboundRefused("The authorization server does not support PKCE with S256");
    return {
      issuer: meta.issuer,
      authorizationEndpoint: checkedUrl(meta.authorization_endpoint, mode, "The authorization endpoint").href,
      tokenEndpoint: checkedUrl(meta.token_endpoint, mode, "The token endpoint").href,
      registrationEndpoint: meta.registration_endpoint === undefined ? null : checkedUrl(meta.registration_endpoint, mode, "The registration endpoint").href,
      tokenAuthMethods: Array.isArray(meta.token_endpoint_auth_methods_supported) ? meta.token_endpoint_auth_methods_supported.filter((m): m is string => typeof m === "string") : null,
    };
  }
  throw new OutboundRefused(`No authorization server metadata was found for ${issuer.href}`);
}
