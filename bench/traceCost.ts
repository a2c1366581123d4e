// What one traced request's spans cost in CPU, credgate's own tracer (src/observability/tracing.ts, otlp.ts)
// against the official OpenTelemetry SDK (sdk-trace-base's tracer and span, otlp-transformer's protobuf
// serializer, as exporter-trace-otlp-http uses them): per request, a SERVER span with the gateway's 14 attributes
// and a CLIENT child with 7, ended and encoded into an OTLP/HTTP protobuf body in batches of 512. No network:
// the exporter's HTTP send is the same fetch for both. bench/README.md#traces has the figures.
//
//   npx bun bench/traceCost.ts [requests]
import { context, SpanKind as OtelKind, trace } from "@opentelemetry/api";
import { BasicTracerProvider, type ReadableSpan, type SpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { ExportResultCode } from "@opentelemetry/core";
import { SpanKind } from "../src/observability/otlp.ts";
import { Tracer } from "../src/observability/tracing.ts";

const REQUESTS = Number(process.argv[2] ?? 200_000);
const BATCH = 512;
const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

function serverAttributes(i: number): Record<string, string | number> {
  return {
    "http.request.method": "GET",
    "url.scheme": "https",
    "url.path": `/v1/items/${i}`,
    "server.address": "api.example.com",
    "server.port": 443,
    "credgate.request_id": "7f1c7c56-3c41-4a4e-9b1b-5b3f8a0e6c11",
    "http.response.status_code": 200,
    "credgate.decision": "allowed",
    "credgate.injection_count": 1,
    "credgate.agent.id": "agt_2b7e8c3a",
    "credgate.project.id": "prj_9c1d2e3f",
    "credgate.rule.name": "allow reads",
    "credgate.rule.id": "rul_5a6b7c8d",
    "credgate.approval.id": "apr_1a2b3c4d",
  };
}

const clientAttributes = { "http.request.method": "GET", "server.address": "api.example.com", "server.port": 443, "url.scheme": "https", "network.peer.address": "127.0.0.1", "http.response.status_code": 200, "credgate.upstream.time_to_head_ms": 0.8 };

/** credgate's tracer as the gateway uses it (each span encoded as it ends), its export a no-op. */
async function ours(): Promise<{ usPerRequest: number }> {
  const tracer = new Tracer(
    {
      endpoint: "http://127.0.0.1:9/v1/traces",
      headers: [],
      protocol: "http/protobuf",
      gzip: false,
      timeoutMs: 1000,
      serviceName: "credgate",
      resourceAttributes: [],
      sampler: { root: "always_on", parentBased: true, ratio: 1 },
      batch: { delayMs: 5000, maxQueueSize: 1e9, maxBatchSize: BATCH },
    },
    { instanceId: "bench", version: "0" },
    () => Promise.resolve(new Response(null)),
  );
  const t0 = performance.now();
  for (let i = 0; i < REQUESTS; i++) {
    const server = tracer.serverSpan("credgate.gateway GET", TRACEPARENT, performance.now())!;
    const a = serverAttributes(i);
    for (const k in a) server.set(k, a[k]!);
    const client = server.child("credgate.upstream GET", SpanKind.CLIENT);
    for (const k in clientAttributes) client.set(k, clientAttributes[k as keyof typeof clientAttributes]);
    void client.traceparent;
    client.finish();
    server.finish();
  }
  await tracer.stop(60_000);
  return { usPerRequest: ((performance.now() - t0) * 1000) / REQUESTS };
}

function sdk(): { usPerRequest: number } {
  let batch: ReadableSpan[] = [];
  const exporter: SpanExporter = {
    export(spans, done) {
      for (const s of spans) batch.push(s);
      if (batch.length >= BATCH) {
        ProtobufTraceSerializer.serializeRequest(batch);
        batch = [];
      }
      done({ code: ExportResultCode.SUCCESS });
    },
    shutdown: () => Promise.resolve(),
  };
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ "service.name": "credgate" }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer("credgate", "0");
  const parent = trace.setSpanContext(context.active(), { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 1, isRemote: true });
  const t0 = performance.now();
  for (let i = 0; i < REQUESTS; i++) {
    const server = tracer.startSpan("credgate.gateway GET", { kind: OtelKind.SERVER }, parent);
    server.setAttributes(serverAttributes(i));
    const client = tracer.startSpan("credgate.upstream GET", { kind: OtelKind.CLIENT }, trace.setSpan(parent, server));
    client.setAttributes(clientAttributes);
    void `00-${client.spanContext().traceId}-${client.spanContext().spanId}-01`;
    client.end();
    server.end();
  }
  return { usPerRequest: ((performance.now() - t0) * 1000) / REQUESTS };
}

// Warm both up, then alternate, three rounds each.
await ours();
sdk();
const rounds: { ours: number; sdk: number }[] = [];
for (let r = 0; r < 3; r++) rounds.push({ ours: (await ours()).usPerRequest, sdk: sdk().usPerRequest });
const median = (xs: number[]) => xs.sort((a, b) => a - b)[1]!;
const o = median(rounds.map((r) => r.ours));
const s = median(rounds.map((r) => r.sdk));
console.log(`per traced request (2 spans recorded, ended and encoded as OTLP protobuf), median of 3 rounds of ${REQUESTS.toLocaleString("en-US")}:`);
console.log(`  credgate's tracer  ${o.toFixed(2)} µs`);
console.log(`  OpenTelemetry SDK  ${s.toFixed(2)} µs  (${(s / o).toFixed(1)}×)`);
