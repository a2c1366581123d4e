// The typed route API (docs/architecture.md#routes): a route's params come from its path template, its body
// from its schema and its answer must be its response doc's record. The `@ts-expect-error` lines are the
// compile-time half (`npm run typecheck` fails if any of them stops being an error); the tests run such
// routes through the real app.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { createApiApp, type ApiApp } from "../../src/api/app.ts";
import { returns, returnsCreated, returnsNothing } from "../../src/api/responses.ts";
import { created, noContent, ok, route, type PathParams } from "../../src/api/route.ts";
import * as R from "../../src/core/records/index.ts";
import { createTestApi, type TestApi } from "../support/app.ts";

// ── compile time ────────────────────────────────────────────────────────────────────────────────────────

const params: PathParams<"/agents/:agentId/grants/secrets/:secretId"> = { agentId: "a", secretId: "s" };
// @ts-expect-error a parameter the template does not name
params.connectionId;
const none: PathParams<"/health"> = {};

route({
  method: "GET",
  path: "/typed/:agentId",
  access: "project",
  response: returns(R.Success),
  // @ts-expect-error `success` must be the literal true
  handler: () => ({ success: false }),
});
route({
  method: "GET",
  path: "/typed/:agentId",
  access: "project",
  response: returns(R.Agent),
  // @ts-expect-error another record's shape
  handler: () => R.SUCCESS,
});
route({
  method: "POST",
  path: "/typed",
  access: "project",
  response: returnsCreated(R.Success),
  // @ts-expect-error a 201 route answers with created(…)
  handler: () => R.SUCCESS,
});
route({
  method: "DELETE",
  path: "/typed/:agentId",
  access: "project",
  response: returnsNothing(),
  handler: ({ params: p }) => {
    // @ts-expect-error only :agentId is in the path
    void p.secretId;
    return noContent();
  },
});
route({
  method: "POST",
  path: "/typed",
  access: "none",
  body: T.Object({ n: T.Integer() }),
  response: returns(R.Success),
  handler: ({ body, ctx }) => {
    // @ts-expect-error the body is what the schema admits
    void body.m;
    // @ts-expect-error no context on an unauthenticated route
    void ctx.projectId;
    return R.SUCCESS;
  },
});

// ── run time ────────────────────────────────────────────────────────────────────────────────────────────

const Echo = T.Object({ agentId: T.String(), secretId: T.String(), n: T.Integer(), project: T.String() }, { $id: "TypedEcho" });
const typedRoutes = [
  route({
    method: "PUT",
    path: "/typed/:agentId/things/:secretId",
    access: "project",
    body: T.Object({ n: T.Integer({ minimum: 1 }) }),
    response: returns(Echo),
    handler: ({ params: p, body, ctx }) => ok({ agentId: p.agentId, secretId: p.secretId, n: body.n, project: ctx.projectId }, { "x-typed": "yes" }),
  }),
  route({
    method: "POST",
    path: "/typed",
    access: "project",
    response: returnsCreated(R.Success),
    handler: () => created(R.SUCCESS),
  }),
];

let api: TestApi;
let app: ApiApp;
beforeAll(async () => {
  api = await createTestApi();
  app = createApiApp(api.core.services, typedRoutes);
});
afterAll(async () => {
  await api.core.close();
});

const call = (method: string, path: string, body?: unknown) =>
  app.handle(new Request(`http://localhost${path}`, { method, headers: { authorization: `Bearer ${api.projectKey}` }, body: body === undefined ? undefined : JSON.stringify(body) }));

test("params come from the path (decoded), the body from the schema, ctx from the access; ok() carries headers", async () => {
  const res = await call("PUT", "/v1/typed/a%20b/things/s-1", { n: 3, extra: true });
  expect(res.status).toBe(200);
  expect(res.headers.get("x-typed")).toBe("yes");
  expect(await res.json()).toEqual({ agentId: "a b", secretId: "s-1", n: 3, project: api.projectId });
  expect(none).toEqual({});
  expect(params).toEqual({ agentId: "a", secretId: "s" });
});

test("the body schema is enforced before the handler; created() answers 201", async () => {
  const bad = await call("PUT", "/v1/typed/a/things/s", { n: 0 });
  expect([bad.status, await bad.json()]).toEqual([400, { error: "n must be at least 1" }]);
  const made = await call("POST", "/api/typed");
  expect([made.status, await made.json()]).toEqual([201, { success: true }]);
});
