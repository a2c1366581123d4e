// The pure parts of notifications (docs/policy.md#notifications): what each channel kind receives for each
// event, the webhook signature (checked with node:crypto directly), channel URL rules and the retry schedule.
import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { newSigningSecret, webhookSignature } from "../../src/crypto/webhookSignature.ts";
import { channelUrlError } from "../../src/services/notifications/channels.ts";
import { backoffMs, MAX_ATTEMPTS } from "../../src/services/notifications/deliveries.ts";
import type { Payload } from "../../src/services/notifications/events.ts";
import { channelRequest } from "../../src/services/notifications/messages.ts";

const APPROVE = "https://credgate.example.com/approve/6f0c3c1e-8f55-4c55-9d2a-1f6e3a0b7c11?t=" + "ab".repeat(32);
const requested: Payload<"approval.requested"> = {
  id: "0b7e1f7a-3f7e-4b5e-9a43-0c1d2e3f4a5b",
  event: "approval.requested",
  createdAt: "2025-03-01T12:00:00.000Z",
  data: {
    approvalId: "6f0c3c1e-8f55-4c55-9d2a-1f6e3a0b7c11",
    projectId: "abcdefghijklmnop",
    agent: { id: "5d1f2e3a-1b2c-4d3e-8f9a-0b1c2d3e4f5a", name: "Coder <bot> & co" },
    method: "POST",
    host: "api.example.com",
    path: "/v1/send",
    summary: { action: "POST request", details: [{ label: "Body", value: '{"text":"<!channel> hi"}' }] },
    expiresAt: "2025-03-01T12:03:00.000Z",
    approveUrl: APPROVE,
    denyUrl: `${APPROVE}&d=deny`,
  },
};
const decided: Payload<"approval.decided"> = {
  id: "1b7e1f7a-3f7e-4b5e-9a43-0c1d2e3f4a5b",
  event: "approval.decided",
  createdAt: "2025-03-01T12:01:00.000Z",
  data: {
    approvalId: requested.data.approvalId,
    decision: "approve",
    decidedBy: { kind: "link" },
    rememberedUntil: "2025-03-01T13:01:00.000Z",
    projectId: "abcdefghijklmnop",
    agent: requested.data.agent,
    method: "POST",
    host: "api.example.com",
    path: "/v1/send",
  },
};
const budget: Payload<"budget.threshold"> = {
  id: "2b7e1f7a-3f7e-4b5e-9a43-0c1d2e3f4a5b",
  event: "budget.threshold",
  createdAt: "2025-03-01T12:02:00.000Z",
  data: { budgetId: "b1", scope: "project", percent: 100, spentCents: 1000, limitCents: 1000, period: "monthly", resetsAt: "2025-04-01T00:00:00.000Z" },
};

describe("webhook", () => {
  test("JSON body as is; event, delivery and a signature over `<t>.<body>` that HMAC-SHA256 with the secret reproduces", () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    const req = channelRequest({ kind: "webhook", url: "https://x.example/h", signingSecret: secret }, requested, "delivery-1", 1740830400);
    expect(JSON.parse(req.body)).toEqual(requested);
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["x-credgate-event"]).toBe("approval.requested");
    expect(req.headers["x-credgate-delivery"]).toBe("delivery-1");
    const expected = createHmac("sha256", secret).update(`1740830400.${req.body}`).digest("hex");
    expect(req.headers["x-credgate-signature"]).toBe(`t=1740830400,v1=${expected}`);
    expect(req.headers["user-agent"]).toMatch(/^credgate\//);
  });

  test("the signature depends on the secret, the time and every byte of the body", () => {
    const a = webhookSignature("whsec_a", "{}", 1);
    expect(webhookSignature("whsec_b", "{}", 1)).not.toBe(a);
    expect(webhookSignature("whsec_a", "{}", 2)).not.toBe(a);
    expect(webhookSignature("whsec_a", "{ }", 1)).not.toBe(a);
  });
});

describe("slack", () => {
  test("an approval request: text, header, escaped details, Approve/Deny url buttons", () => {
    const req = channelRequest({ kind: "slack", url: "https://hooks.slack.com/services/T/B/X", signingSecret: null }, requested, "d", 0);
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["x-credgate-signature"]).toBeUndefined();
    const msg = JSON.parse(req.body);
    expect(msg.text).toBe("Approval needed: POST api.example.com/v1/send");
    expect(msg.blocks.map((b: any) => b.type)).toEqual(["header", "section", "actions", "context"]);
    expect(msg.blocks[1].text.text).toBe(
      ["Agent: Coder &lt;bot&gt; &amp; co", "POST request", 'Body: {"text":"&lt;!channel&gt; hi"}', "Expires: 2025-03-01T12:03:00.000Z"].join("\n"),
    );
    expect(msg.blocks[2].elements).toEqual([
      { type: "button", action_id: "approve", style: "primary", text: { type: "plain_text", text: "Approve", emoji: false }, url: APPROVE },
      { type: "button", action_id: "deny", style: "danger", text: { type: "plain_text", text: "Deny", emoji: false }, url: `${APPROVE}&d=deny` },
    ]);
  });

  test("a decision and a budget alert have no buttons; long text is cut to Slack's limits", () => {
    const d = JSON.parse(channelRequest({ kind: "slack", url: "https://s", signingSecret: null }, decided, "d", 0).body);
    expect(d.text).toBe("Approved: POST api.example.com/v1/send");
    expect(d.blocks.some((b: any) => b.type === "actions")).toBe(false);
    expect(d.blocks[1].text.text).toContain("Approved by an approval link");
    expect(d.blocks[1].text.text).toContain("until 2025-03-01T13:01:00.000Z");
    const b = JSON.parse(channelRequest({ kind: "slack", url: "https://s", signingSecret: null }, budget, "d", 0).body);
    expect(b.text).toBe("Budget at 100%: $10.00 of $10.00 (monthly)");
    const long = { ...requested, data: { ...requested.data, path: `/${"p".repeat(400)}`, summary: { action: "x", details: [{ label: "Body", value: "v".repeat(5000) }] } } };
    const l = JSON.parse(channelRequest({ kind: "slack", url: "https://s", signingSecret: null }, long, "d", 0).body);
    expect(l.blocks[0].text.text.length).toBe(150);
    expect(l.blocks[1].text.text.length).toBe(3000);
  });
});

describe("ntfy", () => {
  test("plain text with Title, Priority, Tags and the Approve/Deny view actions", () => {
    const req = channelRequest({ kind: "ntfy", url: "https://ntfy.sh/topic", signingSecret: null }, requested, "d", 0);
    expect(req.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(req.headers.title).toBe("Approval needed: POST api.example.com/v1/send");
    expect(req.headers.priority).toBe("4");
    expect(req.headers.tags).toBe("warning");
    expect(req.headers.actions).toBe(`view, Approve, ${APPROVE}; view, Deny, ${APPROVE}&d=deny`);
    expect(req.body).toBe(["Agent: Coder <bot> & co", "POST request", 'Body: {"text":"<!channel> hi"}', "Expires: 2025-03-01T12:03:00.000Z"].join("\n"));
    const d = channelRequest({ kind: "ntfy", url: "https://ntfy.sh/topic", signingSecret: null }, decided, "d", 0);
    expect(d.headers.actions).toBeUndefined();
    expect(d.headers.priority).toBe("3");
    expect(channelRequest({ kind: "ntfy", url: "https://ntfy.sh/topic", signingSecret: null }, budget, "d", 0).headers.priority).toBe("5");
  });

  test("a non-ASCII title is an RFC 2047 word; control characters never reach a header; the body stays under 4096 bytes", () => {
    const named = { ...decided, data: { ...decided.data, path: "/é\r\nX-Injected: 1" } };
    const req = channelRequest({ kind: "ntfy", url: "https://n", signingSecret: null }, named, "d", 0);
    expect(req.headers.title).toMatch(/^=\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=$/);
    expect(Buffer.from(req.headers.title!.slice(10, -2), "base64").toString("utf8")).toBe("Approved: POST api.example.com/é  X-Injected: 1");
    const huge = { ...requested, data: { ...requested.data, summary: { action: "x", details: [{ label: "Body", value: "é".repeat(5000) }] } } };
    expect(Buffer.byteLength(channelRequest({ kind: "ntfy", url: "https://n", signingSecret: null }, huge, "d", 0).body)).toBeLessThanOrEqual(4000);
  });
});

describe("channel URLs", () => {
  test("https anywhere; http only to this machine, only self-hosted", () => {
    expect(channelUrlError("https://hooks.example.com/x", "self-hosted")).toBeNull();
    expect(channelUrlError("https://hooks.example.com/x", "cloud")).toBeNull();
    for (const url of ["http://127.0.0.1:8080/x", "http://127.1.2.3/x", "http://localhost/x", "http://[::1]:9/x"]) {
      expect(channelUrlError(url, "self-hosted")).toBeNull();
      expect(channelUrlError(url, "cloud")).toBe("url must be an https:// URL");
    }
    for (const url of ["http://hooks.example.com/x", "http://10.0.0.1/x", "http://0.0.0.0/x", "ftp://x.example/", "mailto:a@b.c", "not a url", "https://", "javascript:alert(1)"]) {
      expect(channelUrlError(url, "self-hosted")).toBe("url must be an https:// URL");
    }
  });
});

test("retries: 1 s, doubling, at most 10 attempts", () => {
  expect(Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => backoffMs(i + 1))).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000]);
  expect(MAX_ATTEMPTS).toBe(10);
});
