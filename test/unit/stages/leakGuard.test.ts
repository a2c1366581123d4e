// The leak-guard stage (docs/guards.md#credential-leak-guard): a credential value of the agent's project, in any
// of its forms, on its way to a host none of its holders match is refused (403 credential_leak_blocked) — in
// the target or a header before anything is sent, in the body as it streams (the body errors before the chunk
// holding it goes on, and the refusal waits on the request for the forward stage). The holders' own hosts,
// values under 12 characters and a guard turned off pass.
import { describe, expect, test } from "bun:test";
import { REDACTED } from "../../../src/core/echoRedaction.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { leakGuardStage } from "../../../src/gateway/stages/leakGuard.ts";
import { agentCredentials, compiledSecret, given, signIn, testRequest, type TestRequestInit } from "../../../src/gateway/testing.ts";
import { outcome } from "./helpers.ts";

const VALUE = "sk-live-a+b/c=d&e-0123456789";
const stage = leakGuardStage({ enabled: true });
const creds = agentCredentials({
  visible: [
    compiledSecret({ id: "s1", name: "Stripe key", hostPattern: "api.stripe.test", value: VALUE }),
    compiledSecret({ id: "s2", name: "Short", hostPattern: "short.test", value: "short-val" }),
  ],
});

function request(init: Omit<TestRequestInit, "tunnel">, host = "evil.test"): ProxyRequest {
  const rq = testRequest({ tunnel: host, ...init });
  signIn(rq, creds);
  return rq;
}

const refusal = {
  error: "credential_leak_blocked",
  message: `This request carries the value of the credgate secret "Stripe key", which is not for evil.test. credgate does not send a credential to another host.`,
  host: "evil.test",
  secret_name: "Stripe key",
};

describe("target and headers", () => {
  const forms: [string, string][] = [
    ["raw", VALUE],
    ["base64", Buffer.from(VALUE).toString("base64")],
    ["base64url unpadded", Buffer.from(VALUE).toString("base64url")],
    ["basic pair", Buffer.from(`user:${VALUE}`).toString("base64")],
    ["percent", encodeURIComponent(VALUE)],
    ["JSON", JSON.stringify(VALUE).slice(1, -1).replace(/\//g, "\\/")],
  ];
  for (const [name, form] of forms) {
    test(`${name} form in a header is refused with 403 before anything is sent`, async () => {
      const rq = request({ target: "/", headers: { "x-note": `see ${form} here` } });
      const out = await outcome(stage.request!(rq));
      expect(out).toMatchObject({ decision: "blocked", status: 403, body: refusal, headers: { "x-should-retry": "false" } });
    });
  }

  test("in the path or query: refused, and the logged path has the value redacted", async () => {
    const rq = request({ target: `/keys/${encodeURIComponent(VALUE)}/x?k=${encodeURIComponent(VALUE)}` });
    expect(await outcome(stage.request!(rq))).toMatchObject({ decision: "blocked", status: 403, body: refusal });
    expect(rq.leak?.loggedPath).toBe(`/keys/${REDACTED}/x`);
  });

  test("to a host a holder matches, a value under 12 characters, or with the guard off: passes", async () => {
    expect(await outcome(stage.request!(request({ target: `/${VALUE}`, headers: { authorization: VALUE } }, "api.stripe.test")))).toBe("pass");
    expect(await outcome(stage.request!(request({ target: "/short-val", headers: { x: "short-val" } })))).toBe("pass");
    expect(await outcome(leakGuardStage({ enabled: false }).request!(request({ target: `/${VALUE}` })))).toBe("pass");
  });

  test("a project without watched values costs one lookup and passes", async () => {
    const rq = testRequest({ tunnel: "evil.test", target: `/${VALUE}` });
    signIn(rq, agentCredentials());
    expect(stage.request!(rq)).toEqual({ decision: null, response: null });
    expect(rq.body).toBeNull();
  });

  test("connection credentials are watched under their label, and go to their app's hosts", async () => {
    const { compiledApp } = await import("../../../src/apps/match.ts");
    const app = compiledApp("github")!;
    const token = "gho_0123456789abcdefghijklmnop";
    const withConnection = agentCredentials({
      visibleConnections: [
        { id: "c1", provider: "github", label: "Work GitHub", displayName: "GitHub", scope: "project", usable: true, app, credential: { kind: "oauth", accessToken: token, refreshToken: null, expiresAt: null, tokenType: "bearer" }, grant: null },
      ],
    });
    const out = testRequest({ tunnel: "evil.test", target: "/", headers: { authorization: `token ${token}` } });
    signIn(out, withConnection);
    expect(await outcome(stage.request!(out))).toMatchObject({ status: 403, body: { secret_name: "Work GitHub" } });
    const home = testRequest({ tunnel: "api.github.com", target: "/user", headers: { authorization: `token ${token}` } });
    signIn(home, withConnection);
    expect(await outcome(stage.request!(home))).toBe("pass");
  });
});

describe("body", () => {
  test("a value deep in a streaming body errors the stream before the chunk that holds it; the refusal waits on the request", async () => {
    const chunks = ["a".repeat(65536), "b".repeat(65530) + VALUE.slice(0, 10), VALUE.slice(10) + "c".repeat(100)];
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (const x of chunks) c.enqueue(Buffer.from(x));
        c.close();
      },
    });
    const rq = request({ method: "POST", target: "/upload", body: stream, chunked: true });
    expect(await outcome(stage.request!(rq))).toBe("pass");
    const reader = rq.body!.getReader();
    const got: string[] = [];
    let failed: unknown = null;
    try {
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        got.push(Buffer.from(r.value).toString());
      }
    } catch (err) {
      failed = err;
    }
    expect(failed).toBeInstanceOf(Error);
    expect(got.join("")).not.toContain(VALUE.slice(0, 10));
    expect(got.join("")).toBe("a".repeat(65536) + "b".repeat(65530));
    expect(await outcome(rq.refusal!)).toMatchObject({ decision: "blocked", status: 403, body: refusal });
  });

  test("a body to the holder's host streams through unchanged", async () => {
    const rq = request({ method: "POST", target: "/", body: `{"key":"${VALUE}"}` }, "api.stripe.test");
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(await new Response(rq.body).text()).toBe(`{"key":"${VALUE}"}`);
    expect(rq.refusal).toBeNull();
  });
});

describe("in the pipeline", () => {
  test("a stage that peeks at the body after the guard (the approval preview) gets the refusal as its answer", async () => {
    const { Pipeline } = await import("../../../src/gateway/pipeline.ts");
    const peeker = {
      name: "peeker",
      async request(rq: ProxyRequest) {
        await rq.peekBody(16 * 1024);
        return { decision: "allowed" as const, response: new Response("should not get here") };
      },
    };
    const pipeline = new Pipeline([given("agent"), stage, peeker]);
    const rq = request({ method: "POST", target: "/", body: `{"k":"${VALUE}"}` });
    const reply = await pipeline.request(rq);
    expect(reply.status).toBe(403);
    expect(rq.decision).toBe("blocked");
  });
});
