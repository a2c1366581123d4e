// Issue 4 (grants) implements these routes; until then the tests are kept as todo.
// The agent credential rows of docs/injection.md#grants outside the grant table: effective credentials, secret
// assignments (`/agents/{id}/secrets`) and app-connection assignments (`/agents/{id}/connections`).
import { beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addProject, expectEnvelope, expectFlat } from "./helpers.ts";

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

const UNKNOWN = "00000000-0000-4000-8000-000000000000";

async function newAgent(mode: "all" | "grants", identifier: string) {
  const res = await api.call("POST", "/v1/agents", { body: { name: identifier, identifier, mode } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function newSecret(name: string, path = "/v1/secrets", key?: string) {
  const body = { name, type: "generic", value: "v", hostPattern: "api.x.com", injectionConfig: { headerName: "x-k" } };
  const res = await api.call("POST", path, { key, body });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

describe("GET/PUT /agents/{id}/secrets", () => {
  test("a new agent has no secret grants; PUT replaces the whole set (project + organization secrets)", async () => {
    const agent = await newAgent("grants", "secret-holder");
    const res = await api.call("GET", `/v1/agents/${agent}/secrets`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);

    const own = await newSecret("own");
    const org = await newSecret("org", "/v1/org/secrets", api.orgKey);
    const put = await api.call("PUT", `/v1/agents/${agent}/secrets`, { body: { secretIds: [own, org] } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ success: true });
    expect(((await api.call("GET", `/v1/agents/${agent}/secrets`)).body as string[]).sort()).toEqual([own, org].sort());

    expect((await api.call("PUT", `/v1/agents/${agent}/secrets`, { body: { secretIds: [org] } })).status).toBe(200);
    expect((await api.call("GET", `/v1/agents/${agent}/secrets`)).body).toEqual([org]);
    expect((await api.call("PUT", `/v1/agents/${agent}/secrets`, { body: { secretIds: [] } })).status).toBe(200);
    expect((await api.call("GET", `/v1/agents/${agent}/secrets`)).body).toEqual([]);
  });

  test("unknown secrets, or secrets of another project → 400 envelope, nothing changed", async () => {
    const agent = await newAgent("grants", "strict-holder");
    const own = await newSecret("kept");
    await api.call("PUT", `/v1/agents/${agent}/secrets`, { body: { secretIds: [own] } });
    expectEnvelope(await api.call("PUT", `/v1/agents/${agent}/secrets`, { body: { secretIds: [own, UNKNOWN] } }), 400, "One or more secrets not found");
    const other = await addProject(api, "Other secrets");
    const foreign = await newSecret("foreign", "/v1/secrets", other.projectKey);
    expectEnvelope(await api.call("PUT", `/v1/agents/${agent}/secrets`, { body: { secretIds: [foreign] } }), 400, "One or more secrets not found");
    expect((await api.call("GET", `/v1/agents/${agent}/secrets`)).body).toEqual([own]);
  });

  test("validation and unknown agent", async () => {
    const agent = await newAgent("grants", "validated-holder");
    expectFlat(await api.call("PUT", `/v1/agents/${agent}/secrets`, { body: {} }), 400, "secretIds is required");
    expectFlat(await api.call("PUT", `/v1/agents/${agent}/secrets`, { body: { secretIds: "x" } }), 400, "secretIds must be an array");
    expectFlat(await api.call("PUT", `/v1/agents/${agent}/secrets`, { body: { secretIds: [1] } }), 400, "secretIds[0] must be a string");
    expectEnvelope(await api.call("GET", `/v1/agents/${UNKNOWN}/secrets`), 404, "Agent not found");
    expectEnvelope(await api.call("PUT", `/v1/agents/${UNKNOWN}/secrets`, { body: { secretIds: [] } }), 404, "Agent not found");
  });
});

describe("GET/PUT /agents/{id}/connections", () => {
  test("a new agent has none; an empty assignment succeeds; unknown connections → 400 envelope", async () => {
    const agent = await newAgent("grants", "conn-holder");
    const res = await api.call("GET", `/v1/agents/${agent}/connections`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    const put = await api.call("PUT", `/v1/agents/${agent}/connections`, { body: { connections: [] } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ success: true });
    expectEnvelope(
      await api.call("PUT", `/v1/agents/${agent}/connections`, { body: { connections: [{ appConnectionId: UNKNOWN }] } }),
      400,
      "One or more app connections not found",
    );
  });

  test("validation and unknown agent", async () => {
    const agent = await newAgent("grants", "conn-validated");
    expectFlat(await api.call("PUT", `/v1/agents/${agent}/connections`, { body: {} }), 400, "connections is required");
    expectFlat(await api.call("PUT", `/v1/agents/${agent}/connections`, { body: { connections: {} } }), 400, "connections must be an array");
    expectFlat(await api.call("PUT", `/v1/agents/${agent}/connections`, { body: { connections: [{}] } }), 400, "connections[0].appConnectionId is required");
    expectEnvelope(await api.call("GET", `/v1/agents/${UNKNOWN}/connections`), 404, "Agent not found");
    expectEnvelope(await api.call("PUT", `/v1/agents/${UNKNOWN}/connections`, { body: { connections: [] } }), 404, "Agent not found");
  });
});

describe("GET /agents/{id}/effective-credentials", () => {
  test("mode all: every project and org secret is usable; mode grants: not_granted until granted", async () => {
    const fresh = await createTestApi();
    const body = (name: string) => ({ name, type: "generic", value: "v", hostPattern: "api.x.com", injectionConfig: { headerName: "x-k" } });
    const own = (await fresh.call("POST", "/v1/secrets", { body: body("own") })).body.id;
    const org = (await fresh.call("POST", "/v1/org/secrets", { key: fresh.orgKey, body: body("org") })).body.id;
    const all = (await fresh.call("POST", "/v1/agents", { body: { name: "All", identifier: "all", mode: "all" } })).body.id;
    const granted = (await fresh.call("POST", "/v1/agents", { body: { name: "Grants", identifier: "grants" } })).body.id;

    const a = await fresh.call("GET", `/v1/agents/${all}/effective-credentials`);
    expect(a.status).toBe(200);
    expect(a.body.agentId).toBe(all);
    expect(a.body.mode).toBe("all");
    expect(a.body.connections).toEqual([]);
    const byId = (list: any[]) => Object.fromEntries(list.map((s) => [s.id, s]));
    expect(byId(a.body.secrets)[own]).toEqual({ id: own, name: "own", type: "generic", scope: "project", hostPattern: "api.x.com", status: "usable" });
    expect(byId(a.body.secrets)[org]).toEqual({ id: org, name: "org", type: "generic", scope: "organization", hostPattern: "api.x.com", status: "usable" });

    const g = await fresh.call("GET", `/v1/agents/${granted}/effective-credentials`);
    expect(g.body.mode).toBe("grants");
    expect(byId(g.body.secrets)[own].status).toBe("not_granted");
    expect(byId(g.body.secrets)[org].status).toBe("not_granted");
    await fresh.call("PUT", `/v1/agents/${granted}/secrets`, { body: { secretIds: [own] } });
    const g2 = await fresh.call("GET", `/v1/agents/${granted}/effective-credentials`);
    expect(byId(g2.body.secrets)[own].status).toBe("usable");
    expect(byId(g2.body.secrets)[org].status).toBe("not_granted");
    expectEnvelope(await fresh.call("GET", `/v1/agents/${UNKNOWN}/effective-credentials`), 404, "Agent not found");
  });
});
