// A project key always acts on its own project: `X-Project-Id` is ignored (docs/api.md#context). Here the header
// names another organization's project — another tenant — and every read and write of the key still lands in its
// own project, while nothing of the other tenant is read or changed. (The gateway-free API on either engine; the
// real process is test/e2e/cross-tenant.test.ts.)
import { beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addOrganization, expectFlat } from "./helpers.ts";

let api: TestApi;
let other: Awaited<ReturnType<typeof addOrganization>>;
let theirAgent: string;
let theirSecret: string;

const SECRET_VALUE = "their-secret-value-0123456789";
const header = () => ({ "x-project-id": other.project.id });

beforeAll(async () => {
  api = await createTestApi({ CREDGATE_APPROVAL_POLL_SECONDS: "0.2" });
  other = await addOrganization(api, "Another Tenant");
  const agent = await api.call("POST", "/v1/agents", { key: other.projectKey, body: { name: "Theirs only", identifier: "theirs-only", mode: "all" } });
  expect(agent.status).toBe(201);
  theirAgent = agent.body.id;
  const secret = await api.call("POST", "/v1/secrets", { key: other.projectKey, body: { name: "Their secret", type: "generic", value: SECRET_VALUE, hostPattern: "their.test", injectionConfig: { headerName: "x-k" } } });
  expect(secret.status).toBe(201);
  theirSecret = secret.body.id;
});

describe("a project key with another tenant's X-Project-Id", () => {
  test("lists are its own project's: none of the other tenant's agents or secrets", async () => {
    const agents = await api.call("GET", "/v1/agents", { headers: header() });
    expect(agents.status).toBe(200);
    const own = await api.call("GET", "/v1/agents");
    expect(agents.body.map((a: any) => a.id).sort()).toEqual(own.body.map((a: any) => a.id).sort());
    expect(agents.text).not.toContain("theirs-only");
    const secrets = await api.call("GET", "/v1/secrets", { headers: header() });
    expect(secrets.status).toBe(200);
    expect(secrets.text).not.toContain("Their secret");
    expect(secrets.text).not.toContain(SECRET_VALUE);
    for (const path of ["/v1/policy/rules", "/v1/approvals/pending", "/v1/logs", "/v1/connections"]) {
      const withHeader = await api.call("GET", path, { headers: header() });
      expect({ path, status: withHeader.status }).toEqual({ path, status: 200 });
      expect(withHeader.text).not.toContain(other.project.id);
    }
  });

  test("a create lands in its own project, not the one the header names", async () => {
    const made = await api.call("POST", "/v1/agents", { headers: header(), body: { name: "Made here", identifier: "made-here", mode: "all" } });
    expect(made.status).toBe(201);
    expect((await api.call("GET", "/v1/agents")).body.map((a: any) => a.identifier)).toContain("made-here");
    expect((await api.call("GET", "/v1/agents", { key: other.projectKey })).body.map((a: any) => a.identifier)).not.toContain("made-here");
    const [row] = await api.core.store.query<{ project_id: string }>(sql`SELECT project_id FROM agents WHERE id = ${made.body.id}`);
    expect(row?.project_id).toBe(api.projectId);
  });

  test("the other tenant's records by id: 404, unchanged", async () => {
    expect((await api.call("GET", `/v1/agents/${theirAgent}`, { headers: header() })).status).toBe(404);
    expect((await api.call("PATCH", `/v1/agents/${theirAgent}`, { headers: header(), body: { name: "Taken" } })).status).toBe(404);
    expect((await api.call("DELETE", `/v1/secrets/${theirSecret}`, { headers: header() })).status).toBe(404);
    expectFlat(await api.call("POST", `/v1/approvals/00000000-0000-4000-8000-000000000000/decision`, { headers: header(), body: { decision: "approve" } }), 404, "approval_not_found");
    const theirs = await api.call("GET", `/v1/agents/${theirAgent}`, { key: other.projectKey });
    expect(theirs.body).toMatchObject({ id: theirAgent, name: "Theirs only" });
    expect((await api.call("GET", "/v1/secrets", { key: other.projectKey })).body.map((s: any) => s.id)).toContain(theirSecret);
  });
});
