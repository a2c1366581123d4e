// Grant endpoints (CONTRACT §3.2, §5.1 "Grants"; §9 examples 10-12). Every non-auth failure has a flat body.
// App connections do not exist yet: every connection id is unknown (404 `Connection not found`).
import { beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addMember, addOrganization, addProject, expectEnvelope, expectFlat, expectUnauthorized } from "./helpers.ts";

const UNKNOWN = "00000000-0000-4000-8000-000000000000";
const CONN = "11111111-1111-4111-8111-111111111111";
const MSG = {
  agent: "Agent not found",
  secret: "Secret not found",
  connection: "Connection not found",
  access: "access must be one of: full, custom",
  custom: "Custom access needs at least one allowed or approval tool — detach instead.",
  both: "A tool can't be both always-allowed and require approval.",
};

let api: TestApi;
beforeAll(() => {
  api = createTestApi();
});

let seq = 0;
async function newAgent(a: TestApi, mode: "all" | "grants" = "grants", key?: string) {
  const identifier = `g-${++seq}`;
  const res = await a.call("POST", "/v1/agents", { key, body: { name: `Agent ${identifier}`, identifier, mode } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function newSecret(a: TestApi, name: string, opts: { path?: string; key?: string; type?: string } = {}) {
  const type = opts.type ?? "generic";
  const body = type === "generic" ? { name, type, value: "v", hostPattern: "api.x.com", injectionConfig: { headerName: "x-k" } } : { name, type, value: "sk-test-value" };
  const res = await a.call("POST", opts.path ?? "/v1/secrets", { key: opts.key, body });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

describe("GET /agents/{id}/grants", () => {
  test("a new agent: empty grant set with its mode", async () => {
    const agent = await newAgent(api);
    const res = await api.call("GET", `/v1/agents/${agent}/grants`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ agentId: agent, mode: "grants", connections: [], secrets: [] });
    const all = await newAgent(api, "all");
    expect((await api.call("GET", `/v1/agents/${all}/grants`)).body).toEqual({ agentId: all, mode: "all", connections: [], secrets: [] });
  });

  test("example 12: unknown agent → flat 404", async () => {
    const res = await api.call("GET", `/v1/agents/${UNKNOWN}/grants`);
    expect(res.text).toBe('{"error":"Agent not found"}');
    expectFlat(res, 404, MSG.agent);
    expectFlat(await api.call("GET", "/v1/agents/not-a-uuid/grants"), 404, MSG.agent);
  });

  test("another project's agent is not found; the org key selects a project with X-Project-Id", async () => {
    const other = addProject(api, "Grants other");
    const theirs = await newAgent(api, "grants", other.projectKey);
    expectFlat(await api.call("GET", `/v1/agents/${theirs}/grants`), 404, MSG.agent);
    expectFlat(await api.call("PUT", `/v1/agents/${theirs}/grants/secrets/${UNKNOWN}`), 404, MSG.agent);
    const viaOrg = await api.call("GET", `/v1/agents/${theirs}/grants`, { key: api.orgKey, headers: { "x-project-id": other.project.id } });
    expect(viaOrg.status).toBe(200);
    expect(viaOrg.body.agentId).toBe(theirs);
    expectUnauthorized(await api.call("GET", `/v1/agents/${theirs}/grants`, { key: api.orgKey }));
  });

  test("authentication failures stay envelopes", async () => {
    const agent = await newAgent(api);
    expectUnauthorized(await api.call("GET", `/v1/agents/${agent}/grants`, { key: null }));
    expectUnauthorized(await api.call("PUT", `/v1/agents/${agent}/grants/secrets/${UNKNOWN}`, { key: "svc_0000" }));
    expectUnauthorized(await api.call("DELETE", `/v1/agents/${agent}/grants/connections/${CONN}`, { key: null }));
    expectUnauthorized(await api.call("GET", `/v1/connections/${CONN}/grants`, { key: null }));
  });
});

describe("PUT/DELETE /agents/{id}/grants/secrets/{secretId}", () => {
  test("grant → 200 grant set with {secretId, name, type, scope}; repeat is idempotent; DELETE 204 twice", async () => {
    const a = createTestApi();
    const agent = await newAgent(a);
    const own = await newSecret(a, "Own");
    const llm = await newSecret(a, "Claude", { type: "llm_a" });
    const res = await a.call("PUT", `/v1/agents/${agent}/grants/secrets/${own}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ agentId: agent, mode: "grants", connections: [], secrets: [{ secretId: own, name: "Own", type: "generic", scope: "project" }] });
    const again = await a.call("PUT", `/v1/agents/${agent}/grants/secrets/${own}`);
    expect(again.status).toBe(200);
    expect(again.body.secrets).toHaveLength(1);
    const two = await a.call("PUT", `/v1/agents/${agent}/grants/secrets/${llm}`);
    expect(two.body.secrets).toEqual([
      { secretId: own, name: "Own", type: "generic", scope: "project" },
      { secretId: llm, name: "Claude", type: "llm_a", scope: "project" },
    ]);
    expect((await a.call("GET", `/v1/agents/${agent}/grants`)).body).toEqual(two.body);
    // The legacy view shows the same grants.
    expect(((await a.call("GET", `/v1/agents/${agent}/secrets`)).body as string[]).sort()).toEqual([own, llm].sort());

    const del = await a.call("DELETE", `/v1/agents/${agent}/grants/secrets/${own}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expect((await a.call("DELETE", `/v1/agents/${agent}/grants/secrets/${own}`)).status).toBe(204);
    expect((await a.call("DELETE", `/v1/agents/${agent}/grants/secrets/${UNKNOWN}`)).status).toBe(204);
    expect((await a.call("GET", `/v1/agents/${agent}/grants`)).body.secrets).toEqual([{ secretId: llm, name: "Claude", type: "llm_a", scope: "project" }]);
  });

  test("an organization secret is grantable (scope organization)", async () => {
    const agent = await newAgent(api);
    const org = await newSecret(api, "Org shared", { path: "/v1/org/secrets", key: api.orgKey });
    const res = await api.call("PUT", `/v1/agents/${agent}/grants/secrets/${org}`);
    expect(res.status).toBe(200);
    expect(res.body.secrets).toEqual([{ secretId: org, name: "Org shared", type: "generic", scope: "organization" }]);
  });

  test("unknown secret, another project's or another organization's → flat 404 Secret not found", async () => {
    const agent = await newAgent(api);
    const other = addProject(api, "Grant foreign secrets");
    const foreign = await newSecret(api, "Foreign", { key: other.projectKey });
    const otherOrg = addOrganization(api, "Grant foreign org");
    const alienOrg = await newSecret(api, "Alien org", { path: "/v1/org/secrets", key: otherOrg.orgKey });
    const alienProject = await newSecret(api, "Alien project", { key: otherOrg.projectKey });
    for (const id of [UNKNOWN, "nope", foreign, alienOrg, alienProject]) {
      const res = await api.call("PUT", `/v1/agents/${agent}/grants/secrets/${id}`);
      expectFlat(res, 404, MSG.secret);
    }
    expect((await api.call("GET", `/v1/agents/${agent}/grants`)).body.secrets).toEqual([]);
  });

  test("unknown agent → flat 404 Agent not found, before the secret check", async () => {
    const own = await newSecret(api, "For nobody");
    expectFlat(await api.call("PUT", `/v1/agents/${UNKNOWN}/grants/secrets/${own}`), 404, MSG.agent);
    expectFlat(await api.call("PUT", `/v1/agents/${UNKNOWN}/grants/secrets/${UNKNOWN}`), 404, MSG.agent);
    expectFlat(await api.call("DELETE", `/v1/agents/${UNKNOWN}/grants/secrets/${own}`), 404, MSG.agent);
  });

  test("a deleted secret leaves the grant set", async () => {
    const agent = await newAgent(api);
    const own = await newSecret(api, "Short-lived");
    await api.call("PUT", `/v1/agents/${agent}/grants/secrets/${own}`);
    expect((await api.call("DELETE", `/v1/secrets/${own}`)).status).toBe(204);
    expect((await api.call("GET", `/v1/agents/${agent}/grants`)).body.secrets).toEqual([]);
  });

  test("a grant shows in effective credentials at once (no publish)", async () => {
    const a = createTestApi();
    const agent = await newAgent(a);
    const own = await newSecret(a, "Eff");
    const status = async () => (await a.call("GET", `/v1/agents/${agent}/effective-credentials`)).body.secrets.find((s: any) => s.id === own).status;
    expect(await status()).toBe("not_granted");
    await a.call("PUT", `/v1/agents/${agent}/grants/secrets/${own}`);
    expect(await status()).toBe("usable");
    await a.call("DELETE", `/v1/agents/${agent}/grants/secrets/${own}`);
    expect(await status()).toBe("not_granted");
  });

  test("any project member may grant (P·any)", async () => {
    const member = addMember(api, "member");
    const agent = await newAgent(api);
    const own = await newSecret(api, "Member-granted");
    const res = await api.call("PUT", `/v1/agents/${agent}/grants/secrets/${own}`, { key: member.projectKey });
    expect(res.status).toBe(200);
    expect(res.body.secrets.map((s: any) => s.secretId)).toEqual([own]);
  });
});

describe("PUT /agents/{id}/grants/connections/{connectionId}", () => {
  const put = (agent: string, body: unknown, conn = CONN) => api.call("PUT", `/v1/agents/${agent}/grants/connections/${conn}`, { body });

  test("access validation (flat 400)", async () => {
    const agent = await newAgent(api);
    const cases: [unknown, string][] = [
      [{}, "access is required"],
      [{ access: null }, "access is required"],
      [{ access: "partial" }, MSG.access],
      [{ access: "FULL" }, MSG.access],
      [{ access: 1 }, MSG.access],
      [{ access: "custom", allow: "send_email" }, "allow must be an array"],
      [{ access: "custom", allow: [""] }, "allow[0] must be 1-255 characters"],
      [{ access: "custom", allow: ["t".repeat(256)] }, "allow[0] must be 1-255 characters"],
      [{ access: "custom", allow: Array.from({ length: 201 }, (_, i) => `t${i}`) }, "allow must have at most 200 items"],
      [{ access: "custom", ask: [1] }, "ask[0] must be a string"],
      [{ access: "custom", ask: Array.from({ length: 201 }, (_, i) => `t${i}`) }, "ask must have at most 200 items"],
    ];
    for (const [body, message] of cases) expectFlat(await put(agent, body), 400, message);
    expectFlat(await api.call("PUT", `/v1/agents/${agent}/grants/connections/${CONN}`, { body: "{nope" }), 400, "Request body must be valid JSON");
  });

  test("example 10: custom with no tools → flat 400", async () => {
    const agent = await newAgent(api);
    const res = await put(agent, { access: "custom", allow: [], ask: [] });
    expect(res.text).toBe('{"error":"Custom access needs at least one allowed or approval tool — detach instead."}');
    expectFlat(res, 400, MSG.custom);
    expectFlat(await put(agent, { access: "custom" }), 400, MSG.custom);
  });

  test("example 11: a tool in both lists → flat 400", async () => {
    const agent = await newAgent(api);
    const res = await put(agent, { access: "custom", allow: ["send_email"], ask: ["send_email"] });
    expect(res.text).toBe('{"error":"A tool can\'t be both always-allowed and require approval."}');
    expectFlat(res, 400, MSG.both);
    expectFlat(await put(agent, { access: "custom", allow: ["get_email", "send_email"], ask: ["list_emails", "send_email"] }), 400, MSG.both);
  });

  test("valid bodies reach the connection lookup: no connection exists yet → flat 404", async () => {
    const agent = await newAgent(api);
    for (const body of [
      { access: "full" },
      { access: "full", allow: ["x"], ask: ["x"] }, // ignored with full
      { access: "full", resources: null },
      { access: "custom", allow: ["send_email"] },
      { access: "custom", ask: ["send_email"] },
      { access: "custom", allow: ["get_email"], ask: ["send_email"] },
    ]) {
      const res = await put(agent, body);
      expect(res.text).toBe('{"error":"Connection not found"}');
      expectFlat(res, 404, MSG.connection);
    }
    expectFlat(await put(agent, { access: "full" }, "not-a-uuid"), 404, MSG.connection);
    expect((await api.call("GET", `/v1/agents/${agent}/grants`)).body.connections).toEqual([]);
  });

  test("unknown agent → flat 404 Agent not found (after body validation)", async () => {
    expectFlat(await put(UNKNOWN, { access: "full" }), 404, MSG.agent);
    expectFlat(await put(UNKNOWN, { access: "custom", allow: ["a"] }), 404, MSG.agent);
    expectFlat(await put(UNKNOWN, { access: "partial" }), 400, MSG.access);
  });
});

describe("DELETE /agents/{id}/grants/connections/{connectionId}", () => {
  test("example 12: never attached → 204, idempotent, no connection check", async () => {
    const agent = await newAgent(api);
    for (const conn of [CONN, CONN, "whatever"]) {
      const res = await api.call("DELETE", `/v1/agents/${agent}/grants/connections/${conn}`);
      expect(res.status).toBe(204);
      expect(res.text).toBe("");
    }
  });

  test("unknown agent → flat 404", async () => {
    expectFlat(await api.call("DELETE", `/v1/agents/${UNKNOWN}/grants/connections/${CONN}`), 404, MSG.agent);
  });
});

describe("GET /connections/{id}/grants", () => {
  test("no connection exists yet → flat 404 Connection not found", async () => {
    const res = await api.call("GET", `/v1/connections/${CONN}/grants`);
    expect(res.text).toBe('{"error":"Connection not found"}');
    expectFlat(res, 404, MSG.connection);
    expectFlat(await api.call("GET", "/v1/connections/x/grants", { key: api.orgKey, headers: { "x-project-id": api.projectId } }), 404, MSG.connection);
  });
});

describe("agent mode", () => {
  test("PATCH /agents/{id} {mode} is reflected in the grant set; grants survive mode changes", async () => {
    const a = createTestApi();
    const agent = await newAgent(a);
    const own = await newSecret(a, "Kept");
    await a.call("PUT", `/v1/agents/${agent}/grants/secrets/${own}`);
    const patched = await a.call("PATCH", `/v1/agents/${agent}`, { body: { mode: "all" } });
    expect(patched.status).toBe(200);
    expect(patched.body.mode).toBe("all");
    const set = (await a.call("GET", `/v1/agents/${agent}/grants`)).body;
    expect(set).toEqual({ agentId: agent, mode: "all", connections: [], secrets: [{ secretId: own, name: "Kept", type: "generic", scope: "project" }] });
    // In mode all every secret is usable, granted or not.
    const other = await newSecret(a, "Ungranted");
    const eff = (await a.call("GET", `/v1/agents/${agent}/effective-credentials`)).body;
    expect(eff.mode).toBe("all");
    expect(eff.secrets.find((s: any) => s.id === other).status).toBe("usable");
    await a.call("PATCH", `/v1/agents/${agent}`, { body: { mode: "grants" } });
    expect((await a.call("GET", `/v1/agents/${agent}/grants`)).body.mode).toBe("grants");
    const eff2 = (await a.call("GET", `/v1/agents/${agent}/effective-credentials`)).body;
    expect(eff2.secrets.find((s: any) => s.id === other).status).toBe("not_granted");
    expect(eff2.secrets.find((s: any) => s.id === own).status).toBe("usable");
    expectFlat(await a.call("PATCH", `/v1/agents/${agent}`, { body: { mode: "some" } }), 400, "mode must be one of: all, grants");
  });
});
