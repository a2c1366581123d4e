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

describe("effective credentials: status from the published rules (§5.1)", () => {
  type Rule = Record<string, unknown>;
  const block = (target: Rule, extra: Rule = {}): Rule => ({ name: "b", action: "block", targets: [target], ...extra });
  const allow = (target: Rule, extra: Rule = {}): Rule => ({ name: "a", action: "allow", targets: [target], ...extra });
  const net = (hostPattern: string, extra: Rule = {}): Rule => ({ kind: "network", hostPattern, ...extra });
  // [label, secret host/path, project rules, project default, org rules, expected status for the default agent]
  const cases: [string, { host: string; path?: string }, Rule[], ("allow" | "block")?, Rule[]?, string?][] = [
    ["no rules", { host: "api.x.com" }, [], undefined, undefined, "usable"],
    ["block on the exact host", { host: "api.x.com" }, [block(net("api.x.com"))], undefined, undefined, "blocked"],
    ["block on a covering wildcard", { host: "api.x.com" }, [block(net("*.x.com"))], undefined, undefined, "blocked"],
    ["block on any host", { host: "api.x.com" }, [block(net("*"))], undefined, undefined, "blocked"],
    ["block on /* covers every path", { host: "api.x.com" }, [block(net("api.x.com", { pathPattern: "/*" }))], undefined, undefined, "blocked"],
    ["block on some paths", { host: "api.x.com" }, [block(net("api.x.com", { pathPattern: "/admin/*" }))], undefined, undefined, "limited"],
    ["block on one method", { host: "api.x.com" }, [block(net("api.x.com", { method: "DELETE" }))], undefined, undefined, "limited"],
    ["block on the secret's own path pattern", { host: "api.x.com", path: "/v1/*" }, [block(net("api.x.com", { pathPattern: "/v1/*" }))], undefined, undefined, "blocked"],
    ["block under the secret's path", { host: "api.x.com", path: "/v1/*" }, [block(net("api.x.com", { pathPattern: "/v1/admin/*" }))], undefined, undefined, "limited"],
    ["block one host under a wildcard secret", { host: "*.x.com" }, [block(net("api.x.com"))], undefined, undefined, "limited"],
    ["block with a body condition", { host: "api.x.com" }, [block(net("api.x.com"), { conditions: [{ target: "body", operator: "contains", value: "x" }] })], undefined, undefined, "limited"],
    ["approval", { host: "api.x.com" }, [allow(net("api.x.com"), { requireApproval: true })], undefined, undefined, "limited"],
    ["rate limit", { host: "api.x.com" }, [allow(net("api.x.com"), { rateLimit: 5, rateLimitWindow: "day" })], undefined, undefined, "limited"],
    ["block on another host", { host: "api.x.com" }, [block(net("api.y.com"))], undefined, undefined, "usable"],
    ["disabled block", { host: "api.x.com" }, [block(net("api.x.com"), { enabled: false })], undefined, undefined, "usable"],
    ["an earlier allow shadows a block", { host: "api.x.com" }, [allow(net("api.x.com")), block(net("api.x.com"))], undefined, undefined, "usable"],
    ["block by secret level", { host: "api.x.com" }, [block({ kind: "secret", secretScope: "project" })], undefined, undefined, "blocked"],
    ["Default block", { host: "api.x.com" }, [], "block", undefined, "blocked"],
    ["Default block, allow covering the secret", { host: "api.x.com" }, [allow(net("api.x.com"))], "block", undefined, "usable"],
    ["Default block, allow on some paths", { host: "api.x.com" }, [allow(net("api.x.com", { pathPattern: "/v1/*" }))], "block", undefined, "limited"],
    ["organization block beats project allow", { host: "api.x.com" }, [allow(net("api.x.com"))], undefined, [block(net("api.x.com"))], "blocked"],
    ["organization rate limit", { host: "api.x.com" }, [], undefined, [allow(net("*.x.com"), { rateLimit: 1, rateLimitWindow: "minute" })], "limited"],
  ];
  for (const [label, secret, rules, def, orgRules, expected] of cases) {
    test(`${label} → ${expected}`, async () => {
      const a = createTestApi();
      const body = { name: "s", type: "generic", value: "v", hostPattern: secret.host, pathPattern: secret.path, injectionConfig: { headerName: "x-k" } };
      const id = (await a.call("POST", "/v1/secrets", { body })).body.id;
      for (const r of rules) expect((await a.call("POST", "/v1/policy/rules", { body: r })).status).toBe(201);
      if (def) await a.call("PATCH", "/v1/policy/default", { body: { action: def } });
      for (const r of orgRules ?? []) expect((await a.call("POST", "/v1/org/policy/rules", { key: a.orgKey, body: r })).status).toBe(201);
      const agent = (await a.call("GET", "/v1/agents/default")).body.id;
      const status = async () => (await a.call("GET", `/v1/agents/${agent}/effective-credentials`)).body.secrets.find((s: any) => s.id === id).status;
      // Drafts never count.
      expect(await status()).toBe("usable");
      await a.call("POST", "/v1/policy/publish");
      if (orgRules) await a.call("POST", "/v1/org/policy/publish", { key: a.orgKey });
      expect(await status()).toBe(expected!);
    });
  }

  test("a rule naming another agent does not bear on this one", async () => {
    const a = createTestApi();
    const id = (await a.call("POST", "/v1/secrets", { body: { name: "s", type: "generic", value: "v", hostPattern: "api.x.com", injectionConfig: { headerName: "x-k" } } })).body.id;
    const other = (await a.call("POST", "/v1/agents", { body: { name: "Other", identifier: "other", mode: "all" } })).body.id;
    await a.call("POST", "/v1/policy/rules", { body: { name: "b", action: "block", identities: [{ type: "agent", id: other }], targets: [{ kind: "network", hostPattern: "api.x.com" }] } });
    await a.call("POST", "/v1/policy/publish");
    const me = (await a.call("GET", "/v1/agents/default")).body.id;
    const statusOf = async (agent: string) => (await a.call("GET", `/v1/agents/${agent}/effective-credentials`)).body.secrets.find((s: any) => s.id === id).status;
    expect(await statusOf(me)).toBe("usable");
    expect(await statusOf(other)).toBe("blocked");
  });
});
