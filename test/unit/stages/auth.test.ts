// The auth stage (docs/gateway.md#proxy-authentication) over a real snapshot of a real store: a CONNECT's
// token before the tunnel opens (407 as a raw answer when it is missing or unknown), then every request's —
// the tunnel's inside a tunnel (a regenerated one: 407 that closes the tunnel), the request's own
// Proxy-Authorization on a proxy connection. A passed flow carries the agent and its resolved view.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PipelineDeps } from "../../../src/gateway/pipeline.ts";
import { authStage } from "../../../src/gateway/stages/auth.ts";
import { testPipelineDeps, testRequest, testTunnel } from "../../../src/gateway/testing.ts";
import { createTestApi, type TestApi } from "../../support/app.ts";
import { outcome } from "./helpers.ts";

let api: TestApi;
let deps: PipelineDeps;
let token: string;
let stage: ReturnType<typeof authStage>;

beforeAll(async () => {
  api = await createTestApi();
  deps = await testPipelineDeps(api.core.config, api.core.services);
  token = api.core.bootstrap.defaultAgentToken;
  stage = authStage({ snapshot: deps.snapshot });
});

afterAll(async () => {
  deps.upstreams.close();
  await api.core.close();
});

const PROXY_AUTH_BODY = {
  error: "proxy_authentication_required",
  message: "credgate requires a valid agent token: set the proxy URL to http://x:<agent token>@<gateway>.",
};
const basic = (t: string) => `Basic ${Buffer.from(`x:${t}`).toString("base64")}`;

describe("connect", () => {
  test("a known token passes; the tunnel carries the agent and its view", async () => {
    const tunnel = testTunnel({ authority: "api.example.test:443", token });
    expect(await outcome(stage.connect!(tunnel))).toBe("pass");
    expect(tunnel.agent.projectId).toBe(api.projectId);
    expect(tunnel.credentials.agent.id).toBe(tunnel.agent.id);
  });

  test("no token, or an unknown one → 407 with Proxy-Authenticate, nothing authenticated", async () => {
    for (const t of [null, `agt_${"0".repeat(64)}`]) {
      const tunnel = testTunnel({ authority: "api.example.test:443", token: t });
      expect(await outcome(stage.connect!(tunnel))).toEqual({
        decision: "blocked",
        status: 407,
        headers: { "proxy-authenticate": 'Basic realm="credgate"' },
        body: PROXY_AUTH_BODY,
      });
      expect(tunnel.authenticated).toBe(false);
    }
  });
});

describe("request", () => {
  test("inside a tunnel: the tunnel's token is checked again", async () => {
    const rq = testRequest({ tunnel: testTunnel({ authority: "api.example.test:443", token }), target: "/x" });
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(rq.agent.organizationId).toBe(api.organizationId);
  });

  test("on a proxy connection: the request's own Proxy-Authorization; none → 407 that keeps the connection", async () => {
    const signed = testRequest({ target: "https://api.example.test/x", headers: { "proxy-authorization": basic(token) } });
    expect(await outcome(stage.request!(signed))).toBe("pass");
    const anonymous = testRequest({ target: "https://api.example.test/x" });
    const o = await outcome(stage.request!(anonymous));
    expect(o).toMatchObject({ decision: "blocked", status: 407, body: PROXY_AUTH_BODY });
    expect(o !== "pass" && o.headers.connection).toBeUndefined();
    expect(anonymous.authenticated).toBe(false);
  });

  test("a token regenerated while the tunnel is open: 407 with connection: close", async () => {
    const agent = (await api.call("POST", "/v1/agents", { body: { name: "Rotating", identifier: "rotating" } })).body;
    const first = (await api.call("POST", `/v1/agents/${agent.id}/regenerate-token`)).body.accessToken;
    const tunnel = testTunnel({ authority: "api.example.test:443", token: first });
    expect(await outcome(stage.connect!(tunnel))).toBe("pass");
    expect((await api.call("POST", `/v1/agents/${agent.id}/regenerate-token`)).status).toBe(200);
    const o = await outcome(stage.request!(testRequest({ tunnel, target: "/x" })));
    expect(o).toMatchObject({ decision: "blocked", status: 407, headers: { "proxy-authenticate": 'Basic realm="credgate"', connection: "close" }, body: PROXY_AUTH_BODY });
  });
});
