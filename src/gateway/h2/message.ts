// HTTP/2 message heads as the gateway reads them (RFC 9113 §8.2 and RFC 9113 §8.3): pseudo-header fields first, each once,
// names lowercase tokens, no connection-specific fields, `te` only `trailers`, values without NUL, CR or LF (they
// may be written into an HTTP/1.1 head next: nothing may split it). Anything else is malformed, never guessed.
// Split cookie fields are joined again for an HTTP/1.1 peer (RFC 9113 §8.2.3).
import { FORBIDDEN_IN_VALUE, TOKEN, type HeaderLines } from "../http1/head.ts";
import type { HeaderField } from "./hpack.ts";

export interface H2RequestHead {
  method: string;
  scheme: string | null;
  authority: string | null;
  /** `:path` (for CONNECT, which has none: the authority). */
  target: string;
  /** The regular fields, with `host` from `:authority` when the agent sent none. */
  headers: HeaderLines;
  /** content-length, −1 when absent. */
  contentLength: number;
}

export interface H2ResponseHead {
  status: number;
  headers: HeaderLines;
}

/** Fields that only mean something on one HTTP/1.1 connection (RFC 9113 §8.2.2). */
export const CONNECTION_SPECIFIC = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]);
const UPPER = /[A-Z]/;

function validName(name: string): boolean {
  return TOKEN.test(name) && !UPPER.test(name);
}

/** A regular field that may be kept; null when it makes the message malformed. */
function regular(name: string, value: string): boolean {
  if (!validName(name) || FORBIDDEN_IN_VALUE.test(value) || CONNECTION_SPECIFIC.has(name)) return false;
  return name !== "te" || value === "trailers";
}

function contentLengthOf(value: string, seen: number): number {
  if (!/^\d{1,15}$/.test(value)) return -2;
  const n = Number(value);
  return seen >= 0 && seen !== n ? -2 : n;
}

/** A request head; null when it is malformed (the stream is reset with PROTOCOL_ERROR). */
export function requestHead(fields: HeaderField[]): H2RequestHead | null {
  let method: string | null = null;
  let scheme: string | null = null;
  let authority: string | null = null;
  let path: string | null = null;
  let contentLength = -1;
  let cookie: string | null = null;
  let host = false;
  const headers: HeaderLines = [];
  let regularSeen = false;
  for (const [name, value] of fields) {
    if (name.charCodeAt(0) === 0x3a) {
      if (regularSeen || FORBIDDEN_IN_VALUE.test(value)) return null;
      if (name === ":method" && method === null) method = value;
      else if (name === ":scheme" && scheme === null) scheme = value;
      else if (name === ":authority" && authority === null) authority = value;
      else if (name === ":path" && path === null) path = value;
      // Anything else (:protocol: extended CONNECT is not offered, RFC 8441; :status; a repeat) is malformed.
      else return null;
      continue;
    }
    regularSeen = true;
    if (!regular(name, value)) return null;
    if (name === "content-length") {
      contentLength = contentLengthOf(value, contentLength);
      if (contentLength === -2) return null;
    } else if (name === "cookie") {
      cookie = cookie === null ? value : `${cookie}; ${value}`;
      continue;
    } else if (name === "host") host = true;
    headers.push([name, value]);
  }
  if (method === null || !TOKEN.test(method)) return null;
  if (method === "CONNECT") {
    if (authority === null || scheme !== null || path !== null) return null;
  } else if (scheme === null || path === null || path === "") return null;
  if (cookie !== null) headers.push(["cookie", cookie]);
  if (!host && authority !== null) headers.unshift(["host", authority]);
  return { method, scheme, authority, target: path ?? authority!, headers, contentLength };
}

/** A response head from an origin; null when it is malformed (the request fails as a malformed response). */
export function responseHead(fields: HeaderField[]): H2ResponseHead | null {
  let status = -1;
  const headers: HeaderLines = [];
  for (const [name, value] of fields) {
    if (name.charCodeAt(0) === 0x3a) {
      if (name !== ":status" || status !== -1 || headers.length > 0 || !/^\d{3}$/.test(value)) return null;
      status = Number(value);
      continue;
    }
    if (!validName(name) || FORBIDDEN_IN_VALUE.test(value) || CONNECTION_SPECIFIC.has(name)) return null;
    headers.push([name, value]);
  }
  return status < 0 ? null : { status, headers };
}

/** Trailers: regular fields only; null when malformed. */
export function trailerFields(fields: HeaderField[]): HeaderLines | null {
  for (const [name, value] of fields) if (name.charCodeAt(0) === 0x3a || !regular(name, value)) return null;
  return fields;
}

/** Header lines as an h2 peer takes them: names lowercased, connection-specific fields dropped. */
export function h2Fields(lines: Iterable<[string, string]>, into: HeaderField[]): HeaderField[] {
  for (const [name, value] of lines) {
    const lower = name.toLowerCase();
    if (CONNECTION_SPECIFIC.has(lower) || lower === "host" || lower === "te") continue;
    into.push([lower, value]);
  }
  return into;
}
