// A batch of finished spans as an OTLP/HTTP trace export body (docs/operations.md#traces): the
// `ExportTraceServiceRequest` of opentelemetry-proto's collector/trace/v1, binary protobuf
// (`application/x-protobuf`, OTLP's default) or its JSON mapping (`application/json`: ids as hex, 64-bit
// integers as strings). Written by hand for the few fields credgate records: measured against the official
// SDK's transformer, this is what keeps tracing cheap enough to leave on (bench/README.md#traces).
// Imports nothing of ours.

/** An attribute value: strings, whole numbers (int), other numbers (double), booleans. */
export type AttributeValue = string | number | boolean;
/** Attributes as a flat list: key, value, key, value… (no object per attribute). */
export type Attributes = (string | AttributeValue)[];

export const SpanKind = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
export type SpanKind = (typeof SpanKind)[keyof typeof SpanKind];

/** Status codes of opentelemetry-proto: UNSET, OK, ERROR. */
export const StatusCode = { UNSET: 0, OK: 1, ERROR: 2 } as const;

export interface SpanRecord {
  /** 32 lowercase hex digits. */
  readonly traceId: string;
  /** 16 lowercase hex digits. */
  readonly spanId: string;
  readonly parentSpanId: string | null;
  /** The parent is another process's span (an agent's or API client's `traceparent`). */
  readonly remoteParent: boolean;
  readonly name: string;
  readonly kind: SpanKind;
  /** `performance.now()` milliseconds. */
  readonly start: number;
  readonly end: number;
  readonly attributes: Attributes;
  readonly status: number;
}

export interface ExportScope {
  /** The process's resource (service.name, service.instance.id, …). */
  resource: Attributes;
  scopeName: string;
  scopeVersion: string;
}

/** Span flags (opentelemetry-proto Span.flags): sampled, and whether the parent is known to be remote. */
const SAMPLED = 0x01;
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;
const flagsOf = (s: SpanRecord) => SAMPLED | (s.parentSpanId === null ? 0 : HAS_IS_REMOTE | (s.remoteParent ? IS_REMOTE : 0));

// Epoch nanoseconds of a performance.now() reading: the whole milliseconds and the nanoseconds within one
// apart, so no digit is lost to a double's 53 bits (epoch nanoseconds need 61).
const ORIGIN = performance.timeOrigin;

function nanoParts(t: number): [ms: number, ns: number] {
  const epochMs = ORIGIN + t;
  const ms = Math.floor(epochMs);
  const ns = Math.min(999_999, Math.round((epochMs - ms) * 1e6));
  return [ms, ns];
}

/** Epoch nanoseconds of a performance.now() reading, as the decimal string OTLP/JSON wants. */
export function unixNanosString(t: number): string {
  const [ms, ns] = nanoParts(t);
  return `${ms}${String(ns).padStart(6, "0")}`;
}

const HEX_VALUE = new Uint8Array(128);
for (let i = 0; i < 10; i++) HEX_VALUE[48 + i] = i;
for (let i = 0; i < 6; i++) HEX_VALUE[97 + i] = 10 + i;

const isInt = (v: number) => Number.isSafeInteger(v);

// ---- JSON -----------------------------------------------------------------------------------------------

function jsonValue(v: AttributeValue): string {
  if (typeof v === "string") return `{"stringValue":${JSON.stringify(v)}}`;
  if (typeof v === "boolean") return `{"boolValue":${v}}`;
  return isInt(v) ? `{"intValue":"${v}"}` : `{"doubleValue":${Number.isFinite(v) ? v : 0}}`;
}

function jsonAttributes(attrs: Attributes): string {
  let out = "[";
  for (let i = 0; i < attrs.length; i += 2) {
    if (i > 0) out += ",";
    out += `{"key":${JSON.stringify(attrs[i] as string)},"value":${jsonValue(attrs[i + 1]!)}}`;
  }
  return `${out}]`;
}

function jsonSpan(s: SpanRecord): string {
  return (
    `{"traceId":"${s.traceId}","spanId":"${s.spanId}"` +
    (s.parentSpanId === null ? "" : `,"parentSpanId":"${s.parentSpanId}"`) +
    `,"flags":${flagsOf(s)},"name":${JSON.stringify(s.name)},"kind":${s.kind}` +
    `,"startTimeUnixNano":"${unixNanosString(s.start)}","endTimeUnixNano":"${unixNanosString(s.end)}"` +
    `,"attributes":${jsonAttributes(s.attributes)},"status":{"code":${s.status}}}`
  );
}

function otlpJsonBody(scope: ExportScope, spans: string): string {
  return (
    `{"resourceSpans":[{"resource":{"attributes":${jsonAttributes(scope.resource)}},"scopeSpans":[{"scope":` +
    `{"name":${JSON.stringify(scope.scopeName)},"version":${JSON.stringify(scope.scopeVersion)}},"spans":[${spans}]}]}]}`
  );
}

// ---- protobuf -------------------------------------------------------------------------------------------

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;

/**
 * A protobuf writer for one message. A nested message is written in place after a one-byte length; when it
 * turns out longer than 127 bytes its content is moved along to make room for the longer length.
 */
class ProtoWriter {
  buf: Buffer<ArrayBuffer>;
  pos = 0;

  constructor(size = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(size);
  }

  /** Bytes written elsewhere, as they are. */
  raw(bytes: Uint8Array): void {
    this.room(bytes.byteLength);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.byteLength;
  }

  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  varint(n: number): void {
    this.room(10);
    while (n >= 0x80) {
      this.buf[this.pos++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buf[this.pos++] = n;
  }

  /** A negative int64: its two's complement as a ten-byte varint. */
  negative(field: number, n: number): void {
    this.tag(field, VARINT);
    this.room(10);
    let u = BigInt.asUintN(64, BigInt(n));
    while (u >= 0x80n) {
      this.buf[this.pos++] = Number(u & 0x7fn) | 0x80;
      u >>= 7n;
    }
    this.buf[this.pos++] = Number(u);
  }

  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  uint(field: number, n: number): void {
    this.tag(field, VARINT);
    this.varint(n);
  }

  fixed32(field: number, n: number): void {
    this.tag(field, FIXED32);
    this.room(4);
    this.pos = this.buf.writeUInt32LE(n, this.pos);
  }

  /**
   * A fixed64 field holding the epoch nanoseconds of a performance.now() reading, as two 32-bit words computed in
   * doubles (no BigInt): the milliseconds are split at 2^16 so every product stays exact.
   */
  time(field: number, t: number): void {
    this.tag(field, FIXED64);
    this.room(8);
    const epochMs = ORIGIN + t;
    const ms = Math.floor(epochMs);
    const ns = Math.min(999_999, Math.round((epochMs - ms) * 1e6));
    const x = Math.floor(ms / 65536) * 1e6;
    const low = (x % 65536) * 65536 + (ms % 65536) * 1e6 + ns;
    this.pos = this.buf.writeUInt32LE(low % 4294967296, this.pos);
    this.pos = this.buf.writeUInt32LE(Math.floor(x / 65536) + Math.floor(low / 4294967296), this.pos);
  }

  double(field: number, n: number): void {
    this.tag(field, FIXED64);
    this.room(8);
    this.pos = this.buf.writeDoubleLE(n, this.pos);
  }

  /** A string field: ASCII (nearly every key and value) written byte by byte, anything else through UTF-8. */
  string(field: number, s: string): void {
    this.tag(field, LEN);
    const n = s.length;
    if (n < 0x80) {
      // One length byte; the content is written after it and checked to be ASCII as it goes.
      this.room(1 + n);
      const at = this.pos;
      const buf = this.buf;
      let ascii = true;
      for (let i = 0; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) {
          ascii = false;
          break;
        }
        buf[at + 1 + i] = c;
      }
      if (ascii) {
        buf[at] = n;
        this.pos = at + 1 + n;
        return;
      }
    }
    const len = Buffer.byteLength(s);
    this.varint(len);
    this.room(len);
    this.pos += this.buf.write(s, this.pos, len, "utf8");
  }

  /** Lowercase hex (an id) as its bytes. */
  hex(field: number, hex: string): void {
    const n = hex.length >> 1;
    this.tag(field, LEN);
    this.varint(n);
    this.room(n);
    const buf = this.buf;
    for (let i = 0; i < n; i++) buf[this.pos + i] = (HEX_VALUE[hex.charCodeAt(2 * i)]! << 4) | HEX_VALUE[hex.charCodeAt(2 * i + 1)]!;
    this.pos += n;
  }

  /** Starts a nested message; `close` with what this returns. */
  open(field: number): number {
    this.tag(field, LEN);
    this.room(1);
    return this.pos++;
  }

  close(at: number): void {
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return;
    }
    let extra = 0;
    for (let n = len; n >= 0x80; n = Math.floor(n / 0x80)) extra++;
    this.room(extra);
    this.buf.copy(this.buf, at + 1 + extra, at + 1, this.pos);
    const end = this.pos + extra;
    this.pos = at;
    this.varint(len);
    this.pos = end;
  }
}

function protoAttributes(w: ProtoWriter, field: number, attrs: Attributes): void {
  for (let i = 0; i < attrs.length; i += 2) {
    const kv = w.open(field);
    w.string(1, attrs[i] as string);
    const any = w.open(2);
    const v = attrs[i + 1]!;
    if (typeof v === "string") w.string(1, v);
    else if (typeof v === "boolean") w.uint(2, v ? 1 : 0);
    else if (isInt(v) && v >= 0) w.uint(3, v);
    else if (isInt(v)) w.negative(3, v);
    else w.double(4, Number.isFinite(v) ? v : 0);
    w.close(any);
    w.close(kv);
  }
}

function protoSpan(w: ProtoWriter, s: SpanRecord): void {
  const span = w.open(2);
  w.hex(1, s.traceId);
  w.hex(2, s.spanId);
  if (s.parentSpanId !== null) w.hex(4, s.parentSpanId);
  w.string(5, s.name);
  w.uint(6, s.kind);
  w.time(7, s.start);
  w.time(8, s.end);
  protoAttributes(w, 9, s.attributes);
  if (s.status !== 0) {
    const status = w.open(15);
    w.uint(3, s.status);
    w.close(status);
  }
  w.fixed32(16, flagsOf(s));
  w.close(span);
}

/** The envelope around encoded spans: ResourceSpans { resource, ScopeSpans { scope, spans } }. */
function protoEnvelope(scope: ExportScope, spans: Uint8Array, size: number): Uint8Array<ArrayBuffer> {
  const w = new ProtoWriter(size + 1024);
  const resourceSpans = w.open(1);
  const resource = w.open(1);
  protoAttributes(w, 1, scope.resource);
  w.close(resource);
  const scopeSpans = w.open(2);
  const instrumentation = w.open(1);
  w.string(1, scope.scopeName);
  w.string(2, scope.scopeVersion);
  w.close(instrumentation);
  w.raw(spans);
  w.close(scopeSpans);
  w.close(resourceSpans);
  return w.buf.subarray(0, w.pos);
}

/**
 * One export's spans, encoded as each is added, so a finished span's objects die young (kept until the
 * export, a few thousand spans and their attribute lists would live long enough to cost the collector of a
 * busy gateway more than the encoding does); `body` wraps them in the envelope.
 */
export class OtlpBatch {
  count = 0;
  #proto: ProtoWriter | null = null;
  #json = "";

  constructor(readonly json: boolean) {}

  add(span: SpanRecord): void {
    if (this.json) this.#json += (this.count > 0 ? "," : "") + jsonSpan(span);
    else protoSpan((this.#proto ??= new ProtoWriter()), span);
    this.count++;
  }

  /** The export body: JSON text or binary protobuf. */
  body(scope: ExportScope): string | Uint8Array<ArrayBuffer> {
    if (this.json) return otlpJsonBody(scope, this.#json);
    const w = this.#proto;
    return protoEnvelope(scope, w === null ? new Uint8Array(0) : w.buf.subarray(0, w.pos), w === null ? 0 : w.pos);
  }
}
