// What a registration and a grant of an MCP server may say (docs/mcp.md#registering, docs/mcp.md#tool-grants):
// the shape of `auth`, of the server's URL beyond its scheme, and of argument rules (JSON pointer → glob).
import { isHeaderSafeValue } from "./secretRules.ts";

export const AUTH_SHAPE_MESSAGE = "auth must be one of: {bearer}, {header, value}, {clientId, clientSecret?}";
export const URL_PARTS_MESSAGE = "url must not contain credentials, a query or a fragment";

const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers credgate or the transports own: a static header may not set them. */
const RESERVED_HEADERS = new Set([
  "host", "content-length", "content-type", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer",
  "proxy-authorization", "proxy-connection", "accept", "mcp-session-id", "mcp-protocol-version", "last-event-id",
]);
const MAX_TOKEN = 8192;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const shapeIs = (o: Record<string, unknown>, required: string[], optional: string[] = []) =>
  required.every((k) => k in o) && Object.keys(o).every((k) => required.includes(k) || optional.includes(k));

/** The first thing wrong with `auth`, or null. */
export function mcpAuthError(raw: unknown): string | null {
  if (!isObject(raw)) return AUTH_SHAPE_MESSAGE;
  const secret = (v: unknown, field: string) =>
    typeof v !== "string" || v.length === 0 || v.length > MAX_TOKEN || !isHeaderSafeValue(v) ? `${field} must be 1-${MAX_TOKEN} printable ASCII characters` : null;
  if (shapeIs(raw, ["bearer"])) return secret(raw.bearer, "auth.bearer");
  if (shapeIs(raw, ["header", "value"])) {
    if (typeof raw.header !== "string" || !HTTP_TOKEN.test(raw.header) || raw.header.length > 255) return "auth.header must be a valid HTTP header name";
    if (RESERVED_HEADERS.has(raw.header.toLowerCase())) return `auth.header can't be ${raw.header.toLowerCase()}`;
    return secret(raw.value, "auth.value");
  }
  if (shapeIs(raw, ["clientId"], ["clientSecret"])) {
    if (typeof raw.clientId !== "string" || raw.clientId.length === 0 || raw.clientId.length > 255) return "auth.clientId must be 1-255 characters";
    if (raw.clientSecret !== undefined) return secret(raw.clientSecret, "auth.clientSecret");
    return null;
  }
  return AUTH_SHAPE_MESSAGE;
}

/** A URL whose scheme was already checked: no userinfo, query or fragment (the server is an origin and a path). */
export function mcpUrlPartsError(raw: string): string | null {
  const u = new URL(raw);
  return u.username || u.password || u.search || u.hash || raw.includes("#") ? URL_PARTS_MESSAGE : null;
}

const MAX_RULE_TOOLS = 200;
const MAX_POINTERS = 50;
const MAX_GLOB = 1000;

/** A JSON pointer (RFC 6901): "" or "/"-separated tokens with `~` only as `~0` or `~1`. */
export function isJsonPointer(p: string): boolean {
  return p === "" || (p.startsWith("/") && !/~[^01]|~$/.test(p) && p.length <= 1000);
}

/** The first thing wrong with a grant's `arguments`, or null. */
export function argumentRulesError(raw: unknown): string | null {
  if (!isObject(raw)) return "arguments must be an object";
  const tools = Object.entries(raw);
  if (tools.length > MAX_RULE_TOOLS) return `arguments must name at most ${MAX_RULE_TOOLS} tools`;
  for (const [tool, rules] of tools) {
    if (!isObject(rules)) return `arguments.${tool} must be an object`;
    const pointers = Object.entries(rules);
    if (pointers.length === 0 || pointers.length > MAX_POINTERS) return `arguments.${tool} must have 1-${MAX_POINTERS} JSON pointers`;
    for (const [pointer, glob] of pointers) {
      if (!isJsonPointer(pointer)) return `arguments.${tool}: "${pointer}" is not a JSON pointer`;
      if (typeof glob !== "string" || glob.length === 0 || glob.length > MAX_GLOB) return `arguments.${tool}["${pointer}"] must be a glob of 1-${MAX_GLOB} characters`;
    }
  }
  return null;
}
