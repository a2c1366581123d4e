// The API describes itself (docs/api-reference.md): GET /v1/openapi.json is an OpenAPI 3.1 document, valid for a
// maintained validator, generated from the route table — every route of every mode exactly once, with its
// request body, success body, errors in the two shapes of docs/api.md#error-shapes and security. That the documented response
// schemas are true is checked on every response of the API and e2e suites (test/support/openapiCheck.ts);
// here, that the check itself bites.
import { beforeAll, describe, expect, test } from "bun:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { allRoutes, caRoutes } from "../../src/api/app.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { checkResponse } from "../support/openapiCheck.ts";

let api: TestApi;
let doc: any;

beforeAll(async () => {
  api = await createTestApi();
  const res = await api.call("GET", "/v1/openapi.json", { key: null });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  doc = res.body;
});

const templated = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
const METHODS = ["get", "post", "put", "patch", "delete"];

test("a valid OpenAPI 3.1 document, API description version 1.0, served without authentication on /v1 and /api", async () => {
  const result = await new Validator().validate(doc);
  expect(result).toEqual({ valid: true });
  expect(doc.openapi).toBe("3.1.0");
  expect(doc.info.version).toBe("1.0");
  expect(doc.servers).toEqual([{ url: "/v1" }]);
  const alias = await api.call("GET", "/api/openapi.json", { key: null });
  expect(alias.body).toEqual(doc);
});

describe("the document and the route table", () => {
  const table = [...allRoutes(), ...caRoutes("pem")];

  test("every route of every mode is one operation, and nothing else is", () => {
    const documented: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) for (const m of Object.keys(item)) if (METHODS.includes(m)) documented.push(`${m.toUpperCase()} ${path}`);
    const expected = [...table.map((r) => `${r.method} ${templated(r.path)}`), "GET /openapi.json"];
    expect(new Set(expected).size).toBe(expected.length);
    expect(documented.sort()).toEqual(expected.sort());
  });

  test("routes of one mode are documented with their availability", () => {
    const modal = table.filter((r) => r.modes);
    expect(modal.length).toBeGreaterThan(0);
    for (const r of modal) {
      const op = doc.paths[templated(r.path)][r.method.toLowerCase()];
      expect(op["x-credgate-modes"]).toEqual(r.modes);
      expect(op.description).toContain(`Available in ${r.modes!.join(" and ")} mode only`);
    }
    expect(doc.paths["/migrate/import"].post["x-credgate-modes"]).toEqual(["cloud"]);
    expect(doc.paths["/migrate/export"].post["x-credgate-modes"]).toEqual(["self-hosted"]);
  });

  test("a cloud instance serves the same document (every mode's routes)", async () => {
    const cloud = await createTestApi({ CREDGATE_MODE: "cloud" });
    expect((await cloud.call("GET", "/v1/openapi.json", { key: null })).body).toEqual(doc);
  });

  test("request bodies, success answers, errors and security follow each route's definition", () => {
    for (const r of table) {
      const op = doc.paths[templated(r.path)][r.method.toLowerCase()];
      const where = `${r.method} ${r.path}`;
      // The success answer.
      const ok = op.responses[String(r.response.status)];
      expect({ where, described: typeof ok?.description }).toEqual({ where, described: "string" });
      if ("schema" in r.response) expect({ where, schema: !!ok.content["application/json"].schema }).toEqual({ where, schema: true });
      if ("contentType" in r.response) expect({ where, type: Object.keys(ok.content) }).toEqual({ where, type: [r.response.contentType] });
      // The body, when the route reads one.
      expect({ where, body: !!op.requestBody }).toEqual({ where, body: !!r.body });
      if (r.body) {
        const schema = op.requestBody.content["application/json"].schema;
        expect({ where, described: schema.type === "object" || typeof schema.description === "string" }).toEqual({ where, described: true });
      }
      // Errors: both shapes are named; authenticated routes can answer 401 and 403.
      expect(op.responses["400"]).toEqual({ $ref: "#/components/responses/BadRequest" });
      expect(op.responses.default).toEqual({ $ref: "#/components/responses/OtherError" });
      expect({ where, auth: !!op.responses["401"] }).toEqual({ where, auth: r.access !== "none" });
      expect({ where, security: op.security }).toEqual({
        where,
        security: r.access === "none" ? [] : r.access === "session" ? [{ sessionCookie: [] }] : [{ bearerKey: [] }, { sessionCookie: [] }],
      });
      if (r.unprocessable) expect(op.responses["422"]).toEqual({ $ref: "#/components/responses/Unprocessable" });
      // Path parameters.
      for (const m of r.path.matchAll(/:([A-Za-z0-9_]+)/g)) expect(op.parameters).toContainEqual({ name: m[1], in: "path", required: true, schema: { type: "string" } });
    }
  });

  test("the error shapes and security schemes of the contract", () => {
    const { schemas, securitySchemes, responses } = doc.components;
    expect(schemas.FlatError).toMatchObject({ type: "object", required: ["error"], properties: { error: { type: "string" } } });
    expect(schemas.EnvelopeError.properties.error.required).toEqual(["message", "type"]);
    expect(schemas.EnvelopeError.properties.error.properties.type.anyOf.map((s: any) => s.const)).toEqual([
      "invalid_request_error",
      "authentication_error",
      "not_found_error",
      "validation_error",
      "rate_limit_error",
      "api_error",
    ]);
    expect(responses.Unauthorized.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/EnvelopeError" });
    expect(securitySchemes).toEqual({
      bearerKey: expect.objectContaining({ type: "http", scheme: "bearer" }),
      sessionCookie: expect.objectContaining({ type: "apiKey", in: "cookie", name: "credgate_session" }),
    });
  });

  test("query parameters are documented where routes read them", () => {
    const names = (path: string, method = "get") => doc.paths[path][method].parameters.filter((p: any) => p.in === "query").map((p: any) => p.name);
    expect(names("/logs")).toEqual(["agentId", "host", "decision", "status", "since", "until", "limit", "cursor"]);
    expect(names("/org/logs")).toContain("projectId");
    expect(names("/approvals/pending")).toEqual(["exclude"]);
    expect(doc.paths["/policy/effective-app-permissions"].get.parameters.find((p: any) => p.name === "provider").required).toBe(true);
  });
});

describe("responses are held to the document", () => {
  const load = async () => doc;
  const json = new Headers({ "content-type": "application/json; charset=utf-8" });

  test("a body with a missing, mistyped or undocumented field is refused", async () => {
    const health = { status: "ok", version: "1", timestamp: "2025-03-01T12:00:00.000Z" };
    await checkResponse(load, "GET", "/v1/health", 200, json, health);
    await expect(checkResponse(load, "GET", "/v1/health", 200, json, { status: "ok", version: "1" })).rejects.toThrow("documented schema");
    await expect(checkResponse(load, "GET", "/v1/health", 200, json, { ...health, status: "fine" })).rejects.toThrow("documented schema");
    await expect(checkResponse(load, "GET", "/v1/health", 200, json, { ...health, secret: "x" })).rejects.toThrow("documented schema");
    await expect(checkResponse(load, "GET", "/api/agents/default", 201, json, {})).rejects.toThrow("not documented");
  });

  test("an error body of neither shape is refused", async () => {
    await checkResponse(load, "GET", "/v1/agents", 401, json, { error: { message: "Invalid API key or token.", type: "authentication_error" } });
    await checkResponse(load, "GET", "/v1/agents/x/grants", 404, json, { error: "Agent not found" });
    await expect(checkResponse(load, "GET", "/v1/agents", 500, json, { message: "boom" })).rejects.toThrow("neither shape");
    await expect(checkResponse(load, "GET", "/v1/agents", 401, json, { error: { message: "x", type: "nope" } })).rejects.toThrow("neither shape");
  });
});
