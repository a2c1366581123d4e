// The PostgreSQL v3 wire protocol's framing (the database broker, docs/architecture.md): the untyped startup-phase packets, the typed
// messages after them, and the few messages the broker writes or reads itself. Everything else the broker relays
// is passed as the bytes it arrived as; this file only finds where messages begin and end.

export const SSL_REQUEST = 80877103;
export const GSSENC_REQUEST = 80877104;
export const CANCEL_REQUEST = 80877102;
export const PROTOCOL_3 = 196608;

/** A startup-phase packet longer than this is refused: PostgreSQL's own limit (MAX_STARTUP_PACKET_LENGTH). */
export const MAX_STARTUP_PACKET = 10_000;
/** A typed message longer than this is refused: PostgreSQL's own limit for a message it must hold whole (1 GB). */
export const MAX_MESSAGE = 0x3fff_ffff;

export type StartupPacket =
  | { kind: "ssl" }
  | { kind: "gssenc" }
  | { kind: "cancel"; processId: number; secretKey: number }
  | { kind: "startup"; protocol: number; params: Map<string, string> };

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: false });

function view(buf: Uint8Array): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/**
 * The length a startup-phase packet announces (its first four bytes, itself included), or null while fewer than
 * four bytes have come. The caller reads that many bytes and hands them to `parseStartupPacket`.
 */
export function startupPacketLength(buf: Uint8Array): number | null {
  return buf.byteLength < 4 ? null : view(buf).getInt32(0);
}

/** Reads one whole startup-phase packet (its length included). */
export function parseStartupPacket(buf: Uint8Array): StartupPacket | { error: string } {
  if (buf.byteLength < 8) return { error: "invalid length of startup packet" };
  const dv = view(buf);
  const length = dv.getInt32(0);
  if (length !== buf.byteLength || length > MAX_STARTUP_PACKET) return { error: "invalid length of startup packet" };
  const code = dv.getInt32(4);
  if (code === SSL_REQUEST) return length === 8 ? { kind: "ssl" } : { error: "invalid length of startup packet" };
  if (code === GSSENC_REQUEST) return length === 8 ? { kind: "gssenc" } : { error: "invalid length of startup packet" };
  if (code === CANCEL_REQUEST) {
    if (length !== 16) return { error: "invalid length of cancel request packet" };
    return { kind: "cancel", processId: dv.getInt32(8), secretKey: dv.getInt32(12) };
  }
  if (code >>> 16 !== 3) return { error: `unsupported frontend protocol ${code >>> 16}.${code & 0xffff}: server supports 3.0 to 3.0` };
  // name\0value\0 … \0
  const params = new Map<string, string>();
  let at = 8;
  for (;;) {
    if (at >= length) return { error: "invalid startup packet layout: expected terminator as last byte" };
    if (buf[at] === 0) {
      if (at !== length - 1) return { error: "invalid startup packet layout: expected terminator as last byte" };
      break;
    }
    const name = readCString(buf, at);
    if (name.next >= length) return { error: "invalid startup packet layout: expected terminator as last byte" };
    const value = readCString(buf, name.next);
    if (value.next > length) return { error: "invalid startup packet layout: expected terminator as last byte" };
    params.set(name.value, value.value);
    at = value.next;
  }
  return { kind: "startup", protocol: code, params };
}

/** A NUL-terminated string at `offset`; `next` is the offset after its NUL (past the end when there is none). */
export function readCString(body: Uint8Array, offset: number): { value: string; next: number } {
  let end = body.indexOf(0, offset);
  if (end < 0) end = body.byteLength;
  return { value: decoder.decode(body.subarray(offset, end)), next: end + 1 };
}

export interface Message {
  /** The type byte as a char code (`"Q".charCodeAt(0)`, …). */
  type: number;
  /** The payload, without the type byte and the length. */
  body: Uint8Array;
  /** The whole message as it arrived. */
  raw: Uint8Array;
}

/**
 * Splits a byte stream into typed messages (a type byte, then an Int32 length that counts itself). Messages are
 * views of the bytes pushed (no copy unless a message spans two chunks). `next()` answers a message, null while
 * the next one is incomplete, or an error for a length no message can have.
 */
export class MessageReader {
  #chunks: Uint8Array[] = [];
  #buffered = 0;

  get buffered(): number {
    return this.#buffered;
  }

  push(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.byteLength;
  }

  /** The type and length of the next message, without taking it; null while its five header bytes have not come. */
  peekHeader(): { type: number; length: number } | null {
    if (this.#buffered < 5) return null;
    const head = this.#take(5, false);
    return { type: head[0]!, length: view(head).getInt32(1) };
  }

  next(): Message | null | { error: string } {
    const header = this.peekHeader();
    if (!header) return null;
    if (header.length < 4 || header.length > MAX_MESSAGE) return { error: `invalid message length ${header.length}` };
    const total = header.length + 1;
    if (this.#buffered < total) return null;
    const raw = this.#take(total, true);
    return { type: raw[0]!, body: raw.subarray(5), raw };
  }

  /** Takes every byte still buffered (for handing a stream over to a plain relay). */
  drain(): Uint8Array {
    return this.#buffered === 0 ? new Uint8Array(0) : this.#take(this.#buffered, true);
  }

  #take(n: number, consume: boolean): Uint8Array {
    const first = this.#chunks[0]!;
    if (first.byteLength >= n) {
      const out = first.subarray(0, n);
      if (consume) this.#consume(n);
      return out;
    }
    const out = new Uint8Array(n);
    let filled = 0;
    for (const c of this.#chunks) {
      const part = Math.min(c.byteLength, n - filled);
      out.set(c.subarray(0, part), filled);
      filled += part;
      if (filled === n) break;
    }
    if (consume) this.#consume(n);
    return out;
  }

  #consume(n: number): void {
    this.#buffered -= n;
    while (n > 0) {
      const first = this.#chunks[0]!;
      if (first.byteLength <= n) {
        n -= first.byteLength;
        this.#chunks.shift();
      } else {
        this.#chunks[0] = first.subarray(n);
        n = 0;
      }
    }
  }
}

/** A typed message's header: its type byte and its Int32 length. */
export const HEADER = 5;

/**
 * The header of a relayed message that came split across reads (the relay, docs/databases.md#the-relay): its bytes
 * are kept here until it is whole. One buffer per direction for the session's life, so no allocation per message.
 * `bytes` is reused: copy it before handing it to a socket write.
 */
export class HeaderAssembler {
  readonly bytes = Buffer.alloc(HEADER);
  #have = 0;
  /** The type and length of the last header made whole. */
  type = 0;
  length = 0;

  /** The header at `pos` must be assembled here: part of it came in an earlier read, or `chunk` ends inside it. */
  splitAt(chunk: Uint8Array, pos: number): boolean {
    return this.#have > 0 || chunk.length - pos < HEADER;
  }

  /** Part of a header has come and the rest is awaited. */
  get partial(): boolean {
    return this.#have > 0;
  }

  /** Keeps what of the header `chunk` holds from `pos`; answers the position after it. Whole when `partial` is false. */
  take(chunk: Buffer, pos: number): number {
    const k = Math.min(HEADER - this.#have, chunk.length - pos);
    chunk.copy(this.bytes, this.#have, pos, pos + k);
    this.#have += k;
    if (this.#have === HEADER) {
      this.#have = 0;
      this.type = this.bytes[0]!;
      this.length = this.bytes.readInt32BE(1);
    }
    return pos + k;
  }
}

// Builders: each answers one whole message.

/** A message of `type` with `body` as its payload. */
export function message(type: string, body: Uint8Array = new Uint8Array(0)): Uint8Array {
  const out = new Uint8Array(5 + body.byteLength);
  out[0] = type.charCodeAt(0);
  view(out).setInt32(1, 4 + body.byteLength);
  out.set(body, 5);
  return out;
}

function cstrings(...parts: string[]): Uint8Array {
  const encoded = parts.map((p) => encoder.encode(p));
  const out = new Uint8Array(encoded.reduce((n, e) => n + e.byteLength + 1, 0));
  let at = 0;
  for (const e of encoded) {
    out.set(e, at);
    at += e.byteLength + 1;
  }
  return out;
}

function int32s(...values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  values.forEach((v, i) => view(out).setInt32(i * 4, v));
  return out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** ErrorResponse with severity (localized and not), SQLSTATE and message: what every client shows. */
export function errorResponse(severity: "ERROR" | "FATAL", code: string, text: string): Uint8Array {
  return message("E", concat(cstrings(`S${severity}`, `V${severity}`, `C${code}`, `M${text}`), new Uint8Array(1)));
}

export function readyForQuery(status: number): Uint8Array {
  return message("Z", Uint8Array.of(status));
}

export function authenticationOk(): Uint8Array {
  return message("R", int32s(0));
}

export function authenticationCleartextPassword(): Uint8Array {
  return message("R", int32s(3));
}

export function backendKeyData(processId: number, secretKey: number): Uint8Array {
  return message("K", int32s(processId, secretKey));
}

export function parameterStatus(name: string, value: string): Uint8Array {
  return message("S", cstrings(name, value));
}

/** The untyped startup message: protocol 3.0 and the parameters, ending with an empty name. */
export function startupMessage(params: Record<string, string>): Uint8Array {
  const body = concat(int32s(PROTOCOL_3), cstrings(...Object.entries(params).flat()), new Uint8Array(1));
  return concat(int32s(4 + body.byteLength), body);
}

export function sslRequest(): Uint8Array {
  return int32s(8, SSL_REQUEST);
}

export function cancelRequest(processId: number, secretKey: number): Uint8Array {
  return int32s(16, CANCEL_REQUEST, processId, secretKey);
}

export function passwordMessage(password: string): Uint8Array {
  return message("p", cstrings(password));
}

export function saslInitialResponse(mechanism: string, data: Uint8Array): Uint8Array {
  return message("p", concat(cstrings(mechanism), int32s(data.byteLength), data));
}

export function saslResponse(data: Uint8Array): Uint8Array {
  return message("p", data);
}

// Parsers of message bodies.

/** The fields of an ErrorResponse or NoticeResponse body, by their one-letter codes (S, V, C, M, D, …). */
export function parseErrorFields(body: Uint8Array): Map<string, string> {
  const fields = new Map<string, string>();
  let at = 0;
  while (at < body.byteLength && body[at] !== 0) {
    const code = String.fromCharCode(body[at]!);
    const value = readCString(body, at + 1);
    fields.set(code, value.value);
    at = value.next;
  }
  return fields;
}

/** The query string of a `Q` message. */
export function parseQuery(body: Uint8Array): string {
  return readCString(body, 0).value;
}

/** The statement name and query string of a `P` message (its parameter types are not needed). */
export function parseParse(body: Uint8Array): { name: string; query: string } {
  const name = readCString(body, 0);
  return { name: name.value, query: readCString(body, name.next).value };
}

/** The password of a `p` message answering AuthenticationCleartextPassword. */
export function parsePassword(body: Uint8Array): string {
  return readCString(body, 0).value;
}
