// Grant endpoints (docs/injection.md#grants, legacy `/agents/{id}/connections`; docs/injection.md#grants).
// Every non-auth failure has a flat body. The first suites use connection ids that do not exist; the last
// one grants real connections (docs/injection.md#resource-limits, docs/policy.md#managed-rules include=managed and effective-app-permissions).
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
beforeAll(async () => {
  api = await createTestApi();
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
    expect(res.body).toEqual({ agentId: agent, mode: "grants", connections: [], secrets: [], mcpServers: [] });
    const all = await newAgent(api, "all");
    expect((await api.call("GET", `/v1/agents/${all}/grants`)).body).toEqual({ agentId: all, mode: "all", connections: [], secrets: [], mcpServers: [] });
  });

  test("example 12: unknown agent → flat 404", async () => {
    const res = await api.call("GET", `/v1/agents/${UNKNOWN}/grants`);
    expect(res.text).toBe('{"error":"Agent not found"}');
    expectFlat(res, 404, MSG.agent);
    expectFlat(await api.call("GET", "/v1/agents/not-a-uuid/grants"), 404, MSG.agent);
  });

  test("another project's agent is not found; the org key selects a project with X-Project-Id", async () => {
    const other = await addProject(api, "Grants other");
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
    const a = await createTestApi();
    const agent = await newAgent(a);
    const own = await newSecret(a, "Own");
    const llm = await newSecret(a, "Claude", { type: "llm_a" });
    const res = await a.call("PUT", `/v1/agents/${agent}/grants/secrets/${own}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ agentId: agent, mode: "grants", connections: [], secrets: [{ secretId: own, name: "Own", type: "generic", scope: "project" }], mcpServers: [] });
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
    const other = await addProject(api, "Grant foreign secrets");
    const foreign = await newSecret(api, "Foreign", { key: other.projectKey });
    const otherOrg = await addOrganization(api, "Grant foreign org");
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
    const a = await createTestApi();
    const agent = await newAgent(a);
    const own = await newSecret(a, "Eff");
    const status = async () => (await a.call("GET", `/v1/agents/${agent}/effective-credentials`)).body.secrets.find((s: any) => s.id === own).status;
    expect(await status()).toBe("not_granted");
    await a.call("PUT", `/v1/agents/${agent}/grants/secrets/${own}`);
    expect(await status()).toBe("usable");
    await a.call("DELETE", `/v1/agents/${agent}/grants/secrets/${own}`);
    expect(await status()).toBe("not_granted");
  });

  test("any project member may grant (project·any)", async () => {
    const member = await addMember(api, "member");
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
    const a = await createTestApi();
    const agent = await newAgent(a);
    const own = await newSecret(a, "Kept");
    await a.call("PUT", `/v1/agents/${agent}/grants/secrets/${own}`);
    const patched = await a.call("PATCH", `/v1/agents/${agent}`, { body: { mode: "all" } });
    expect(patched.status).toBe(200);
    expect(patched.body.mode).toBe("all");
    const set = (await a.call("GET", `/v1/agents/${agent}/grants`)).body;
    expect(set).toEqual({ agentId: agent, mode: "all", connections: [], secrets: [{ secretId: own, name: "Kept", type: "generic", scope: "project" }], mcpServers: [] });
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

describe("effective credentials: status from the published rules (docs/injection.md#agent-modes)", () => {
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
      const a = await createTestApi();
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
    const a = await createTestApi();
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

// ── Connection grants with real connections ─────────────────────────────────────────────────────────
// API-key connections come from `POST /apps/resend/connect`; OAuth ones (github, dropbox) from the
// connection service the OAuth callback uses.

describe("connection grants (real connections)", () => {
  type Owner = { scope: "project"; projectId: string; organizationId: string } | { scope: "organization"; organizationId: string };
  const projectOwner = (a: TestApi): Owner => ({ scope: "project", projectId: a.projectId, organizationId: a.organizationId });

  async function resend(a: TestApi, label = "Resend", opts: { key?: string; org?: boolean } = {}) {
    const path = opts.org ? "/v1/org/apps/resend/connect" : "/v1/apps/resend/connect";
    const res = await a.call("POST", path, { key: opts.key ?? (opts.org ? a.orgKey : undefined), body: { fields: { apiKey: "re_grant" }, label } });
    expect(res.status).toBe(200);
    return res.body.connection.id as string;
  }

  async function oauth(a: TestApi, provider: string, label: string | null, owner: Owner = projectOwner(a)) {
    return (await a.core.services.connections.save(owner, {
      provider,
      label,
      credential: { kind: "oauth", accessToken: `tok-${provider}`, refreshToken: null, expiresAt: null, tokenType: "bearer" },
      scopes: [],
    })).id;
  }

  const put = (a: TestApi, agent: string, conn: string, body: unknown) => a.call("PUT", `/v1/agents/${agent}/grants/connections/${conn}`, { body });

  test("PUT full → 200 grant set with the ConnectionGrant shape; custom → allow/ask; re-PUT replaces; writes are live", async () => {
    const a = await createTestApi();
    const agent = await newAgent(a);
    const conn = await resend(a, "Mail");
    const full = await put(a, agent, conn, { access: "full", allow: ["send_email"], ask: ["get_email"] });
    expect(full.status).toBe(200);
    expect(full.body).toEqual({
      agentId: agent,
      mode: "grants",
      connections: [{ connectionId: conn, provider: "resend", label: "Mail", scope: "project", access: "full", allow: [], ask: [], resources: null }],
      secrets: [],
      mcpServers: [],
    });
    expect(Object.keys(full.body.connections[0]).sort()).toEqual(["access", "allow", "ask", "connectionId", "label", "provider", "resources", "scope"]);
    const custom = await put(a, agent, conn, { access: "custom", allow: ["get_email", "list_emails", "get_email"], ask: ["send_email"] });
    expect(custom.status).toBe(200);
    expect(custom.body.connections).toEqual([{ connectionId: conn, provider: "resend", label: "Mail", scope: "project", access: "custom", allow: ["get_email", "list_emails"], ask: ["send_email"], resources: null }]);
    expect((await a.call("GET", `/v1/agents/${agent}/grants`)).body).toEqual(custom.body);
    // Only ask, no allow.
    expect((await put(a, agent, conn, { access: "custom", ask: ["create_batch"] })).body.connections[0]).toMatchObject({ access: "custom", allow: [], ask: ["create_batch"] });
    // Back to full: the tool lists are dropped.
    expect((await put(a, agent, conn, { access: "full" })).body.connections[0]).toMatchObject({ access: "full", allow: [], ask: [] });
    // A second connection keeps grant order.
    const second = await resend(a, "Second");
    expect((await put(a, agent, second, { access: "full" })).body.connections.map((g: any) => g.connectionId)).toEqual([conn, second]);
  });

  test("an organization connection is grantable (scope organization); another project's or organization's → flat 404", async () => {
    const a = await createTestApi();
    const agent = await newAgent(a);
    const org = await resend(a, "Org mail", { org: true });
    expect((await put(a, agent, org, { access: "full" })).body.connections).toEqual([
      { connectionId: org, provider: "resend", label: "Org mail", scope: "organization", access: "full", allow: [], ask: [], resources: null },
    ]);
    const other = await addProject(a, "Grant conn other");
    const theirs = await resend(a, "Theirs", { key: other.projectKey });
    const otherOrg = await addOrganization(a, "Grant conn other org");
    const alienOrg = await resend(a, "Alien", { key: otherOrg.orgKey, org: true });
    const alienProject = await resend(a, "Alien project", { key: otherOrg.projectKey });
    for (const id of [theirs, alienOrg, alienProject]) {
      const res = await put(a, agent, id, { access: "full" });
      expect(res.text).toBe('{"error":"Connection not found"}');
      expectFlat(res, 404, MSG.connection);
      expectFlat(await a.call("GET", `/v1/connections/${id}/grants`), 404, MSG.connection);
    }
    // The agent check comes first.
    expectFlat(await put(a, UNKNOWN, theirs, { access: "full" }), 404, MSG.agent);
    // Another project's agent.
    const theirAgent = await newAgent(a, "grants", other.projectKey);
    expectFlat(await put(a, theirAgent, org, { access: "full" }), 404, MSG.agent);
  });

  test("tool ids come from the app's permission definition: Unknown tool id(s) for \"resend\": a, b", async () => {
    const a = await createTestApi();
    const agent = await newAgent(a);
    const conn = await resend(a);
    const res = await put(a, agent, conn, { access: "custom", allow: ["a", "send_email"], ask: ["b"] });
    expect(res.text).toBe('{"error":"Unknown tool id(s) for \\"resend\\": a, b"}');
    expectFlat(res, 400, 'Unknown tool id(s) for "resend": a, b');
    expectFlat(await put(a, agent, conn, { access: "custom", allow: ["*"] }), 400, 'Unknown tool id(s) for "resend": *');
    expectFlat(await put(a, agent, conn, { access: "custom", allow: ["SEND_EMAIL"] }), 400, 'Unknown tool id(s) for "resend": SEND_EMAIL');
    // Another app's tool.
    expectFlat(await put(a, agent, conn, { access: "custom", ask: ["create_issue"] }), 400, 'Unknown tool id(s) for "resend": create_issue');
    // The route's rules come before the catalog check.
    expectFlat(await put(a, agent, conn, { access: "custom", allow: ["a"], ask: ["a"] }), 400, MSG.both);
    // With full, unknown ids are ignored.
    expect((await put(a, agent, conn, { access: "full", allow: ["a"] })).status).toBe(200);
    expect((await a.call("GET", `/v1/agents/${agent}/grants`)).body.connections[0].access).toBe("full");
  });

  test("a provider without a permission catalog: custom → Per-tool permissions need a permission catalog; full works", async () => {
    // Every catalog app has tools, so this is a connection whose provider is not (or no longer) in the catalog.
    const a = await createTestApi();
    const agent = await newAgent(a);
    const legacy = await oauth(a, "legacy-crm", "Old CRM");
    const res = await put(a, agent, legacy, { access: "custom", allow: ["read"] });
    expect(res.text).toBe('{"error":"Per-tool permissions need a permission catalog; \\"legacy-crm\\" has none."}');
    expectFlat(res, 400, 'Per-tool permissions need a permission catalog; "legacy-crm" has none.');
    expect((await put(a, agent, legacy, { access: "full" })).body.connections).toEqual([
      { connectionId: legacy, provider: "legacy-crm", label: "Old CRM", scope: "project", access: "full", allow: [], ask: [], resources: null },
    ]);
    expectFlat(await put(a, agent, legacy, { access: "full", resources: { repositories: ["a/b"] } }), 400, "resources is not supported for legacy-crm");
  });

  test("resources shape: not supported, github repositories (1-1000 owner/repo), dropbox folders (1-100 absolute, ≤1024)", async () => {
    const a = await createTestApi();
    const agent = await newAgent(a);
    const mail = await resend(a);
    const gh = await oauth(a, "github", "octocat");
    const dbx = await oauth(a, "dropbox", "me@example.com");
    const cases: [string, unknown, string][] = [
      [mail, { repositories: ["acme/api"] }, "resources is not supported for resend"],
      [mail, { folders: ["/x"] }, "resources is not supported for resend"],
      [gh, "acme/api", "resources must be an object"],
      [gh, ["acme/api"], "resources must be an object"],
      [gh, { folders: ["/x"] }, 'resources has unknown field "folders"'],
      [gh, { repositories: ["acme/api"], extra: 1 }, 'resources has unknown field "extra"'],
      [gh, { repositories: "acme/api" }, "resources.repositories must be an array"],
      [gh, { repositories: [] }, "resources.repositories must have 1-1000 items"],
      [gh, { repositories: Array.from({ length: 1001 }, (_, i) => `acme/r${i}`) }, "resources.repositories must have 1-1000 items"],
      [gh, { repositories: ["acme/api", 5] }, "resources.repositories[1] must be a string"],
      [gh, { repositories: ["acme"] }, "resources.repositories[0] must look like owner/repo"],
      [gh, { repositories: ["acme/api/x"] }, "resources.repositories[0] must look like owner/repo"],
      [gh, { repositories: ["acme/*"] }, "resources.repositories[0] must look like owner/repo"],
      [gh, { repositories: ["https://github.com/acme/api"] }, "resources.repositories[0] must look like owner/repo"],
      [dbx, { repositories: ["acme/api"] }, 'resources has unknown field "repositories"'],
      [dbx, { folders: [] }, "resources.folders must have 1-100 items"],
      [dbx, { folders: Array.from({ length: 101 }, (_, i) => `/f${i}`) }, "resources.folders must have 1-100 items"],
      [dbx, { folders: ["Reports"] }, "resources.folders[0] must be an absolute path"],
      [dbx, { folders: ["/ok", `/${"x".repeat(1024)}`] }, "resources.folders[1] must be at most 1024 characters"],
    ];
    for (const [conn, resources, message] of cases) expectFlat(await put(a, agent, conn, { access: "full", resources }), 400, message);
    expect((await a.call("GET", `/v1/agents/${agent}/grants`)).body.connections).toEqual([]);

    const many = Array.from({ length: 1000 }, (_, i) => `acme/r${i}`);
    const ok = await put(a, agent, gh, { access: "custom", allow: ["create_issue"], resources: { repositories: [" acme/api ", "Octo.Org/my_repo-1"] } });
    expect(ok.status).toBe(200);
    expect(ok.body.connections[0]).toMatchObject({ provider: "github", access: "custom", allow: ["create_issue"], resources: { repositories: ["acme/api", "Octo.Org/my_repo-1"] } });
    expect((await put(a, agent, gh, { access: "full", resources: { repositories: many } })).body.connections[0].resources.repositories).toHaveLength(1000);
    const folders = await put(a, agent, dbx, { access: "full", resources: { folders: ["/Reports", "/", `/${"x".repeat(1023)}`] } });
    expect(folders.body.connections.find((g: any) => g.connectionId === dbx).resources).toEqual({ folders: ["/Reports", "/", `/${"x".repeat(1023)}`] });
    // `{}` and null mean unrestricted, for any provider.
    expect((await put(a, agent, mail, { access: "full", resources: {} })).body.connections.find((g: any) => g.connectionId === mail).resources).toBeNull();
    expect((await put(a, agent, mail, { access: "full", resources: null })).status).toBe(200);
  });

  test("resources: absent keeps the stored value, null clears it, an object replaces it", async () => {
    const a = await createTestApi();
    const agent = await newAgent(a);
    const gh = await oauth(a, "github", "octocat");
    const resources = async () => (await a.call("GET", `/v1/agents/${agent}/grants`)).body.connections[0].resources;
    await put(a, agent, gh, { access: "full", resources: { repositories: ["acme/api"] } });
    expect(await resources()).toEqual({ repositories: ["acme/api"] });
    await put(a, agent, gh, { access: "custom", allow: ["list_issues"] });
    expect(await resources()).toEqual({ repositories: ["acme/api"] });
    await put(a, agent, gh, { access: "full", resources: { repositories: ["acme/web"] } });
    expect(await resources()).toEqual({ repositories: ["acme/web"] });
    await put(a, agent, gh, { access: "full", resources: null });
    expect(await resources()).toBeNull();
    await put(a, agent, gh, { access: "full" });
    expect(await resources()).toBeNull();
  });

  test("DELETE is idempotent (204); GET /connections/{id}/grants lists the project's agents holding it", async () => {
    const a = await createTestApi();
    const one = await newAgent(a);
    const two = await newAgent(a);
    const conn = await resend(a);
    const empty = await a.call("GET", `/v1/connections/${conn}/grants`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ connectionId: conn, agents: [] });
    await put(a, one, conn, { access: "full" });
    await put(a, two, conn, { access: "custom", allow: ["get_email"], ask: ["send_email"] });
    const res = await a.call("GET", `/v1/connections/${conn}/grants`);
    // Grants made in the same millisecond have no defined order between them.
    const byAgent = <T extends { agentId: string }>(list: T[]) => [...list].sort((x, y) => x.agentId.localeCompare(y.agentId));
    expect(res.body.connectionId).toBe(conn);
    expect(byAgent(res.body.agents)).toEqual(
      byAgent([
        { agentId: one, agentName: `Agent g-${seq - 1}`, access: "full", allow: [], ask: [] },
        { agentId: two, agentName: `Agent g-${seq}`, access: "custom", allow: ["get_email"], ask: ["send_email"] },
      ]),
    );
    for (let i = 0; i < 2; i++) {
      const del = await a.call("DELETE", `/v1/agents/${one}/grants/connections/${conn}`);
      expect(del.status).toBe(204);
      expect(del.text).toBe("");
    }
    expect((await a.call("GET", `/v1/connections/${conn}/grants`)).body.agents.map((g: any) => g.agentId)).toEqual([two]);
    expect((await a.call("GET", `/v1/agents/${one}/grants`)).body.connections).toEqual([]);
    // An organization connection: only this project's agents are listed.
    const org = await resend(a, "Org", { org: true });
    const other = await addProject(a, "Conn grants other");
    const theirAgent = await newAgent(a, "grants", other.projectKey);
    expect((await a.call("PUT", `/v1/agents/${theirAgent}/grants/connections/${org}`, { key: other.projectKey, body: { access: "full" } })).status).toBe(200);
    await put(a, one, org, { access: "full" });
    expect((await a.call("GET", `/v1/connections/${org}/grants`)).body.agents.map((g: any) => g.agentId)).toEqual([one]);
    expect((await a.call("GET", `/v1/connections/${org}/grants`, { key: other.projectKey })).body.agents.map((g: any) => g.agentId)).toEqual([theirAgent]);
  });

  test("legacy GET/PUT /agents/{id}/connections: sessionPolicy = resources; access kept or full; unlisted grants removed", async () => {
    const a = await createTestApi();
    const agent = await newAgent(a);
    const mail = await resend(a);
    const gh = await oauth(a, "github", "octocat");
    const dbx = await oauth(a, "dropbox", "me");
    const empty = await a.call("GET", `/v1/agents/${agent}/connections`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual([]);
    await put(a, agent, mail, { access: "custom", allow: ["get_email"] });
    await put(a, agent, dbx, { access: "full" });
    const res = await a.call("PUT", `/v1/agents/${agent}/connections`, {
      body: { connections: [{ appConnectionId: mail }, { appConnectionId: gh, sessionPolicy: { repositories: ["acme/api"] } }] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    const legacy = (await a.call("GET", `/v1/agents/${agent}/connections`)).body;
    expect(legacy.sort((x: any, y: any) => x.appConnectionId.localeCompare(y.appConnectionId))).toEqual(
      [
        { appConnectionId: mail, sessionPolicy: null },
        { appConnectionId: gh, sessionPolicy: { repositories: ["acme/api"] } },
      ].sort((x, y) => x.appConnectionId.localeCompare(y.appConnectionId)),
    );
    const set = (await a.call("GET", `/v1/agents/${agent}/grants`)).body.connections;
    expect(set.find((g: any) => g.connectionId === mail)).toMatchObject({ access: "custom", allow: ["get_email"], resources: null });
    expect(set.find((g: any) => g.connectionId === gh)).toMatchObject({ access: "full", resources: { repositories: ["acme/api"] } });
    expect(set.find((g: any) => g.connectionId === dbx)).toBeUndefined();
    // `{}` and null are unrestricted.
    await a.call("PUT", `/v1/agents/${agent}/connections`, { body: { connections: [{ appConnectionId: gh, sessionPolicy: {} }, { appConnectionId: dbx, sessionPolicy: null }] } });
    expect((await a.call("GET", `/v1/agents/${agent}/grants`)).body.connections.map((g: any) => g.resources)).toEqual([null, null]);
    // An empty list removes every connection grant.
    expect((await a.call("PUT", `/v1/agents/${agent}/connections`, { body: { connections: [] } })).status).toBe(200);
    expect((await a.call("GET", `/v1/agents/${agent}/connections`)).body).toEqual([]);
  });

  test("legacy PUT errors: One or more app connections not found (E), sessionPolicy messages (F), Agent not found (E); nothing changes", async () => {
    const a = await createTestApi();
    const agent = await newAgent(a);
    const mail = await resend(a);
    const gh = await oauth(a, "github", "octocat");
    await put(a, agent, mail, { access: "full" });
    const other = await addProject(a, "Legacy other");
    const theirs = await resend(a, "Theirs", { key: other.projectKey });
    const legacyPut = (connections: unknown, id = agent) => a.call("PUT", `/v1/agents/${id}/connections`, { body: { connections } });
    for (const id of [UNKNOWN, "nope", theirs]) {
      const res = await legacyPut([{ appConnectionId: mail }, { appConnectionId: id }]);
      expect(res.text).toBe('{"error":{"message":"One or more app connections not found","type":"invalid_request_error"}}');
      expectEnvelope(res, 400, "One or more app connections not found");
    }
    expectFlat(await legacyPut([{ appConnectionId: mail, sessionPolicy: { repositories: ["a/b"] } }]), 400, "sessionPolicy is not supported for resend");
    expectFlat(await legacyPut([{ appConnectionId: gh, sessionPolicy: { repositories: ["nope"] } }]), 400, "sessionPolicy.repositories[0] must look like owner/repo");
    expectFlat(await legacyPut([{ appConnectionId: gh, sessionPolicy: { folders: ["/x"] } }]), 400, 'sessionPolicy has unknown field "folders"');
    expectFlat(await legacyPut([{ appConnectionId: gh, sessionPolicy: { repositories: [] } }]), 400, "sessionPolicy.repositories must have 1-1000 items");
    for (const sessionPolicy of ["x", [], 5]) expectFlat(await legacyPut([{ appConnectionId: gh, sessionPolicy }]), 400, "connections[0].sessionPolicy must be an object");
    expectFlat(await legacyPut([{ appConnectionId: gh, sessionPolicy: { repositories: "a/b" } }]), 400, "sessionPolicy.repositories must be an array");
    expectFlat(await legacyPut(undefined), 400, "connections is required");
    expectFlat(await legacyPut("x"), 400, "connections must be an array");
    expectFlat(await legacyPut([{}]), 400, "connections[0].appConnectionId is required");
    expectEnvelope(await legacyPut([{ appConnectionId: mail }], UNKNOWN), 404, "Agent not found");
    expectEnvelope(await a.call("GET", `/v1/agents/${UNKNOWN}/connections`), 404, "Agent not found");
    expect((await a.call("GET", `/v1/agents/${agent}/connections`)).body).toEqual([{ appConnectionId: mail, sessionPolicy: null }]);
  });

  test("include=managed: full → `Grant: <agent> · <label>`; custom → allowed / needs approval / everything else", async () => {
    const a = await createTestApi();
    const agent = await newAgent(a);
    const name = `Agent g-${seq}`;
    const mail = await resend(a, "Mail");
    const gh = await oauth(a, "github", null);
    await put(a, agent, mail, { access: "full" });
    await Bun.sleep(2); // grants are listed in grant order
    await put(a, agent, gh, { access: "custom", allow: ["list_issues", "get_issue"], ask: ["create_issue"] });
    const grantRules = async () => ((await a.call("GET", "/v1/policy/rules?include=managed")).body as any[]).filter((r) => r.source === "grant");
    const rules = await grantRules();
    expect(rules.map((r) => r.name)).toEqual([
      `Grant: ${name} · Mail`,
      `Grant: ${name} · github — allowed`,
      `Grant: ${name} · github — needs approval`,
      `Grant: ${name} · github — everything else`,
    ]);
    const common = { scope: "project", status: "published", generation: 0, priority: 0, enabled: true, isDefault: false, source: "grant", identities: [{ type: "agent", id: agent }], rateLimit: null, rateLimitWindow: null };
    expect(rules[0]).toMatchObject({ ...common, action: "allow", requireApproval: false, targets: [{ kind: "connection", connectionId: mail, tools: [] }] });
    expect(rules[1]).toMatchObject({ ...common, action: "allow", requireApproval: false, targets: [{ kind: "connection", connectionId: gh, tools: ["list_issues", "get_issue"] }] });
    expect(rules[2]).toMatchObject({ ...common, action: "allow", requireApproval: true, targets: [{ kind: "connection", connectionId: gh, tools: ["create_issue"] }] });
    expect(rules[3]).toMatchObject({ ...common, action: "block", requireApproval: false, targets: [{ kind: "connection", connectionId: gh, tools: [] }] });
    // Managed ids cannot be edited through /policy/rules.
    expectEnvelope(await a.call("PATCH", `/v1/policy/rules/${encodeURIComponent(rules[0].id)}`, { body: { name: "x" } }), 404, "Policy rule not found.");
    expectEnvelope(await a.call("DELETE", `/v1/policy/rules/${encodeURIComponent(rules[3].id)}`), 404, "Policy rule not found.");
    // A rename shows at once; revoking removes the rules.
    await a.call("PATCH", `/v1/connections/${mail}`, { body: { label: "Renamed" } });
    expect((await grantRules())[0].name).toBe(`Grant: ${name} · Renamed`);
    await a.call("DELETE", `/v1/agents/${agent}/grants/connections/${gh}`);
    expect((await grantRules()).map((r) => r.name)).toEqual([`Grant: ${name} · Renamed`]);
    // Grant rules are project-scope only.
    expect(((await a.call("GET", "/v1/org/policy/rules?include=managed", { key: a.orgKey })).body as any[]).filter((r) => r.source === "grant")).toEqual([]);
  });

  test("effective-credentials connection items {id, provider, label, scope, status, access}", async () => {
    const a = await createTestApi();
    const agent = await newAgent(a);
    const all = await newAgent(a, "all");
    const mail = await resend(a, "Mail");
    const org = await resend(a, "Org mail", { org: true });
    const gh = await oauth(a, "github", "octocat");
    const items = async (id: string) => {
      const res = await a.call("GET", `/v1/agents/${id}/effective-credentials`);
      expect(res.status).toBe(200);
      return Object.fromEntries((res.body.connections as any[]).map((c) => [c.id, c])) as Record<string, any>;
    };
    const before = await items(agent);
    expect(Object.keys(before).sort()).toEqual([mail, org, gh].sort());
    expect(before[mail]).toEqual({ id: mail, provider: "resend", label: "Mail", scope: "project", status: "not_granted", access: null });
    expect(before[org]).toEqual({ id: org, provider: "resend", label: "Org mail", scope: "organization", status: "not_granted", access: null });
    for (const c of Object.values(before)) expect(Object.keys(c).sort()).toEqual(["access", "id", "label", "provider", "scope", "status"]);
    // Mode all: every connection usable without a grant.
    const allItems = await items(all);
    expect(allItems[mail]).toEqual({ id: mail, provider: "resend", label: "Mail", scope: "project", status: "usable", access: null });

    await put(a, agent, mail, { access: "full" });
    await put(a, agent, gh, { access: "custom", allow: ["list_issues"], ask: ["create_issue"] });
    const after = await items(agent);
    expect(after[mail]).toMatchObject({ status: "usable", access: "full" });
    expect(after[gh]).toMatchObject({ status: "limited", access: "custom" });
    expect(after[org]).toMatchObject({ status: "not_granted", access: null });
  });

  test("effective-app-permissions: verdict per tool for a custom grant (allow / approval / block) and decidedBy", async () => {
    const a = await createTestApi();
    const agent = await newAgent(a);
    const name = `Agent g-${seq}`;
    const mail = await resend(a, "Mail");
    await put(a, agent, mail, { access: "custom", allow: ["get_email", "list_emails"], ask: ["send_email"] });
    const res = await a.call("GET", `/v1/policy/effective-app-permissions?provider=resend&agentId=${agent}&connectionId=${mail}`);
    expect(res.status).toBe(200);
    expect(res.body.provider).toBe("resend");
    expect(res.body.agentId).toBe(agent);
    expect(res.body.connectionId).toBe(mail);
    expect(res.body.groups.map((g: any) => g.category)).toEqual(["read", "write"]);
    const tools = Object.fromEntries(res.body.groups.flatMap((g: any) => g.tools).map((t: any) => [t.toolId, t]));
    const decided = (suffix: string, key: string) => ({ scope: "project", logicalId: `grant:${agent}:${mail}:${key}`, name: `Grant: ${name} · Mail — ${suffix}` });
    expect(tools.get_email).toEqual({ toolId: "get_email", verdict: "allow", rateLimit: null, rateLimitWindow: null, decidedBy: decided("allowed", "allow") });
    expect(tools.list_emails).toMatchObject({ verdict: "allow", decidedBy: decided("allowed", "allow") });
    expect(tools.send_email).toEqual({ toolId: "send_email", verdict: "approval", rateLimit: null, rateLimitWindow: null, decidedBy: decided("needs approval", "ask") });
    for (const t of ["list_domains", "create_batch", "cancel_email"]) expect(tools[t]).toMatchObject({ verdict: "block", decidedBy: decided("everything else", "rest") });

    // A tool is judged on a request only it names: `get_email` (GET /emails/*) is not covered by a grant of
    // `list_emails` (GET /emails), while `list_emails` is covered by `get_email` (a trailing /* includes the prefix, docs/injection.md#host-and-path-patterns).
    const verdicts = async () =>
      Object.fromEntries(
        (await a.call("GET", `/v1/policy/effective-app-permissions?provider=resend&agentId=${agent}&connectionId=${mail}`)).body.groups.flatMap((g: any) => g.tools).map((t: any) => [t.toolId, t.verdict]),
      );
    await put(a, agent, mail, { access: "custom", allow: ["list_emails"] });
    expect(await verdicts()).toMatchObject({ list_emails: "allow", get_email: "block" });
    await put(a, agent, mail, { access: "custom", allow: ["get_email"] });
    expect(await verdicts()).toMatchObject({ list_emails: "allow", get_email: "allow", send_email: "block" });

    // Full grant → one allow rule decides every tool.
    await put(a, agent, mail, { access: "full" });
    const full = (await a.call("GET", `/v1/policy/effective-app-permissions?provider=resend&agentId=${agent}&connectionId=${mail}`)).body;
    for (const t of full.groups.flatMap((g: any) => g.tools)) {
      expect(t).toMatchObject({ verdict: "allow", decidedBy: { scope: "project", logicalId: `grant:${agent}:${mail}`, name: `Grant: ${name} · Mail` } });
    }
    // Another agent: the grant does not bear on it.
    const other = await newAgent(a);
    const theirs = (await a.call("GET", `/v1/policy/effective-app-permissions?provider=resend&agentId=${other}&connectionId=${mail}`)).body;
    for (const t of theirs.groups.flatMap((g: any) => g.tools)) expect(t).toMatchObject({ verdict: "allow", decidedBy: null });
    expectEnvelope(await a.call("GET", `/v1/policy/effective-app-permissions?provider=resend&agentId=${agent}&connectionId=${UNKNOWN}`), 404, "Connection not found");
  });
});
