// Policy, grants and approvals at the real gateway (docs/injection.md#grants, docs/policy.md#evaluation policy, docs/policy.md#rate-limits,
// docs/policy.md#approvals, docs/agent-errors.md#summary errors, docs/gateway.md#request-logs; docs/policy.md#evaluation, docs/policy.md#rate-limits, docs/policy.md#approvals, docs/policy.md#reviewing-approvals): the real credgate process, a real TLS
// upstream in this process, and real clients (curl, Node/undici, raw TLS tunnels when a test needs to hold
// one connection open or watch for bytes).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { queryStore } from "../support/storeQuery.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";
import { ResponseReader as Reader, basic, eventually, gatewayCa, openTlsTunnel, parseHead, rawRequest, resolveEntries, run, type RawResponse, type ResponseReader } from "../support/gateway.ts";
import { curlThroughGateway, type CurlOptions } from "../support/curl.ts";
import { tempDir } from "../support/tmp.ts";
import * as net from "node:net";
import type * as tls from "node:tls";
import { clearOfWindowEdge, HOUR_MS } from "../support/windowEdge.ts";

const H = {
  draft: "draft.policy.test",
  block: "block.policy.test",
  org: "org.policy.test",
  body: "body.policy.test",
  rate: "rate.policy.test",
  approve: "approve.policy.test",
  ws: "ws.policy.test",
  grants: "grants.policy.test",
  held: "held.policy.test",
  free: "free.policy.test",
  allowed: "allowed.policy.test",
  fallback: "default.policy.test",
  effBlock: "eff-block.policy.test",
  effLimit: "eff-limit.policy.test",
  effPath: "eff-path.policy.test",
  effUsable: "eff-usable.policy.test",
  eqProjectA: "eq-a.policy.test",
  eqProjectB: "eq-b.policy.test",
  eqOrg: "eq-org.policy.test",
  ident: "ident.policy.test",
  secretTarget: "secret-target.policy.test",
};
const POLL_SECONDS = 1;

let pki: TestPki;
let up: TestUpstream;
let cg: RunningCredgate;
let ca: { pem: string; file: string };
let token: string;

function env(extra: Record<string, string> = {}) {
  return {
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_RESOLVE: resolveEntries(Object.values(H), up.port),
    CREDGATE_APPROVAL_POLL_SECONDS: String(POLL_SECONDS),
    ...extra,
  };
}

beforeAll(async () => {
  pki = makePki(Object.values(H));
  up = startUpstream(pki);
  cg = await startCredgate({ env: env() });
  ca = await gatewayCa(cg);
  token = cg.keys.defaultAgentToken;
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
});

// ── helpers ─────────────────────────────────────────────────────────────────────────────────────────────

const authority = (host: string) => `${host}:${up.port}`;
const url = (host: string, path: string) => `https://${authority(host)}${path}`;
const seen = (host: string, path?: string) => up.seen.filter((s) => s.host === authority(host) && (path === undefined || s.url === path));

/** One request through the gateway with curl (CONNECT + MITM), trusting this run's gateway CA. */
const curl = (c: RunningCredgate, target: string, opts: CurlOptions = {}) => curlThroughGateway(c, target, { caFile: ca.file, ...opts });

/** A raw TLS tunnel to `host` for the default agent (or `agentToken`), counting every byte it receives. */
async function tunnel(host: string, agentToken = token, port = cg.gatewayPort, caPem = ca.pem) {
  const t = await openTlsTunnel(port, authority(host), agentToken, caPem, host);
  let received = 0;
  t.tls.on("data", (chunk: Buffer) => (received += chunk.length));
  return {
    tls: t.tls as tls.TLSSocket,
    reader: t.reader as ResponseReader,
    get received() {
      return received;
    },
    send(method: string, path: string, headers: string[] = [], body?: string | Buffer) {
      t.tls.write(rawRequest(method, path, authority(host), headers, body));
    },
    async request(method: string, path: string, headers: string[] = [], body?: string | Buffer): Promise<RawResponse & { json: any }> {
      t.tls.write(rawRequest(method, path, authority(host), headers, body));
      const res = await t.reader.response({ timeoutMs: 15_000 });
      let json: any = null;
      try {
        json = JSON.parse(res.text);
      } catch {}
      return { ...res, json };
    },
    close() {
      t.tls.destroy();
    },
  };
}

async function api(method: string, path: string, opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {}, c = cg) {
  return c.api(method, path, opts);
}

async function createRule(body: Record<string, unknown>, opts: { org?: boolean; c?: RunningCredgate } = {}) {
  const c = opts.c ?? cg;
  const res = await c.api("POST", opts.org ? "/v1/org/policy/rules" : "/v1/policy/rules", { body, key: opts.org ? c.keys.orgApiKey : undefined });
  if (res.status !== 201) throw new Error(`rule: ${res.status} ${res.text}`);
  return res.body;
}

async function publish(opts: { org?: boolean; c?: RunningCredgate } = {}) {
  const c = opts.c ?? cg;
  const res = await c.api("POST", opts.org ? "/v1/org/policy/publish" : "/v1/policy/publish", { key: opts.org ? c.keys.orgApiKey : undefined });
  expect(res.status).toBe(200);
  return res.body as { generation: number; ruleCount: number };
}

const network = (host: string, extra: Record<string, unknown> = {}) => ({ kind: "network", hostPattern: host, ...extra });

/** Waits until the project's pending list holds `n` requests matching `filter`. */
async function pendingFor(c: RunningCredgate, filter: (r: any) => boolean, n = 1): Promise<any[]> {
  const found = await eventually(async () => {
    const res = await c.api("GET", "/v1/approvals/pending");
    const list = (res.body?.requests ?? []).filter(filter);
    return list.length >= n ? list : null;
  }, 15_000, 50);
  if (!found) throw new Error(`no ${n} pending approvals`);
  return found;
}

async function decide(id: string, decision: "approve" | "deny", c = cg) {
  return c.api("POST", `/v1/approvals/${id}/decision`, { body: { decision } });
}

/** The request-log row matching `filter` (logs are written in batches: poll up to 7 s). */
async function logRow(filter: (r: any) => boolean, query = "", c = cg): Promise<any> {
  return eventually(async () => {
    const res = await c.api("GET", `/v1/logs?limit=500${query}`);
    return (res.body?.data ?? []).find(filter) ?? null;
  }, 7_000, 200);
}

/** A new agent of the project (mode all unless told), with its access token. */
async function newAgent(identifier: string, mode: "all" | "grants" = "all"): Promise<{ id: string; accessToken: string }> {
  const created = await api("POST", "/v1/agents", { body: { name: identifier, identifier, mode } });
  if (created.status !== 201) throw new Error(`agent: ${created.status} ${created.text}`);
  return (await api("GET", "/v1/agents")).body.find((a: any) => a.id === created.body.id);
}

const json = (r: { headers: Record<string, string> }) => r.headers["content-type"]?.startsWith("application/json");

// ── draft vs publish, inside one tunnel ─────────────────────────────────────────────────────────────────

describe("draft and publish", () => {
  test("example 30: a draft block is not applied; after publish it applies inside the already-open tunnel", async () => {
    const t = await tunnel(H.draft);
    const first = await t.request("GET", "/admin/users");
    expect(first.status).toBe(200);
    const rule = await createRule({ name: "No admin (draft test)", action: "block", targets: [network(H.draft, { pathPattern: "/admin/*" })] });
    // Only a draft: still forwarded, on the same connection.
    const second = await t.request("GET", "/admin/users");
    expect(second.status).toBe(200);
    expect(seen(H.draft, "/admin/users").length).toBe(2);
    await publish();
    // Same keep-alive tunnel, no reconnect: now blocked, and nothing reaches the upstream.
    const third = await t.request("GET", "/admin/users?page=2");
    expect(third.status).toBe(403);
    expect(third.headers["x-should-retry"]).toBe("false");
    expect(third.json).toEqual({
      error: "blocked_by_policy",
      message: `Blocked by credgate policy rule "No admin (draft test)". GET /admin/users?page=2 is not allowed. Review this agent's access in your credgate dashboard.`,
      rule_name: "No admin (draft test)",
      method: "GET",
      path: "/admin/users?page=2",
    });
    expect(seen(H.draft).length).toBe(2);
    // Other paths of the host still pass on the same tunnel.
    expect((await t.request("GET", "/public")).status).toBe(200);
    expect(t.tls.destroyed).toBe(false);
    // Disabling the draft does nothing until the next publish; publishing it lifts the block.
    await api("PATCH", `/v1/policy/rules/${rule.id}`, { body: { enabled: false } });
    expect((await t.request("GET", "/admin/users")).status).toBe(403);
    await publish();
    expect((await t.request("GET", "/admin/users")).status).toBe(200);
    t.close();
    await api("DELETE", `/v1/policy/rules/${rule.id}`);
    await publish();
  });
});

// ── blocks ──────────────────────────────────────────────────────────────────────────────────────────────

describe("block rules", () => {
  let blockRule: any;
  beforeAll(async () => {
    blockRule = await createRule({ name: "Block deletes", action: "block", targets: [network(H.block, { method: "DELETE" }), network(H.block, { pathPattern: "/admin/*" })] });
    await publish();
  });

  test("403 blocked_by_policy with the exact body and x-should-retry: false; the upstream saw nothing", async () => {
    const before = seen(H.block).length;
    const r = await curl(cg, url(H.block, "/admin/users"));
    expect(r.status).toBe(403);
    expect(json(r)).toBe(true);
    expect(r.headers["x-should-retry"]).toBe("false");
    expect(r.text).toBe(
      '{"error":"blocked_by_policy","message":"Blocked by credgate policy rule \\"Block deletes\\". GET /admin/users is not allowed. Review this agent\'s access in your credgate dashboard.","rule_name":"Block deletes","method":"GET","path":"/admin/users"}',
    );
    const del = await curl(cg, url(H.block, "/items/7"), { method: "DELETE" });
    expect(del.status).toBe(403);
    expect(del.json).toMatchObject({ error: "blocked_by_policy", method: "DELETE", path: "/items/7" });
    // The method matters: a GET of the same item passes, the admin prefix is blocked for every method.
    expect((await curl(cg, url(H.block, "/items/7"))).status).toBe(200);
    expect((await curl(cg, url(H.block, "/admin"), { method: "POST", data: "{}" })).status).toBe(403);
    expect(seen(H.block).slice(before).map((s) => `${s.method} ${s.url}`)).toEqual(["GET /items/7"]);
  });

  test("the block is logged with decision blocked and the matched rule", async () => {
    const row = await logRow((r) => r.host === authority(H.block) && r.path === "/admin/users" && r.decision === "blocked", `&host=${authority(H.block)}&decision=blocked`);
    expect(row).toMatchObject({ status: 403, decision: "blocked", matchedRuleLogicalId: blockRule.logicalId, matchedRuleName: "Block deletes", method: "GET" });
    const allowed = await logRow((r) => r.host === authority(H.block) && r.path === "/items/7" && r.decision === "allowed");
    expect(allowed).toMatchObject({ status: 200, matchedRuleLogicalId: null });
  });

  test("absolute-form requests are evaluated too: blocked before egress", async () => {
    const before = seen(H.block).length;
    const sock = net.connect({ host: "127.0.0.1", port: cg.gatewayPort });
    const reader = new Reader(sock);
    sock.write(rawRequest("GET", `https://${authority(H.block)}/admin/abs?x=1`, authority(H.block), [`Proxy-Authorization: ${basic(token)}`]));
    const res = await reader.response();
    sock.destroy();
    expect(res.status).toBe(403);
    expect(res.headers["x-should-retry"]).toBe("false");
    expect(JSON.parse(res.text)).toMatchObject({ error: "blocked_by_policy", rule_name: "Block deletes", method: "GET", path: "/admin/abs?x=1" });
    expect(seen(H.block).length).toBe(before);
  });

  test("a rule with identities applies only to those agents", async () => {
    const other = await newAgent("ident-blocked");
    await createRule({ name: "Only ident-blocked", action: "block", identities: [{ type: "agent", id: other.id }], targets: [network(H.ident)] });
    await publish();
    expect((await curl(cg, url(H.ident, "/me"))).status).toBe(200);
    const r = await curl(cg, url(H.ident, "/me"), { agentToken: other.accessToken });
    expect(r.status).toBe(403);
    expect(r.json.rule_name).toBe("Only ident-blocked");
    expect(seen(H.ident, "/me").length).toBe(1);
  });

  test("a secret target blocks the traffic that secret serves (host and path), nothing else", async () => {
    const secret = await api("POST", "/v1/secrets", { body: { name: "target-me", type: "generic", value: "v", hostPattern: H.secretTarget, pathPattern: "/v1/*", injectionConfig: { headerName: "x-k" } } });
    expect(secret.status).toBe(201);
    await createRule({ name: "Block that secret", action: "block", targets: [{ kind: "secret", secretId: secret.body.id }] });
    await publish();
    const r = await curl(cg, url(H.secretTarget, "/v1/pay"));
    expect(r.status).toBe(403);
    expect(r.json.rule_name).toBe("Block that secret");
    expect((await curl(cg, url(H.secretTarget, "/v2/pay"))).status).toBe(200);
    expect(seen(H.secretTarget).map((x) => x.url)).toEqual(["/v2/pay"]);
  });

  test("example 31: an organization block beats a project allow, and the org rule is named", async () => {
    const projectAllow = await createRule({ name: "Project allows org host", action: "allow", targets: [network(H.org)] });
    await publish();
    expect((await curl(cg, url(H.org, "/v1/x"))).status).toBe(200);
    const orgBlock = await createRule({ name: "Org blocks org host", action: "block", targets: [network(H.org)] }, { org: true });
    await publish({ org: true });
    const before = seen(H.org).length;
    const r = await curl(cg, url(H.org, "/v1/x"));
    expect(r.status).toBe(403);
    expect(r.headers["x-should-retry"]).toBe("false");
    expect(r.json).toMatchObject({ error: "blocked_by_policy", rule_name: "Org blocks org host", method: "GET", path: "/v1/x" });
    expect(seen(H.org).length).toBe(before);
    const row = await logRow((x) => x.host === authority(H.org) && x.decision === "blocked");
    expect(row).toMatchObject({ matchedRuleLogicalId: orgBlock.logicalId, matchedRuleName: "Org blocks org host" });
    // Cleanup: the org rule goes, the project allow stays harmless.
    await api("DELETE", `/v1/org/policy/rules/${orgBlock.id}`, { key: cg.keys.orgApiKey });
    await publish({ org: true });
    expect((await curl(cg, url(H.org, "/v1/x"))).status).toBe(200);
    expect(projectAllow.scope).toBe("project");
  });
});

// ── body conditions ─────────────────────────────────────────────────────────────────────────────────────

describe("body conditions", () => {
  beforeAll(async () => {
    await createRule({ name: "No forbidden word", action: "block", conditions: [{ target: "body", operator: "contains", value: "Forbidden-Word" }], targets: [network(H.body)] });
    await publish();
  });

  test("contains is a case-insensitive match within the first 16 KiB; matching bodies are blocked before egress", async () => {
    const before = seen(H.body).length;
    const r = await curl(cg, url(H.body, "/upload"), { method: "POST", data: '{"note":"this has a FORBIDDEN-WORD inside"}', headers: ["content-type: application/json"] });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ error: "blocked_by_policy", rule_name: "No forbidden word", method: "POST", path: "/upload" });
    // Just inside the window: still found.
    const dir = tempDir();
    const inside = join(dir, "inside.txt");
    writeFileSync(inside, `${"x".repeat(16 * 1024 - 20)}forbidden-word${"y".repeat(30_000)}`);
    expect((await curl(cg, url(H.body, "/inside"), { method: "POST", dataFile: inside })).status).toBe(403);
    expect(seen(H.body).length).toBe(before);
  });

  test("a blocked body still being uploaded gets its 403: the gateway reads and drops the rest before it closes", async () => {
    const dir = tempDir();
    const big = join(dir, "big.txt");
    // Far more than the socket buffers hold: the agent is still sending when the answer is written.
    writeFileSync(big, `forbidden-word${"x".repeat(1024 * 1024)}`);
    const before = seen(H.body).length;
    for (let i = 0; i < 20; i++) {
      const r = await curl(cg, url(H.body, "/big"), { method: "POST", dataFile: big });
      expect(r.status).toBe(403);
      expect(r.json).toMatchObject({ error: "blocked_by_policy", rule_name: "No forbidden word", path: "/big" });
    }
    expect(seen(H.body).length).toBe(before);
  });

  test("after a blocked body's 403 the connection stays open while the agent sends the rest, and ends when the body does", async () => {
    const t = await tunnel(H.body);
    const first = Buffer.from(`forbidden-word${"x".repeat(20 * 1024)}`);
    const total = first.length + 8 * 64 * 1024;
    t.tls.write(`POST /slow HTTP/1.1\r\nHost: ${authority(H.body)}\r\nContent-Length: ${total}\r\n\r\n`);
    t.tls.write(first);
    const res = await t.reader.response();
    expect(res.status).toBe(403);
    expect(res.headers["connection"]).toBe("close");
    // The rest arrives after the answer, in pieces: every one is taken (no reset), and the gateway closes only
    // once the last one is in.
    for (let i = 0; i < 8; i++) {
      await Bun.sleep(25);
      expect(t.reader.ended).toBe(false);
      await new Promise<void>((resolve, reject) => t.tls.write(Buffer.alloc(64 * 1024, 0x61), (err) => (err ? reject(err) : resolve())));
    }
    expect(await t.reader.closed(3_000)).toBe(true);
    t.close();
  });

  test("a blocked upload that stalls is closed when its linger time is up", async () => {
    const stalled = await tunnel(H.body);
    stalled.tls.write(`POST /stalled HTTP/1.1\r\nHost: ${authority(H.body)}\r\nContent-Length: 1000000\r\n\r\nforbidden-word${"x".repeat(20 * 1024)}`);
    expect((await stalled.reader.response()).status).toBe(403);
    const answered = Date.now();
    expect(await stalled.reader.closed(10_000)).toBe(true);
    expect(Date.now() - answered).toBeGreaterThanOrEqual(4_000);
    stalled.close();
  }, 20_000);

  test("a stopping gateway does not wait for a blocked upload's linger: SIGTERM ends it and the process exits 0", async () => {
    const c = await startCredgate({ env: env() });
    try {
      await createRule({ name: "No forbidden word", action: "block", conditions: [{ target: "body", operator: "contains", value: "Forbidden-Word" }], targets: [network(H.body)] }, { c });
      await publish({ c });
      const t = await openTlsTunnel(c.gatewayPort, authority(H.body), c.keys.defaultAgentToken, (await gatewayCa(c)).pem, H.body);
      t.tls.write(`POST /stalled HTTP/1.1\r\nHost: ${authority(H.body)}\r\nContent-Length: 1000000\r\n\r\nforbidden-word${"x".repeat(20 * 1024)}`);
      expect((await t.reader.response()).status).toBe(403);
      const signalled = Date.now();
      expect(await c.stop()).toBe(0);
      // The linger would have held the connection for 5 s.
      expect(Date.now() - signalled).toBeLessThan(4_000);
      expect(await t.reader.closed(1_000)).toBe(true);
      t.tls.destroy();
    } finally {
      await c.stop();
    }
  }, 30_000);

  test("a match beyond 16 KiB, or none, is allowed and the whole body is forwarded intact", async () => {
    const dir = tempDir();
    const beyond = join(dir, "beyond.bin");
    const bytes = Buffer.from(`${"a".repeat(16 * 1024)}forbidden-word${"z".repeat(50_000)}`);
    writeFileSync(beyond, bytes);
    const r = await curl(cg, url(H.body, "/beyond"), { method: "POST", dataFile: beyond });
    expect(r.status).toBe(200);
    const hit = seen(H.body, "/beyond");
    expect(hit.length).toBe(1);
    expect(hit[0]!.bodyBytes).toBe(bytes.length);
    expect(hit[0]!.bodySha256).toBe(new Bun.CryptoHasher("sha256").update(bytes).digest("hex"));
    // No body (GET) never matches a condition.
    expect((await curl(cg, url(H.body, "/get?q=forbidden-word"))).status).toBe(200);
    const clean = await curl(cg, url(H.body, "/clean"), { method: "POST", data: "harmless" });
    expect(clean.status).toBe(200);
    expect(seen(H.body, "/clean")[0]!.bodyBytes).toBe(8);
  });
});

// ── rate limits ─────────────────────────────────────────────────────────────────────────────────────────

describe("rate limits", () => {
  test("example 32: 1/hour → 200, then 429 with Retry-After, and exactly one upstream hit", async () => {
    await clearOfWindowEdge(HOUR_MS);
    const rule = await createRule({ name: "Once an hour", action: "allow", rateLimit: 1, rateLimitWindow: "hour", targets: [network(H.rate)] });
    await publish();
    const first = await curl(cg, url(H.rate, "/v1/limited"));
    expect(first.status).toBe(200);
    const second = await curl(cg, url(H.rate, "/v1/limited"));
    expect(second.status).toBe(429);
    expect(second.text).toBe('{"error":"rate_limited","message":"This request was rate-limited by a credgate policy rule.","limit":1,"window":"hour"}');
    expect(json(second)).toBe(true);
    const retryAfter = Number(second.headers["retry-after"]);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    // The window is epoch-aligned: Retry-After is the time left in the current hour.
    const left = 3600 - (Math.floor(Date.now() / 1000) % 3600);
    expect(Math.abs(retryAfter - left)).toBeLessThanOrEqual(2);
    expect(second.headers["x-should-retry"]).toBeUndefined();
    expect(seen(H.rate).length).toBe(1);
    // A republish keeps the counter (same logicalId).
    await publish();
    expect((await curl(cg, url(H.rate, "/v1/other"))).status).toBe(429);
    expect(seen(H.rate).length).toBe(1);
    const row = await logRow((r) => r.host === authority(H.rate) && r.decision === "rate_limited", "&decision=rate_limited");
    expect(row).toMatchObject({ status: 429, matchedRuleLogicalId: rule.logicalId, matchedRuleName: "Once an hour" });
    // Counters are per agent; and keyed by agent id, so a regenerated token does not reset them.
    const other = await newAgent("rate-other");
    expect((await curl(cg, url(H.rate, "/v1/limited"), { agentToken: other.accessToken })).status).toBe(200);
    expect((await curl(cg, url(H.rate, "/v1/limited"), { agentToken: other.accessToken })).status).toBe(429);
    const regenerated = await api("POST", `/v1/agents/${other.id}/regenerate-token`);
    expect(regenerated.status).toBe(200);
    expect((await curl(cg, url(H.rate, "/v1/limited"), { agentToken: regenerated.body.accessToken })).status).toBe(429);
    expect(seen(H.rate).length).toBe(2);
  }, 60_000);
});

// ── approvals ───────────────────────────────────────────────────────────────────────────────────────────

describe("approvals", () => {
  let rule: any;
  beforeAll(async () => {
    rule = await createRule({ name: "Sends need approval", action: "allow", requireApproval: true, targets: [network(H.approve, { method: "POST" })] });
    // A header secret on the approval host, so the tests can check injection happens after the capture.
    const s = await api("POST", "/v1/secrets", { body: { name: "approve-key", type: "generic", value: "APPROVE-SECRET-VALUE-123", hostPattern: H.approve, injectionConfig: { headerName: "x-injected-key" } } });
    expect(s.status).toBe(201);
    await publish();
  });

  test("example 33: a 40 kB POST is held with no bytes sent, then approved and forwarded intact", async () => {
    const dir = tempDir();
    const file = join(dir, "body.bin");
    const bytes = Buffer.alloc(40_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = 32 + ((i * 7) % 90);
    writeFileSync(file, bytes);
    const path = `/v1/send?run=${crypto.randomUUID()}`;
    const agentReq = curl(cg, url(H.approve, path), { method: "POST", dataFile: file, headers: ["content-type: text/plain"] });
    const [pending] = await pendingFor(cg, (r) => r.path === path);
    expect(pending.url).toBe(`https://${authority(H.approve)}${path}`);
    expect(pending.method).toBe("POST");
    // Held: nothing reached the upstream; the log row says 202 approval_pending until the decision. (A fixed
    // wait: it shows nothing goes upstream meanwhile.)
    await Bun.sleep(300);
    expect(seen(H.approve).filter((s) => s.url === path).length).toBe(0);
    const interim = await logRow((x) => x.approvalId === pending.id);
    expect(interim).toMatchObject({ status: 202, decision: "approval_pending", path: "/v1/send", host: authority(H.approve) });
    const d = await decide(pending.id, "approve");
    expect(d.status).toBe(200);
    expect(d.body).toEqual({ success: true });
    const r = await agentReq;
    expect(r.status).toBe(200);
    const hit = seen(H.approve, path);
    expect(hit.length).toBe(1);
    expect(hit[0]!.bodyBytes).toBe(40_000);
    expect(hit[0]!.bodySha256).toBe(new Bun.CryptoHasher("sha256").update(bytes).digest("hex"));
    // Injection happened on the forwarded copy.
    expect(hit[0]!.headers["x-injected-key"]).toBe("APPROVE-SECRET-VALUE-123");
    const record = await api("GET", `/v1/approvals/${pending.id}`);
    expect(record.body).toMatchObject({ status: "approved", decidedBy: { email: "owner@localhost" } });
    const row = await logRow((x) => x.approvalId === pending.id);
    expect(row).toMatchObject({ status: 200, decision: "approval_approved", matchedRuleLogicalId: rule.logicalId, matchedRuleName: "Sends need approval", method: "POST" });
    // Only POST needs approval: a GET goes straight through.
    expect((await curl(cg, url(H.approve, "/v1/status"))).status).toBe(200);
  });

  test("a chunked upload is held and then forwarded whole", async () => {
    const file = join(tempDir(), "chunked.bin");
    const bytes = Buffer.from(Array.from({ length: 3000 }, (_, i) => `line ${i}\n`).join(""));
    writeFileSync(file, bytes);
    const path = `/v1/chunked?run=${crypto.randomUUID()}`;
    const agentReq = curl(cg, url(H.approve, path), { method: "POST", dataFile: file, headers: ["Transfer-Encoding: chunked", "content-type: text/plain"] });
    const [pending] = await pendingFor(cg, (r) => r.path === path);
    expect(pending.summary.details[0]).toEqual({ label: "Endpoint", value: "/v1/chunked" });
    // Caps (docs/policy.md#approvals): each detail value 240 characters, the body in the preview 500.
    const detail: string = pending.summary.details[1].value;
    expect(detail.startsWith("line 0\nline 1\n")).toBe(true);
    expect(detail.length).toBe(240);
    expect(detail.endsWith("…")).toBe(true);
    const previewBody = pending.bodyPreview.slice("POST request\nEndpoint: /v1/chunked\nBody: ".length);
    expect(pending.bodyPreview.startsWith("POST request\nEndpoint: /v1/chunked\nBody: line 0\n")).toBe(true);
    expect(previewBody.length).toBe(500);
    expect(previewBody.startsWith(detail.slice(0, 239))).toBe(true);
    expect((await decide(pending.id, "approve")).status).toBe(200);
    expect((await agentReq).status).toBe(200);
    const hit = seen(H.approve, path);
    expect(hit.length).toBe(1);
    expect(hit[0]!.bodyBytes).toBe(bytes.length);
    expect(hit[0]!.bodySha256).toBe(new Bun.CryptoHasher("sha256").update(bytes).digest("hex"));
  });

  test("example 34: deny → 403 manual_approval_denied; the held client got no bytes until then; a second decision → 410", async () => {
    const t = await tunnel(H.approve);
    t.send("POST", "/v1/send", ["content-type: application/json"], '{"to":"a@b.c"}');
    const [pending] = await pendingFor(cg, (r) => r.path === "/v1/send" && r.bodyPreview?.includes("a@b.c"));
    // A fixed wait: it shows neither the client nor the upstream gets a byte while the request is held.
    await Bun.sleep(300);
    expect(t.received).toBe(0);
    expect(seen(H.approve, "/v1/send").length).toBe(0);
    expect((await decide(pending.id, "deny")).status).toBe(200);
    const res = await t.reader.response({ timeoutMs: 10_000 });
    expect(res.status).toBe(403);
    expect(res.headers["x-should-retry"]).toBe("false");
    expect(res.headers["content-type"]).toStartWith("application/json");
    expect(JSON.parse(res.text)).toEqual({ error: "manual_approval_denied", message: "This request was denied by a credgate manual approval policy.", approval_id: pending.id });
    expect(seen(H.approve, "/v1/send").length).toBe(0);
    const again = await decide(pending.id, "approve");
    expect(again.status).toBe(410);
    expect(again.text).toBe('{"error":"approval_expired"}');
    const unknown = await decide("00000000-0000-4000-8000-000000000000", "approve");
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe('{"error":"approval_not_found"}');
    // The tunnel stays usable after the 403.
    expect((await t.request("GET", "/v1/after-deny")).status).toBe(200);
    t.close();
    const row = await logRow((x) => x.approvalId === pending.id);
    expect(row).toMatchObject({ status: 403, decision: "approval_denied", matchedRuleName: "Sends need approval" });
  });

  test("the approval request: url, headers without credentials or injected values, redacted preview and summary", async () => {
    const tunnels = await Promise.all([tunnel(H.approve), tunnel(H.approve), tunnel(H.approve), tunnel(H.approve)]);
    const runId = crypto.randomUUID();
    tunnels[0]!.send(
      "POST",
      `/v1/send?run=${runId}&to=1`,
      ["content-type: application/json", "authorization: Bearer agent-own-token", "x-api-key: agent-key", "cookie: session=abc", "x-custom: one", "x-custom: two", "x-credgate-connection-id: c1", "user-agent: approvals-test"],
      '{"to":"a@b.c","token":"abc"}',
    );
    const longB64 = Buffer.alloc(120, 7).toString("base64"); // 160 base64 characters
    tunnels[1]!.send("POST", `/v1/blob?run=${runId}`, ["content-type: application/json"], JSON.stringify({ password: "hunter2", nested: { api_key: "k", ok: "fine" }, blob: longB64, text: "word ".repeat(25) }));
    tunnels[2]!.send("POST", `/v1/form?run=${runId}`, ["content-type: application/x-www-form-urlencoded"], "client_secret=s3&note=hi");
    const binary = Buffer.alloc(200);
    for (let i = 0; i < binary.length; i++) binary[i] = i % 256;
    tunnels[3]!.send("POST", `/v1/bin?run=${runId}`, ["content-type: application/octet-stream"], binary);
    const pending = await pendingFor(cg, (r) => r.path.includes(runId), 4);
    const byPath = (p: string) => pending.find((r) => r.path.startsWith(p))!;

    const send = byPath("/v1/send");
    expect(send.url).toBe(`https://${authority(H.approve)}/v1/send?run=${runId}&to=1`);
    expect(send.path).toBe(`/v1/send?run=${runId}&to=1`);
    expect(send.method).toBe("POST");
    expect(send.projectId).toBe(cg.keys.projectId);
    expect(send.agent).toMatchObject({ name: "Default Agent", externalId: "default" });
    expect(send.headers["x-custom"]).toBe("one, two");
    expect(send.headers["user-agent"]).toBe("approvals-test");
    expect(send.headers["content-type"]).toBe("application/json");
    for (const hidden of ["authorization", "x-api-key", "cookie", "proxy-authorization", "x-injected-key", "connection", "host"]) expect(send.headers).not.toHaveProperty(hidden);
    expect(JSON.stringify(send)).not.toContain("APPROVE-SECRET-VALUE-123");
    expect(JSON.stringify(send)).not.toContain("agent-own-token");
    expect(JSON.stringify(send)).not.toContain(token);
    expect(send.summary).toEqual({ action: "POST request", details: [{ label: "Endpoint", value: "/v1/send" }, { label: "Body", value: '{"to":"a@b.c","token":"***"}' }] });
    expect(send.bodyPreview).toBe('POST request\nEndpoint: /v1/send\nBody: {"to":"a@b.c","token":"***"}');
    expect(Date.parse(send.expiresAt) - Date.parse(send.createdAt)).toBe(180_000);

    const blob = byPath("/v1/blob");
    expect(JSON.parse(blob.summary.details[1].value)).toEqual({ password: "***", nested: { api_key: "***", ok: "fine" }, blob: "<160 chars, base64>", text: "<125 chars>" });
    expect(blob.bodyPreview).not.toContain("hunter2");

    const form = byPath("/v1/form");
    expect(form.summary.details).toEqual([
      { label: "Endpoint", value: "/v1/form" },
      { label: "Body", value: "client_secret=***&note=hi" },
    ]);

    const bin = byPath("/v1/bin");
    expect(bin.summary.details[1].value).toMatch(/^<binary, 200\+? bytes>$/);

    // The same request is visible through GET /approvals/{id}; then deny them all.
    const record = await api("GET", `/v1/approvals/${send.id}`);
    expect(record.body).toMatchObject({ ...send, status: "pending", decidedAt: null, decidedBy: null });
    for (const p of pending) expect((await decide(p.id, "deny")).status).toBe(200);
    for (const t of tunnels) {
      expect((await t.reader.response()).status).toBe(403);
      t.close();
    }
  });

  test("long-poll: at once when something is pending, holds otherwise; exclude skips", async () => {
    const t = await tunnel(H.approve);
    const runId = crypto.randomUUID();
    t.send("POST", `/v1/poll?run=${runId}`, [], "x");
    const [pending] = await pendingFor(cg, (r) => r.path.includes(runId));
    let t0 = performance.now();
    const now = await api("GET", "/v1/approvals/pending");
    expect(performance.now() - t0).toBeLessThan(500);
    expect(now.body.timeoutSeconds).toBe(180);
    expect(now.body.requests.map((r: any) => r.id)).toContain(pending.id);
    t0 = performance.now();
    const excluded = await api("GET", `/v1/approvals/pending?exclude=${pending.id}`);
    const held = performance.now() - t0;
    expect(excluded.body).toEqual({ requests: [], timeoutSeconds: 180 });
    expect(held).toBeGreaterThanOrEqual(POLL_SECONDS * 1000 - 100);
    // A poll waiting with the exclusion returns as soon as a new request is held.
    const waiting = api("GET", `/v1/approvals/pending?exclude=${pending.id}`);
    // A fixed pause so the poll is waiting when the request comes (nothing outside the process says it is).
    await Bun.sleep(200);
    const t2 = await tunnel(H.approve);
    t2.send("POST", `/v1/poll2?run=${runId}`, [], "y");
    const woke = await waiting;
    expect(woke.body.requests.map((r: any) => r.path)).toEqual([`/v1/poll2?run=${runId}`]);
    for (const p of await pendingFor(cg, (r) => r.path.includes(runId), 2)) await decide(p.id, "deny");
    await t.reader.response();
    await t2.reader.response();
    t.close();
    t2.close();
  });

  test("approval endpoints are served on the gateway port (origin-form) with the API key", async () => {
    const t = await tunnel(H.approve);
    const runId = crypto.randomUUID();
    t.send("POST", `/v1/gw?run=${runId}`, [], "z");
    await pendingFor(cg, (r) => r.path.includes(runId));
    const auth = { authorization: `Bearer ${cg.keys.projectApiKey}` };
    const res = await fetch(`${cg.gatewayUrl}/v1/approvals/pending`, { headers: auth });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    const item = body.requests.find((r: any) => r.path.includes(runId));
    expect(item).toBeDefined();
    expect(body.timeoutSeconds).toBe(180);
    const rec = await fetch(`${cg.gatewayUrl}/v1/approvals/${item.id}`, { headers: auth });
    expect(((await rec.json()) as any).status).toBe("pending");
    const org = await fetch(`${cg.gatewayUrl}/v1/org/approvals/pending`, { headers: { authorization: `Bearer ${cg.keys.orgApiKey}` } });
    expect(((await org.json()) as any).requests.map((r: any) => r.id)).toContain(item.id);
    const noKey = await fetch(`${cg.gatewayUrl}/v1/approvals/pending`);
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toEqual({ error: { message: "Invalid API key or token.", type: "authentication_error" } });
    const decision = await fetch(`${cg.gatewayUrl}/v1/approvals/${item.id}/decision`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ decision: "approve" }) });
    expect(decision.status).toBe(200);
    expect(await decision.json()).toEqual({ success: true });
    expect((await t.reader.response()).status).toBe(200);
    expect(seen(H.approve, `/v1/gw?run=${runId}`).length).toBe(1);
    t.close();
  });

  test("a held request whose agent disconnects is cancelled", async () => {
    const t = await tunnel(H.approve);
    const runId = crypto.randomUUID();
    t.send("POST", `/v1/gone?run=${runId}`, [], "x");
    const [pending] = await pendingFor(cg, (r) => r.path.includes(runId));
    t.close();
    const status = await eventually(async () => {
      const s = (await api("GET", `/v1/approvals/${pending.id}`)).body.status;
      return s === "cancelled" ? s : null;
    }, 5_000);
    expect(status).toBe("cancelled");
    expect((await decide(pending.id, "approve")).status).toBe(410);
    const row = await logRow((x) => x.approvalId === pending.id && x.decision !== "approval_pending");
    expect(row?.decision).toBe("approval_cancelled");
    expect(seen(H.approve, `/v1/gone?run=${runId}`).length).toBe(0);
  });

  test("a WebSocket upgrade under an approval rule → 403 blocked_by_policy 'Manual approval required', no approval created", async () => {
    await createRule({ name: "WS needs approval", action: "allow", requireApproval: true, targets: [network(H.ws)] });
    await publish();
    const t = await tunnel(H.ws);
    const res = await t.request("GET", "/ws?room=1", ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]);
    expect(res.status).toBe(403);
    expect(res.headers["x-should-retry"]).toBe("false");
    expect(JSON.parse(res.text)).toEqual({
      error: "blocked_by_policy",
      message: 'Blocked by credgate policy rule "Manual approval required". GET /ws?room=1 is not allowed. Review this agent\'s access in your credgate dashboard.',
      rule_name: "Manual approval required",
      method: "GET",
      path: "/ws?room=1",
    });
    t.close();
    expect(seen(H.ws).length).toBe(0);
    const pending = await api("GET", "/v1/approvals/pending");
    expect(pending.body.requests.filter((r: any) => r.host === H.ws)).toEqual([]);
    // A plain POST to the same host is held as usual (then denied).
    const t2 = await tunnel(H.ws);
    t2.send("POST", "/not-ws", [], "x");
    const [p] = await pendingFor(cg, (r) => r.host === H.ws || r.url.includes(H.ws));
    await decide(p.id, "deny");
    expect((await t2.reader.response()).status).toBe(403);
    t2.close();
  });
});

// ── grants at the gateway ───────────────────────────────────────────────────────────────────────────────

describe("grants", () => {
  test("mode grants: nothing injected without a grant; a secret grant injects on the next request; revoking stops it", async () => {
    const created = await api("POST", "/v1/agents", { body: { name: "Granted agent", identifier: "granted-agent", mode: "grants" } });
    expect(created.status).toBe(201);
    const agent = (await api("GET", "/v1/agents")).body.find((a: any) => a.id === created.body.id);
    const secret = await api("POST", "/v1/secrets", { body: { name: "grant-key", type: "generic", value: "GRANTED-VALUE-42", hostPattern: H.grants, injectionConfig: { headerName: "x-grant-key" } } });
    expect(secret.status).toBe(201);
    const t = await tunnel(H.grants, agent.accessToken);
    expect((await t.request("GET", "/one")).status).toBe(200);
    expect(seen(H.grants, "/one")[0]!.headers["x-grant-key"]).toBeUndefined();
    // The default agent (mode all) gets it.
    expect((await curl(cg, url(H.grants, "/default-agent"))).status).toBe(200);
    expect(seen(H.grants, "/default-agent")[0]!.headers["x-grant-key"]).toBe("GRANTED-VALUE-42");

    const put = await api("PUT", `/v1/agents/${agent.id}/grants/secrets/${secret.body.id}`);
    expect(put.status).toBe(200);
    // Same tunnel, next request: injected, no publish needed.
    expect((await t.request("GET", "/two")).status).toBe(200);
    expect(seen(H.grants, "/two")[0]!.headers["x-grant-key"]).toBe("GRANTED-VALUE-42");
    expect((await api("DELETE", `/v1/agents/${agent.id}/grants/secrets/${secret.body.id}`)).status).toBe(204);
    expect((await t.request("GET", "/three")).status).toBe(200);
    expect(seen(H.grants, "/three")[0]!.headers["x-grant-key"]).toBeUndefined();
    t.close();
  });

  test("effective credentials: not_granted, blocked, limited, usable from the published rules", async () => {
    const mk = async (name: string, host: string) => {
      const r = await api("POST", "/v1/secrets", { body: { name, type: "generic", value: "v", hostPattern: host, injectionConfig: { headerName: "x-k" } } });
      expect(r.status).toBe(201);
      return r.body.id as string;
    };
    const blocked = await mk("eff-blocked", H.effBlock);
    const limited = await mk("eff-limited", H.effLimit);
    const partial = await mk("eff-partial", H.effPath);
    const usable = await mk("eff-usable", H.effUsable);
    await createRule({ name: "eff block", action: "block", targets: [network(H.effBlock)] });
    await createRule({ name: "eff limit", action: "allow", rateLimit: 10, rateLimitWindow: "minute", targets: [network(H.effLimit)] });
    await createRule({ name: "eff path", action: "block", targets: [network(H.effPath, { pathPattern: "/admin/*" })] });
    // A draft-only block on the usable host does not count until published… and is deleted before that.
    const draftOnly = await createRule({ name: "eff draft", action: "block", targets: [network(H.effUsable)] });
    await api("DELETE", `/v1/policy/rules/${draftOnly.id}`);
    await createRule({ name: "eff draft2", action: "block", targets: [network(H.effUsable)] }).then((r) => api("PATCH", `/v1/policy/rules/${r.id}`, { body: { enabled: false } }));
    await publish();
    const defaultAgent = (await api("GET", "/v1/agents/default")).body.id;
    const eff = (await api("GET", `/v1/agents/${defaultAgent}/effective-credentials`)).body;
    const status = (id: string) => eff.secrets.find((s: any) => s.id === id)?.status;
    expect({ blocked: status(blocked), limited: status(limited), partial: status(partial), usable: status(usable) }).toEqual({ blocked: "blocked", limited: "limited", partial: "limited", usable: "usable" });
    // A grants-mode agent without grants: not_granted whatever the rules say.
    const g = await api("POST", "/v1/agents", { body: { name: "Eff grants", identifier: "eff-grants", mode: "grants" } });
    const effG = (await api("GET", `/v1/agents/${g.body.id}/effective-credentials`)).body;
    expect(effG.secrets.filter((s: any) => [blocked, limited, partial, usable].includes(s.id)).map((s: any) => s.status)).toEqual(["not_granted", "not_granted", "not_granted", "not_granted"]);
    // The gateway agrees with "blocked" and "usable".
    expect((await curl(cg, url(H.effBlock, "/x"))).status).toBe(403);
    expect((await curl(cg, url(H.effUsable, "/x"))).status).toBe(200);
  });
});

describe("effective credentials are what the gateway injects (services/access.ts)", () => {
  test("agent by agent, over project and organization secrets, grants and a mode switch", async () => {
    const hosts = [H.eqProjectA, H.eqProjectB, H.eqOrg];
    const ids: Record<string, string> = {};
    for (const host of hosts) {
      const org = host === H.eqOrg;
      const r = await api("POST", org ? "/v1/org/secrets" : "/v1/secrets", {
        key: org ? cg.keys.orgApiKey : undefined,
        body: { name: `eq ${host}`, type: "generic", value: `eq-value-${host}`, hostPattern: host, injectionConfig: { headerName: "x-eq-key" } },
      });
      expect(r.status).toBe(201);
      ids[host] = r.body.id;
    }
    const agent = async (identifier: string, grants: string[]) => {
      const created = await api("POST", "/v1/agents", { body: { name: identifier, identifier, mode: "grants" } });
      for (const host of grants) expect((await api("PUT", `/v1/agents/${created.body.id}/grants/secrets/${ids[host]}`)).status).toBe(200);
      return created.body.id as string;
    };
    const agents = { default: (await api("GET", "/v1/agents/default")).body.id as string, b: await agent("eq-b-only", [H.eqProjectB]), orgAndA: await agent("eq-org-a", [H.eqOrg, H.eqProjectA]), none: await agent("eq-none", []) };
    const tokens = new Map(((await api("GET", "/v1/agents")).body as any[]).map((a) => [a.id, a.accessToken as string]));

    /** The hosts effective credentials call injectable, and the hosts the gateway really injected into. */
    const both = async (agentId: string) => {
      const eff = (await api("GET", `/v1/agents/${agentId}/effective-credentials`)).body;
      const effective = hosts.filter((h) => eff.secrets.find((s: any) => s.id === ids[h]).status !== "not_granted");
      const injected: string[] = [];
      for (const host of hosts) {
        const path = `/eq/${agentId}/${crypto.randomUUID()}`;
        expect((await curl(cg, url(host, path), { agentToken: tokens.get(agentId) })).status).toBe(200);
        const key = seen(host, path)[0]!.headers["x-eq-key"];
        if (key !== undefined) {
          expect(key).toBe(`eq-value-${host}`);
          injected.push(host);
        }
      }
      return { effective, injected };
    };
    const expected = { default: hosts, b: [H.eqProjectB], orgAndA: [H.eqProjectA, H.eqOrg], none: [] };
    for (const [name, id] of Object.entries(agents)) {
      const r = await both(id);
      expect({ name, ...r }).toEqual({ name, effective: expected[name as keyof typeof expected], injected: expected[name as keyof typeof expected] });
    }
    // Revoke one grant and switch another agent to mode all: both views move together.
    expect((await api("DELETE", `/v1/agents/${agents.orgAndA}/grants/secrets/${ids[H.eqOrg]}`)).status).toBe(204);
    expect((await api("PATCH", `/v1/agents/${agents.none}`, { body: { mode: "all" } })).status).toBe(200);
    expect(await both(agents.orgAndA)).toEqual({ effective: [H.eqProjectA], injected: [H.eqProjectA] });
    expect(await both(agents.none)).toEqual({ effective: hosts, injected: hosts });
  });
});

// ── concurrency: 100 held while 50 others pass ──────────────────────────────────────────────────────────

/** A Node (undici ProxyAgent) client: `n` GETs with `concurrency` in flight; prints every latency in ms. */
const LOAD_SCRIPT = `
const { ProxyAgent, request } = require("undici");
const fs = require("fs");
(async () => {
  const n = Number(process.env.N), concurrency = Number(process.env.C);
  const dispatcher = new ProxyAgent({ uri: process.env.PROXY_URL, requestTls: { ca: fs.readFileSync(process.env.CA_FILE, "utf8") } });
  const results = [];
  let next = 0;
  async function worker() {
    while (next < n) {
      const i = next++;
      const t0 = performance.now();
      const r = await request(process.env.TARGET + "/" + process.env.TAG + "/" + i, { dispatcher });
      await r.body.text();
      results.push({ i, status: r.statusCode, ms: performance.now() - t0 });
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  await dispatcher.close();
  console.log(JSON.stringify(results));
})().catch((e) => { console.error(e); process.exit(1); });`;

async function load(tag: string, n: number, concurrency: number): Promise<{ status: number; ms: number }[]> {
  const r = await run(["node", "-e", LOAD_SCRIPT], {
    env: { PROXY_URL: `http://x:${token}@127.0.0.1:${cg.gatewayPort}`, CA_FILE: ca.file, TARGET: url(H.free, ""), TAG: tag, N: String(n), C: String(concurrency), NODE_PATH: join(import.meta.dir, "../../node_modules") },
    timeoutMs: 60_000,
  });
  if (r.code !== 0) throw new Error(`load client failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function stats(list: { ms: number }[]) {
  const ms = list.map((x) => x.ms).sort((a, b) => a - b);
  const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]!;
  return { n: ms.length, p50: Math.round(q(0.5) * 10) / 10, p95: Math.round(q(0.95) * 10) / 10, max: Math.round(ms[ms.length - 1]! * 10) / 10 };
}

describe("concurrency", () => {
  test("100 requests held for approval while 50 others complete normally", async () => {
    await createRule({ name: "Held host", action: "allow", requireApproval: true, targets: [network(H.held)] });
    await publish();
    const baseline = await load("baseline", 50, 10);
    expect(baseline.every((r) => r.status === 200)).toBe(true);

    const runId = crypto.randomUUID();
    const held = await Promise.all(Array.from({ length: 100 }, () => tunnel(H.held)));
    held.forEach((t, i) => t.send("POST", `/held/${i}?run=${runId}`, ["content-type: application/json"], JSON.stringify({ i })));
    const pending = await pendingFor(cg, (r) => r.path.includes(runId), 100);
    expect(pending.length).toBe(100);

    const t0 = performance.now();
    const underLoad = await load("under-load", 50, 10);
    const wall = performance.now() - t0;
    expect(underLoad.length).toBe(50);
    expect(underLoad.every((r) => r.status === 200)).toBe(true);
    expect(seen(H.free).filter((s) => s.url.startsWith("/under-load/")).length).toBe(50);
    // Still held: no bytes to any of the 100, nothing upstream.
    expect(held.every((t) => t.received === 0)).toBe(true);
    expect(seen(H.held).length).toBe(0);
    const b = stats(baseline);
    const l = stats(underLoad);
    console.log(`[concurrency] 50 non-held requests (10 in flight), latency ms — baseline: p50 ${b.p50}, p95 ${b.p95}, max ${b.max}; with 100 held: p50 ${l.p50}, p95 ${l.p95}, max ${l.max}; wall ${Math.round(wall)} ms`);

    // Approve every held request: each gets its upstream answer, in full.
    const t1 = performance.now();
    await Promise.all(pending.map((p) => decide(p.id, "approve")));
    const answers = await Promise.all(held.map((t) => t.reader.response({ timeoutMs: 20_000 })));
    console.log(`[concurrency] 100 approvals decided and answered in ${Math.round(performance.now() - t1)} ms`);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.map((a) => JSON.parse(a.text).url).sort()).toEqual(Array.from({ length: 100 }, (_, i) => `/held/${i}?run=${runId}`).sort());
    expect(seen(H.held).length).toBe(100);
    for (const t of held) t.close();
  }, 90_000);
});

// ── Default Rule block (last: it changes the whole project) ─────────────────────────────────────────────

describe("Default Rule", () => {
  test("a Default block → 403 blocked_by_default_policy for unmatched traffic; an allow rule still passes", async () => {
    await createRule({ name: "Allowed host", action: "allow", targets: [network(H.allowed)] });
    const def = (await api("PATCH", "/v1/policy/default", { body: { action: "block" } })).body;
    // Draft only: still allowed.
    expect((await curl(cg, url(H.fallback, "/x"))).status).toBe(200);
    await publish();
    const before = seen(H.fallback).length;
    const r = await curl(cg, url(H.fallback, "/v1/things?limit=5"), { method: "POST", data: "{}" });
    expect(r.status).toBe(403);
    expect(r.headers["x-should-retry"]).toBe("false");
    expect(r.json).toEqual({
      error: "blocked_by_default_policy",
      message: `A default-deny policy blocked this request. POST ${H.fallback}/v1/things?limit=5 is not permitted for this agent. Ask an administrator to allow the destination.`,
      method: "POST",
      host: H.fallback,
      path: "/v1/things?limit=5",
    });
    expect(seen(H.fallback).length).toBe(before);
    expect((await curl(cg, url(H.allowed, "/ok"))).status).toBe(200);
    const row = await logRow((x) => x.host === authority(H.fallback) && x.decision === "blocked_by_default_policy");
    expect(row).toMatchObject({ status: 403, matchedRuleName: "Default Rule", matchedRuleLogicalId: def.logicalId });
  });

  test("an organization Default block is not opened by a project allow", async () => {
    await api("PATCH", "/v1/policy/default", { body: { action: "allow" } });
    await publish();
    expect((await curl(cg, url(H.fallback, "/y"))).status).toBe(200);
    const orgDef = (await api("PATCH", "/v1/org/policy/default", { key: cg.keys.orgApiKey, body: { action: "block" } })).body;
    await publish({ org: true });
    const blocked = await curl(cg, url(H.allowed, "/ok"));
    expect(blocked.status).toBe(403);
    expect(blocked.json.error).toBe("blocked_by_default_policy");
    const row = await logRow((x) => x.host === authority(H.allowed) && x.decision === "blocked_by_default_policy");
    expect(row.matchedRuleLogicalId).toBe(orgDef.logicalId);
    await api("PATCH", "/v1/org/policy/default", { key: cg.keys.orgApiKey, body: { action: "allow" } });
    await publish({ org: true });
    expect((await curl(cg, url(H.allowed, "/ok"))).status).toBe(200);
  });
});

// ── timeout and shutdown (own processes) ────────────────────────────────────────────────────────────────

describe("approval timeout", () => {
  test("CREDGATE_APPROVAL_TIMEOUT_SECONDS=2: the held request gets 403 with the timed-out message; status expired", async () => {
    const c = await startCredgate({ env: env({ CREDGATE_APPROVAL_TIMEOUT_SECONDS: "2" }) });
    try {
      await createRule({ name: "Timeout approval", action: "allow", requireApproval: true, targets: [network(H.approve)] }, { c });
      await publish({ c });
      const cca = await gatewayCa(c);
      const path = `/v1/timeout?run=${crypto.randomUUID()}`;
      const agentReq = curl(c, url(H.approve, path), { method: "POST", data: "x", caFile: cca.file });
      const [pending] = await pendingFor(c, (r) => r.path === path);
      expect((await c.api("GET", "/v1/approvals/pending")).body.timeoutSeconds).toBe(2);
      expect(Date.parse(pending.expiresAt) - Date.parse(pending.createdAt)).toBe(2000);
      const r = await agentReq;
      expect(r.ms).toBeGreaterThanOrEqual(1500);
      expect(r.status).toBe(403);
      expect(r.headers["x-should-retry"]).toBe("false");
      expect(r.json).toEqual({ error: "manual_approval_denied", message: "This request was timed out by a credgate manual approval policy.", approval_id: pending.id });
      expect((await c.api("GET", `/v1/approvals/${pending.id}`)).body.status).toBe("expired");
      expect((await decide(pending.id, "approve", c)).status).toBe(410);
      expect(seen(H.approve, path).length).toBe(0);
      const row = await logRow((x) => x.approvalId === pending.id, "", c);
      expect(row).toMatchObject({ status: 403, decision: "approval_expired" });
    } finally {
      await c.stop();
    }
  });
});

describe("shutdown while held", () => {
  /** A process with an approval rule and one request held through a raw tunnel. */
  async function holdOne() {
    const c = await startCredgate({ env: env({ CREDGATE_APPROVAL_POLL_SECONDS: "20" }) });
    await createRule({ name: "Shutdown approval", action: "allow", requireApproval: true, targets: [network(H.approve)] }, { c });
    await publish({ c });
    const t = await tunnel(H.approve, c.keys.defaultAgentToken, c.gatewayPort, (await gatewayCa(c)).pem);
    const path = `/v1/shutdown?run=${crypto.randomUUID()}`;
    t.send("POST", path, [], "x");
    const [pending] = await pendingFor(c, (r) => r.path === path);
    return { c, t, path, pending };
  }

  test("SIGTERM: the approval becomes cancelled (by the shutdown itself), long-polls answer at once, exit 0, nothing upstream", async () => {
    const { c, t, path, pending } = await holdOne();
    const poll = c.api("GET", `/v1/approvals/pending?exclude=${pending.id}`);
    // A fixed pause so the poll is waiting when the signal comes (nothing outside the process says it is).
    await Bun.sleep(200);
    const t0 = performance.now();
    const exit = c.stop();
    const polled = await poll;
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(polled.status).toBe(200);
    expect(polled.body.requests).toEqual([]);
    expect(await exit).toBe(0);
    t.close();
    expect(seen(H.approve, path).length).toBe(0);
    // Read the stopped process's store directly: the shutdown itself marked it (not the next start).
    expect(await queryStore(c, sql`SELECT status FROM approvals WHERE id = ${pending.id}`)).toEqual([{ status: "cancelled" }]);
    expect(await queryStore(c, sql`SELECT status, decision FROM request_logs WHERE approval_id = ${pending.id}`)).toEqual([{ status: 503, decision: "approval_cancelled" }]);
  });

  test("a process killed while holding: its pending approval is marked cancelled at the next start", async () => {
    const { c, t, path, pending } = await holdOne();
    expect(await c.stop("SIGKILL")).not.toBe(0);
    t.close();
    expect(await queryStore(c, sql`SELECT status FROM approvals WHERE id = ${pending.id}`)).toEqual([{ status: "pending" }]);
    const again = await startCredgate({ dataDir: c.dataDir, env: env() });
    try {
      const record = await again.api("GET", `/v1/approvals/${pending.id}`);
      expect(record.status).toBe(200);
      expect(record.body).toMatchObject({ status: "cancelled", decidedBy: null });
      expect((await again.api("POST", `/v1/approvals/${pending.id}/decision`, { body: { decision: "approve" } })).status).toBe(410);
      expect(seen(H.approve, path).length).toBe(0);
    } finally {
      await again.stop();
    }
  });

  // Was lost until bc364b7 (Gateway.stop destroyed the front sockets before the relayed 503 reached them).
  test("SIGTERM: the held agent gets 503 gateway_restarting with Retry-After: 1", async () => {
    const { c, t, pending } = await holdOne();
    const exit = c.stop();
    const res = await t.reader.response({ timeoutMs: 10_000 });
    expect(res.status).toBe(503);
    expect(res.headers["retry-after"]).toBe("1");
    expect(res.headers["x-should-retry"]).toBeUndefined();
    expect(JSON.parse(res.text)).toEqual({
      error: "gateway_restarting",
      message: "credgate gateway is restarting and released this request before it was reviewed. Retry it.",
      approval_id: pending.id,
    });
    expect(await exit).toBe(0);
    t.close();
  });
});
