// The target stage (docs/gateway.md#request-targets): inside a tunnel only origin-form, `OPTIONS *` and
// absolute-form on the tunnel's own authority pass; everything else is a 400 bad_request, logged as blocked.
// Requests on a plain proxy connection are not its business.
import { describe, expect, test } from "bun:test";
import { isTunnelTarget, targetStage } from "../../../src/gateway/stages/target.ts";
import { testRequest, testTunnel } from "../../../src/gateway/testing.ts";
import { outcome } from "./helpers.ts";

const stage = targetStage();

describe("isTunnelTarget", () => {
  test.each([
    ["GET", "/", true],
    ["GET", "/v1/x?q=//evil.test", true],
    ["OPTIONS", "*", true],
    ["GET", "https://api.tunnel.test/x", true],
    ["GET", "HTTPS://API.Tunnel.Test:443/x", true],
    ["GET", "https://api.tunnel.test", true],
    ["GET", "http://api.tunnel.test:443/x", true],
    ["GET", "*", false],
    ["CONNECT", "evil.test:443", false],
    ["CONNECT", "/x", false],
    ["GET", "botPH/a", false],
    ["GET", "//evil.test/x", false],
    ["GET", "@evil.test/x", false],
    ["GET", "https://evil.test/x", false],
    ["GET", "https://api.tunnel.test:8443/x", false],
    ["GET", "http://api.tunnel.test/x", false],
    ["GET", "https://user@api.tunnel.test/x", false],
    ["GET", "https://api.tunnel.test@evil.test/x", false],
    ["GET", "ftp://api.tunnel.test/x", false],
    ["GET", "https://[::1/x", false],
  ])("%s %s → %p", (method, target, ok) => {
    expect(isTunnelTarget(method, target, "api.tunnel.test", 443)).toBe(ok);
  });

  test("an IPv6 tunnel's own literal, brackets and all", () => {
    expect(isTunnelTarget("GET", "https://[::1]:8443/x", "::1", 8443)).toBe(true);
    expect(isTunnelTarget("GET", "https://[::2]:8443/x", "::1", 8443)).toBe(false);
  });
});

describe("the stage", () => {
  const tunnel = testTunnel({ authority: "api.tunnel.test:443" });

  test("a path inside the tunnel passes", async () => {
    expect(await outcome(stage.request!(testRequest({ tunnel, target: "/x" })))).toBe("pass");
  });

  test("another host inside the tunnel → 400 bad_request naming the tunnel, decision blocked", async () => {
    for (const [method, target] of [
      ["CONNECT", "evil.test:443"],
      ["GET", "botPH/a"],
      ["GET", "//evil.test/x"],
      ["GET", "@evil.test/x"],
    ] as const) {
      const o = await outcome(stage.request!(testRequest({ tunnel, method, target })));
      expect(o).toEqual({
        decision: "blocked",
        status: 400,
        headers: expect.objectContaining({ "content-type": "application/json" }),
        body: {
          error: "bad_request",
          message: `A request inside the tunnel to api.tunnel.test must target a path on it ("/…", "*" for OPTIONS, or a URL on api.tunnel.test); "${target}" is not one.`,
        },
      });
    }
  });

  test("a request on a plain proxy connection (absolute-form) is not checked here", async () => {
    expect(await outcome(stage.request!(testRequest({ target: "https://elsewhere.test/x" })))).toBe("pass");
  });
});
