// Operators can see inside a real credgate process (docs/operations.md): request ids in responses and in every log
// line written while a request is handled, and `GET /metrics` scraped over HTTP and read by an independent
// Prometheus text parser — from loopback, and from the machine's own network address with the token. The
// metrics whose sources live outside the gateway are driven for real: a request held for approval, a vault
// lookup that fails, API requests by route and status, the request-log queue.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { networkInterfaces } from "node:os";
import { curlThroughGateway } from "../support/curl.ts";
import { basic, eventually, gatewayCa, openConnect, resolveEntries } from "../support/gateway.ts";
import { freePort } from "../support/ports.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { parseExposition, sampleValue, type Family } from "../support/prometheus.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HELD = "held.ops.test";
const VAULTED = "vaulted.ops.test";
const PLAIN = "plain.ops.test";
const BLOCKED = "blocked.ops.test";
const TOKEN = `metrics-${crypto.randomUUID()}`;

let pki: TestPki;
let up: TestUpstream;
let cg: RunningCredgate;
let caFile: string;

/** A non-loopback IPv4 address of this machine, if it has one. */
function interfaceAddress(): string | null {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  return null;
}

beforeAll(async () => {
  pki = makePki([HELD, VAULTED, PLAIN, BLOCKED]);
  up = startUpstream(pki);
  const closed = await freePort();
  cg = await startCredgate({
    // Bound on every address, so the scrape from the machine's own address below reaches it.
    args: ["--host", "0.0.0.0"],
    env: {
      CREDGATE_METRICS_TOKEN: TOKEN,
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: resolveEntries([HELD, VAULTED, PLAIN, BLOCKED], up.port),
      // A 1Password Connect server that is not there: every lookup fails as "unreachable".
      CREDGATE_OP_CONNECT_HOST: `http://127.0.0.1:${closed}`,
      CREDGATE_OP_CONNECT_TOKEN: "op-token",
    },
  });
  caFile = (await gatewayCa(cg)).file;
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
});

async function scrape(base = cg.apiUrl, headers: Record<string, string> = {}): Promise<Map<string, Family>> {
  const res = await fetch(`${base}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return parseExposition(await res.text());
}

function logLines(): Record<string, unknown>[] {
  return cg
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("request ids", () => {
  test("the response and every log line of the request carry the client's id", async () => {
    const id = `op-${crypto.randomUUID()}`;
    const closed = await freePort();
    const res = await cg.api("POST", "/v1/migrate/export", { body: { cloudApiKey: "svc_x", cloudUrl: `http://127.0.0.1:${closed}` }, headers: { "x-request-id": id } });
    expect(res.status).toBe(400);
    expect(res.headers.get("x-request-id")).toBe(id);
    const lines = await eventually(() => {
      const mine = logLines().filter((l) => l.requestId === id);
      return mine.some((l) => l.msg === "api request") ? mine : null;
    });
    // A service's own line, written deep inside the request, and the request's summary line.
    expect(lines!.map((l) => l.msg)).toEqual(["migration export failed", "api request"]);
    expect(lines!.find((l) => l.msg === "api request")).toMatchObject({ level: "info", method: "POST", route: "/v1/migrate/export", status: 400 });
    // No line of another request claims the id.
    expect(logLines().filter((l) => l.requestId === id).length).toBe(2);
  });

  test("answers the gateway port serves from the API carry ids too", async () => {
    const res = await fetch(`${cg.gatewayUrl}/v1/health`, { headers: { "x-request-id": "gw-health-1" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("gw-health-1");
  });
});

describe("request ids at the gateway", () => {
  test("a gateway answer carries the agent's sane x-request-id, and so does its request-log row", async () => {
    expect((await cg.api("POST", "/v1/policy/rules", { body: { name: "no blocked", action: "block", targets: [{ kind: "network", hostPattern: BLOCKED }] } })).status).toBe(201);
    expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
    const r = await curlThroughGateway(cg, `https://${BLOCKED}:${up.port}/x`, { caFile, headers: ["x-request-id: agent-req.42_A"] });
    expect(r.status).toBe(403);
    expect(r.headers["x-request-id"]).toBe("agent-req.42_A");
    const logs = await cg.api("GET", `/v1/logs?host=${BLOCKED}:${up.port}`);
    expect(logs.body.data[0]).toMatchObject({ decision: "blocked", status: 403, requestId: "agent-req.42_A" });
  });

  test("without one, or with one that could forge a field, a new uuid is minted; the row has the same", async () => {
    for (const sent of [null, "a b", "x".repeat(129)]) {
      const r = await curlThroughGateway(cg, `https://${BLOCKED}:${up.port}/minted`, { caFile, headers: sent === null ? [] : [`x-request-id: ${sent}`] });
      expect(r.status).toBe(403);
      const id = r.headers["x-request-id"]!;
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const logs = await cg.api("GET", `/v1/logs?host=${BLOCKED}:${up.port}`);
      expect(logs.body.data.some((row: { requestId: string }) => row.requestId === id)).toBe(true);
    }
  });

  test("a refused CONNECT carries one too; an upstream's own answer is relayed without one added", async () => {
    const t = await openConnect(cg.gatewayPort, `${PLAIN}:${up.port}`, basic("agt_wrong"));
    t.socket.destroy();
    expect(t.connect.status).toBe(407);
    expect(t.connect.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    const relayed = await curlThroughGateway(cg, `https://${PLAIN}:${up.port}/relayed`, { caFile });
    expect(relayed.status).toBe(200);
    expect(relayed.headers["x-request-id"]).toBeUndefined();
  });
});

describe("GET /metrics", () => {
  test("every metric of the registry is exposed with its type", async () => {
    const families = await scrape();
    const expected: Record<string, Family["type"]> = {
      credgate_gateway_requests_total: "COUNTER",
      credgate_gateway_added_latency_seconds: "HISTOGRAM",
      credgate_gateway_upstream_latency_seconds: "HISTOGRAM",
      credgate_gateway_open_tunnels: "GAUGE",
      credgate_gateway_open_websockets: "GAUGE",
      credgate_gateway_snapshot_rebuilds_total: "COUNTER",
      credgate_budget_spend_usd_total: "COUNTER",
      credgate_budget_admissions_total: "COUNTER",
      credgate_approvals_held: "GAUGE",
      credgate_request_log_queue_depth: "GAUGE",
      credgate_request_log_dropped_total: "COUNTER",
      credgate_oauth_refresh_failures_total: "COUNTER",
      credgate_vault_errors_total: "COUNTER",
      credgate_api_requests_total: "COUNTER",
      credgate_api_request_duration_seconds: "HISTOGRAM",
      process_resident_memory_bytes: "GAUGE",
      process_start_time_seconds: "GAUGE",
    };
    for (const [name, type] of Object.entries(expected)) expect({ name, type: families.get(name)?.type }).toEqual({ name, type });
    expect(sampleValue(families, "process_resident_memory_bytes")).toBeGreaterThan(1_000_000);
  });

  test("gateway requests by decision and status, upstream and added latency, open tunnels, snapshot rebuilds", async () => {
    const before = await scrape();
    const r = await curlThroughGateway(cg, `https://${PLAIN}:${up.port}/counted`, { caFile });
    expect(r.status).toBe(200);
    const after = await scrape();
    const allowed = (f: Map<string, Family>) => sampleValue(f, "credgate_gateway_requests_total", { decision: "allowed", status: "200" });
    expect(allowed(after)).toBe(allowed(before) + 1);
    for (const name of ["credgate_gateway_upstream_latency_seconds", "credgate_gateway_added_latency_seconds"]) {
      expect(sampleValue(after, name)).toBe(sampleValue(before, name) + 1);
    }
    expect(sampleValue(after, "credgate_gateway_snapshot_rebuilds_total")).toBeGreaterThanOrEqual(1);
    // A tunnel is open while its socket is; the gauge returns when it closes. curl's own tunnel closes as curl
    // exits, which the gateway may see a moment later: the idle level is read once it is back where it was.
    const tunnels = async () => sampleValue(await scrape(), "credgate_gateway_open_tunnels");
    expect(await eventually(async () => (await tunnels()) <= sampleValue(before, "credgate_gateway_open_tunnels"))).toBe(true);
    const idle = await tunnels();
    const t = await openConnect(cg.gatewayPort, `${PLAIN}:${up.port}`, basic(cg.keys.defaultAgentToken));
    expect(t.connect.status).toBe(200);
    expect(await tunnels()).toBe(idle + 1);
    t.socket.destroy();
    await eventually(async () => (await tunnels()) === idle);
  });

  test("API requests by route and status", async () => {
    const before = await scrape();
    await cg.api("GET", "/v1/agents");
    await cg.api("GET", "/v1/agents", { key: null });
    const after = await scrape();
    const count = (families: Map<string, Family>, status: string) => sampleValue(families, "credgate_api_requests_total", { route: "/v1/agents", method: "GET", status });
    expect(count(after, "200")).toBe(count(before, "200") + 1);
    expect(count(after, "401")).toBe(count(before, "401") + 1);
  });

  test("a request held for approval is a held approval until it is decided; its log row passes through the queue", async () => {
    expect((await cg.api("POST", "/v1/policy/rules", { body: { name: "ask", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HELD }] } })).status).toBe(201);
    expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
    expect(sampleValue(await scrape(), "credgate_approvals_held")).toBe(0);
    const held = curlThroughGateway(cg, `https://${HELD}:${up.port}/send`, { caFile, method: "POST", data: "{}", maxTime: 20 });
    const pending = await eventually(async () => (await cg.api("GET", "/v1/approvals/pending")).body.requests[0]);
    expect(sampleValue(await scrape(), "credgate_approvals_held")).toBe(1);
    expect((await cg.api("POST", `/v1/approvals/${pending.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
    expect((await held).status).toBe(200);
    expect(sampleValue(await scrape(), "credgate_approvals_held")).toBe(0);
    // Reading the logs flushes the queue: nothing waits afterwards, nothing was dropped.
    expect((await cg.api("GET", `/v1/logs?host=${HELD}:${up.port}`)).body.data.length).toBeGreaterThanOrEqual(1);
    const families = await scrape();
    expect(sampleValue(families, "credgate_request_log_queue_depth")).toBe(0);
    expect(sampleValue(families, "credgate_request_log_dropped_total")).toBe(0);
  });

  test("an external-vault lookup that fails is counted by reason", async () => {
    const secret = await cg.api("POST", "/v1/secrets", {
      body: { name: "Vaulted", type: "generic", valueSource: "external_vault", opRef: "op://Prod/Item/field", hostPattern: VAULTED, injectionConfig: { headerName: "x-key" } },
    });
    expect(secret.status).toBe(201);
    const before = sampleValue(await scrape(), "credgate_vault_errors_total", { reason: "unreachable" });
    const r = await curlThroughGateway(cg, `https://${VAULTED}:${up.port}/`, { caFile });
    expect(r.status).toBe(502);
    expect(r.json.error).toBe("credential_unavailable");
    expect(sampleValue(await scrape(), "credgate_vault_errors_total", { reason: "unreachable" })).toBe(before + 1);
  });

  const address = interfaceAddress();
  test.if(address !== null)("from the machine's own network address: 404 without the token, 200 with it", async () => {
    const base = `http://${address}:${cg.apiPort}`;
    const anonymous = await fetch(`${base}/metrics`);
    expect(anonymous.status).toBe(404);
    expect(await anonymous.json()).toEqual({ error: { message: "Unrecognized request URL (GET: /metrics).", type: "not_found_error" } });
    expect((await fetch(`${base}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(404);
    const families = await scrape(base, { authorization: `Bearer ${TOKEN}` });
    expect(families.get("credgate_api_requests_total")?.type).toBe("COUNTER");
  });
});
