// W3C Trace Context (docs/operations.md#traces): the `traceparent` header a client sends, read strictly, and the
// one credgate sends on. `version-traceid-parentid-flags`, lowercase hex: version 00 is exactly 55 characters;
// a later version may append fields after a `-` (only the first four are read); `ff` is no version. An
// all-zero trace id or parent id, a wrong length, an uppercase digit or anything else makes the header invalid,
// and an invalid header is treated as absent (a new trace starts). Pure: imports nothing.

export interface TraceParent {
  /** 32 lowercase hex digits, not all zero. */
  readonly traceId: string;
  /** The caller's span: 16 lowercase hex digits, not all zero. */
  readonly spanId: string;
  /** The caller recorded its span (flags bit 0). */
  readonly sampled: boolean;
}

export const TRACEPARENT_HEADER = "traceparent";

const ZERO_TRACE_ID = "00000000000000000000000000000000";
const ZERO_SPAN_ID = "0000000000000000";
/** version "-" trace-id "-" parent-id "-" flags, then (later versions only) "-" and more. */
const SHAPE = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The header's trace context, or null when it is absent or not valid. */
export function parseTraceparent(value: string | null | undefined): TraceParent | null {
  if (value === null || value === undefined || value.length < 55) return null;
  const m = SHAPE.exec(value);
  if (m === null) return null;
  const version = m[1]!;
  if (version === "ff") return null;
  // Version 00 has exactly these four fields; a later one may carry more after a dash.
  if (version === "00" && m[5] !== undefined) return null;
  const traceId = m[2]!;
  const spanId = m[3]!;
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return null;
  return { traceId, spanId, sampled: (parseInt(m[4]!, 16) & 1) === 1 };
}

/** The `traceparent` value naming `spanId` of `traceId` (version 00). */
export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`;
}
