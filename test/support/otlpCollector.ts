// An OpenTelemetry collector of the tests' own on loopback: it takes OTLP/HTTP trace exports (POST /v1/traces,
// binary protobuf or JSON, gzip or not) as a real collector does, keeps every raw body, and decodes the
// protobuf ones with protobufjs against opentelemetry-proto's own message definitions (written out below from
// opentelemetry/proto/trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto and
// collector/trace/v1/trace_service.proto), so credgate's encoder is checked by a decoder that is not ours.
import protobuf from "protobufjs";
import { gunzipSync } from "node:zlib";

const PROTO = `
syntax = "proto3";
package opentelemetry.proto;
message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message Status { string message = 2; int32 code = 3; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  bytes parent_span_id = 4;
  fixed32 flags = 16;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  uint32 dropped_attributes_count = 10;
  uint32 dropped_events_count = 12;
  uint32 dropped_links_count = 14;
  Status status = 15;
}
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
`;

const ExportTraceServiceRequest = protobuf.parse(PROTO, { keepCase: false }).root.lookupType("opentelemetry.proto.ExportTraceServiceRequest");

export type AttrValue = string | number | boolean;

/** One exported span, whichever encoding it came in. */
export interface CollectedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  flags: number;
  /** Epoch nanoseconds. */
  start: bigint;
  end: bigint;
  attributes: Record<string, AttrValue>;
  statusCode: number;
  resource: Record<string, AttrValue>;
  scope: { name: string; version: string };
}

export interface CollectedExport {
  contentType: string;
  contentEncoding: string | null;
  headers: Record<string, string>;
  /** The body as sent (before any gunzip). */
  raw: Buffer;
  /** The body after gunzip. */
  body: Buffer;
}

export interface OtlpCollector {
  url: string;
  exports: CollectedExport[];
  spans: CollectedSpan[];
  /** Answer every export with this status from now on (default 200). */
  answerWith(status: number): void;
  stop(): Promise<void>;
}

function attrValue(v: any): AttrValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  throw new Error(`unexpected attribute value ${JSON.stringify(v)}`);
}

function attrs(list: any[] | undefined): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of list ?? []) {
    if (kv.key in out) throw new Error(`attribute ${kv.key} appears twice`);
    out[kv.key] = attrValue(kv.value);
  }
  return out;
}

const hex = (v: Uint8Array | string | undefined) => (v === undefined ? "" : typeof v === "string" ? v : Buffer.from(v).toString("hex"));

/** The spans of one decoded ExportTraceServiceRequest (protobufjs object or OTLP/JSON document). */
function spansOf(doc: any, json: boolean): CollectedSpan[] {
  const out: CollectedSpan[] = [];
  for (const rs of doc.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: s.name,
          kind: s.kind,
          flags: s.flags ?? 0,
          start: BigInt(json ? s.startTimeUnixNano : s.startTimeUnixNano.toString()),
          end: BigInt(json ? s.endTimeUnixNano : s.endTimeUnixNano.toString()),
          attributes: attrs(s.attributes),
          statusCode: s.status?.code ?? 0,
          resource,
          scope: { name: ss.scope?.name ?? "", version: ss.scope?.version ?? "" },
        });
      }
    }
  }
  return out;
}

/** The ExportTraceServiceRequest as protobufjs decodes it (64-bit integers as decimal strings). */
export function decodeOtlpProtobufMessage(body: Uint8Array): any {
  return ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), { longs: String, defaults: false });
}

export function decodeOtlpProtobuf(body: Uint8Array): CollectedSpan[] {
  return spansOf(decodeOtlpProtobufMessage(body), false);
}

export function decodeOtlpJson(body: string): CollectedSpan[] {
  return spansOf(JSON.parse(body), true);
}

export function startOtlpCollector(): OtlpCollector {
  const exports: CollectedExport[] = [];
  const spans: CollectedSpan[] = [];
  let status = 200;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      if (req.method !== "POST" || url.pathname !== "/v1/traces") return new Response("not found", { status: 404 });
      const raw = Buffer.from(await req.arrayBuffer());
      const contentEncoding = req.headers.get("content-encoding");
      const body = contentEncoding === "gzip" ? gunzipSync(raw) : raw;
      const contentType = req.headers.get("content-type") ?? "";
      exports.push({ contentType, contentEncoding, headers: Object.fromEntries(req.headers), raw, body });
      if (status !== 200) return new Response("refused", { status });
      if (contentType === "application/x-protobuf") {
        spans.push(...decodeOtlpProtobuf(body));
        return new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } });
      }
      if (contentType === "application/json") {
        spans.push(...decodeOtlpJson(body.toString("utf8")));
        return Response.json({});
      }
      return new Response("unsupported content type", { status: 415 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    exports,
    spans,
    answerWith(s) {
      status = s;
    },
    stop: () => server.stop(true),
  };
}
