// Notifications and approval links through the real process (docs/policy.md#notifications, #approval-links):
// requests held by an approval rule at the real gateway (curl through it, a real TLS upstream) raise events that
// reach receivers of our own over HTTPS — a webhook receiver that checks the signature with its own HMAC, a fake
// Slack incoming webhook and a fake ntfy server speaking those vendors' wire formats. Retries, their end when the
// approval ends, a stuck channel that never delays the agent, the approval link over curl and in Chromium, and
// delivery exactly once across gateway worker processes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { closeCleanPages, launchBrowser, openPage, screenshot, type WatchedPage } from "../support/browser.ts";
import { curlThroughGateway, type CurlResult } from "../support/curl.ts";
import { gatewayCa, run, until, untilTrue } from "../support/gateway.ts";
import { signatureValid, startReceiver, type Arrival, type Receiver } from "../support/notifyReceivers.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const UP = "held.notify.test";
const HOOK = "hooks.notify.test";
const SLACK = "hooks.slack.notify.test";
const NTFY = "ntfy.notify.test";
const NOWHERE = "unreachable.notify.test";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let pki: TestPki;
let up: TestUpstream;
let hook: Receiver;
let slack: Receiver;
let ntfy: Receiver;
let cg: RunningCredgate;
let closedPort: number;
/** Each credgate's gateway CA file (each data dir has its own CA). */
const caFiles = new Map<RunningCredgate, string>();

/** The settings every credgate of this suite starts with (receivers and upstream pinned to loopback). */
function envFor(extra: Record<string, string> = {}): Record<string, string> {
  return {
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_RESOLVE: [`${UP}:${up.port}:127.0.0.1`, `${HOOK}:${hook.port}:127.0.0.1`, `${SLACK}:${slack.port}:127.0.0.1`, `${NTFY}:${ntfy.port}:127.0.0.1`, `${NOWHERE}:${closedPort}:127.0.0.1`].join(","),
    CREDGATE_APPROVAL_POLL_SECONDS: "1",
    ...extra,
  };
}

beforeAll(async () => {
  pki = makePki([UP, HOOK, SLACK, NTFY, NOWHERE]);
  up = startUpstream(pki);
  hook = startReceiver(pki, "webhook");
  slack = startReceiver(pki, "slack");
  ntfy = startReceiver(pki, "ntfy");
  // A port nothing listens on: bound, then released.
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  closedPort = probe.port;
  probe.stop(true);
  cg = await startCredgate({ env: envFor() });
  await publishApprovalRule(cg);
}, 60_000);

afterAll(async () => {
  await cg?.stop();
  await Promise.all([up?.stop(), hook?.stop(), slack?.stop(), ntfy?.stop()]);
});

async function publishApprovalRule(c: RunningCredgate): Promise<void> {
  caFiles.set(c, (await gatewayCa(c)).file);
  const rule = await c.api("POST", "/v1/policy/rules", { body: { name: "A person decides", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: UP }] } });
  expect(rule.status).toBe(201);
  expect((await c.api("POST", "/v1/policy/publish")).status).toBe(200);
}

async function addChannel(c: RunningCredgate, body: Record<string, unknown>): Promise<any> {
  const res = await c.api("POST", "/v1/notifications/channels", { body });
  if (res.status !== 201) throw new Error(`channel: ${res.status} ${res.text}`);
  return res.body;
}

/** A request held at the gateway (curl, still waiting) and its pending approval. */
async function held(c: RunningCredgate, path: string, opts: { token?: string; body?: string } = {}): Promise<{ done: Promise<CurlResult>; approval: any }> {
  const done = curlThroughGateway(c, `https://${UP}:${up.port}${path}`, {
    caFile: caFiles.get(c)!,
    method: "POST",
    data: opts.body ?? '{"note":"hello"}',
    headers: ["content-type: application/json"],
    agentToken: opts.token,
    maxTime: 120,
  });
  const bare = path.split("?")[0];
  let answer: CurlResult | null = null;
  void done.then((r) => (answer = r), () => {});
  const approval = await until(async () => {
    const list = await c.api("GET", "/v1/approvals/pending");
    const found = list.body.requests.find((r: any) => r.path.split("?")[0] === bare);
    if (found) return found;
    // A request answered without being held will never be: say what it got, and what credgate logged.
    if (answer) throw new Error(`${path} was answered without being held: ${answer.status} ${answer.text.slice(0, 300)}\n${c.output().slice(-4000)}`);
    throw new Error(`${path} is not held yet`);
    // Generous: several gateway processes on a loaded machine may take a while to hold a first request.
  }, 60_000);
  return { done, approval };
}

type Seen = Arrival & { json: any };

/** The arrivals at `path` so far, with their bodies parsed. */
const seenAt = (r: Receiver, path: string): Seen[] =>
  r.arrivals.filter((a) => a.path === path).map((a) => {
    let json: any = null;
    try {
      json = JSON.parse(a.body);
    } catch {}
    return { ...a, json };
  });

/** Waits for an arrival at `path` that `match` accepts. */
function arrival(r: Receiver, path: string, match: (a: Seen) => boolean = () => true, ms = 20_000): Promise<Seen> {
  return until(() => {
    const found = seenAt(r, path).find(match);
    if (!found) throw new Error(`nothing matching arrived at ${path}`);
    return found;
  }, ms);
}

const isEvent = (event: string, approvalId?: string) => (a: Seen) => a.json?.event === event && (approvalId === undefined || a.json.data.approvalId === approvalId);
const ntfyEvent = (approvalId: string) => (a: Seen) => (a.headers.actions ?? "").includes(`/approve/${approvalId}?`);

async function deliveries(c: RunningCredgate, channelId: string): Promise<any[]> {
  return (await c.api("GET", `/v1/notifications/deliveries?channelId=${channelId}`)).body.data;
}

describe("webhook", () => {
  test("approval.requested and approval.decided arrive signed; X-Credgate-Delivery is the logged delivery's id; the secret is nowhere else", async () => {
    const channel = await addChannel(cg, { kind: "webhook", url: hook.url(HOOK, "/signed") });
    const secret: string = channel.signingSecret;
    hook.secret("/signed", secret);
    try {
      const { done, approval } = await held(cg, "/signed-call?to=someone", { body: '{"to":"a@b.c","password":"hunter2"}' });
      const requested = await arrival(hook, "/signed", isEvent("approval.requested", approval.id));
      expect(requested.verified).toBe(true);
      // The check is real: another secret, or another body, does not verify.
      expect(signatureValid(`whsec_${"0".repeat(64)}`, requested.headers["x-credgate-signature"], requested.body)).toBe(false);
      expect(signatureValid(secret, requested.headers["x-credgate-signature"], requested.body.replace("hello", "HELLO") + " ")).toBe(false);
      const t = Number(/^t=(\d+),/.exec(requested.headers["x-credgate-signature"]!)![1]);
      expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(120);
      expect(requested.headers["content-type"]).toBe("application/json");
      expect(requested.headers["x-credgate-event"]).toBe("approval.requested");
      expect(requested.headers["x-credgate-delivery"]).toMatch(UUID);
      const agent = (await cg.api("GET", "/v1/agents/default")).body;
      expect(Object.keys(requested.json).sort()).toEqual(["createdAt", "data", "event", "id"]);
      expect(requested.json.data).toEqual({
        approvalId: approval.id,
        projectId: cg.keys.projectId,
        agent: { id: agent.id, name: agent.name },
        method: "POST",
        host: UP,
        path: "/signed-call",
        summary: approval.summary,
        expiresAt: approval.expiresAt,
        approveUrl: `${`http://localhost:${cg.apiPort}`}/approve/${approval.id}?t=${new URL(requested.json.data.approveUrl).searchParams.get("t")}`,
        denyUrl: `${requested.json.data.approveUrl}&d=deny`,
      });
      expect(requested.body).not.toContain("hunter2");
      const logged = await deliveries(cg, channel.id);
      expect(logged).toContainEqual(expect.objectContaining({ id: requested.headers["x-credgate-delivery"], event: "approval.requested", status: "delivered", attempts: 1, lastStatus: 204 }));

      // Decided through the link: the decision names the link.
      const token = new URL(requested.json.data.approveUrl).searchParams.get("t");
      const decided = await fetch(`${cg.apiUrl}/v1/approvals/${approval.id}/link-decision`, { method: "POST", body: JSON.stringify({ token, decision: "approve" }) });
      expect(decided.status).toBe(200);
      const answer = await done;
      expect(answer.status).toBe(200);
      expect(answer.json.url).toBe("/signed-call?to=someone");
      const decidedEvent = await arrival(hook, "/signed", isEvent("approval.decided", approval.id));
      expect(decidedEvent.verified).toBe(true);
      expect(decidedEvent.headers["x-credgate-event"]).toBe("approval.decided");
      expect(decidedEvent.json.data).toMatchObject({ approvalId: approval.id, decision: "approve", decidedBy: { kind: "link" }, rememberedUntil: null });
      expect(decidedEvent.headers["x-credgate-delivery"]).not.toBe(requested.headers["x-credgate-delivery"]);

      // Shown once: in no later answer, log line or row.
      expect((await cg.api("GET", "/v1/notifications/channels")).text).not.toContain(secret);
      expect(cg.output()).not.toContain(secret);
      expect(cg.output()).not.toContain(token!);
      const rows = await queryStore(cg, sql.raw("SELECT * FROM notification_channels"));
      expect(JSON.stringify(rows)).not.toContain(secret.slice(6));
    } finally {
      await cg.api("DELETE", `/v1/notifications/channels/${channel.id}`);
    }
  }, 60_000);

  test("a receiver that fails twice gets the same delivery three times (backoff 1 s, 2 s), then it is delivered", async () => {
    const channel = await addChannel(cg, { kind: "webhook", url: hook.url(HOOK, "/flaky"), events: ["approval.requested"] });
    hook.secret("/flaky", channel.signingSecret);
    hook.script("/flaky", ["fail", "fail"]);
    try {
      const { done, approval } = await held(cg, "/flaky-call");
      await untilTrue(() => seenAt(hook, "/flaky").length >= 3, 20_000);
      const tries = seenAt(hook, "/flaky");
      expect(tries.map((a) => a.status)).toEqual([503, 503, 204]);
      expect(new Set(tries.map((a) => a.headers["x-credgate-delivery"])).size).toBe(1);
      expect(new Set(tries.map((a) => a.json.id)).size).toBe(1);
      expect(tries.every((a) => a.verified === true && a.json.data.approvalId === approval.id)).toBe(true);
      const logged = await until(async () => {
        const [d] = await deliveries(cg, channel.id);
        if (d?.status !== "delivered") throw new Error(`still ${d?.status}`);
        return d;
      });
      expect(logged).toMatchObject({ id: tries[0]!.headers["x-credgate-delivery"], status: "delivered", attempts: 3, lastStatus: 204, lastError: null });
      expect((await cg.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
      expect((await done).json.error).toBe("manual_approval_denied");
    } finally {
      await cg.api("DELETE", `/v1/notifications/channels/${channel.id}`);
    }
  }, 60_000);

  test("retries end when the approval ends", async () => {
    const channel = await addChannel(cg, { kind: "webhook", url: hook.url(HOOK, "/down"), events: ["approval.requested"] });
    hook.script("/down", Array(20).fill("fail"));
    try {
      const { done, approval } = await held(cg, "/down-call");
      await untilTrue(() => seenAt(hook, "/down").length >= 2, 20_000);
      expect((await cg.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
      expect((await done).status).toBe(200);
      const stopped = await until(async () => {
        const [d] = await deliveries(cg, channel.id);
        if (d?.status !== "failed") throw new Error(`still ${d?.status}`);
        return d;
      });
      expect(stopped.lastError).toBe("the approval is no longer pending");
      expect(stopped.attempts).toBeLessThan(10);
      // Past the retry that was due next (its backoff: at most 4 s here), and a second for the sender to act on
      // it: nothing more arrives. A fixed wait, as a negative check must be, timed by the stored schedule.
      const count = seenAt(hook, "/down").length;
      const [due] = await queryStore<{ at: string }>(cg, sql`SELECT next_attempt_at AS at FROM notification_deliveries WHERE id = ${stopped.id}`);
      await Bun.sleep(Math.max(0, Date.parse(due!.at) + 1000 - Date.now()));
      expect(seenAt(hook, "/down").length).toBe(count);
      expect((await deliveries(cg, channel.id))[0].attempts).toBe(stopped.attempts);
    } finally {
      await cg.api("DELETE", `/v1/notifications/channels/${channel.id}`);
    }
  }, 60_000);

  test("a stuck and an unreachable channel never delay the held request or its forwarding", async () => {
    const stuck = await addChannel(cg, { kind: "webhook", url: hook.url(HOOK, "/stuck") });
    const gone = await addChannel(cg, { kind: "webhook", url: `https://${NOWHERE}:${closedPort}/hook` });
    hook.script("/stuck", ["hang", "hang", "hang"]);
    try {
      const { done, approval } = await held(cg, "/stuck-call");
      // The stuck receiver holds credgate's delivery open...
      await untilTrue(() => hook.hanging >= 1, 20_000);
      // ...and the refused one failed its first attempt.
      const refused = await until(async () => {
        const [d] = await deliveries(cg, gone.id);
        if (!d || d.attempts < 1) throw new Error("not tried yet");
        return d;
      });
      expect(refused).toMatchObject({ status: "retrying", lastStatus: null });
      expect(refused.lastError).not.toContain("/hook");
      // Meanwhile the approval is decided and the agent's request is forwarded and answered.
      expect((await cg.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
      const answer = await done;
      expect(answer.status).toBe(200);
      expect(answer.json.url).toBe("/stuck-call");
      expect(hook.hanging).toBeGreaterThanOrEqual(1);
      const pendingDelivery = (await deliveries(cg, stuck.id)).find((d) => d.event === "approval.requested");
      expect(pendingDelivery.status).toBe("retrying");
    } finally {
      hook.release();
      await cg.api("DELETE", `/v1/notifications/channels/${stuck.id}`);
      await cg.api("DELETE", `/v1/notifications/channels/${gone.id}`);
    }
  }, 60_000);

  test("test send: delivered to a working receiver (signed, event `test`); to a refused one, the error", async () => {
    const channel = await addChannel(cg, { kind: "webhook", url: hook.url(HOOK, "/tested") });
    hook.secret("/tested", channel.signingSecret);
    const gone = await addChannel(cg, { kind: "ntfy", url: `https://${NOWHERE}:${closedPort}/topic` });
    try {
      const ok = await cg.api("POST", `/v1/notifications/channels/${channel.id}/test`);
      expect(ok.body).toEqual({ delivered: true, status: 204, error: null });
      const sent = await arrival(hook, "/tested");
      expect(sent.verified).toBe(true);
      expect(sent.headers["x-credgate-event"]).toBe("test");
      expect(sent.json).toMatchObject({ event: "test", data: { channelId: channel.id } });
      const failed = await cg.api("POST", `/v1/notifications/channels/${gone.id}/test`);
      expect(failed.body.delivered).toBe(false);
      expect(failed.body.status).toBeNull();
      expect(failed.body.error).toEqual(expect.any(String));
      expect(failed.body.error).not.toContain("/topic");
      expect(await deliveries(cg, channel.id)).toEqual([]);
    } finally {
      await cg.api("DELETE", `/v1/notifications/channels/${channel.id}`);
      await cg.api("DELETE", `/v1/notifications/channels/${gone.id}`);
    }
  }, 30_000);
});

describe("Slack and ntfy", () => {
  test("Slack gets Block Kit with Approve/Deny url buttons (agent text escaped); ntfy plain text with Title, Priority and Actions", async () => {
    const s = await addChannel(cg, { kind: "slack", url: slack.url(SLACK, "/services/T000/B000/XXXX") });
    const n = await addChannel(cg, { kind: "ntfy", url: ntfy.url(NTFY, "/credgate-approvals") });
    try {
      const { done, approval } = await held(cg, "/vendor-call", { body: '{"note":"<!channel> & <@U123> look"}' });
      const fromSlack = await arrival(slack, "/services/T000/B000/XXXX", (a) => (a.json?.blocks ?? []).some((b: any) => b.type === "actions" && b.elements[0].url.includes(approval.id)));
      expect(fromSlack.status).toBe(200);
      expect(fromSlack.headers["content-type"]).toBe("application/json");
      const msg = fromSlack.json;
      expect(msg.text).toBe(`Approval needed: POST ${UP}/vendor-call`);
      expect(msg.blocks[0]).toEqual({ type: "header", text: { type: "plain_text", text: `Approval needed: POST ${UP}/vendor-call`, emoji: false } });
      const section = msg.blocks.find((b: any) => b.type === "section").text;
      expect(section.type).toBe("mrkdwn");
      expect(section.text).toContain("Agent: Default Agent");
      // Agent-controlled text cannot ping the channel or a user: Slack's control characters are escaped.
      expect(section.text).toContain("&lt;!channel&gt; &amp; &lt;@U123&gt;");
      expect(section.text).not.toContain("<!channel>");
      const actions = msg.blocks.find((b: any) => b.type === "actions").elements;
      expect(actions.map((e: any) => [e.text.text, e.style])).toEqual([
        ["Approve", "primary"],
        ["Deny", "danger"],
      ]);
      expect(actions[0].url).toMatch(new RegExp(`^http://localhost:${cg.apiPort}/approve/${approval.id}\\?t=[0-9a-f]{64}$`));
      expect(actions[1].url).toBe(`${actions[0].url}&d=deny`);

      const fromNtfy = await arrival(ntfy, "/credgate-approvals", ntfyEvent(approval.id));
      expect(fromNtfy.status).toBe(200);
      expect(fromNtfy.headers["content-type"]).toBe("text/plain; charset=utf-8");
      expect(fromNtfy.headers.title).toBe(`Approval needed: POST ${UP}/vendor-call`);
      expect(fromNtfy.headers.priority).toBe("4");
      expect(fromNtfy.headers.actions).toBe(`view, Approve, ${actions[0].url}; view, Deny, ${actions[1].url}`);
      expect(fromNtfy.body).toContain("Agent: Default Agent");
      expect(fromNtfy.body).toContain("<!channel>");
      for (const c of [s, n]) {
        expect(await deliveries(cg, c.id)).toContainEqual(expect.objectContaining({ event: "approval.requested", status: "delivered", attempts: 1, lastStatus: 200 }));
      }

      // The Slack button opens the approval page; the decision reaches both.
      const page = await fetch(actions[0].url);
      expect(page.status).toBe(200);
      expect((await cg.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
      expect((await done).json.error).toBe("manual_approval_denied");
      const slackDecided = await arrival(slack, "/services/T000/B000/XXXX", (a) => a.json?.text === `Denied: POST ${UP}/vendor-call`);
      expect(slackDecided.json.blocks.some((b: any) => b.type === "actions")).toBe(false);
      expect(JSON.stringify(slackDecided.json)).toContain("owner@localhost");
      const ntfyDecided = await arrival(ntfy, "/credgate-approvals", (a) => a.headers.title === `Denied: POST ${UP}/vendor-call`);
      expect(ntfyDecided.headers.actions).toBeUndefined();
      expect(ntfyDecided.headers.priority).toBe("3");
    } finally {
      await cg.api("DELETE", `/v1/notifications/channels/${s.id}`);
      await cg.api("DELETE", `/v1/notifications/channels/${n.id}`);
    }
  }, 60_000);
});

describe("approval links", () => {
  /** A held request and its links, learned the way a person does: from a notification. */
  async function heldWithLinks(path: string): Promise<{ done: Promise<CurlResult>; approval: any; approveUrl: string; denyUrl: string; token: string }> {
    const channel = await addChannel(cg, { kind: "webhook", url: hook.url(HOOK, `/links${path}`), events: ["approval.requested"] });
    const { done, approval } = await held(cg, path);
    const got = await arrival(hook, `/links${path}`, isEvent("approval.requested", approval.id));
    await cg.api("DELETE", `/v1/notifications/channels/${channel.id}`);
    const { approveUrl, denyUrl } = got.json.data;
    return { done, approval, approveUrl, denyUrl, token: new URL(approveUrl).searchParams.get("t")! };
  }

  const curl = async (args: string[]) => {
    const r = await run(["curl", "-sS", "-w", "\n%{http_code}", ...args]);
    const lines = r.stdout.trimEnd().split("\n");
    return { status: Number(lines.pop()), body: lines.join("\n") };
  };

  test("curl: GET shows the page and changes nothing; POST decides; a used link → 410; a wrong token → 404", async () => {
    const { done, approval, approveUrl, denyUrl, token } = await heldWithLinks("/curl-link");
    for (const url of [approveUrl, approveUrl, denyUrl]) {
      const page = await curl([url]);
      expect(page.status).toBe(200);
      expect(page.body).toContain('<span class="method">POST</span>');
      expect(page.body).toContain(`<span class="host">${UP}</span><span class="path">/curl-link</span>`);
      expect(page.body).toContain("Default Agent");
    }
    expect((await cg.api("GET", `/v1/approvals/${approval.id}`)).body.status).toBe("pending");
    const api = `${cg.apiUrl}/v1/approvals/${approval.id}/link-decision`;
    const wrong = await curl(["-X", "POST", "--data", JSON.stringify({ token: "0".repeat(64), decision: "approve" }), api]);
    expect(wrong).toEqual({ status: 404, body: '{"error":{"message":"Approval not found","type":"not_found_error"}}' });
    const ok = await curl(["-X", "POST", "--data", JSON.stringify({ token, decision: "approve" }), api]);
    expect(ok).toEqual({ status: 200, body: '{"success":true}' });
    expect((await done).status).toBe(200);
    const used = await curl(["-X", "POST", "--data", JSON.stringify({ token, decision: "deny" }), api]);
    expect(used).toEqual({ status: 410, body: '{"error":{"message":"Approval is no longer pending","type":"invalid_request_error"}}' });
    const after = await curl([approveUrl]);
    expect(after.status).toBe(410);
    expect(after.body).toContain("This approval is no longer pending");
    expect((await cg.api("GET", `/v1/approvals/${approval.id}`)).body).toMatchObject({ status: "approved", decidedBy: null });
  }, 60_000);

  test("Chromium: open the link, press Approve, the held request completes", async () => {
    const { done, approveUrl } = await heldWithLinks("/browser-link");
    const browser = await launchBrowser();
    const pages: WatchedPage[] = [];
    try {
      const w = await openPage(browser);
      pages.push(w);
      await w.page.goto(approveUrl);
      await w.page.getByRole("heading", { name: "Approval needed" }).waitFor();
      expect(await w.page.locator("main").innerText()).toContain(`${UP}/browser-link`);
      await screenshot(w.page, "approval-link");
      await w.page.getByRole("button", { name: "Approve", exact: true }).click();
      await w.page.getByRole("heading", { name: "Approved" }).waitFor();
      const answer = await done;
      expect(answer.status).toBe(200);
      expect(answer.json.url).toBe("/browser-link");
      await w.page.goto(approveUrl);
      await w.page.getByRole("heading", { name: "This approval is no longer pending" }).waitFor();
      // The used link answers 410 Gone with its page: the one failed answer.
      expect(w.failures).toEqual([`410 ${approveUrl}`]);
      w.failures.length = 0;
      await closeCleanPages(pages, `http://localhost:${cg.apiPort}`);
    } finally {
      await browser.close();
    }
  }, 60_000);
});

describe("gateway worker processes", () => {
  test("each event reaches a channel once, whichever process held the request", async () => {
    const workers = await startCredgate({ env: envFor({ CREDGATE_GATEWAY_WORKERS: "3" }) });
    try {
      await publishApprovalRule(workers);
      const channel = await addChannel(workers, { kind: "webhook", url: hook.url(HOOK, "/workers") });
      hook.secret("/workers", channel.signingSecret);
      // Each on its own connection: the kernel spreads them over the three gateway processes.
      const calls = await Promise.all(Array.from({ length: 9 }, (_, i) => held(workers, `/worker-call-${i}`)));
      // Decided only once its request was announced: a request decided first is never announced (its delivery
      // ends with the approval), which is right for a person but not what this test counts.
      for (const { approval } of calls) await arrival(hook, "/workers", isEvent("approval.requested", approval.id), 75_000);
      for (const { approval } of calls) expect((await workers.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
      for (const { done } of calls) expect((await done).status).toBe(200);
      const holders = await queryStore<{ n: number }>(workers, sql.raw("SELECT COUNT(DISTINCT instance_id) AS n FROM approvals"));
      expect(Number(holders[0]!.n)).toBeGreaterThan(1);
      // On a loaded machine a delivery can time out and come again with backoff (1, 2, 4, 8, 16 s, …): wait for that.
      await untilTrue(() => seenAt(hook, "/workers").length >= 18, 75_000);
      // A fixed wait: it shows no 19th delivery comes.
      await Bun.sleep(2000);
      const all = seenAt(hook, "/workers");
      expect(all).toHaveLength(18);
      expect(all.every((a) => a.verified === true)).toBe(true);
      expect(new Set(all.map((a) => a.headers["x-credgate-delivery"])).size).toBe(18);
      for (const { approval } of calls) {
        expect(all.filter((a) => a.json.data.approvalId === approval.id).map((a) => a.json.event).sort()).toEqual(["approval.decided", "approval.requested"]);
      }
    } finally {
      await workers.stop();
    }
  }, 120_000);
});
