// The intercept stage (docs/gateway.md#pipeline): a token refresh to auth.openai.com whose refresh_token is the
// `credgate-managed` placeholder (JSON or form body) is answered locally with the synthetic token, decision
// allowed; any other request passes with its body whole.
import { expect, test } from "bun:test";
import { interceptStage } from "../../../src/gateway/stages/intercept.ts";
import { testRequest } from "../../../src/gateway/testing.ts";
import { outcome } from "./helpers.ts";

const stage = interceptStage();
const refresh = (body: string, headers: Record<string, string> = {}) =>
  testRequest({ tunnel: "auth.openai.com", method: "POST", target: "/oauth/token", headers, body });

test("the placeholder refresh, as JSON or as a form → the synthetic 200, decision allowed", async () => {
  for (const body of ['{"grant_type":"refresh_token","refresh_token":"credgate-managed"}', "grant_type=refresh_token&refresh_token=credgate-managed"]) {
    expect(await outcome(stage.request!(refresh(body)))).toEqual({
      decision: "allowed",
      status: 200,
      headers: expect.objectContaining({ "content-type": "application/json" }),
      body: { access_token: "credgate-managed", refresh_token: "credgate-managed", token_type: "Bearer", expires_in: 2592000 },
    });
  }
});

test("a real refresh token passes, its body still whole for the upstream", async () => {
  const body = '{"grant_type":"refresh_token","refresh_token":"rt-real"}';
  const rq = refresh(body);
  expect(await outcome(stage.request!(rq))).toBe("pass");
  expect(await new Response(rq.body).text()).toBe(body);
});

test("other hosts, paths and methods are not even read (synchronous)", () => {
  const body = '{"refresh_token":"credgate-managed"}';
  for (const rq of [
    testRequest({ tunnel: "auth.example.test", method: "POST", target: "/oauth/token", body }),
    testRequest({ tunnel: "auth.openai.com", method: "POST", target: "/oauth/other", body }),
    testRequest({ tunnel: "auth.openai.com", method: "GET", target: "/oauth/token" }),
  ]) {
    const verdict = stage.request!(rq);
    expect(verdict).not.toBeInstanceOf(Promise);
    expect((verdict as { response: unknown }).response).toBeNull();
  }
});

test("a body over 64 KiB is not parsed: it passes, whole", async () => {
  const big = `{"refresh_token":"credgate-managed","pad":"${"x".repeat(70 * 1024)}"}`;
  const rq = refresh(big);
  expect(await outcome(stage.request!(rq))).toBe("pass");
  expect((await new Response(rq.body).text()).length).toBe(big.length);
});
