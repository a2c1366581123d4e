// HPACK (RFC 7541), both ways, for the gateway's HTTP/2 (docs/gateway.md#http2-and-grpc). The decoder keeps the
// peer's dynamic table within the size we announced (a table size update beyond it is an attack: the caller
// answers GOAWAY ENHANCE_YOUR_CALM) and stops collecting a header list past its size limit while it still
// decodes the whole block (the table must stay in step). Strings are latin1, as HTTP/1.1 heads are read. The
// encoder indexes repeated fields (gRPC streams send the same ones over and over) and never indexes
// credentials; it never Huffman-codes (literals are valid and cost no CPU).
import { huffmanDecode } from "./huffman.ts";

export type HeaderField = [name: string, value: string];

/** RFC 7541 Appendix A (index 1 is the first entry). */
export const STATIC_TABLE: readonly HeaderField[] = [[":authority", ""], [":method", "GET"], [":method", "POST"], [":path", "/"], [":path", "/index.html"], [":scheme", "http"], [":scheme", "https"], [":status", "200"], [":status", "204"], [":status", "206"], [":status", "304"], [":status", "400"], [":status", "404"], [":status", "500"], ["accept-charset", ""], ["accept-encoding", "gzip, deflate"], ["accept-language", ""], ["accept-ranges", ""], ["accept", ""], ["access-control-allow-origin", ""], ["age", ""], ["allow", ""], ["authorization", ""], ["cache-control", ""], ["content-disposition", ""], ["content-encoding", ""], ["content-language", ""], ["content-length", ""], ["content-location", ""], ["content-range", ""], ["content-type", ""], ["cookie", ""], ["date", ""], ["etag", ""], ["expect", ""], ["expires", ""], ["from", ""], ["host", ""], ["if-match", ""], ["if-modified-since", ""], ["if-none-match", ""], ["if-range", ""], ["if-unmodified-since", ""], ["last-modified", ""], ["link", ""], ["location", ""], ["max-forwards", ""], ["proxy-authenticate", ""], ["proxy-authorization", ""], ["range", ""], ["referer", ""], ["refresh", ""], ["retry-after", ""], ["server", ""], ["set-cookie", ""], ["strict-transport-security", ""], ["transfer-encoding", ""], ["user-agent", ""], ["vary", ""], ["via", ""], ["www-authenticate", ""]];

const STATIC_EXACT = new Map<string, number>();
const STATIC_NAME = new Map<string, number>();
STATIC_TABLE.forEach(([name, value], i) => {
  STATIC_EXACT.set(`${name}\0${value}`, i + 1);
  if (!STATIC_NAME.has(name)) STATIC_NAME.set(name, i + 1);
});

/** What an entry costs in the table (RFC 7541 §4.1). */
const ENTRY_OVERHEAD = 32;

/** A block that cannot be decoded. `calm`: a table size beyond the announced limit (an attack, not a bug). */
export class HpackError extends Error {
  constructor(
    message: string,
    readonly calm = false,
  ) {
    super(message);
  }
}

export interface DecodedBlock {
  headers: HeaderField[];
  /** The list went past the size limit: `headers` is incomplete and must not be used. */
  oversize: boolean;
}

export class HpackDecoder {
  /** Newest first. */
  readonly #entries: HeaderField[] = [];
  #size = 0;
  #max: number;

  /** `limit`: the SETTINGS_HEADER_TABLE_SIZE we announced (4096 unless changed). */
  constructor(private readonly limit = 4096) {
    this.#max = limit;
  }

  /** Decodes one complete header block; `maxListSize` as SETTINGS_MAX_HEADER_LIST_SIZE counts it. */
  decode(block: Buffer, maxListSize: number): DecodedBlock {
    const headers: HeaderField[] = [];
    let listSize = 0;
    let oversize = false;
    let at = 0;
    let fieldSeen = false;
    const end = block.length;
    while (at < end) {
      const b = block[at]!;
      let name: string;
      let value: string;
      if (b & 0x80) {
        const [index, next] = readInt(block, at, 7);
        at = next;
        const entry = this.#entry(index);
        name = entry[0];
        value = entry[1];
      } else if ((b & 0xe0) === 0x20) {
        // Dynamic table size update: only at the start of a block (RFC 7541 §4.2).
        if (fieldSeen) throw new HpackError("table size update after a header field");
        const [size, next] = readInt(block, at, 5);
        at = next;
        if (size > this.limit) throw new HpackError(`table size ${size} beyond the announced ${this.limit}`, true);
        this.#max = size;
        this.#evict(0);
        continue;
      } else {
        const indexing = (b & 0xc0) === 0x40;
        const [index, afterIndex] = readInt(block, at, indexing ? 6 : 4);
        at = afterIndex;
        if (index === 0) {
          const [n, afterName] = readString(block, at);
          name = n;
          at = afterName;
        } else name = this.#entry(index)[0];
        const [v, afterValue] = readString(block, at);
        value = v;
        at = afterValue;
        if (indexing) this.#insert(name, value);
      }
      fieldSeen = true;
      listSize += name.length + value.length + ENTRY_OVERHEAD;
      if (listSize > maxListSize) oversize = true;
      if (!oversize) headers.push([name, value]);
    }
    return { headers: oversize ? [] : headers, oversize };
  }

  #entry(index: number): HeaderField {
    if (index === 0) throw new HpackError("index 0");
    if (index <= STATIC_TABLE.length) return STATIC_TABLE[index - 1]!;
    const entry = this.#entries[index - STATIC_TABLE.length - 1];
    if (!entry) throw new HpackError(`index ${index} is not in the table`);
    return entry;
  }

  #insert(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    // An entry larger than the table empties it and is not added (RFC 7541 §4.4).
    this.#evict(size);
    if (size > this.#max) return;
    this.#entries.unshift([name, value]);
    this.#size += size;
  }

  /** Evicts the oldest entries until `room` more bytes fit. */
  #evict(room: number): void {
    while (this.#entries.length > 0 && this.#size + room > this.#max) {
      const [n, v] = this.#entries.pop()!;
      this.#size -= n.length + v.length + ENTRY_OVERHEAD;
    }
  }
}

/** An HPACK integer with an `n`-bit prefix at `at` (RFC 7541 §5.1): [value, next offset]. */
function readInt(buf: Buffer, at: number, n: number): [number, number] {
  const mask = (1 << n) - 1;
  let value = buf[at]! & mask;
  at++;
  if (value < mask) return [value, at];
  let shift = 0;
  for (;;) {
    if (at >= buf.length) throw new HpackError("truncated integer");
    const b = buf[at++]!;
    value += (b & 0x7f) * 2 ** shift;
    if (value > 0x7fffffff) throw new HpackError("integer too large");
    if ((b & 0x80) === 0) return [value, at];
    shift += 7;
  }
}

/** An HPACK string literal at `at` (RFC 7541 §5.2): [latin1 text, next offset]. */
function readString(buf: Buffer, at: number): [string, number] {
  if (at >= buf.length) throw new HpackError("truncated string");
  const huffman = (buf[at]! & 0x80) !== 0;
  const [length, from] = readInt(buf, at, 7);
  const to = from + length;
  if (to > buf.length) throw new HpackError("truncated string");
  if (!huffman) return [buf.toString("latin1", from, to), to];
  const text = huffmanDecode(buf, from, to);
  if (text === null) throw new HpackError("invalid Huffman code");
  return [text, to];
}

/** Credentials are never indexed (RFC 7541 §7.1.3): a shared table must not let a later field probe them. */
const NEVER_INDEXED = new Set(["authorization", "proxy-authorization", "cookie", "set-cookie"]);
/** Fields that change on every message: indexing them would only churn the table. */
const NOT_INDEXED = new Set([":path", "content-length", "date", "x-request-id", "etag", "last-modified", "expires", "age", "grpc-message", "traceparent"]);
const MAX_INDEXED_VALUE = 128;

export class HpackEncoder {
  /** Newest first: [name, value, sequence number]. */
  readonly #entries: [string, string, number][] = [];
  /** `name\0value` → sequence number of its entry. */
  readonly #exact = new Map<string, number>();
  #seq = 0;
  #size = 0;
  #max = 4096;
  /** The peer lowered its table size: the next block starts with an update. */
  #pendingUpdate: number | null = null;
  #buf = Buffer.allocUnsafe(4096);
  #at = 0;

  /** The peer's SETTINGS_HEADER_TABLE_SIZE (we use at most 4096 of it). */
  setMaxSize(size: number): void {
    const max = Math.min(size, 4096);
    if (max === this.#max) return;
    this.#max = max;
    this.#pendingUpdate = max;
    this.#evict(0);
  }

  /** One header block for `fields` (names must be lowercase). */
  encode(fields: Iterable<HeaderField>): Buffer {
    this.#at = 0;
    if (this.#pendingUpdate !== null) {
      this.#int(this.#pendingUpdate, 5, 0x20);
      this.#pendingUpdate = null;
    }
    for (const [name, value] of fields) this.#field(name, value);
    return Buffer.from(this.#buf.subarray(0, this.#at));
  }

  #field(name: string, value: string): void {
    const key = `${name}\0${value}`;
    const exact = STATIC_EXACT.get(key) ?? this.#dynamicIndex(key);
    if (exact !== undefined) return this.#int(exact, 7, 0x80);
    const nameIndex = STATIC_NAME.get(name) ?? 0;
    if (NEVER_INDEXED.has(name)) return this.#literal(nameIndex, name, value, 4, 0x10);
    if (NOT_INDEXED.has(name) || value.length > MAX_INDEXED_VALUE) return this.#literal(nameIndex, name, value, 4, 0x00);
    this.#literal(nameIndex, name, value, 6, 0x40);
    this.#insert(name, value, key);
  }

  #dynamicIndex(key: string): number | undefined {
    const seq = this.#exact.get(key);
    // The newest entry is index 62 (RFC 7541 §2.3.3).
    return seq === undefined ? undefined : STATIC_TABLE.length + 1 + this.#seq - seq;
  }

  #insert(name: string, value: string, key: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    this.#evict(size);
    if (size > this.#max) return;
    const seq = ++this.#seq;
    this.#entries.unshift([name, value, seq]);
    this.#exact.set(key, seq);
    this.#size += size;
  }

  #evict(room: number): void {
    while (this.#entries.length > 0 && this.#size + room > this.#max) {
      const [n, v, seq] = this.#entries.pop()!;
      this.#size -= n.length + v.length + ENTRY_OVERHEAD;
      const key = `${n}\0${v}`;
      if (this.#exact.get(key) === seq) this.#exact.delete(key);
    }
  }

  #literal(nameIndex: number, name: string, value: string, prefix: number, pattern: number): void {
    this.#int(nameIndex, prefix, pattern);
    if (nameIndex === 0) this.#string(name);
    this.#string(value);
  }

  #room(n: number): void {
    if (this.#at + n <= this.#buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#at + n));
    this.#buf.copy(bigger, 0, 0, this.#at);
    this.#buf = bigger;
  }

  #int(value: number, prefix: number, pattern: number): void {
    this.#room(6);
    const max = (1 << prefix) - 1;
    if (value < max) {
      this.#buf[this.#at++] = pattern | value;
      return;
    }
    this.#buf[this.#at++] = pattern | max;
    value -= max;
    while (value >= 0x80) {
      this.#buf[this.#at++] = (value & 0x7f) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.#buf[this.#at++] = value;
  }

  #string(text: string): void {
    this.#int(text.length, 7, 0);
    this.#room(text.length);
    this.#at += this.#buf.write(text, this.#at, "latin1");
  }
}
