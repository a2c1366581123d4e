// Operations on the API port (docs/operations.md): `x-request-id` on every response, `GET /metrics` open to
// loopback peers and to the metrics token, the unknown-route 404 for everyone else. The peer address is what
// the listener reports (server.ts passes Bun's requestIP); here it is handed to the app directly, so that
// non-loopback peers can be tried without leaving the machine (the e2e test scrapes a real process).
import { beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { parseExposition, sampleValue } from "../support/prometheus.ts";
import { expectEnvelope } from "./helpers.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TOKEN = `metrics-${crypto.randomUUID()}`;

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi({ CREDGATE_METRICS_TOKEN: TOKEN });
});

async function asRes(res: Response) {
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
}

function scrape(address: string | undefined, headers: Record<string, string> = {}, method = "GET") {
  return api.app.handle(new Request("http://localhost/metrics", { method, headers }), address === undefined ? undefined : { address });
}

describe("x-request-id", () => {
  test.each([
    ["a 200", "GET", "/v1/agents", undefined],
    ["a 201", "POST", "/v1/agents", { name: "Req", identifier: `req-${crypto.randomUUID().slice(0, 8)}` }],
    ["a flat 400", "POST", "/v1/agents", { name: "" }],
    ["a 404 of an unknown route", "GET", "/v1/nope", undefined],
    ["a 413", "POST", "/v1/agents", "x".repeat(1024 * 1024 + 1)],
  ])("%s carries the client's sane id back", async (_label, method, path, body) => {
    const id = `trace-${crypto.randomUUID()}`;
    const res = await api.call(method, path, { body, headers: { "x-request-id": id } });
    expect(res.headers.get("x-request-id")).toBe(id);
  });

  test("a 401 and a 204 carry one too; without a client id it is a fresh uuid each time", async () => {
    const a = await api.call("GET", "/v1/agents", { key: null });
    expect(a.status).toBe(401);
    const b = await api.call("DELETE", "/v1/secrets/00000000-0000-4000-8000-000000000000");
    expect(a.headers.get("x-request-id")).toMatch(UUID);
    expect(b.headers.get("x-request-id")).toMatch(UUID);
    expect(a.headers.get("x-request-id")).not.toBe(b.headers.get("x-request-id"));
    const created = await api.call("POST", "/v1/agents", { body: { name: "Gone", identifier: `gone-${crypto.randomUUID().slice(0, 8)}` } });
    const deleted = await api.call("DELETE", `/v1/agents/${created.body.id}`, { headers: { "x-request-id": "del.1" } });
    expect(deleted.status).toBe(204);
    expect(deleted.headers.get("x-request-id")).toBe("del.1");
  });

  test.each([
    ["too long", "a".repeat(129)],
    ["a space", "a b"],
    ["a colon (log or header forgery)", "id:1"],
    ["a quote", 'x"y'],
    ["non-ASCII", "ïd"],
    ["empty", ""],
  ])("a client id with %s is replaced by a uuid", async (_label, sent) => {
    const res = await api.call("GET", "/v1/health", { key: null, headers: { "x-request-id": sent } });
    expect(res.headers.get("x-request-id")).toMatch(UUID);
  });

  test("the longest sane id (128 characters of every allowed class) is kept", async () => {
    const id = ("Az09._-".repeat(19) + "x").slice(0, 128);
    const res = await api.call("GET", "/v1/health", { key: null, headers: { "x-request-id": id } });
    expect(res.headers.get("x-request-id")).toBe(id);
  });

  test("a redirect (immutable headers) and /metrics carry one too", async () => {
    const redirect = await api.call("GET", `/v1/apps/github/authorize?_token=${api.projectKey}`, { key: null, headers: { "x-request-id": "redir-1" } });
    expect([302, 400]).toContain(redirect.status);
    expect(redirect.headers.get("x-request-id")).toBe("redir-1");
    const m = await api.app.handle(new Request("http://localhost/metrics", { headers: { "x-request-id": "scrape-1" } }), { address: "127.0.0.1" });
    expect(m.headers.get("x-request-id")).toBe("scrape-1");
  });
});

describe("GET /metrics access", () => {
  test.each([["127.0.0.1"], ["127.3.4.5"], ["::1"], ["::ffff:127.0.0.1"]])("loopback peer %s: 200 Prometheus text, no token needed", async (address) => {
    const res = await scrape(address);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const families = parseExposition(await res.text());
    expect(families.get("credgate_api_requests_total")?.type).toBe("COUNTER");
  });

  test.each([["192.0.2.7"], ["10.0.0.1"], ["::ffff:10.0.0.1"], ["fd00::2"], ["unknown"]])("peer %s without the token: the unknown-route 404", async (address) => {
    const res = await scrape(address === "unknown" ? undefined : address);
    expectEnvelope(await asRes(res), 404, "Unrecognized request URL (GET: /metrics).");
  });

  test("a non-loopback peer with the metrics token: 200; a wrong token or scheme: 404", async () => {
    expect((await scrape("192.0.2.7", { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    expect((await scrape("192.0.2.7", { authorization: `bearer  ${TOKEN} ` })).status).toBe(200);
    expect((await scrape("192.0.2.7", { authorization: `Bearer ${TOKEN}x` })).status).toBe(404);
    expect((await scrape("192.0.2.7", { authorization: `Basic ${TOKEN}` })).status).toBe(404);
    expect((await scrape("192.0.2.7", { authorization: `Bearer ${api.projectKey}` })).status).toBe(404);
  });

  test("without CREDGATE_METRICS_TOKEN only loopback peers get it", async () => {
    const open = await createTestApi();
    const res = await open.app.handle(new Request("http://localhost/metrics", { headers: { authorization: "Bearer " } }), { address: "192.0.2.7" });
    expect(res.status).toBe(404);
    expect((await open.app.handle(new Request("http://localhost/metrics"), { address: "127.0.0.1" })).status).toBe(200);
  });

  test("other methods on /metrics are unknown routes", async () => {
    const res = await scrape("127.0.0.1", {}, "POST");
    expectEnvelope(await asRes(res), 404, "Unrecognized request URL (POST: /metrics).");
  });

  test("API requests are counted by route template, method and status", async () => {
    const before = parseExposition(await (await scrape("127.0.0.1")).text());
    const labels = { route: "/v1/agents/:agentId", method: "GET", status: "404" };
    const was = sampleValue(before, "credgate_api_requests_total", labels);
    await api.call("GET", "/v1/agents/00000000-0000-4000-8000-000000000000");
    await api.call("GET", "/api/nothing-here");
    const after = parseExposition(await (await scrape("127.0.0.1")).text());
    expect(sampleValue(after, "credgate_api_requests_total", labels)).toBe(was + 1);
    expect(sampleValue(after, "credgate_api_requests_total", { route: "unmatched", method: "GET", status: "404" })).toBeGreaterThanOrEqual(1);
  });
});
