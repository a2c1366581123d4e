// The claim stage (docs/guards.md#claim-required): while an organization is unclaimed, its agents' LLM requests
// go through and everything else is answered 403 claim_required with the claim link — a request inside a
// tunnel, and a passthrough tunnel before it opens (an intercepted tunnel opens: its requests are checked).
import { describe, expect, test } from "bun:test";
import { claimStage } from "../../../src/gateway/stages/claim.ts";
import { passthroughStage } from "../../../src/gateway/stages/passthrough.ts";
import { agentCredentials, compiledSecret, signIn, testRequest, testTunnel } from "../../../src/gateway/testing.ts";
import { outcome } from "./helpers.ts";

const stage = claimStage();
/** The passthrough decision, as the stage before this one makes it. */
const passthrough = passthroughStage({ passthroughHosts: ["raw.example.test", "api.openai.com"] });
const claim = { partnerName: "Acme Partner", claimUrl: "https://credgate.test/claim/abc" };
const body = {
  error: "claim_required",
  message: "This organization was set up by Acme Partner and has not been claimed yet, so non-LLM requests are paused. Ask the user to open the claim link: https://credgate.test/claim/abc",
  claim_url: "https://credgate.test/claim/abc",
};
const unclaimed = agentCredentials({ claim, injectable: [compiledSecret({ hostPattern: "llm.gateway.test", type: "llm_b", injection: null })] });

describe("request", () => {
  test("unclaimed: a non-LLM request → 403 claim_required with the link, decision claim_required", async () => {
    const rq = testRequest({ tunnel: "api.github.com", target: "/user" });
    signIn(rq, unclaimed);
    expect(await outcome(stage.request!(rq))).toEqual({ decision: "claim_required", status: 403, headers: expect.objectContaining({ "x-should-retry": "false" }), body });
  });

  test("unclaimed: an LLM vendor's host, or a host an LLM key of the agent applies to, passes", async () => {
    for (const host of ["api.anthropic.com", "llm.gateway.test"]) {
      const rq = testRequest({ tunnel: host, target: "/v1/chat/completions" });
      signIn(rq, unclaimed);
      expect(await outcome(stage.request!(rq))).toBe("pass");
    }
  });

  test("a vendor is matched label-wise: its domain or a subdomain of it, never a host that merely contains its name", async () => {
    for (const host of ["openai.com", "api.openai.com", "API.OpenAI.com.", "a.b.anthropic.com:443", "generativelanguage.googleapis.com"]) {
      const rq = testRequest({ tunnel: host, target: "/v1/models" });
      signIn(rq, unclaimed);
      expect({ host, outcome: await outcome(stage.request!(rq)) }).toEqual({ host, outcome: "pass" });
    }
    for (const host of ["openai.com.evil.test", "notopenai.com", "evil-anthropic.com", "anthropic.com-x.test", "xgenerativelanguage.googleapis.com", "googleapis.com"]) {
      const rq = testRequest({ tunnel: host, target: "/v1/models" });
      signIn(rq, unclaimed);
      expect({ host, outcome: await outcome(stage.request!(rq)) }).toEqual({ host, outcome: expect.objectContaining({ decision: "claim_required", status: 403 }) });
    }
  });

  test("claimed: everything passes", async () => {
    const rq = testRequest({ tunnel: "api.github.com", target: "/user" });
    signIn(rq, agentCredentials());
    expect(await outcome(stage.request!(rq))).toBe("pass");
  });
});

describe("connect", () => {
  test("unclaimed: a passthrough tunnel to a non-LLM host → 403 claim_required before it opens", async () => {
    const tunnel = testTunnel({ authority: "raw.example.test:443" });
    signIn(tunnel, unclaimed);
    passthrough.connect!(tunnel);
    expect(tunnel.passthrough).toBe(true);
    expect(await outcome(stage.connect!(tunnel))).toEqual({ decision: "claim_required", status: 403, headers: {}, body });
  });

  test("unclaimed: an intercepted tunnel, or a passthrough tunnel to an LLM host, opens", async () => {
    const intercepted = testTunnel({ authority: "intercepted.example.test:443" });
    signIn(intercepted, unclaimed);
    passthrough.connect!(intercepted);
    expect(await outcome(stage.connect!(intercepted))).toBe("pass");
    const llm = testTunnel({ authority: "api.openai.com:443" });
    signIn(llm, unclaimed);
    passthrough.connect!(llm);
    expect(llm.passthrough).toBe(true);
    expect(await outcome(stage.connect!(llm))).toBe("pass");
  });

  test("unclaimed: a passthrough tunnel to a host that only contains a vendor's name → 403 claim_required", async () => {
    const look = passthroughStage({ passthroughHosts: ["api.openai.com.evil.test"] });
    const tunnel = testTunnel({ authority: "api.openai.com.evil.test:443" });
    signIn(tunnel, unclaimed);
    look.connect!(tunnel);
    expect(tunnel.passthrough).toBe(true);
    expect(await outcome(stage.connect!(tunnel))).toEqual({ decision: "claim_required", status: 403, headers: {}, body });
  });
});
