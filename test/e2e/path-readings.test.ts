// Every reading of a path is judged (docs/injection.md#every-reading-of-a-path), through the real process with
// curl `--path-as-is` (so each spelling reaches the gateway unchanged): a block rule on `/admin/*` refuses
// `/%61dmin/x`, `/./admin/x`, `/x/../admin/x`, `/x/%2e%2e/admin/x`, `/admin%2Fx` and `/admin;v=1/x` (an origin
// that normalises serves `/admin/x` for each) and logs them; an approval rule holds its spellings; a secret
// scoped to `/public/*` is not injected into `/public/../private/a`; what is allowed reaches a raw TLS origin
// with its request target byte for byte. Budgets fail closed (docs/budgets.md#metering): a spelling of
// `/v1/messages` is metered, and once a budget refuses, every spelling — and a request to an endpoint that is
// not metered at all — is refused with the key never sent.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { curlThroughGateway, type CurlOptions } from "../support/curl.ts";
import { gatewayCa, openTlsTunnel, rawRequest, startRawUpstream, until, type RawUpstream } from "../support/gateway.ts";
import { startFakeVendors, type FakeVendors } from "../support/llm/fakeVendors.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, type TestPki } from "../support/upstream.ts";
import { clearOfMidnight } from "../support/windowEdge.ts";

const POLICY_HOST = "api.example.test";
const SCOPED_HOST = "scoped.example.test";
const ANTHROPIC = "api.anthropic.com";
const KEY = "EXAMPLE-KEY-0123456789";
const SCOPED_KEY = "SCOPED-KEY-0123456789";

let pki: TestPki;
let origin: RawUpstream;
let fake: FakeVendors;
let cg: RunningCredgate;
let caFile: string;
let caPem: string;

beforeAll(async () => {
  pki = makePki([POLICY_HOST, SCOPED_HOST, ANTHROPIC]);
  origin = await startRawUpstream(pki);
  origin.respond((_head, sock) => sock.end("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"));
  fake = startFakeVendors(pki);
  cg = await startCredgate({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_CONNECT_TO: `${POLICY_HOST}:443:127.0.0.1:${origin.port},${SCOPED_HOST}:443:127.0.0.1:${origin.port},${ANTHROPIC}:443:127.0.0.1:${fake.port}`,
    },
  });
  const ca = await gatewayCa(cg);
  caFile = ca.file;
  caPem = ca.pem;
  for (const body of [
    { name: "Example", type: "generic", value: KEY, hostPattern: POLICY_HOST, injectionConfig: { headerName: "x-api-key" } },
    { name: "Public only", type: "generic", value: SCOPED_KEY, hostPattern: SCOPED_HOST, pathPattern: "/public/*", injectionConfig: { headerName: "x-scoped-key" } },
    { name: "Anthropic", type: "llm_a", value: "sk-ant-api03-path-readings-key" },
  ]) {
    const res = await cg.api("POST", "/v1/secrets", { body });
    expect(res.status).toBe(201);
  }
  for (const body of [
    { name: "No admin", action: "block", targets: [{ kind: "network", hostPattern: POLICY_HOST, pathPattern: "/admin/*" }] },
    { name: "Sends need approval", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: POLICY_HOST, pathPattern: "/send/*" }] },
  ]) {
    expect((await cg.api("POST", "/v1/policy/rules", { body })).status).toBe(201);
  }
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
}, 90_000);

afterAll(async () => {
  await cg?.stop();
  origin?.close();
  await fake?.stop();
});

const curl = (url: string, opts: CurlOptions = {}) => curlThroughGateway(cg, url, { caFile, pathAsIs: true, ...opts });

/** The request line and headers the origin received for `target` (the last such request). */
function received(target: string): { requestLine: string; headers: Map<string, string> } | null {
  const head = origin.heads.findLast((h) => h.split("\r\n")[0] === `GET ${target} HTTP/1.1`);
  if (!head) return null;
  const [requestLine, ...lines] = head.split("\r\n");
  return { requestLine: requestLine!, headers: new Map(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()])) };
}

/** Request-log rows of the project with this decision on this host (written in batches: polled). */
async function loggedPaths(host: string, decision: string, want: number): Promise<string[]> {
  return until(async () => {
    const rows = (await cg.api("GET", `/v1/logs?host=${host}&decision=${decision}&limit=500`)).body.data as { path: string }[];
    if (rows.length < want) throw new Error(`${rows.length} ${decision} rows, want ${want}`);
    return rows.map((r) => r.path);
  }, 15_000);
}

describe("policy rules judge every reading of the path", () => {
  const SPELLINGS = ["/%61dmin/x", "/./admin/x", "/x/../admin/x", "/x/%2e%2e/admin/x", "/admin%2Fx", "/admin;v=1/x"];

  test("every spelling of /admin/x is refused by the block rule, named as sent, logged, and nothing reaches the origin", async () => {
    const before = origin.heads.length;
    for (const path of ["/admin/x", ...SPELLINGS]) {
      const r = await curl(`https://${POLICY_HOST}${path}`);
      expect({ path, status: r.status }).toEqual({ path, status: 403 });
      expect(r.json).toMatchObject({ error: "blocked_by_policy", rule_name: "No admin", method: "GET", path });
    }
    expect(origin.heads.length).toBe(before);
    const logged = await loggedPaths(POLICY_HOST, "blocked", SPELLINGS.length + 1);
    for (const path of SPELLINGS) expect(logged).toContain(path);
  }, 60_000);

  test("what is allowed reaches the origin byte for byte, with the key injected", async () => {
    for (const path of ["/docs/%7Eguide/./a;v=1/b%2Fc", "/x/../docs/a", "/ADMIN/x", "/administrator/x"]) {
      const r = await curl(`https://${POLICY_HOST}${path}`);
      expect({ path, status: r.status }).toEqual({ path, status: 200 });
      const got = received(path);
      expect(got?.requestLine).toBe(`GET ${path} HTTP/1.1`);
      expect(got?.headers.get("x-api-key")).toBe(KEY);
    }
  }, 60_000);

  test("a spelling of a path under an approval rule is held for approval, never forwarded first", async () => {
    const before = origin.heads.length;
    const runId = crypto.randomUUID().slice(0, 8);
    const path = `/x/%2e%2e/%73end/${runId}`;
    const held = curl(`https://${POLICY_HOST}${path}`);
    const pending = await until(async () => {
      const list = ((await cg.api("GET", "/v1/approvals/pending")).body.requests as { id: string; path: string; ruleName?: string }[]).filter((r) => r.path === path);
      if (list.length !== 1) throw new Error("not pending yet");
      return list[0]!;
    }, 15_000);
    expect(origin.heads.length).toBe(before);
    expect((await cg.api("POST", `/v1/approvals/${pending.id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    const r = await held;
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ error: "manual_approval_denied", approval_id: pending.id });
    expect(origin.heads.length).toBe(before);
  }, 60_000);
});

/** One request on a raw TLS tunnel: the target's bytes exactly as written (a `#` included, which curl would not send). */
async function raw(host: string, target: string): Promise<{ status: number; json: any }> {
  const t = await openTlsTunnel(cg.gatewayPort, `${host}:443`, cg.keys.defaultAgentToken, caPem, host);
  try {
    t.tls.write(rawRequest("GET", target, host));
    const res = await t.reader.response({ timeoutMs: 15_000 });
    let json: any = null;
    try {
      json = JSON.parse(res.text);
    } catch {}
    return { status: res.status, json };
  } finally {
    t.tls.destroy();
  }
}

describe("a `#` in the request target (Go's net/http keeps it in the path and cleans it)", () => {
  test("the block rule refuses /x#/../admin/x; the scoped key is not injected into /public#/../../private/a", async () => {
    const before = origin.heads.length;
    const blocked = await raw(POLICY_HOST, "/x#/../admin/x");
    expect(blocked.status).toBe(403);
    expect(blocked.json).toMatchObject({ error: "blocked_by_policy", rule_name: "No admin" });
    expect(origin.heads.length).toBe(before);
    const target = "/public#/../../private/a";
    expect((await raw(SCOPED_HOST, target)).status).toBe(200);
    const got = received(target);
    expect(got?.requestLine).toBe(`GET ${target} HTTP/1.1`);
    expect(got?.headers.get("x-scoped-key")).toBeUndefined();
  }, 60_000);
});

describe("a secret's path pattern must match every reading", () => {
  test("a key scoped to /public/* is injected under /public and into no path that climbs out of it", async () => {
    const inside = "/public/a";
    expect((await curl(`https://${SCOPED_HOST}${inside}`)).status).toBe(200);
    expect(received(inside)?.headers.get("x-scoped-key")).toBe(SCOPED_KEY);
    for (const path of ["/public/../private/a", "/public/%2e%2e/private/a", "/public/..%2Fprivate/a", "/public;x/../../private/a"]) {
      const r = await curl(`https://${SCOPED_HOST}${path}`);
      expect({ path, status: r.status }).toEqual({ path, status: 200 });
      const got = received(path);
      expect(got?.requestLine).toBe(`GET ${path} HTTP/1.1`);
      expect({ path, key: got?.headers.get("x-scoped-key") ?? null }).toEqual({ path, key: null });
    }
  }, 60_000);
});

describe("budgets fail closed", () => {
  // Budget windows start at 00:00 UTC: no test runs across one.
  beforeEach(clearOfMidnight);

  test("a spelling of /v1/messages is metered; once the budget refuses, every spelling and every other request carrying the key is refused", async () => {
    const created = await cg.api("POST", "/v1/agents", { body: { name: "spender", identifier: "spender", mode: "all" } });
    expect(created.status).toBe(201);
    const agentId = created.body.id as string;
    const token = (await cg.api("GET", "/v1/agents")).body.find((a: { id: string }) => a.id === agentId).accessToken as string;
    const budget = await cg.api("POST", "/v1/budgets", { body: { scope: "agent", agentId, limitCents: 1, period: "day" } });
    expect(budget.status).toBe(201);
    const call = (path: string, method = "POST") =>
      curl(`https://${ANTHROPIC}${path}`, {
        agentToken: token,
        method,
        headers: ["content-type: application/json", "x-api-key: credgate-managed"],
        ...(method === "POST" ? { data: JSON.stringify({ model: "claude-opus-4-1", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }) } : {}),
      });

    // While the budget has room: a request that is not metered passes, and a spelling of the endpoint is metered.
    expect((await call("/v1/models", "GET")).status).toBe(404);
    fake.setUsage(ANTHROPIC, { input: 100, output: 1000 });
    const seen = fake.seen.length;
    expect((await call("/v1/./messages")).status).toBe(200);
    expect(fake.seen[seen]).toMatchObject({ path: "/v1/messages", apiKey: "sk-ant-api03-path-readings-key" });
    // 100 in and 1000 out at opus rates: 2.55 cents, over the 1-cent limit.
    await until(async () => {
      const b = (await cg.api("GET", "/v1/budgets")).body.find((x: { id: string }) => x.id === budget.body.id);
      if (b.spentCents !== 2) throw new Error(`spentCents ${b.spentCents}`);
    }, 15_000);

    const refused = ["/v1/messages", "/v1/messages/", "/v1/%6Dessages", "/v1/./messages", "/V1/messages", "/v1/messages;x", "/v1/messages%2F"];
    const before = fake.seen.length;
    for (const path of refused) {
      const r = await call(path);
      expect({ path, status: r.status }).toEqual({ path, status: 403 });
      expect(r.json).toMatchObject({ error: "budget_exceeded", scope: "agent", budget_id: budget.body.id });
    }
    // Not a metered endpoint, but it would carry the key: refused too.
    for (const [path, method] of [["/v1/models", "GET"], ["/v1/messages/count_tokens", "POST"]] as const) {
      const r = await call(path, method);
      expect({ path, status: r.status }).toEqual({ path, status: 403 });
      expect(r.json.error).toBe("budget_exceeded");
    }
    expect(fake.seen.length).toBe(before);
    const logged = await until(async () => {
      const rows = (await cg.api("GET", `/v1/logs?agentId=${agentId}&decision=budget_exceeded&limit=500`)).body.data as { path: string }[];
      if (rows.length < refused.length + 2) throw new Error(`${rows.length} refused rows`);
      return rows.map((r) => r.path);
    }, 15_000);
    for (const path of refused) expect(logged).toContain(path);
  }, 90_000);
});
