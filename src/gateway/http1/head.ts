// HTTP/1.1 message heads as the gateway reads them (RFC 9112): the request line kept byte for byte (the
// request-target is never re-encoded or normalised, docs/injection.md#injection-variants), header lines in order with their
// original case, and the body framing they announce. Anything ambiguous is refused, never guessed:
// obs-fold, a name with spaces, Transfer-Encoding other than chunked, conflicting Content-Length values,
// or both framings at once (request smuggling).

export type HeaderLines = [name: string, value: string][];

export interface RequestHead {
  method: string;
  /** The request-target exactly as its bytes arrived (latin1). */
  target: string;
  /** HTTP/1.0 clients get one response per connection. */
  http10: boolean;
  headers: HeaderLines;
}

export interface ResponseHead {
  status: number;
  reason: string;
  headers: HeaderLines;
}

/** -1: chunked; null: no framing header (the caller decides); n ≥ 0: Content-Length. */
export type Framing = number | null;
export const CHUNKED = -1;

export const MAX_HEAD_BYTES = 64 * 1024;

/** An HTTP token (RFC 9110 §5.6.2): what a method and a field name are made of. */
export const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Visible bytes only in the target: no spaces, no controls, DEL excluded; bytes ≥ 0x80 pass as they came.
const TARGET = /^[\x21-\x7e\x80-\xff]+$/;
/** A NUL, or a CR or LF that is not part of a line end: never a field value (RFC 9110 §5.5). */
export const FORBIDDEN_IN_VALUE = /[\0\r\n]/;

/** What String.prototype.trim takes off a latin1 string: TAB, LF, VT, FF, CR, SP and NBSP. */
function isTrimmed(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0;
}

/**
 * The header lines of `text` from `at` (just past the start line's CRLF) to its end, read in place: no line
 * array and no line strings, only each name and trimmed value (a head is read per request, both ways).
 */
function headerLines(text: string, at: number): HeaderLines | null {
  const out: HeaderLines = [];
  while (at < text.length) {
    let eol = text.indexOf("\r\n", at);
    if (eol < 0) eol = text.length;
    const colon = text.indexOf(":", at);
    if (colon <= at || colon >= eol) return null;
    const name = text.slice(at, colon);
    if (!TOKEN.test(name)) return null;
    let from = colon + 1;
    let to = eol;
    while (from < to && isTrimmed(text.charCodeAt(from))) from++;
    while (to > from && isTrimmed(text.charCodeAt(to - 1))) to--;
    const value = text.slice(from, to);
    if (FORBIDDEN_IN_VALUE.test(value)) return null;
    out.push([name, value]);
    at = eol + 2;
  }
  return out;
}

/** The end of the start line: its CRLF, or the end of the head. */
function startLineEnd(text: string): number {
  const eol = text.indexOf("\r\n");
  return eol < 0 ? text.length : eol;
}

/** Parses `buf[0, end)` (end = index of the blank line's CRLFCRLF). */
export function parseRequestHead(buf: Buffer, end: number): RequestHead | null {
  const text = buf.toString("latin1", 0, end);
  const eol = startLineEnd(text);
  const sp1 = text.indexOf(" ");
  const sp2 = eol === 0 ? -1 : text.lastIndexOf(" ", eol - 1);
  if (sp1 <= 0 || sp1 >= eol || sp2 <= sp1 + 1) return null;
  const method = text.slice(0, sp1);
  const target = text.slice(sp1 + 1, sp2);
  const version = text.slice(sp2 + 1, eol);
  if (!TOKEN.test(method) || !TARGET.test(target) || (version !== "HTTP/1.1" && version !== "HTTP/1.0")) return null;
  const headers = headerLines(text, eol + 2);
  return headers ? { method, target, http10: version === "HTTP/1.0", headers } : null;
}

/**
 * A CONNECT's authority-form target (RFC 9112 §3.2.3): `host:port`, an IPv6 literal in brackets; the port
 * defaults to 443. Null when it is anything else.
 */
export function parseAuthority(target: string): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]@?#]+)(?::(\d{1,5}))?$/.exec(target);
  if (!m) return null;
  const port = m[2] ? Number(m[2]) : 443;
  if (port < 1 || port > 65535) return null;
  return { host: m[1]!, port };
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

/** `HTTP/1.x NNN[ reason]`: the reason may hold anything but CR and LF. */
export function parseResponseHead(buf: Buffer, end: number): ResponseHead | null {
  const text = buf.toString("latin1", 0, end);
  const eol = startLineEnd(text);
  const minor = text.charCodeAt(7);
  if (eol < 12 || !text.startsWith("HTTP/1.") || (minor !== 0x30 && minor !== 0x31) || text.charCodeAt(8) !== 0x20) return null;
  const d0 = text.charCodeAt(9);
  const d1 = text.charCodeAt(10);
  const d2 = text.charCodeAt(11);
  if (!isDigit(d0) || !isDigit(d1) || !isDigit(d2) || (eol > 12 && text.charCodeAt(12) !== 0x20)) return null;
  const reason = eol > 13 ? text.slice(13, eol) : "";
  if (reason.includes("\r") || reason.includes("\n")) return null;
  const headers = headerLines(text, eol + 2);
  return headers ? { status: (d0 - 0x30) * 100 + (d1 - 0x30) * 10 + (d2 - 0x30), reason, headers } : null;
}

/** The framing a head announces; undefined when it is invalid. */
export function framingOf(headers: HeaderLines): Framing | undefined {
  let length: number | null = null;
  let chunked = false;
  for (const [name, value] of headers) {
    if (isNamed(name, "transfer-encoding")) {
      if (chunked || value.toLowerCase() !== "chunked") return undefined;
      chunked = true;
    } else if (isNamed(name, "content-length")) {
      if (!/^\d{1,15}$/.test(value)) return undefined;
      const v = Number(value);
      if (length !== null && length !== v) return undefined;
      length = v;
    }
  }
  if (chunked) return length === null ? CHUNKED : undefined;
  return length;
}

/** Whether `name` starts with `lowerPrefix` (lowercase), ASCII letters compared in any case: no string is made. */
export function hasNamePrefix(name: string, lowerPrefix: string): boolean {
  const n = lowerPrefix.length;
  if (name.length < n) return false;
  for (let i = 0; i < n; i++) {
    const c = name.charCodeAt(i);
    const t = lowerPrefix.charCodeAt(i);
    if (c !== t && !(t >= 0x61 && t <= 0x7a && c === t - 0x20)) return false;
  }
  return true;
}

/**
 * Whether a field named `name` (any case) is `lowerName`. Field names are tokens (ASCII), so comparing ASCII
 * letters in any case is the whole of it: names are checked on every header line both ways, and lowercasing
 * each would make a string each time.
 */
export function isNamed(name: string, lowerName: string): boolean {
  return name.length === lowerName.length && hasNamePrefix(name, lowerName);
}

/** Whether a field named `name` (any case) is one of `lowerNames`. */
export function isOneOf(name: string, lowerNames: readonly string[]): boolean {
  for (const lower of lowerNames) if (isNamed(name, lower)) return true;
  return false;
}

export function headerValue(headers: HeaderLines, lowerName: string): string | null {
  for (const [name, value] of headers) if (isNamed(name, lowerName)) return value;
  return null;
}

const NO_TOKENS: ReadonlySet<string> = new Set();

/** The lowercase tokens of every Connection header (one shared empty set for a head without one: most heads). */
export function connectionTokens(headers: HeaderLines): ReadonlySet<string> {
  let out: Set<string> | null = null;
  for (const [name, value] of headers) {
    if (!isNamed(name, "connection")) continue;
    for (const t of value.split(",")) {
      const token = t.trim().toLowerCase();
      if (token) (out ??= new Set()).add(token);
    }
  }
  return out ?? NO_TOKENS;
}
