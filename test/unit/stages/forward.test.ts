// The forward stage (docs/gateway.md#forwarding) against a real TLS upstream (a throwaway CA made with openssl),
// dialled where the real egress stage said: the request goes out as the stages left it (injected header,
// rewritten target, one Host) and the upstream's reply comes back as it is, the decision untouched; an
// upstream that cannot be reached is 502 upstream_unreachable and one that sends no head in time 504
// upstream_timeout, both decision error; nothing is dialled without the egress stage's verdict. A WebSocket
// upgrade the upstream does not accept is answered with its status and a plain-text body.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { EgressGuard } from "../../../src/gateway/egressGuard.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { egressStage } from "../../../src/gateway/stages/egress.ts";
import { forwardStage } from "../../../src/gateway/stages/forward.ts";
import { agentCredentials, compiledSecret, replyText, signIn, testRequest, type TestRequestInit } from "../../../src/gateway/testing.ts";
import { UpstreamPool } from "../../../src/gateway/upstream/pool.ts";
import { loadConfig } from "../../../src/runtime/config.ts";
import { Outbound } from "../../../src/services/outbound.ts";
import { freePort } from "../../support/ports.ts";
import { makePki, startUpstream, type TestUpstream } from "../../support/upstream.ts";
import { outcome } from "./helpers.ts";

const HOST = "api.forward.test";
let upstream: TestUpstream;
let pool: UpstreamPool;
let outbound: Outbound;
let egress: ReturnType<typeof egressStage>;
let closedPort: number;

beforeAll(async () => {
  const pki = makePki([HOST]);
  upstream = startUpstream(pki);
  closedPort = await freePort();
  const config = loadConfig(
    { dataDir: "/nonexistent", port: 0, gatewayPort: 0 },
    { CREDGATE_CONNECT_TO: `${HOST}:443:127.0.0.1:${upstream.port},down.forward.test:443:127.0.0.1:${closedPort}`, CREDGATE_UPSTREAM_CA_FILE: pki.caFile },
  );
  outbound = new Outbound(config);
  pool = new UpstreamPool(outbound);
  egress = egressStage({ egress: new EgressGuard(config, outbound) });
});

afterAll(async () => {
  pool.close();
  await upstream.stop();
});

/** A request the egress stage judged, with a credential injected. */
async function request(init: Omit<TestRequestInit, "tunnel">, host = HOST): Promise<ProxyRequest> {
  const rq = testRequest({ ...init, tunnel: host });
  signIn(rq, agentCredentials());
  rq.applyCredential(compiledSecret({ hostPattern: HOST, injection: { headerName: "x-api-key" } }), "injected-key");
  expect(await outcome(egress.request!(rq))).toBe("pass");
  return rq;
}

const stage = (headerTimeoutSeconds = 30) => forwardStage({ upstreams: pool, outbound, headerTimeoutSeconds });

test("the request goes out as the stages left it; the upstream's reply is relayed and the decision stands", async () => {
  const rq = await request({ method: "POST", target: "/v1/echo?x=1", headers: { "content-type": "text/plain", "x-agent": "a" }, body: "hello" });
  const verdict = await stage().request!(rq);
  expect(verdict.decision).toBeNull();
  const reply = verdict.response;
  if (!reply || reply instanceof Response) throw new Error("expected the upstream's Reply");
  expect(reply.fromUpstream).toBe(true);
  expect(reply.status).toBe(200);
  const seen = JSON.parse(await replyText(reply));
  expect(seen).toMatchObject({ method: "POST", url: "/v1/echo?x=1", host: HOST, bodyBytes: 5, headers: { "x-api-key": "injected-key", "x-agent": "a" } });
  expect(rq.upstreamMs).toBeGreaterThanOrEqual(0);
});

describe("failures, decision error", () => {
  test("nothing listening → 502 upstream_unreachable", async () => {
    const o = await outcome(stage().request!(await request({ target: "/x" }, "down.forward.test")));
    expect(o).toMatchObject({ decision: "error", status: 502, body: { error: "upstream_unreachable", message: expect.stringMatching(/^credgate could not connect to down\.forward\.test:443: /) } });
  });

  test("no response head within the header timeout → 504 upstream_timeout", async () => {
    upstream.handle((req) => (new URL(req.url).pathname === "/slow" ? Bun.sleep(2500).then(() => new Response("late")) : undefined));
    const o = await outcome(stage(1).request!(await request({ target: "/slow" })));
    expect(o).toEqual({ decision: "error", status: 504, headers: expect.any(Object), body: { error: "upstream_timeout", message: `${HOST} did not send response headers within 1 seconds.` } });
  });

  test("without the egress stage's verdict nothing is dialled", () => {
    const rq = testRequest({ tunnel: HOST, target: "/x" });
    signIn(rq, agentCredentials());
    expect(() => stage().request!(rq)).toThrow("forward reached without an egress verdict");
  });
});

test("a WebSocket upgrade the upstream does not accept → its status, text/plain, no upstream headers", async () => {
  const rq = await request({ target: "/not-ws", headers: { upgrade: "websocket", connection: "Upgrade", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-version": "13" } });
  expect(rq.websocket).toBe(true);
  const o = await outcome(stage().request!(rq));
  expect(o).toMatchObject({ decision: null, status: 200, headers: { "content-type": "text/plain" }, body: "WebSocket upgrade rejected by upstream (200)" });
});
