// HTTP/1.1 message heads as the gateway reads them (RFC 9112): the request line kept byte for byte (the
// request-target is never re-encoded or normalised, CONTRACT §6.7), header lines in order with their
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

function headerLines(lines: string[], from: number): HeaderLines | null {
  const out: HeaderLines = [];
  for (let i = from; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    if (colon <= 0) return null;
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return null;
    const value = line.slice(colon + 1).trim();
    if (FORBIDDEN_IN_VALUE.test(value)) return null;
    out.push([name, value]);
  }
  return out;
}

/** Parses `buf[0, end)` (end = index of the blank line's CRLFCRLF). */
export function parseRequestHead(buf: Buffer, end: number): RequestHead | null {
  const lines = buf.toString("latin1", 0, end).split("\r\n");
  const first = lines[0]!;
  const sp1 = first.indexOf(" ");
  const sp2 = first.lastIndexOf(" ");
  if (sp1 <= 0 || sp2 <= sp1 + 1) return null;
  const method = first.slice(0, sp1);
  const target = first.slice(sp1 + 1, sp2);
  const version = first.slice(sp2 + 1);
  if (!TOKEN.test(method) || !TARGET.test(target) || (version !== "HTTP/1.1" && version !== "HTTP/1.0")) return null;
  const headers = headerLines(lines, 1);
  return headers ? { method, target, http10: version === "HTTP/1.0", headers } : null;
}

export function parseResponseHead(buf: Buffer, end: number): ResponseHead | null {
  const lines = buf.toString("latin1", 0, end).split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0]!);
  if (!m) return null;
  const headers = headerLines(lines, 1);
  return headers ? { status: Number(m[1]), reason: m[2] ?? "", headers } : null;
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

/** Whether a field named `name` (any case) is `lowerName`; the length check spares most lowercasing. */
export function isNamed(name: string, lowerName: string): boolean {
  return name.length === lowerName.length && name.toLowerCase() === lowerName;
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
