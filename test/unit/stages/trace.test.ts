// The runner's traces (src/gateway/pipeline.ts with src/gateway/trace.ts, docs/operations.md#traces) on stages
// written here, exporting to a loopback OTLP collector (test/support/otlpCollector.ts): a request's SERVER span
// continues the agent's traceparent and ends when the reply's body is delivered; a stage that waits gets a child
// span, one that answers at once does not; a failing wait ends its span in ERROR; a CONNECT's span ends when it
// is answered; an unsampled agent gets no span; and without a tracer nothing is recorded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { log } from "../../../src/observability/log.ts";
import { Tracer } from "../../../src/observability/tracing.ts";
import { Pipeline } from "../../../src/gateway/pipeline.ts";
import { Reply } from "../../../src/gateway/reply.ts";
import { answer, PASS, relay, type Stage } from "../../../src/gateway/stage.ts";
import { replyText, testRequest, testTunnel } from "../../../src/gateway/testing.ts";
import { startOtlpCollector, type CollectedSpan, type OtlpCollector } from "../../support/otlpCollector.ts";
import { until } from "../../support/gateway.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const AGENT_SPAN = "00f067aa0ba902b7";

let collector: OtlpCollector;
let tracer: Tracer;

beforeAll(() => {
  log.setQuiet(true);
  collector = startOtlpCollector();
  tracer = new Tracer(
    {
      endpoint: `${collector.url}/v1/traces`,
      headers: [],
      protocol: "http/protobuf",
      gzip: false,
      timeoutMs: 2000,
      serviceName: "credgate",
      resourceAttributes: [],
      sampler: { root: "always_on", parentBased: true, ratio: 1 },
      batch: { delayMs: 20, maxQueueSize: 100, maxBatchSize: 50 },
    },
    { instanceId: "unit", version: "0" },
    fetch,
  );
});

afterAll(async () => {
  await tracer.stop(1000);
  await collector.stop();
});

const sync = (name: string): Stage => ({ name, request: () => PASS });
const waits = (name: string, fail = false): Stage => ({ name, request: () => Bun.sleep(5).then(() => (fail ? Promise.reject(new Error("lookup failed")) : PASS)) });
const last: Stage = { name: "forward", request: () => relay(new Reply(200, "OK", [["content-type", "text/plain"]], null)) };

function spansOf(traceId: string, count: number): Promise<CollectedSpan[]> {
  return until(() => {
    const found = collector.spans.filter((s) => s.traceId === traceId);
    if (found.length < count) throw new Error(`${found.length} of ${count} spans`);
    return found;
  });
}

const tp = (traceId: string, flags = "01") => `00-${traceId}-${AGENT_SPAN}-${flags}`;

describe("a traced request", () => {
  test("a SERVER span continuing the agent's; a child span for the stage that waited only", async () => {
    const traceId = "1".repeat(32);
    const pipeline = new Pipeline([sync("auth"), waits("vault"), sync("policy"), last], tracer);
    const rq = testRequest({ tunnel: "api.example.test", target: "/items/1?key=hidden", headers: [["traceparent", tp(traceId)]] });
    const reply = await pipeline.request(rq);
    expect(reply.status).toBe(200);
    expect(rq.trace?.traceId).toBe(traceId);
    // Not ended until the body is delivered.
    await Bun.sleep(60);
    expect(collector.spans.filter((s) => s.traceId === traceId && s.kind === 2)).toEqual([]);
    await replyText(reply);
    const spans = await spansOf(traceId, 2);
    expect(spans.map((s) => s.name).sort()).toEqual(["credgate.gateway GET", "credgate.stage vault"]);
    const server = spans.find((s) => s.kind === 2)!;
    const stage = spans.find((s) => s.kind === 1)!;
    expect(server.parentSpanId).toBe(AGENT_SPAN);
    expect(stage.parentSpanId).toBe(server.spanId);
    expect(stage.attributes).toEqual({ "credgate.stage": "vault" });
    expect(stage.end - stage.start).toBeGreaterThan(0n);
    expect(server.attributes).toMatchObject({ "http.request.method": "GET", "url.path": "/items/1", "server.address": "api.example.test", "server.port": 443, "http.response.status_code": 200, "credgate.decision": "allowed" });
    expect(Object.values(server.attributes)).not.toContain("key=hidden");
  });

  test("every stage synchronous: the runner stays synchronous with tracing on", async () => {
    const traceId = "2".repeat(32);
    const pipeline = new Pipeline([sync("auth"), { name: "policy", request: () => answer("blocked", new Response("no", { status: 403 })) }, last], tracer);
    const rq = testRequest({ tunnel: "api.example.test", target: "/x", headers: [["traceparent", tp(traceId)]] });
    const reply = pipeline.request(rq);
    expect(reply).toBeInstanceOf(Reply);
    await replyText(reply as Reply);
    const [server] = await spansOf(traceId, 1);
    expect(server!.attributes).toMatchObject({ "http.response.status_code": 403, "credgate.decision": "blocked" });
    expect(server!.statusCode).toBe(0);
  });

  test("a wait that fails: its span in ERROR, the request's 502 in ERROR", async () => {
    const traceId = "3".repeat(32);
    const pipeline = new Pipeline([waits("vault", true), last], tracer);
    const reply = await pipeline.request(testRequest({ tunnel: "api.example.test", target: "/x", headers: [["traceparent", tp(traceId)]] }));
    expect(reply.status).toBe(502);
    await replyText(reply);
    const spans = await spansOf(traceId, 2);
    expect(spans.map((s) => [s.name, s.statusCode]).sort()).toEqual([
      ["credgate.gateway GET", 2],
      ["credgate.stage vault", 2],
    ]);
  });

  test("an unsampled agent: no span, nothing on the request", async () => {
    const traceId = "4".repeat(32);
    const pipeline = new Pipeline([waits("vault"), last], tracer);
    const rq = testRequest({ tunnel: "api.example.test", target: "/x", headers: [["traceparent", tp(traceId, "00")]] });
    await replyText(await pipeline.request(rq));
    expect(rq.trace).toBeNull();
    expect(rq.headers.get("traceparent")).toBe(tp(traceId, "00"));
  });

  test("without a tracer: nothing recorded", async () => {
    const pipeline = new Pipeline([waits("vault"), last]);
    const rq = testRequest({ tunnel: "api.example.test", target: "/x", headers: [["traceparent", tp("5".repeat(32))]] });
    await replyText(await pipeline.request(rq));
    expect(rq.trace).toBeNull();
  });
});

describe("a traced CONNECT", () => {
  test("a SERVER span continuing the CONNECT's traceparent, ended when it is answered", async () => {
    const traceId = "6".repeat(32);
    const pipeline = new Pipeline([{ name: "auth", connect: () => answer("blocked", { status: 407, body: { error: "proxy_authentication_required", message: "no" } }) }], tracer);
    const tunnel = testTunnel({ authority: "api.example.test:443", headers: [["traceparent", tp(traceId)]] });
    const verdict = await pipeline.connect(tunnel);
    expect(verdict).not.toBe(PASS);
    pipeline.connected(tunnel, 407, verdict);
    const [span] = await spansOf(traceId, 1);
    expect(span!.name).toBe("credgate.gateway CONNECT");
    expect(span!.parentSpanId).toBe(AGENT_SPAN);
    expect(span!.attributes).toMatchObject({ "http.request.method": "CONNECT", "server.address": "api.example.test", "server.port": 443, "http.response.status_code": 407, "credgate.tunnel": "refused" });
  });
});
