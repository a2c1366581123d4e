// Routing, bodies and utility endpoints: unknown-route 404 (docs/api.md#unknown-routes), `/api` alias and mode availability
// (docs/api.md#base-path-and-modes), body parsing and the 1 MiB cap (docs/api.md#bodies-and-formats, docs/api.md#validation-messages), health and counts (docs/api.md#utility-endpoints).
import { beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { VERSION } from "../../src/runtime/version.ts";
import { expectEnvelope, expectFlat, ISO_MS } from "./helpers.ts";

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

const unknown = (method: string, path: string) => `Unrecognized request URL (${method}: ${path}).`;

describe("unknown routes (docs/api.md#unknown-routes)", () => {
  test.each([
    ["GET", "/v1/nope"],
    ["POST", "/v1/nope/deeper"],
    ["GET", "/api/nope"],
    ["DELETE", "/v1/health"],
    ["PUT", "/v1/agents"],
    ["POST", "/"],
    ["GET", "/nope"],
    ["GET", "/v2/agents"],
  ])("%s %s → 404 envelope, before authentication", async (method, path) => {
    expectEnvelope(await api.call(method, path, { key: null }), 404, unknown(method, path));
    expectEnvelope(await api.call(method, path), 404, unknown(method, path));
  });

  test("the path in the message has no query", async () => {
    expectEnvelope(await api.call("GET", "/v1/nope?x=1&y=2", { key: null }), 404, unknown("GET", "/v1/nope"));
  });

  test("example 5: cloud-only routes do not exist in self-hosted", async () => {
    const res = await api.call("GET", "/v1/projects");
    expect(res.text).toBe('{"error":{"message":"Unrecognized request URL (GET: /v1/projects).","type":"not_found_error"}}');
    expectEnvelope(await api.call("GET", "/v1/projects", { key: null }), 404, unknown("GET", "/v1/projects"));
    expectEnvelope(await api.call("POST", "/v1/projects", { body: { name: "x" } }), 404, unknown("POST", "/v1/projects"));
    expectEnvelope(await api.call("POST", "/v1/auth/signup", { key: null, body: {} }), 404, unknown("POST", "/v1/auth/signup"));
    expectEnvelope(await api.call("GET", "/v1/team/members"), 404, unknown("GET", "/v1/team/members"));
    expectEnvelope(await api.call("GET", "/v1/partner/orgs"), 404, unknown("GET", "/v1/partner/orgs"));
    expectEnvelope(await api.call("POST", "/v1/migrate/import", { body: {} }), 404, unknown("POST", "/v1/migrate/import"));
  });
});

describe("odd URLs never produce a 500 (docs/api.md#error-shapes)", () => {
  test.each([
    ["GET", "/v1/agents/%ZZ"],
    ["GET", "/v1/secrets/%00"],
    ["PATCH", "/v1/agents/%E0%A4%A"],
    ["DELETE", "/v1/secrets/" + "a".repeat(10_000)],
    ["GET", "/v1/agents?x=%ZZ&y"],
    ["GET", "/v1//agents"],
    ["POST", "/v1/agents/%2e%2e/set-default"],
  ])("%s %s", async (method, path) => {
    const res = await api.call(method, path, { body: method === "PATCH" ? { name: "x" } : undefined });
    expect(res.status).toBeGreaterThanOrEqual(200);
    expect(res.status).toBeLessThan(500);
  });
});

describe("NUL characters (no field can hold one; PostgreSQL cannot store one)", () => {
  test("a path id or query value with %00 names no route: the unknown-route 404", async () => {
    expectEnvelope(await api.call("GET", "/v1/secrets/%00"), 404, "Unrecognized request URL (GET: /v1/secrets/%00).");
    expectEnvelope(await api.call("GET", "/v1/agents/a%00b"), 404, "Unrecognized request URL (GET: /v1/agents/a%00b).");
    expectEnvelope(await api.call("GET", "/v1/logs?host=a%00"), 404, "Unrecognized request URL (GET: /v1/logs).");
  });

  test("a body string or key with U+0000 → flat 400 naming it; nothing is stored", async () => {
    expectFlat(await api.call("POST", "/v1/agents", { body: { name: "a\u0000b", identifier: "nul-1" } }), 400, "name must not contain NUL characters");
    expectFlat(await api.call("POST", "/v1/secrets", { body: { name: "s", type: "generic", value: "v", hostPattern: "x.example.com", injectionConfig: { headerName: "x-k", valueFormat: "\u0000{value}" } } }), 400, "injectionConfig.valueFormat must not contain NUL characters");
    expectFlat(await api.call("PUT", "/v1/agents/x/secrets", { body: { secretIds: ["ok", "b\u0000"] } }), 400, "secretIds[1] must not contain NUL characters");
    expectFlat(await api.call("POST", "/v1/agents", { body: { ["k\u0000"]: 1 } }), 400, "Request body must not contain NUL characters");
    expectFlat(await api.call("POST", "/v1/agents", { body: '"\\u0000"' }), 400, "Request body must not contain NUL characters");
    expect((await api.call("GET", "/v1/agents")).body.some((a: { identifier: string }) => a.identifier === "nul-1")).toBe(false);
  });
});

describe("/api alias (docs/api.md#base-path-and-modes)", () => {
  test("serves the same routes with the same auth", async () => {
    const v1 = await api.call("GET", "/v1/agents");
    const alias = await api.call("GET", "/api/agents");
    expect(alias.status).toBe(200);
    expect(alias.body).toEqual(v1.body);
    expectEnvelope(await api.call("GET", "/api/agents", { key: null }), 401, "Invalid API key or token.");
    const created = await api.call("POST", "/api/agents", { body: { name: "Via alias", identifier: "via-alias" } });
    expect(created.status).toBe(201);
    expect((await api.call("GET", `/v1/agents/${created.body.id}`)).body.identifier).toBe("via-alias");
    expect((await api.call("GET", "/api/health", { key: null })).body.status).toBe("ok");
  });
});

describe("health (docs/api.md#utility-endpoints)", () => {
  test("GET /v1/health needs no auth and returns {status, version, timestamp}", async () => {
    const res = await api.call("GET", "/v1/health", { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(Object.keys(res.body).sort()).toEqual(["status", "timestamp", "version"]);
    expect(res.body.status).toBe("ok");
    expect(res.body.version).toBe(VERSION);
    expect(res.body.timestamp).toMatch(ISO_MS);
    expect(Math.abs(Date.parse(res.body.timestamp) - Date.now())).toBeLessThan(60_000);
  });

  test("a bad key does not matter on a `none` route", async () => {
    expect((await api.call("GET", "/v1/health", { key: "garbage" })).status).toBe(200);
  });
});

describe("counts (docs/api.md#utility-endpoints)", () => {
  test("{agents, apps, llms, secrets}: project + organization, LLM vs generic", async () => {
    const fresh = await createTestApi();
    const first = await fresh.call("GET", "/v1/counts");
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ agents: 1, apps: 0, llms: 0, secrets: 0 });

    await fresh.call("POST", "/v1/agents", { body: { name: "A", identifier: "a" } });
    const generic = { type: "generic", value: "v", hostPattern: "api.x.com", injectionConfig: { headerName: "x-k" } };
    expect((await fresh.call("POST", "/v1/secrets", { body: { name: "g1", ...generic } })).status).toBe(201);
    expect((await fresh.call("POST", "/v1/secrets", { body: { name: "l1", type: "llm_a", value: "sk-ant-api-1" } })).status).toBe(201);
    expect((await fresh.call("POST", "/v1/secrets", { body: { name: "l2", type: "llm_b", value: "sk-proj-1" } })).status).toBe(201);
    expect((await fresh.call("POST", "/v1/org/secrets", { key: fresh.orgKey, body: { name: "og", ...generic } })).status).toBe(201);
    expect((await fresh.call("POST", "/v1/org/secrets", { key: fresh.orgKey, body: { name: "ol", type: "llm_a", value: "sk-ant-api-2" } })).status).toBe(201);

    // Connected app connections of the project and the organization; other statuses do not count.
    expect((await fresh.call("POST", "/v1/apps/resend/connect", { body: { fields: { apiKey: "re_1" } } })).status).toBe(200);
    expect((await fresh.call("POST", "/v1/org/apps/vercel/connect", { key: fresh.orgKey, body: { fields: { apiToken: "vc_1" } } })).status).toBe(200);
    const revoked = await fresh.call("POST", "/v1/apps/cloudflare/connect", { body: { fields: { apiToken: "cf_1" } } });
    await fresh.core.services.connections.setStatus(revoked.body.connection.id, "revoked", 0);

    const res = await fresh.call("GET", "/v1/counts");
    expect(res.body).toEqual({ agents: 2, apps: 2, llms: 3, secrets: 2 });
    expectEnvelope(await fresh.call("GET", "/v1/counts", { key: null }), 401, "Invalid API key or token.");
    expectEnvelope(await fresh.call("GET", "/v1/counts", { key: fresh.orgKey }), 401, "Invalid API key or token.");
  });
});

describe("request bodies (docs/api.md#bodies-and-formats, docs/api.md#validation-messages)", () => {
  test("a body over 1 MiB → 413 envelope, nothing created", async () => {
    const before = (await api.call("GET", "/v1/agents")).body.length;
    const big = JSON.stringify({ name: "x".repeat(1024 * 1024 + 10), identifier: "too-big" });
    expectEnvelope(await api.call("POST", "/v1/agents", { body: big }), 413, "Request body too large");
    expectEnvelope(await api.call("PATCH", "/v1/user", { body: big }), 413, "Request body too large");
    expectEnvelope(await api.call("POST", "/v1/secrets", { body: big }), 413, "Request body too large");
    expect((await api.call("GET", "/v1/agents")).body.length).toBe(before);
  });

  test("a large body without Content-Length (streamed) → 413", async () => {
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 1024 * 1024 + 64 * 1024) return controller.close();
        controller.enqueue(chunk);
        sent += chunk.byteLength;
      },
    });
    const res = await api.app.handle(
      new Request("http://localhost/v1/agents", { method: "POST", headers: { authorization: `Bearer ${api.projectKey}` }, body: stream, duplex: "half" } as RequestInit),
    );
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: { message: "Request body too large", type: "invalid_request_error" } });
  });

  test("exactly 1 MiB is accepted for parsing (then validated)", async () => {
    const prefix = '{"identifier":"exact","name":"';
    const suffix = '"}';
    const body = prefix + "x".repeat(1024 * 1024 - prefix.length - suffix.length) + suffix;
    expect(new TextEncoder().encode(body).byteLength).toBe(1024 * 1024);
    expectFlat(await api.call("POST", "/v1/agents", { body }), 400, "name must be 1-255 characters");
  });

  test.each(["{", "{'name':'a'}", '{"name":"a",}', "nul", "[1,", '{"name": undefined}', "\u0000"])("invalid JSON %j → flat 400", async (body) => {
    expectFlat(await api.call("POST", "/v1/agents", { body }), 400, "Request body must be valid JSON");
  });

  test("invalid UTF-8 → flat 400 invalid JSON", async () => {
    const res = await api.app.handle(
      new Request("http://localhost/v1/agents", {
        method: "POST",
        headers: { authorization: `Bearer ${api.projectKey}` },
        body: new Uint8Array([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      }),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "Request body must be valid JSON" });
  });

  test.each(["[]", '[{"name":"a","identifier":"a"}]', '"string"', "42", "true", "null"])("non-object JSON %s → flat 400", async (body) => {
    expectFlat(await api.call("POST", "/v1/agents", { body }), 400, "Request body must be a JSON object");
    expectFlat(await api.call("PATCH", "/v1/user", { body }), 400, "Request body must be a JSON object");
  });

  test("bodies are parsed as JSON whatever the Content-Type", async () => {
    for (const [i, type] of ["text/plain", "application/x-www-form-urlencoded", "application/octet-stream"].entries()) {
      const res = await api.call("POST", "/v1/agents", { body: JSON.stringify({ name: "CT", identifier: `ct-${i}` }), headers: { "content-type": type } });
      expect(res.status).toBe(201);
    }
  });

  test("an absent body on a route with required fields → flat 400, nothing created", async () => {
    // docs/api.md#bodies-and-formats only defines the absent body for all-optional routes; any flat 400 is acceptable here.
    const before = (await api.call("GET", "/v1/agents")).body.length;
    for (const body of [undefined, "", "   "]) {
      const res = await api.call("POST", "/v1/agents", { body });
      expect(res.status).toBe(400);
      expect(typeof res.body.error).toBe("string");
    }
    expect((await api.call("GET", "/v1/agents")).body.length).toBe(before);
  });

  test("an absent body on an all-optional route counts as {} (PATCH agent → No fields to update)", async () => {
    const id = (await api.call("GET", "/v1/agents")).body[0].id;
    expectFlat(await api.call("PATCH", `/v1/agents/${id}`), 400, "No fields to update");
  });
});

describe("the dashboard's pages on the API port (src/dashboard)", () => {
  test("/app-connect/{provider}, deep links and / answer the shell with a strict CSP; assets are embedded; /v1 stays JSON", async () => {
    const api = await createTestApi();
    for (const path of ["/", "/sign-in", "/claim?token=x", "/app-connect/github?status=success&connectionId=c-1", "/p/abcdefghijklmnop/secrets?create=generic&host=api.x.com", "/p/abcdefghijklmnop/agents/some-id"]) {
      const res = await api.app.handle(new Request(`http://localhost${path}`));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      const csp = res.headers.get("content-security-policy")!;
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain("unsafe-inline");
      const html = await res.text();
      expect(html).toContain('<script type="module" src="/assets/app.js?v=');
      // The query is never echoed into the page.
      expect(html).not.toContain("api.x.com");
      expect(html).not.toContain("<script>");
    }
    const js = await api.app.handle(new Request("http://localhost/assets/app.js"));
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect((await js.text()).length).toBeGreaterThan(1000);
    const css = await api.app.handle(new Request("http://localhost/assets/app.css"));
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    const unknown = await api.app.handle(new Request("http://localhost/v1/p/x"));
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: { message: "Unrecognized request URL (GET: /v1/p/x).", type: "not_found_error" } });
    expect((await api.app.handle(new Request("http://localhost/nothing-here"))).status).toBe(404);
    expect((await api.app.handle(new Request("http://localhost/p/x", { method: "POST" }))).status).toBe(404);
  });
});
