// Traces (docs/operations.md#traces), the pure parts and the exporter: W3C traceparent read strictly, the OTEL_*
// settings, the OTLP body encoders checked by a decoder that is not ours (protobufjs against opentelemetry-proto's
// messages, test/support/otlpCollector.ts) and by JSON.parse, sampling, and the batch exporter against a real
// HTTP collector on loopback: batching, a full queue and a refusing collector dropped and counted.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ConfigError } from "../../src/runtime/config.ts";
import { parseTracing, type TracingConfig } from "../../src/runtime/configTracing.ts";
import { OtlpBatch, SpanKind, unixNanosString, type ExportScope, type SpanRecord } from "../../src/observability/otlp.ts";
import { formatTraceparent, parseTraceparent } from "../../src/observability/traceContext.ts";
import { Tracer } from "../../src/observability/tracing.ts";
import { decodeOtlpJson, decodeOtlpProtobuf, decodeOtlpProtobufMessage, startOtlpCollector, type OtlpCollector } from "../support/otlpCollector.ts";
import { untilTrue } from "../support/gateway.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";

describe("traceparent", () => {
  test("a valid header is read", () => {
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-01`)).toEqual({ traceId: TRACE, spanId: PARENT, sampled: true });
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-00`)).toEqual({ traceId: TRACE, spanId: PARENT, sampled: false });
    // Other flag bits do not change the sampled bit.
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-03`)?.sampled).toBe(true);
    // A later version may carry more fields.
    expect(parseTraceparent(`01-${TRACE}-${PARENT}-01-extra`)).toEqual({ traceId: TRACE, spanId: PARENT, sampled: true });
  });

  test.each([
    ["absent", null],
    ["empty", ""],
    ["uppercase", `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ["all-zero trace id", `00-${"0".repeat(32)}-${PARENT}-01`],
    ["all-zero parent id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["version ff", `ff-${TRACE}-${PARENT}-01`],
    ["version 00 with more fields", `00-${TRACE}-${PARENT}-01-extra`],
    ["short trace id", `00-${TRACE.slice(1)}-${PARENT}-01`],
    ["not hex", `00-${TRACE.slice(0, 31)}g-${PARENT}-01`],
    ["wrong separators", `00_${TRACE}_${PARENT}_01`],
  ])("%s → a new trace", (_, value) => {
    expect(parseTraceparent(value)).toBeNull();
  });

  test("formatted as version 00", () => {
    expect(formatTraceparent(TRACE, PARENT, true)).toBe(`00-${TRACE}-${PARENT}-01`);
    expect(parseTraceparent(formatTraceparent(TRACE, PARENT, false))).toEqual({ traceId: TRACE, spanId: PARENT, sampled: false });
  });
});

describe("OTEL_* settings", () => {
  test("unset, disabled, or exporter none: tracing off", () => {
    expect(parseTracing({})).toBeNull();
    expect(parseTracing({ OTEL_SERVICE_NAME: "x" })).toBeNull();
    expect(parseTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toBeNull();
    expect(parseTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })).toBeNull();
  });

  test("the defaults", () => {
    expect(parseTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })).toEqual({
      endpoint: "http://collector:4318/v1/traces",
      headers: [],
      protocol: "http/protobuf",
      gzip: false,
      timeoutMs: 10_000,
      serviceName: "credgate",
      resourceAttributes: [],
      sampler: { root: "always_on", parentBased: true, ratio: 1 },
      batch: { delayMs: 5000, maxQueueSize: 2048, maxBatchSize: 512 },
    });
  });

  test("every variable, the signal-specific ones first", () => {
    const t = parseTracing({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://base:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/custom/path",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=base%20key,x-team=a",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "X-Api-Key=traces-key",
      OTEL_EXPORTER_OTLP_COMPRESSION: "gzip",
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "2500",
      OTEL_RESOURCE_ATTRIBUTES: "service.name=from-resource,deployment.environment=prod",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.25",
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_BSP_MAX_QUEUE_SIZE: "10",
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "50",
    })!;
    expect(t.endpoint).toBe("https://traces.example/custom/path");
    expect(t.protocol).toBe("http/json");
    expect(t.headers).toEqual([
      ["X-Api-Key", "traces-key"],
      ["x-team", "a"],
    ]);
    expect(t.gzip).toBe(true);
    expect(t.timeoutMs).toBe(2500);
    expect(t.serviceName).toBe("from-resource");
    expect(t.resourceAttributes).toEqual([["deployment.environment", "prod"]]);
    expect(t.sampler).toEqual({ root: "traceidratio", parentBased: true, ratio: 0.25 });
    // A batch is never larger than the queue.
    expect(t.batch).toEqual({ delayMs: 100, maxQueueSize: 10, maxBatchSize: 10 });
    expect(parseTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_SERVICE_NAME: "named", OTEL_RESOURCE_ATTRIBUTES: "service.name=other" })!.serviceName).toBe("named");
  });

  test.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL (e.g. http://localhost:4318)"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "grpc://c:4317" }, "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL (e.g. http://localhost:4318)"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, 'OTEL_EXPORTER_OTLP_PROTOCOL must be "http/protobuf" or "http/json" (credgate exports traces over OTLP/HTTP; gRPC is not supported), got "grpc"'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_TRACES_EXPORTER: "zipkin" }, 'OTEL_TRACES_EXPORTER must be "otlp" or "none" (credgate exports traces over OTLP/HTTP), got "zipkin"'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_COMPRESSION: "br" }, 'OTEL_EXPORTER_OTLP_COMPRESSION must be "gzip" or "none", got "br"'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_TIMEOUT: "soon" }, 'OTEL_EXPORTER_OTLP_TIMEOUT must be a whole number of at least 1, got "soon"'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_TRACES_SAMPLER: "sometimes" }, 'OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio, got "sometimes"'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" }, 'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (the share of traces kept), got "2"'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_HEADERS: "novalue" }, "OTEL_EXPORTER_OTLP_HEADERS must be a comma list of key=value pairs: an entry has no ="],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_HEADERS: "bad header=1" }, 'OTEL_EXPORTER_OTLP_HEADERS: "bad header" is not a header name'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_CERTIFICATE: "/ca.pem" }, "OTEL_EXPORTER_OTLP_CERTIFICATE is not supported: the collector's certificate is verified like any upstream's (system roots and CREDGATE_UPSTREAM_CA_FILE)"],
  ])("%j → %s", (env, message) => {
    expect(() => parseTracing(env)).toThrow(new ConfigError(message));
  });

  test("a header value is never repeated in an error (it is often a backend's key)", () => {
    let message = "";
    try {
      parseTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=%ZZsecret-value" });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe('OTEL_EXPORTER_OTLP_HEADERS: the value of "x-api-key" is not valid percent-encoding');
    let endpointMessage = "";
    try {
      parseTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://user:hunter2@c" });
    } catch (err) {
      endpointMessage = (err as Error).message;
    }
    expect(endpointMessage).not.toContain("hunter2");
  });
});

const scope: ExportScope = { resource: ["service.name", "credgate", "process.pid", 42], scopeName: "credgate", scopeVersion: "1.2.3" };

/** The export body of `spans`, each added as the tracer adds a span that ends. */
function body(json: boolean, spans: readonly SpanRecord[]): string | Uint8Array {
  const batch = new OtlpBatch(json);
  for (const s of spans) batch.add(s);
  return batch.body(scope);
}
const otlpProtobuf = (_: ExportScope, spans: readonly SpanRecord[]) => body(false, spans) as Uint8Array;
const otlpJson = (_: ExportScope, spans: readonly SpanRecord[]) => body(true, spans) as string;

function record(over: Partial<SpanRecord> = {}): SpanRecord {
  const start = performance.now();
  return {
    traceId: TRACE,
    spanId: "a1b2c3d4e5f60718",
    parentSpanId: PARENT,
    remoteParent: true,
    name: "credgate.gateway GET",
    kind: SpanKind.SERVER,
    start,
    end: start + 1.5,
    attributes: ["http.request.method", "GET", "http.response.status_code", 200, "ratio", 0.5, "ok", true, "negative", -3, "long", "x".repeat(300), "unicode", "é漢"],
    status: 2,
    ...over,
  };
}

describe("OTLP bodies", () => {
  const spans = [record(), record({ spanId: "1111111111111111", parentSpanId: null, remoteParent: false, kind: SpanKind.CLIENT, status: 0, attributes: [] })];

  test("protobuf, decoded by protobufjs with opentelemetry-proto's messages, says what the JSON says", () => {
    const fromProto = decodeOtlpProtobuf(otlpProtobuf(scope, spans));
    const fromJson = decodeOtlpJson(otlpJson(scope, spans));
    expect(fromProto).toEqual(fromJson);
    const [a, b] = fromProto;
    expect(a).toMatchObject({
      traceId: TRACE,
      spanId: "a1b2c3d4e5f60718",
      parentSpanId: PARENT,
      name: "credgate.gateway GET",
      kind: SpanKind.SERVER,
      // Sampled, and the parent is known to be remote.
      flags: 0x301,
      statusCode: 2,
      attributes: { "http.request.method": "GET", "http.response.status_code": 200, ratio: 0.5, ok: true, negative: -3, long: "x".repeat(300), unicode: "é漢" },
      resource: { "service.name": "credgate", "process.pid": 42 },
      scope: { name: "credgate", version: "1.2.3" },
    });
    expect(a!.end - a!.start).toBe(1_500_000n);
    expect(b).toMatchObject({ parentSpanId: "", flags: 0x1, kind: SpanKind.CLIENT, statusCode: 0, attributes: {} });
    // Whole numbers are int64 (negative ones too), others double.
    const values = Object.fromEntries(decodeOtlpProtobufMessage(otlpProtobuf(scope, spans)).resourceSpans[0].scopeSpans[0].spans[0].attributes.map((kv: any) => [kv.key, kv.value]));
    expect(values.negative).toEqual({ intValue: "-3" });
    expect(values["http.response.status_code"]).toEqual({ intValue: "200" });
    expect(values.ratio).toEqual({ doubleValue: 0.5 });
  });

  test("a large batch (nested lengths past one byte, a buffer that grows) decodes whole", () => {
    const many = Array.from({ length: 2000 }, (_, i) => record({ spanId: i.toString(16).padStart(16, "1"), name: `span ${i}` }));
    const decoded = decodeOtlpProtobuf(otlpProtobuf(scope, many));
    expect(decoded.length).toBe(2000);
    expect(decoded[1999]!.name).toBe("span 1999");
    expect(decoded.map((s) => s.spanId)).toEqual(many.map((s) => s.spanId));
  });

  test("timestamps are epoch nanoseconds with no digit lost, the same in both encodings", () => {
    for (const t of [0, 0.000001, 1234.567891, 999.9999999, 86_400_000.123456]) {
      const span = record({ start: t, end: t + 0.000001 });
      const [fromProto] = decodeOtlpProtobuf(otlpProtobuf(scope, [span]));
      const [fromJson] = decodeOtlpJson(otlpJson(scope, [span]));
      expect(fromProto!.start.toString()).toBe(unixNanosString(t));
      expect(fromJson!.start.toString()).toBe(unixNanosString(t));
      expect(fromProto!.end).toBe(fromJson!.end);
      // Within a microsecond of the reading (a double's precision at epoch scale).
      const expected = BigInt(Math.round((performance.timeOrigin + t) * 1000)) * 1000n;
      expect(Number(fromProto!.start - expected)).toBeLessThan(1000);
      expect(Number(expected - fromProto!.start)).toBeLessThan(1000);
    }
  });
});

function tracingConfig(url: string, over: Partial<TracingConfig> = {}): TracingConfig {
  return {
    endpoint: `${url}/v1/traces`,
    headers: [["x-collector-key", "k"]],
    protocol: "http/protobuf",
    gzip: false,
    timeoutMs: 2000,
    serviceName: "credgate-test",
    resourceAttributes: [["deployment.environment", "test"]],
    sampler: { root: "always_on", parentBased: true, ratio: 1 },
    batch: { delayMs: 50, maxQueueSize: 100, maxBatchSize: 10 },
    ...over,
  };
}

const proc = { instanceId: "inst-1", version: "9.9.9" };

describe("the tracer", () => {
  let collector: OtlpCollector;
  beforeAll(() => {
    collector = startOtlpCollector();
  });
  afterAll(() => collector.stop());

  test("server spans continue a sampled caller, start a trace otherwise, and export in batches", async () => {
    collector.spans.length = 0;
    collector.exports.length = 0;
    const tracer = new Tracer(tracingConfig(collector.url), proc, fetch);
    const continued = tracer.serverSpan("a", `00-${TRACE}-${PARENT}-01`, performance.now())!;
    expect(continued.traceId).toBe(TRACE);
    expect(continued.parentSpanId).toBe(PARENT);
    const child = continued.child("b", SpanKind.CLIENT).set("k", "v").set("skipped", null);
    expect(child.traceparent).toBe(`00-${TRACE}-${child.spanId}-01`);
    child.finish();
    continued.fail().finish();
    continued.finish(); // a second finish exports nothing more
    const fresh = tracer.serverSpan("c", "garbage", performance.now())!;
    expect(fresh.traceId).not.toBe(TRACE);
    expect(fresh.parentSpanId).toBeNull();
    fresh.finish();
    for (let i = 0; i < 25; i++) tracer.serverSpan(`n${i}`, null, performance.now())!.finish();
    await untilTrue(() => collector.spans.length >= 28);
    await tracer.stop(1000);
    expect(collector.spans.length).toBe(28);
    // 28 spans in batches of at most 10.
    expect(collector.exports.length).toBeGreaterThanOrEqual(3);
    expect(collector.exports.every((e) => e.contentType === "application/x-protobuf" && e.headers["x-collector-key"] === "k")).toBe(true);
    const a = collector.spans.find((s) => s.name === "a")!;
    const b = collector.spans.find((s) => s.name === "b")!;
    expect(b.parentSpanId).toBe(a.spanId);
    expect(b.attributes).toEqual({ k: "v" });
    expect(a.statusCode).toBe(2);
    expect(a.resource).toMatchObject({ "service.name": "credgate-test", "service.instance.id": "inst-1", "service.version": "9.9.9", "deployment.environment": "test" });
  });

  test("JSON and gzip", async () => {
    collector.spans.length = 0;
    collector.exports.length = 0;
    const tracer = new Tracer(tracingConfig(collector.url, { protocol: "http/json", gzip: true }), proc, fetch);
    tracer.serverSpan("json", null, performance.now())!.set("x", 1).finish();
    await tracer.flush(2000);
    expect(collector.exports.map((e) => [e.contentType, e.contentEncoding])).toEqual([["application/json", "gzip"]]);
    expect(collector.spans.map((s) => [s.name, s.attributes.x])).toEqual([["json", 1]]);
    await tracer.stop(100);
  });

  test("sampling: a caller's decision is followed under parentbased; always_off and a ratio of 0 record nothing", () => {
    const on = new Tracer(tracingConfig(collector.url), proc, fetch);
    expect(on.serverSpan("x", `00-${TRACE}-${PARENT}-00`, 0)).toBeNull();
    const off = new Tracer(tracingConfig(collector.url, { sampler: { root: "always_off", parentBased: true, ratio: 1 } }), proc, fetch);
    expect(off.serverSpan("x", null, 0)).toBeNull();
    expect(off.serverSpan("x", `00-${TRACE}-${PARENT}-01`, 0)).not.toBeNull();
    const none = new Tracer(tracingConfig(collector.url, { sampler: { root: "traceidratio", parentBased: false, ratio: 0 } }), proc, fetch);
    expect(none.serverSpan("x", `00-${TRACE}-${PARENT}-01`, 0)).toBeNull();
    const half = new Tracer(tracingConfig(collector.url, { sampler: { root: "traceidratio", parentBased: false, ratio: 0.5 } }), proc, fetch);
    let kept = 0;
    for (let i = 0; i < 2000; i++) if (half.serverSpan("x", null, 0) !== null) kept++;
    expect(kept).toBeGreaterThan(800);
    expect(kept).toBeLessThan(1200);
    // The same trace id gets the same decision (consistent across services with the same ratio).
    const id = `00-${"7".repeat(32)}-${PARENT}-01`;
    const first = half.serverSpan("x", id, 0) !== null;
    for (let i = 0; i < 10; i++) expect(half.serverSpan("x", id, 0) !== null).toBe(first);
  });

  test("a full queue and a refusing collector drop spans and count them; nothing throws", async () => {
    collector.spans.length = 0;
    collector.answerWith(503);
    const { metrics } = await import("../../src/observability/metrics.ts");
    const tracer = new Tracer(tracingConfig(collector.url, { batch: { delayMs: 10_000, maxQueueSize: 5, maxBatchSize: 5 } }), proc, fetch);
    for (let i = 0; i < 5; i++) tracer.serverSpan("kept", null, 0)!.finish();
    // The queue holds a full batch: an export is scheduled, but not yet sent (never inside the caller's turn).
    for (let i = 0; i < 3; i++) tracer.serverSpan("over", null, 0)!.finish();
    await tracer.flush(2000);
    const dropped = (await metrics.traceSpansDropped.get()).values;
    expect(dropped.find((v) => v.labels.reason === "queue_full")?.value).toBe(3);
    expect(dropped.find((v) => v.labels.reason === "export_failed")?.value).toBe(5);
    expect(collector.spans.length).toBe(0);
    collector.answerWith(200);
    tracer.serverSpan("after", null, 0)!.finish();
    await tracer.flush(2000);
    expect(collector.spans.map((s) => s.name)).toEqual(["after"]);
    expect((await metrics.traceSpansExported.get()).values[0]!.value).toBe(1);
    await tracer.stop(100);
  });
});
