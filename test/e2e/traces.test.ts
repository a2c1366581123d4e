// OpenTelemetry traces (docs/operations.md#traces) through the real credgate process: OTEL_EXPORTER_OTLP_ENDPOINT
// names an OTLP/HTTP collector of the test's own on loopback (test/support/otlpCollector.ts: it decodes the
// protobuf with protobufjs against opentelemetry-proto's messages, and the JSON as JSON). curl agents go through
// the gateway to a real TLS upstream: the spans of the CONNECT, the request (HTTP/1.1 and HTTP/2 in a tunnel, a
// WebSocket upgrade, plain http:// on the proxy connection), its upstream call and API requests
// arrive with their parent/child links and attributes; the agent's `traceparent` is continued and the upstream
// receives the gateway's own CLIENT span as its parent; an unsampled caller is left alone; no credential is in any
// exported byte; a collector that cannot be reached costs the requests nothing; queued spans leave on stop; a
// process without the variables exports nothing and passes the agent's traceparent on as it came.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gatewayCa, openTlsTunnel, rawRequest, readWsText, resolveEntries, run, startPlainUpstream, until, wsFrame } from "../support/gateway.ts";
import { freePort } from "../support/ports.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { startOtlpCollector, type CollectedSpan, type OtlpCollector } from "../support/otlpCollector.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.trace.test";
const DOWN = "down.trace.test";
/** A host whose secret goes into the URL path (`/bot{value}`). */
const BOT = "bot.trace.test";
const BOT_SECRET = `12345:${crypto.randomUUID().replace(/-/g, "")}`;
const SECRET = `sk_trace_${crypto.randomUUID().replace(/-/g, "")}`;
/** The collector's own key (OTEL_EXPORTER_OTLP_HEADERS): sent to the collector, never logged. */
const COLLECTOR_KEY = `hc_${crypto.randomUUID().replace(/-/g, "")}`;
const SERVER = 2;
const CLIENT = 3;

let pki: TestPki;
let up: TestUpstream;
let plain: TestUpstream;
let collector: OtlpCollector;
let jsonCollector: OtlpCollector;
let traced: RunningCredgate;
let tracedJson: RunningCredgate;
let untraced: RunningCredgate;
/** A loopback port nothing listens on. */
let closed: number;
const cas = new Map<RunningCredgate, string>();

const hex = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
const traceparent = (traceId: string, spanId: string, flags = "01") => `00-${traceId}-${spanId}-${flags}`;

beforeAll(async () => {
  pki = makePki([HOST, DOWN, BOT]);
  up = startUpstream(pki);
  plain = startPlainUpstream();
  collector = startOtlpCollector();
  jsonCollector = startOtlpCollector();
  closed = await freePort();
  const common = { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: `${resolveEntries([HOST, BOT], up.port)},${DOWN}:${closed}:127.0.0.1` };
  const otel = { OTEL_BSP_SCHEDULE_DELAY: "50", OTEL_SERVICE_NAME: "credgate-e2e", OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=e2e" };
  [traced, tracedJson, untraced] = await Promise.all([
    startCredgate({ env: { ...common, ...otel, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_HEADERS: `x-collector-key=${COLLECTOR_KEY}` } }),
    startCredgate({
      env: { ...common, ...otel, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${jsonCollector.url}/v1/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_COMPRESSION: "gzip" },
    }),
    startCredgate({ env: common }),
  ]);
  for (const cg of [traced, tracedJson, untraced]) {
    cas.set(cg, (await gatewayCa(cg)).file);
    for (const host of [HOST, DOWN]) {
      const r = await cg.api("POST", "/v1/secrets", { body: { name: host, type: "generic", value: SECRET, hostPattern: host, injectionConfig: { headerName: "x-api-key" } } });
      if (r.status !== 201) throw new Error(`secret: ${r.status} ${r.text}`);
    }
    const bot = await cg.api("POST", "/v1/secrets", { body: { name: BOT, type: "generic", value: BOT_SECRET, hostPattern: BOT, injectionConfig: { pathTemplate: "/bot{value}" } } });
    if (bot.status !== 201) throw new Error(`path secret: ${bot.status} ${bot.text}`);
  }
}, 60_000);

afterAll(async () => {
  await Promise.all([traced, tracedJson, untraced].map((cg) => cg?.stop()));
  await Promise.all([up?.stop(), plain?.stop(), collector?.stop(), jsonCollector?.stop()]);
});

/** curl through the gateway as the default agent, with extra curl arguments (headers). */
async function curl(cg: RunningCredgate, url: string, args: string[] = []): Promise<{ status: number; body: any }> {
  const proxy = `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`;
  const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", cas.get(cg)!, "-w", "\n%{http_code}", ...args, url]);
  expect(r.stderr).toBe("");
  const cut = r.stdout.lastIndexOf("\n");
  let body: any = null;
  try {
    body = JSON.parse(r.stdout.slice(0, cut));
  } catch {}
  return { status: Number(r.stdout.slice(cut + 1)), body };
}

/** The spans of `traceId` once `count` of them have arrived. */
function spansOf(c: OtlpCollector, traceId: string, count: number): Promise<CollectedSpan[]> {
  return until(() => {
    const found = c.spans.filter((s) => s.traceId === traceId);
    if (found.length < count) throw new Error(`${found.length} of ${count} spans of trace ${traceId} exported`);
    return found;
  });
}

const only = (spans: CollectedSpan[], name: string) => {
  const found = spans.filter((s) => s.name === name);
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0]!;
};

describe("with OTEL_EXPORTER_OTLP_ENDPOINT (protobuf)", () => {
  test("an agent's request continues its traceparent; the upstream's parent is the gateway's CLIENT span", async () => {
    const traceId = hex(16);
    const agentSpan = hex(8);
    const r = await curl(traced, `https://${HOST}:${up.port}/v1/items/42?q=secret-query`, ["-H", `traceparent: ${traceparent(traceId, agentSpan)}`, "-H", "tracestate: vendor=abc"]);
    expect(r.status).toBe(200);
    // The upstream got the credential, one traceparent of the agent's trace, and the agent's tracestate.
    // (The echo guard redacts the credential in the echo: the upstream's own record has it.)
    expect(up.seen.find((s) => s.url.startsWith("/v1/items/42"))!.headers["x-api-key"]).toBe(SECRET);
    expect(r.body.headers.tracestate).toBe("vendor=abc");
    const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(r.body.headers.traceparent)!;
    expect(sent).not.toBeNull();
    expect(sent[1]).toBe(traceId);
    expect(sent[2]).not.toBe(agentSpan);

    const spans = await spansOf(collector, traceId, 2);
    const server = only(spans, "credgate.gateway GET");
    const client = only(spans, "credgate.upstream GET");
    expect(server.kind).toBe(SERVER);
    expect(server.parentSpanId).toBe(agentSpan);
    // Sampled, with a remote parent.
    expect(server.flags).toBe(0x301);
    expect(client.kind).toBe(CLIENT);
    expect(client.parentSpanId).toBe(server.spanId);
    expect(client.spanId).toBe(sent[2]!);
    expect(client.start).toBeGreaterThanOrEqual(server.start);
    expect(client.end).toBeLessThanOrEqual(server.end);
    expect(server.attributes).toMatchObject({
      "http.request.method": "GET",
      "url.scheme": "https",
      "url.path": "/v1/items/42",
      "server.address": HOST,
      "server.port": up.port,
      "http.response.status_code": 200,
      "credgate.decision": "allowed",
      "credgate.injection_count": 1,
      "credgate.agent.id": expect.any(String),
      "credgate.project.id": traced.keys.projectId,
      "credgate.request_id": expect.any(String),
      "credgate.gateway.added_ms": expect.any(Number),
    });
    expect(client.attributes).toMatchObject({ "http.request.method": "GET", "server.address": HOST, "http.response.status_code": 200, "network.peer.address": "127.0.0.1" });
    expect(server.statusCode).toBe(0);
    expect(server.resource).toMatchObject({ "service.name": "credgate-e2e", "deployment.environment": "e2e", "service.instance.id": expect.any(String) });
    // The query is never recorded.
    expect(JSON.stringify(spans, (_, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain("secret-query");
  });

  test("without a traceparent a trace starts; the CONNECT is a span of its own, continuing the CONNECT's traceparent", async () => {
    const connectTrace = hex(16);
    const connectParent = hex(8);
    const r = await curl(traced, `https://${HOST}:${up.port}/fresh`, ["--proxy-header", `traceparent: ${traceparent(connectTrace, connectParent)}`]);
    expect(r.status).toBe(200);
    const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(r.body.headers.traceparent)!;
    expect(sent[1]).not.toBe(connectTrace);
    const spans = await spansOf(collector, sent[1]!, 2);
    const server = only(spans, "credgate.gateway GET");
    expect(server.parentSpanId).toBe("");
    expect(server.flags).toBe(0x1);
    expect(only(spans, "credgate.upstream GET").spanId).toBe(sent[2]!);
    const [connect] = await spansOf(collector, connectTrace, 1);
    expect(connect!.name).toBe("credgate.gateway CONNECT");
    expect(connect!.kind).toBe(SERVER);
    expect(connect!.parentSpanId).toBe(connectParent);
    expect(connect!.attributes).toMatchObject({
      "http.request.method": "CONNECT",
      "server.address": HOST,
      "server.port": up.port,
      "http.response.status_code": 200,
      "credgate.tunnel": "intercepted",
      "credgate.project.id": traced.keys.projectId,
    });
  });

  test("HTTP/2 inside the tunnel is traced the same way", async () => {
    const traceId = hex(16);
    const r = await curl(traced, `https://${HOST}:${up.port}/h2`, ["--http2", "-H", `traceparent: ${traceparent(traceId, hex(8))}`]);
    expect(r.status).toBe(200);
    expect(r.body.headers.traceparent.split("-")[1]).toBe(traceId);
    const spans = await spansOf(collector, traceId, 2);
    expect(only(spans, "credgate.upstream GET").parentSpanId).toBe(only(spans, "credgate.gateway GET").spanId);
  });

  test("a WebSocket upgrade: the upstream's traceparent names the CLIENT span, which ends with the WebSocket", async () => {
    const traceId = hex(16);
    const ca = await gatewayCa(traced);
    const t = await openTlsTunnel(traced.gatewayPort, `${HOST}:${up.port}`, traced.keys.defaultAgentToken, ca.pem, HOST);
    const key = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
    t.tls.write(rawRequest("GET", "/ws", `${HOST}:${up.port}`, ["Upgrade: websocket", "Connection: Upgrade", `Sec-WebSocket-Key: ${key}`, "Sec-WebSocket-Version: 13", `traceparent: ${traceparent(traceId, hex(8))}`]));
    expect((await t.reader.head()).status).toBe(101);
    t.tls.write(wsFrame("hello"));
    expect(await readWsText(t.reader)).toBe("echo:hello");
    t.tls.destroy();
    const spans = await spansOf(collector, traceId, 2);
    const server = only(spans, "credgate.gateway GET");
    const client = only(spans, "credgate.upstream GET");
    expect(client.parentSpanId).toBe(server.spanId);
    expect(server.attributes["http.response.status_code"]).toBe(101);
    const seen = up.seen.filter((s) => s.url === "/ws").at(-1)!;
    expect(seen.headers.traceparent).toBe(traceparent(traceId, client.spanId));
  });

  test("a plain http:// request on the proxy connection is traced the same way", async () => {
    const traceId = hex(16);
    const r = await curl(traced, `http://127.0.0.1:${plain.port}/plain`, ["-H", `traceparent: ${traceparent(traceId, hex(8))}`]);
    expect(r.status).toBe(200);
    const spans = await spansOf(collector, traceId, 2);
    const server = only(spans, "credgate.gateway GET");
    const client = only(spans, "credgate.upstream GET");
    expect(server.attributes).toMatchObject({ "url.scheme": "http", "url.path": "/plain", "server.address": "127.0.0.1", "server.port": plain.port });
    expect(plain.seen.find((s) => s.url === "/plain")!.headers.traceparent).toBe(traceparent(traceId, client.spanId));
  });

  test("an unsampled caller is followed: nothing recorded, its traceparent goes upstream as it came", async () => {
    const traceId = hex(16);
    const given = traceparent(traceId, hex(8), "00");
    const r = await curl(traced, `https://${HOST}:${up.port}/unsampled`, ["-H", `traceparent: ${given}`]);
    expect(r.status).toBe(200);
    expect(r.body.headers.traceparent).toBe(given);
    // A later traced request's spans have arrived; this one's never do.
    const marker = hex(16);
    await curl(traced, `https://${HOST}:${up.port}/marker`, ["-H", `traceparent: ${traceparent(marker, hex(8))}`]);
    await spansOf(collector, marker, 2);
    expect(collector.spans.filter((s) => s.traceId === traceId)).toEqual([]);
  });

  test("an unreachable upstream: both spans end in ERROR with the gateway's 502", async () => {
    const traceId = hex(16);
    const r = await curl(traced, `https://${DOWN}:${closed}/x`, ["-H", `traceparent: ${traceparent(traceId, hex(8))}`]);
    expect(r.status).toBe(502);
    const spans = await spansOf(collector, traceId, 2);
    const server = only(spans, "credgate.gateway GET");
    expect(server.statusCode).toBe(2);
    expect(server.attributes["http.response.status_code"]).toBe(502);
    expect(server.attributes["credgate.decision"]).toBe("error");
    expect(only(spans, "credgate.upstream GET").statusCode).toBe(2);
  });

  test("an API request is a SERVER span named by its route, continuing the client's traceparent", async () => {
    const traceId = hex(16);
    const parent = hex(8);
    const id = crypto.randomUUID();
    const r = await traced.api("GET", `/v1/secrets/${id}?verbose=1`, { headers: { traceparent: traceparent(traceId, parent) } });
    expect(r.status).toBe(404);
    const [span] = await spansOf(collector, traceId, 1);
    expect(span!.name).toBe("credgate.api GET /v1/secrets/:secretId");
    expect(span!.kind).toBe(SERVER);
    expect(span!.parentSpanId).toBe(parent);
    expect(span!.attributes).toMatchObject({ "http.request.method": "GET", "server.address": "127.0.0.1", "url.path": `/v1/secrets/${id}`, "http.route": "/v1/secrets/:secretId", "http.response.status_code": 404, "credgate.principal": "project_key" });
    expect(JSON.stringify(span!.attributes)).not.toContain("verbose");
    expect(span!.statusCode).toBe(0);
    // The request's log line carries the trace id.
    expect(traced.output()).toContain(`"traceId":"${traceId}"`);
  });

  test("no credential in any exported byte; the exports counted on /metrics", async () => {
    // A secret injected into the URL path: the span has the agent's path, never the one sent upstream.
    const traceId = hex(16);
    const r = await curl(traced, `https://${BOT}:${up.port}/botPLACEHOLDER/sendMessage`, ["-H", `traceparent: ${traceparent(traceId, hex(8))}`]);
    expect(r.status).toBe(200);
    expect(up.seen.map((s) => s.url)).toContain(`/bot${BOT_SECRET}/sendMessage`);
    const spans = await spansOf(collector, traceId, 2);
    expect(only(spans, "credgate.gateway GET").attributes["url.path"]).toBe("/botPLACEHOLDER/sendMessage");
    expect(collector.exports.length).toBeGreaterThan(0);
    const secrets = [SECRET, BOT_SECRET, traced.keys.defaultAgentToken, traced.keys.projectApiKey, traced.keys.orgApiKey];
    for (const e of collector.exports) {
      expect(e.contentType).toBe("application/x-protobuf");
      expect(e.headers["x-collector-key"]).toBe(COLLECTOR_KEY);
      for (const s of secrets) {
        expect(e.raw.includes(s)).toBe(false);
        expect(e.body.includes(s)).toBe(false);
      }
    }
    const metrics = await (await fetch(`${traced.apiUrl}/metrics`)).text();
    const exported = Number(/^credgate_trace_spans_exported_total (\d+)/m.exec(metrics)?.[1]);
    expect(exported).toBeGreaterThanOrEqual(collector.spans.length - 5);
    expect(metrics).toContain('credgate_trace_spans_dropped_total{reason="queue_full"} 0');
  });
});

describe("a collector that cannot be reached", () => {
  test("requests are not affected; the spans are dropped and counted, one warning, no key in it", async () => {
    const cg = await startCredgate({
      env: {
        CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
        CREDGATE_RESOLVE: resolveEntries([HOST], up.port),
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${closed}`,
        OTEL_EXPORTER_OTLP_HEADERS: `x-collector-key=${COLLECTOR_KEY}`,
        OTEL_BSP_SCHEDULE_DELAY: "50",
        OTEL_EXPORTER_OTLP_TIMEOUT: "1000",
      },
    });
    try {
      cas.set(cg, (await gatewayCa(cg)).file);
      for (let i = 0; i < 3; i++) expect((await curl(cg, `https://${HOST}:${up.port}/nowhere`)).status).toBe(200);
      const dropped = await until(async () => {
        const text = await (await fetch(`${cg.apiUrl}/metrics`)).text();
        const n = Number(/^credgate_trace_spans_dropped_total\{reason="export_failed"\} (\d+)/m.exec(text)?.[1] ?? 0);
        if (n < 6) throw new Error(`${n} spans dropped so far`);
        return n;
      });
      expect(dropped).toBeGreaterThanOrEqual(6);
      const warnings = cg.output().split("\n").filter((l) => l.includes("trace export failed: spans dropped"));
      // At most one a minute.
      expect(warnings.length).toBe(1);
      expect(warnings[0]).toContain(`"endpoint":"http://127.0.0.1:${closed}/v1/traces"`);
      expect(cg.output()).not.toContain(COLLECTOR_KEY);
    } finally {
      await cg.stop();
    }
  });
});

describe("on stop", () => {
  test("spans still queued are exported before the process exits, by every gateway process", async () => {
    const cg = await startCredgate({
      env: {
        CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
        CREDGATE_RESOLVE: resolveEntries([HOST], up.port),
        CREDGATE_GATEWAY_WORKERS: "2",
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        // Nothing would leave for ten minutes but for the stop.
        OTEL_BSP_SCHEDULE_DELAY: "600000",
      },
    });
    try {
      cas.set(cg, (await gatewayCa(cg)).file);
      const created = await cg.api("POST", "/v1/secrets", { body: { name: HOST, type: "generic", value: SECRET, hostPattern: HOST, injectionConfig: { headerName: "x-api-key" } } });
      expect(created.status).toBe(201);
      const traceIds = Array.from({ length: 6 }, () => hex(16));
      // One connection each, so the kernel spreads them over both gateway processes.
      for (const id of traceIds) expect((await curl(cg, `https://${HOST}:${up.port}/stop`, ["-H", `traceparent: ${traceparent(id, hex(8))}`])).status).toBe(200);
      // A fixed wait: it shows no span leaves before the shutdown's flush (the schedule delay is 10 minutes).
      await Bun.sleep(300);
      expect(collector.spans.filter((s) => traceIds.includes(s.traceId))).toEqual([]);
      expect(await cg.stop()).toBe(0);
      const spans = collector.spans.filter((s) => traceIds.includes(s.traceId));
      expect(spans.length).toBe(12);
      for (const s of spans) expect(String(s.resource["service.instance.id"])).toMatch(/\S/);
    } finally {
      await cg.stop();
    }
  });
});

describe("OTLP/JSON with gzip (OTEL_EXPORTER_OTLP_PROTOCOL=http/json)", () => {
  test("the same spans, as gzipped JSON", async () => {
    const traceId = hex(16);
    const r = await curl(tracedJson, `https://${HOST}:${up.port}/json`, ["-H", `traceparent: ${traceparent(traceId, hex(8))}`]);
    expect(r.status).toBe(200);
    const spans = await spansOf(jsonCollector, traceId, 2);
    const client = only(spans, "credgate.upstream GET");
    expect(client.parentSpanId).toBe(only(spans, "credgate.gateway GET").spanId);
    expect(r.body.headers.traceparent).toBe(traceparent(traceId, client.spanId));
    for (const e of jsonCollector.exports) {
      expect([e.contentType, e.contentEncoding]).toEqual(["application/json", "gzip"]);
      expect(e.body.includes(SECRET)).toBe(false);
      expect(e.body.includes(tracedJson.keys.defaultAgentToken)).toBe(false);
    }
  });
});

describe("without the variables", () => {
  test("the agent's traceparent goes upstream as it came, and nothing is exported", async () => {
    const given = traceparent(hex(16), hex(8));
    const before = collector.exports.length + jsonCollector.exports.length;
    const r = await curl(untraced, `https://${HOST}:${up.port}/untraced`, ["-H", `traceparent: ${given}`]);
    expect(r.status).toBe(200);
    expect(r.body.headers.traceparent).toBe(given);
    expect(up.seen.find((s) => s.url === "/untraced")!.headers["x-api-key"]).toBe(SECRET);
    const metrics = await (await fetch(`${untraced.apiUrl}/metrics`)).text();
    expect(metrics).toMatch(/^credgate_trace_spans_exported_total 0$/m);
    expect(collector.exports.length + jsonCollector.exports.length).toBe(before);
  });
});
