// The log stage (docs/gateway.md#request-logs) with the real request-log service on a real store: one row per
// authenticated request (method, host with its port, path without query, status, decision, injection count,
// provider, request id; a WebSocket as GET), written once a metered reply's body has ended (with its cost);
// one row per passthrough tunnel and per CONNECT refused after authentication, none for an intercepted tunnel
// or an unauthenticated flow.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROXY_AUTH_REQUIRED } from "../../../src/gateway/errors.ts";
import { Pipeline } from "../../../src/gateway/pipeline.ts";
import { Reply, StreamBody } from "../../../src/gateway/reply.ts";
import { answer, PASS, type Stage } from "../../../src/gateway/stage.ts";
import { logStage } from "../../../src/gateway/stages/log.ts";
import { passthroughStage } from "../../../src/gateway/stages/passthrough.ts";
import { agentCredentials, agentEntry, compiledSecret, replyText, signIn, testRequest, testTunnel } from "../../../src/gateway/testing.ts";
import { createTestApi, type TestApi } from "../../support/app.ts";

let api: TestApi;
let stage: Stage;
let agentId: string;

beforeAll(async () => {
  api = await createTestApi();
  stage = logStage({ requestLogs: api.core.services.requestLogs });
  agentId = (await api.call("GET", "/v1/agents/default")).body.id;
});
afterAll(() => api.core.close());

const credentials = () => agentCredentials({ agent: agentEntry({ id: agentId, organizationId: api.organizationId, projectId: api.projectId }) });

async function rows(host: string) {
  await api.core.services.requestLogs.flush();
  return (await api.call("GET", `/v1/logs?host=${encodeURIComponent(host)}`)).body.data as Record<string, unknown>[];
}

const reply = (status: number) => new Reply(status, "", [["content-type", "text/plain"]], null);

describe("requests", () => {
  test("an authenticated request: one row with what the stages found", async () => {
    const rq = testRequest({ tunnel: "api.logged.test:8443", target: "/v1/items?secret=no", method: "POST", headers: { "x-request-id": "req-log-1" } });
    signIn(rq, credentials());
    rq.applyCredential(compiledSecret({ hostPattern: "api.logged.test" }), "value-1");
    expect(await stage.response!(rq, reply(201))).toBeInstanceOf(Reply);
    expect(await rows("api.logged.test:8443")).toEqual([
      expect.objectContaining({ method: "POST", host: "api.logged.test:8443", path: "/v1/items", status: 201, decision: "allowed", injectionCount: 1, provider: null }),
    ]);
    const logged = await api.core.services.requestLogs.query({ organizationId: api.organizationId, host: "api.logged.test:8443", limit: 10 });
    expect(logged.data[0]).toMatchObject({ requestId: "req-log-1" });
  });

  test("the decision is the runner's, from the verdict that answered", async () => {
    const rq = testRequest({ tunnel: "api.blocked.test", target: "/x" });
    signIn(rq, credentials());
    await new Pipeline([stage, { name: "blocks", request: () => answer("blocked", new Response("no", { status: 403 })) }]).request(rq);
    expect(await rows("api.blocked.test")).toEqual([expect.objectContaining({ status: 403, decision: "blocked" })]);
  });

  test("a WebSocket upgrade is logged as GET", async () => {
    const rq = testRequest({ tunnel: "ws.logged.test", target: "/socket", method: "GET", headers: { upgrade: "websocket", connection: "Upgrade" } });
    signIn(rq, credentials());
    await stage.response!(rq, reply(101));
    expect(await rows("ws.logged.test")).toEqual([expect.objectContaining({ method: "GET", status: 101 })]);
  });

  test("an unauthenticated request (a 407) has no row", async () => {
    await stage.response!(testRequest({ tunnel: "anon.logged.test", target: "/x" }), reply(407));
    expect(await rows("anon.logged.test")).toEqual([]);
  });

  test("a metered request's row waits for the end of its body, and carries its cost", async () => {
    const rq = testRequest({ tunnel: "llm.logged.test", target: "/v1/chat/completions", method: "POST" });
    signIn(rq, credentials());
    rq.meter = { secretId: "s", type: "llm_b", api: "chat_completions", model: null, estimateNanos: 10, at: Date.now(), hold: null, costNanos: null };
    const body = new ReadableStream<Uint8Array>({ pull: (c) => (c.enqueue(new Uint8Array([0x7b, 0x7d])), c.close()) });
    const r = new Reply(200, "", [], new StreamBody(body, 2));
    // What the budget stage's end callback does, first (its response hook runs before the log's).
    r.onEnd(() => rq.meter && (rq.meter.costNanos = 1234));
    await stage.response!(rq, r);
    expect(await rows("llm.logged.test")).toEqual([]);
    await replyText(r);
    expect(await rows("llm.logged.test")).toEqual([expect.objectContaining({ status: 200, costNanos: 1234 })]);
  });
});

describe("tunnels", () => {
  // The log stage and the passthrough decision, as in the gateway's list (made once the store is there).
  let pipeline: Pipeline;
  beforeAll(() => {
    pipeline = new Pipeline([stage, passthroughStage({ passthroughHosts: ["raw.logged.test"] })]);
  });

  test("a passthrough tunnel: one CONNECT row; an intercepted one: none", async () => {
    const raw = testTunnel({ authority: "raw.logged.test:443" });
    signIn(raw, credentials());
    expect(await pipeline.connect(raw)).toBe(PASS);
    pipeline.connected(raw, 200);
    const intercepted = testTunnel({ authority: "mitm.logged.test:443" });
    signIn(intercepted, credentials());
    expect(await pipeline.connect(intercepted)).toBe(PASS);
    pipeline.connected(intercepted, 200);
    expect(await rows("raw.logged.test")).toEqual([expect.objectContaining({ method: "CONNECT", path: "", status: 200, decision: "allowed", injectionCount: 0 })]);
    expect(await rows("mitm.logged.test")).toEqual([]);
  });

  test("a CONNECT refused after authentication is logged with its status and decision; before it, not at all", async () => {
    const refused = testTunnel({ authority: "denied.logged.test:8443" });
    signIn(refused, credentials());
    pipeline.connected(refused, 403, answer("blocked", { status: 403, body: { error: "egress_denied", message: "no" } }));
    expect(await rows("denied.logged.test:8443")).toEqual([expect.objectContaining({ method: "CONNECT", status: 403, decision: "blocked" })]);
    pipeline.connected(testTunnel({ authority: "anon.logged.test:443", token: null }), 407, answer("blocked", PROXY_AUTH_REQUIRED));
    expect(await rows("anon.logged.test")).toEqual([]);
  });
});
