// The policy stage (docs/policy.md) on rules written through the API, published, and compiled by a real
// snapshot of a real store: allow, block (403 blocked_by_policy), the Default Rule's block (403
// blocked_by_default_policy), rate limits counted in the store (429 rate_limited with Retry-After), body
// conditions (the body read, and still forwarded whole), and approval (carried to the approval stage; refused
// for a WebSocket). The matched rule is kept for the log.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PipelineDeps } from "../../../src/gateway/pipeline.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { authStage } from "../../../src/gateway/stages/auth.ts";
import { policyStage } from "../../../src/gateway/stages/policy.ts";
import { testPipelineDeps, testRequest, testTunnel, type TestRequestInit } from "../../../src/gateway/testing.ts";
import { createTestApi, type TestApi } from "../../support/app.ts";
import { outcome } from "./helpers.ts";
import { clearOfWindowEdge, HOUR_MS } from "../../support/windowEdge.ts";

interface World {
  api: TestApi;
  deps: PipelineDeps;
  stage: ReturnType<typeof policyStage>;
  /** A request of the default agent, through the real auth stage. */
  request(host: string, init: Omit<TestRequestInit, "tunnel">): Promise<ProxyRequest>;
}

const network = (host: string, extra: Record<string, unknown> = {}) => ({ kind: "network", hostPattern: host, ...extra });

async function world(rules: Record<string, unknown>[], defaultAction: "allow" | "block" = "allow"): Promise<World> {
  const api = await createTestApi();
  for (const body of rules) expect((await api.call("POST", "/v1/policy/rules", { body })).status).toBe(201);
  if (defaultAction === "block") expect((await api.call("PATCH", "/v1/policy/default", { body: { action: "block" } })).status).toBe(200);
  expect((await api.call("POST", "/v1/policy/publish")).status).toBe(200);
  const deps = await testPipelineDeps(api.core.config, api.core.services);
  const auth = authStage({ snapshot: deps.snapshot });
  return {
    api,
    deps,
    stage: policyStage({ rateLimits: api.core.services.rateLimits }),
    async request(host, init) {
      const rq = testRequest({ ...init, tunnel: testTunnel({ authority: `${host}:443`, token: api.core.bootstrap.defaultAgentToken }) });
      expect(await outcome(auth.request!(rq))).toBe("pass");
      return rq;
    },
  };
}

let w: World;
let deny: World;

beforeAll(async () => {
  w = await world([
    { name: "Block deletes", action: "block", targets: [network("block.test", { method: "DELETE" })] },
    { name: "No forbidden word", action: "block", conditions: [{ target: "body", operator: "contains", value: "Forbidden-Word" }], targets: [network("body.test")] },
    { name: "Once an hour", action: "allow", rateLimit: 1, rateLimitWindow: "hour", targets: [network("rate.test")] },
    { name: "Sends need approval", action: "allow", requireApproval: true, targets: [network("approve.test")] },
    { name: "No admin", action: "block", targets: [network("paths.test", { pathPattern: "/admin/*" })] },
    { name: "A once an hour", action: "allow", rateLimit: 1, rateLimitWindow: "hour", targets: [network("rate2.test", { pathPattern: "/a/*" })] },
    { name: "B once an hour", action: "allow", rateLimit: 1, rateLimitWindow: "hour", targets: [network("rate2.test", { pathPattern: "/b/*" })] },
  ]);
  deny = await world([{ name: "Allowed host", action: "allow", targets: [network("allowed.test")] }], "block");
});

afterAll(async () => {
  for (const x of [w, deny]) {
    x.deps.upstreams.close();
    await x.api.core.close();
  }
});

describe("verdicts", () => {
  test("no rule matches under a Default allow: passes", async () => {
    const rq = await w.request("other.test", { target: "/x" });
    expect(await outcome(w.stage.request!(rq))).toBe("pass");
    expect(rq.needsApproval).toBe(false);
  });

  test("a block rule → 403 blocked_by_policy with the rule, method and path as sent, decision blocked", async () => {
    const rq = await w.request("block.test", { method: "DELETE", target: "/v1/items/7?force=1" });
    expect(await outcome(w.stage.request!(rq))).toEqual({
      decision: "blocked",
      status: 403,
      headers: expect.objectContaining({ "x-should-retry": "false" }),
      body: {
        error: "blocked_by_policy",
        message: 'Blocked by credgate policy rule "Block deletes". DELETE /v1/items/7?force=1 is not allowed. Review this agent\'s access in your credgate dashboard.',
        rule_name: "Block deletes",
        method: "DELETE",
        path: "/v1/items/7?force=1",
      },
    });
    expect(rq.matchedRule).toEqual({ logicalId: expect.any(String), name: "Block deletes" });
    expect(await outcome(w.stage.request!(await w.request("block.test", { method: "GET", target: "/v1/items/7" })))).toBe("pass");
  });

  test("a body condition reads the body (lowercased) and the body is still forwarded whole", async () => {
    const blocked = await w.request("body.test", { method: "POST", target: "/send", body: '{"text":"a forbidden-word here"}' });
    expect(await outcome(w.stage.request!(blocked))).toMatchObject({ decision: "blocked", status: 403, body: { rule_name: "No forbidden word" } });
    const body = '{"text":"harmless"}';
    const allowed = await w.request("body.test", { method: "POST", target: "/send", body });
    expect(await outcome(w.stage.request!(allowed))).toBe("pass");
    expect(await new Response(allowed.body).text()).toBe(body);
  });

  test("a rate limit of 1 an hour: the first passes, the second → 429 rate_limited with Retry-After", async () => {
    await clearOfWindowEdge(HOUR_MS);
    expect(await outcome(w.stage.request!(await w.request("rate.test", { target: "/a" })))).toBe("pass");
    const o = await outcome(w.stage.request!(await w.request("rate.test", { target: "/b" })));
    expect(o).toMatchObject({
      decision: "rate_limited",
      status: 429,
      body: { error: "rate_limited", message: "This request was rate-limited by a credgate policy rule.", limit: 1, window: "hour" },
    });
    expect(o !== "pass" && Number(o.headers["retry-after"])).toBeGreaterThan(0);
  }, 30_000);

  test("every reading of the path is judged: a spelling of a blocked path → 403 naming the path as sent (docs/injection.md#every-reading-of-a-path)", async () => {
    for (const target of ["/%61dmin/x?q=1", "/./admin/x", "/x/../admin/x", "/x/%2e%2e/admin/x", "/admin%2Fx", "/admin;v=1/x"]) {
      const o = await outcome(w.stage.request!(await w.request("paths.test", { target })));
      expect(o).toMatchObject({ decision: "blocked", status: 403, body: { error: "blocked_by_policy", rule_name: "No admin", path: target } });
    }
    expect(await outcome(w.stage.request!(await w.request("paths.test", { target: "/Admin/x" })))).toBe("pass");
  });

  test("a path whose readings reach two rate-limited rules counts against both", async () => {
    await clearOfWindowEdge(HOUR_MS);
    expect(await outcome(w.stage.request!(await w.request("rate2.test", { target: "/a/../b/1" })))).toBe("pass");
    for (const target of ["/a/x", "/b/x"]) {
      expect({ target, o: await outcome(w.stage.request!(await w.request("rate2.test", { target }))) }).toMatchObject({ target, o: { decision: "rate_limited", status: 429 } });
    }
  }, 30_000);

  test("an approval rule passes the request on, marked to be held", async () => {
    const rq = await w.request("approve.test", { method: "POST", target: "/send" });
    expect(await outcome(w.stage.request!(rq))).toBe("pass");
    expect(rq.needsApproval).toBe(true);
  });

  test("a WebSocket upgrade cannot be held: 403 blocked_by_policy as \"Manual approval required\", method GET", async () => {
    const rq = await w.request("approve.test", { target: "/ws", headers: { upgrade: "websocket", connection: "Upgrade" } });
    expect(rq.websocket).toBe(true);
    expect(await outcome(w.stage.request!(rq))).toMatchObject({
      decision: "blocked",
      status: 403,
      body: { error: "blocked_by_policy", rule_name: "Manual approval required", method: "GET", path: "/ws" },
    });
    expect(rq.needsApproval).toBe(false);
  });

  test("a Default block → 403 blocked_by_default_policy for unmatched traffic; an allowed host passes", async () => {
    const rq = await deny.request("fallback.test", { method: "POST", target: "/v1/things?limit=5" });
    expect(await outcome(deny.stage.request!(rq))).toEqual({
      decision: "blocked_by_default_policy",
      status: 403,
      headers: expect.objectContaining({ "x-should-retry": "false" }),
      body: {
        error: "blocked_by_default_policy",
        message: "A default-deny policy blocked this request. POST fallback.test/v1/things?limit=5 is not permitted for this agent. Ask an administrator to allow the destination.",
        method: "POST",
        host: "fallback.test",
        path: "/v1/things?limit=5",
      },
    });
    expect(rq.matchedRule?.name).toBe("Default Rule");
    expect(await outcome(deny.stage.request!(await deny.request("allowed.test", { target: "/ok" })))).toBe("pass");
  });
});
