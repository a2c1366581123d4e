// Authentication and authorization (docs/api.md#how-a-request-is-authenticated, docs/api.md#context, docs/api.md#roles, docs/api.md#accounts-and-sessions login; docs/api.md#how-a-request-is-authenticated).
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addMember, addOrganization, addProject, AUTH_FAILED, expectEnvelope, expectUnauthorized } from "./helpers.ts";

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

function sessionCookieOf(res: { headers: Headers }): string {
  const setCookie = res.headers.get("set-cookie") ?? "";
  const m = /credgate_session=([^;]*)/.exec(setCookie);
  if (!m) throw new Error(`no session cookie in ${JSON.stringify(setCookie)}`);
  return m[1]!;
}

async function login(apiKey: string): Promise<string> {
  const res = await api.call("POST", "/v1/auth/login", { key: null, body: { apiKey } });
  expect(res.status).toBe(200);
  return sessionCookieOf(res);
}

describe("bearer keys (docs/api.md#how-a-request-is-authenticated)", () => {
  test("example 1: no Authorization → 401 envelope", async () => {
    const res = await api.call("GET", "/v1/agents", { key: null });
    expect(res.text).toBe('{"error":{"message":"Invalid API key or token.","type":"authentication_error"}}');
    expectUnauthorized(res);
  });

  test.each([
    ["Basic eDp5"],
    ["Bearer"],
    ["Bearer "],
    ["Token svc_abc"],
    ["svc_0000000000000000000000000000000000000000000000000000000000000000"],
    [""],
  ])("malformed Authorization %p → 401", async (header) => {
    const res = await api.call("GET", "/v1/agents", { key: null, headers: { authorization: header } });
    expectUnauthorized(res);
  });

  test("the scheme is case-insensitive and the token is trimmed", async () => {
    for (const header of [`bearer ${api.projectKey}`, `BEARER ${api.projectKey}`, `Bearer    ${api.projectKey}   `]) {
      const res = await api.call("GET", "/v1/agents", { key: null, headers: { authorization: header } });
      expect(res.status).toBe(200);
    }
  });

  test("unknown keys of every prefix → 401", async () => {
    for (const key of ["svc_" + "0".repeat(64), "svc_org_" + "0".repeat(64), "svc_partner_" + "0".repeat(64), "nope"]) {
      expectUnauthorized(await api.call("GET", "/v1/agents", { key }));
    }
  });

  test("example 5: an agent token is never accepted by the API", async () => {
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: "agt_" + "a".repeat(64) }));
    const token = api.core.bootstrap.defaultAgentToken;
    expect(token).toMatch(/^agt_[0-9a-f]{64}$/);
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: token }));
    expectUnauthorized(await api.call("GET", "/v1/org/settings", { key: token }));
  });

  test("a project key with its org-key-like prefix swapped is not accepted", async () => {
    const swapped = api.projectKey.replace(/^svc_/, "svc_org_");
    expectUnauthorized(await api.call("GET", "/v1/org/settings", { key: swapped }));
  });
});

describe("project context P (docs/api.md#context)", () => {
  test("example 2: org key without X-Project-Id → 401; with its own project → 200 array", async () => {
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: api.orgKey }));
    const ok = await api.call("GET", "/v1/agents", { key: api.orgKey, headers: { "x-project-id": api.projectId } });
    expect(ok.status).toBe(200);
    expect(Array.isArray(ok.body)).toBe(true);
    expect(ok.body.length).toBeGreaterThan(0);
  });

  test("org key with an unknown project, or a project of another organization → 401", async () => {
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: api.orgKey, headers: { "x-project-id": "abcdefghijklmnop" } }));
    const other = await addOrganization(api, "Foreign Org");
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: api.orgKey, headers: { "x-project-id": other.project.id } }));
    // And the other way round.
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: other.orgKey, headers: { "x-project-id": api.projectId } }));
  });

  test("org key selects the named project of its organization", async () => {
    const second = await addProject(api, "Selectable");
    await api.call("POST", "/v1/agents", { key: second.projectKey, body: { name: "Only here", identifier: "only-here" } });
    const res = await api.call("GET", "/v1/agents", { key: api.orgKey, headers: { "x-project-id": second.project.id } });
    expect(res.status).toBe(200);
    expect(res.body.map((a: any) => a.identifier).sort()).toEqual(["default", "only-here"]);
    const own = await api.call("GET", "/v1/agents", { key: api.orgKey, headers: { "x-project-id": api.projectId } });
    expect(own.body.map((a: any) => a.identifier)).not.toContain("only-here");
  });

  test("a project key ignores X-Project-Id and always uses its own project", async () => {
    const second = await addProject(api, "Ignored Header");
    await api.call("POST", "/v1/agents", { key: second.projectKey, body: { name: "Second", identifier: "second-only" } });
    const res = await api.call("GET", "/v1/agents", { headers: { "x-project-id": second.project.id } });
    expect(res.status).toBe(200);
    expect(res.body.map((a: any) => a.identifier)).not.toContain("second-only");
  });
});

describe("project-explicit endpoints (docs/api.md#context)", () => {
  test("example 3: org key without X-Project-Id → 400 envelope", async () => {
    const res = await api.call("GET", "/v1/user/api-key", { key: api.orgKey });
    expect(res.text).toBe('{"error":{"message":"X-Project-Id header is required","type":"invalid_request_error"}}');
    expectEnvelope(res, 400, "X-Project-Id header is required");
    expectEnvelope(await api.call("POST", "/v1/user/api-key/regenerate", { key: api.orgKey }), 400, "X-Project-Id header is required");
  });

  test("org key with X-Project-Id → the caller's project key", async () => {
    const res = await api.call("GET", "/v1/user/api-key", { key: api.orgKey, headers: { "x-project-id": api.projectId } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ apiKey: api.projectKey });
  });

  test("org key with a foreign X-Project-Id on project-explicit → 401, not 400", async () => {
    expectUnauthorized(await api.call("GET", "/v1/user/api-key", { key: api.orgKey, headers: { "x-project-id": "zzzzzzzzzzzzzzzz" } }));
  });

  test("missing key on project-explicit → 401", async () => {
    expectUnauthorized(await api.call("GET", "/v1/user/api-key", { key: null }));
  });
});

describe("roles and holder checks (docs/api.md#how-a-request-is-authenticated, docs/api.md#roles)", () => {
  test("example 4: a member's project key on /org/secrets → 403 envelope", async () => {
    const member = await addMember(api, "member");
    const res = await api.call("GET", "/v1/org/secrets", { key: member.projectKey });
    expect(res.text).toBe('{"error":{"message":"Insufficient permissions","type":"authentication_error"}}');
    expectEnvelope(res, 403, "Insufficient permissions");
    // Every /org endpoint of this build is admin-gated.
    expectEnvelope(await api.call("GET", "/v1/org/settings", { key: member.projectKey }), 403, "Insufficient permissions");
    expectEnvelope(await api.call("POST", "/v1/org/secrets", { key: member.projectKey, body: {} }), 403, "Insufficient permissions");
    expectEnvelope(await api.call("GET", "/v1/org/api-key", { key: member.projectKey }), 403, "Insufficient permissions");
    // Project endpoints are open to any member.
    expect((await api.call("GET", "/v1/agents", { key: member.projectKey })).status).toBe(200);
    expect((await api.call("GET", "/v1/user", { key: member.projectKey })).status).toBe(200);
  });

  test("an admin's keys pass admin gates", async () => {
    const admin = await addMember(api, "admin");
    expect((await api.call("GET", "/v1/org/secrets", { key: admin.projectKey })).status).toBe(200);
    expect((await api.call("GET", "/v1/org/secrets", { key: admin.orgKey })).status).toBe(200);
  });

  test("the org key of a demoted admin → 401; its project key keeps working with the new role", async () => {
    const admin = await addMember(api, "admin");
    expect((await api.call("GET", "/v1/org/settings", { key: admin.orgKey })).status).toBe(200);
    await api.core.services.orgs.setRole(api.organizationId, admin.user.id, "member");
    expectUnauthorized(await api.call("GET", "/v1/org/settings", { key: admin.orgKey }));
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: admin.orgKey, headers: { "x-project-id": api.projectId } }));
    expect((await api.call("GET", "/v1/agents", { key: admin.projectKey })).status).toBe(200);
    expectEnvelope(await api.call("GET", "/v1/org/settings", { key: admin.projectKey }), 403, "Insufficient permissions");
    // Re-promotion brings the key back (it acts with the holder's current role).
    await api.core.services.orgs.setRole(api.organizationId, admin.user.id, "admin");
    expect((await api.call("GET", "/v1/org/settings", { key: admin.orgKey })).status).toBe(200);
  });

  test("a member's org key never works (holder must be admin or owner)", async () => {
    const member = await addMember(api, "member");
    expectUnauthorized(await api.call("GET", "/v1/org/settings", { key: member.orgKey }));
  });

  test("keys of a pending (not yet active) member → 401", async () => {
    const { orgs, apiKeys } = api.core.services;
    const user = await orgs.createUser("pending@example.com", "Pending");
    await orgs.addMember(api.organizationId, user.id, "admin", "pending");
    const projectKey = await apiKeys.keyFor({ kind: "project", userId: user.id, projectId: api.projectId, organizationId: api.organizationId });
    const orgKey = await apiKeys.keyFor({ kind: "organization", userId: user.id, organizationId: api.organizationId });
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: projectKey }));
    expectUnauthorized(await api.call("GET", "/v1/org/settings", { key: orgKey }));
  });

  test("keys of a removed member → 401", async () => {
    const admin = await addMember(api, "admin");
    await api.core.services.orgs.removeMember(api.organizationId, admin.user.id);
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: admin.projectKey }));
    expectUnauthorized(await api.call("GET", "/v1/org/settings", { key: admin.orgKey }));
  });
});

describe("sessions (docs/api.md#how-a-request-is-authenticated; docs/api.md#accounts-and-sessions)", () => {
  test("login with an API key sets the session cookie (12 h), which then authenticates as that key", async () => {
    const res = await api.call("POST", "/v1/auth/login", { key: null, body: { apiKey: api.projectKey } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ user: { id: api.core.bootstrap.userId, email: "owner@localhost", name: "Owner", createdAt: expect.any(String) } });
    const setCookie = res.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/^credgate_session=[^;]+;/);
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);
    expect(setCookie).not.toMatch(/Secure/i); // CREDGATE_PUBLIC_URL is http here
    // A key's session lasts 12 hours at most; a password's 30 days.
    expect(setCookie).toMatch(/Max-Age=43200/);
    const cookie = sessionCookieOf(res);

    const agents = await api.call("GET", "/v1/agents", { key: null, headers: { cookie: `credgate_session=${cookie}` } });
    expect(agents.status).toBe(200);
    expect(Array.isArray(agents.body)).toBe(true);
    const session = await api.call("GET", "/v1/auth/session", { key: null, headers: { cookie: `credgate_session=${cookie}` } });
    expect(session.status).toBe(200);
    expect(session.body.user.email).toBe("owner@localhost");
    expect(session.body.organizations).toEqual([{ id: api.organizationId, name: expect.any(String), role: "owner" }]);
    // The projects the session may switch between (the dashboard's project switcher): a project key's, its own.
    expect(session.body.projects).toEqual([{ id: api.projectId, name: "Default Project", organizationId: api.organizationId }]);
    expect(session.body.partner).toBeNull();
    expect(session.body.scope).toEqual({ kind: "project", organizationId: api.organizationId, projectId: api.projectId });
    // An org-level endpoint works with the session too.
    expect((await api.call("GET", "/v1/org/settings", { key: null, headers: { cookie: `other=1; credgate_session=${cookie}` } })).status).toBe(200);
  });

  test("login with the org key works as well", async () => {
    const cookie = await login(api.orgKey);
    expect((await api.call("GET", "/v1/user", { key: null, headers: { cookie: `credgate_session=${cookie}` } })).status).toBe(200);
  });

  test("a present but bad Authorization header does not fall back to the cookie", async () => {
    const cookie = await login(api.projectKey);
    const res = await api.call("GET", "/v1/agents", { key: "svc_" + "1".repeat(64), headers: { cookie: `credgate_session=${cookie}` } });
    expectUnauthorized(res);
  });

  test("unknown session cookie → 401", async () => {
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: null, headers: { cookie: "credgate_session=" + "0".repeat(64) } }));
  });

  test("cross-site Origin on a cookie-authenticated mutation → 403; same-origin and bearer calls pass", async () => {
    const cookie = await login(api.projectKey);
    const headers = { cookie: `credgate_session=${cookie}` };
    const body = { name: "Cross", identifier: "cross-site" };
    const rejected = await api.call("POST", "/v1/agents", { key: null, headers: { ...headers, origin: "https://evil.example" }, body });
    expectEnvelope(rejected, 403, "Cross-site request rejected");
    const list = await api.call("GET", "/v1/agents", { key: null, headers: { ...headers, origin: "https://evil.example" } });
    expect(list.status).toBe(200); // GET is not checked
    expect(list.body.map((a: any) => a.identifier)).not.toContain("cross-site");

    for (const method of ["PATCH", "DELETE"]) {
      const r = await api.call(method, `/v1/agents/${list.body[0].id}`, { key: null, headers: { ...headers, origin: "http://other.example" }, body: { name: "x" } });
      expectEnvelope(r, 403, "Cross-site request rejected");
    }
    const sameOrigin = await api.call("POST", "/v1/agents", { key: null, headers: { ...headers, origin: api.core.config.publicUrl }, body });
    expect(sameOrigin.status).toBe(201);
    const noOrigin = await api.call("POST", "/v1/agents", { key: null, headers, body: { name: "No origin", identifier: "no-origin" } });
    expect(noOrigin.status).toBe(201);
    // A bearer key is not subject to the check.
    const bearer = await api.call("POST", "/v1/agents", { headers: { origin: "https://evil.example" }, body: { name: "Bearer", identifier: "bearer-cross" } });
    expect(bearer.status).toBe(201);
  });

  test("Sec-Fetch-Site: cross-site on a cookie-authenticated mutation → 403 without an Origin too; same-origin, same-site, none, reads and bearer calls pass", async () => {
    const cookie = await login(api.projectKey);
    const headers = { cookie: `credgate_session=${cookie}` };
    const before = (await api.call("GET", "/v1/agents")).body.map((a: any) => [a.id, a.name, a.updatedAt]);
    const agentId = before[0][0];
    const writes: [string, string][] = [
      ["POST", "/v1/agents"],
      ["PUT", `/v1/agents/${agentId}/secrets`],
      ["PATCH", `/v1/agents/${agentId}`],
      ["DELETE", `/v1/agents/${agentId}`],
    ];
    for (const [method, path] of writes) {
      for (const value of ["cross-site", "Cross-Site", " cross-site "]) {
        const body = { name: "Fetch", identifier: "fetch-cross", secretIds: [] };
        const r = await api.call(method, path, { key: null, headers: { ...headers, "sec-fetch-site": value }, body });
        expectEnvelope(r, 403, "Cross-site request rejected");
      }
    }
    // Either signal is enough: our own Origin does not excuse a cross-site fetch.
    const both = await api.call("POST", "/v1/agents", {
      key: null,
      headers: { ...headers, origin: api.core.config.publicUrl, "sec-fetch-site": "cross-site" },
      body: { name: "Fetch", identifier: "fetch-cross" },
    });
    expectEnvelope(both, 403, "Cross-site request rejected");
    const list = await api.call("GET", "/v1/agents", { key: null, headers: { ...headers, "sec-fetch-site": "cross-site" } });
    expect(list.status).toBe(200);
    expect(list.body.map((a: any) => [a.id, a.name, a.updatedAt])).toEqual(before); // nothing created, renamed or deleted
    for (const [i, value] of ["same-origin", "same-site", "none"].entries()) {
      const r = await api.call("POST", "/v1/agents", { key: null, headers: { ...headers, "sec-fetch-site": value }, body: { name: "Fetch", identifier: `fetch-${i}` } });
      expect(r.status).toBe(201);
    }
    const bearer = await api.call("POST", "/v1/agents", { headers: { "sec-fetch-site": "cross-site" }, body: { name: "Bearer", identifier: "bearer-fetch" } });
    expect(bearer.status).toBe(201);
  });

  test("session X-Project-Id: own project ok, unknown → 401; X-Organization-Id of a non-member → 403", async () => {
    const cookie = await login(api.projectKey);
    const headers = { cookie: `credgate_session=${cookie}` };
    expect((await api.call("GET", "/v1/agents", { key: null, headers: { ...headers, "x-project-id": api.projectId } })).status).toBe(200);
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: null, headers: { ...headers, "x-project-id": "qqqqqqqqqqqqqqqq" } }));
    const other = await addOrganization(api, "Not Mine");
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: null, headers: { ...headers, "x-project-id": other.project.id } }));
    expectEnvelope(await api.call("GET", "/v1/user", { key: null, headers: { ...headers, "x-organization-id": other.org.id } }), 403, "Not a member of this organization");
    expect((await api.call("GET", "/v1/user", { key: null, headers: { ...headers, "x-organization-id": api.organizationId } })).status).toBe(200);
  });

  test("logout → 204, clears the cookie, and revokes the session server-side", async () => {
    const cookie = await login(api.projectKey);
    const headers = { cookie: `credgate_session=${cookie}` };
    const out = await api.call("POST", "/v1/auth/logout", { key: null, headers });
    expect(out.status).toBe(204);
    expect(out.text).toBe("");
    expect(out.headers.get("set-cookie")).toMatch(/^credgate_session=;.*Max-Age=0/);
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: null, headers }));
    expectUnauthorized(await api.call("GET", "/v1/auth/session", { key: null, headers }));
  });

  test("a cross-site logout is a cookie-authenticated POST too → 403, the session survives", async () => {
    const cookie = await login(api.projectKey);
    const headers = { cookie: `credgate_session=${cookie}` };
    expectEnvelope(await api.call("POST", "/v1/auth/logout", { key: null, headers: { ...headers, origin: "https://evil.example" } }), 403, "Cross-site request rejected");
    expect((await api.call("GET", "/v1/agents", { key: null, headers })).status).toBe(200);
  });

  test("an expired session → 401", async () => {
    const cookie = await login(api.projectKey);
    const headers = { cookie: `credgate_session=${cookie}` };
    expect((await api.call("GET", "/v1/agents", { key: null, headers })).status).toBe(200);
    await api.core.store.query(sql`UPDATE sessions SET expires_at = ${new Date(Date.now() - 1000).toISOString()}`);
    expectUnauthorized(await api.call("GET", "/v1/agents", { key: null, headers }));
  });

  test("logout without a session → 401", async () => {
    expectUnauthorized(await api.call("POST", "/v1/auth/logout", { key: null }));
  });

  test("sessions die with their holder's revocation", async () => {
    const member = await addMember(api, "member");
    const cookie = await login(member.projectKey);
    const headers = { cookie: `credgate_session=${cookie}` };
    expect((await api.call("GET", "/v1/user", { key: null, headers })).status).toBe(200);
    await api.core.services.sessions.revokeAllOf(member.user.id);
    expectUnauthorized(await api.call("GET", "/v1/user", { key: null, headers }));
  });

  test("login with a bad key, an agent token or a missing key fails", async () => {
    expectEnvelope(await api.call("POST", "/v1/auth/login", { key: null, body: { apiKey: "svc_" + "2".repeat(64) } }), 401, AUTH_FAILED);
    expectEnvelope(await api.call("POST", "/v1/auth/login", { key: null, body: { apiKey: api.core.bootstrap.defaultAgentToken } }), 401, AUTH_FAILED);
    const missing = await api.call("POST", "/v1/auth/login", { key: null, body: {} });
    expect(missing.status).toBe(400);
    expect(typeof missing.body.error).toBe("string");
    // Email/password login is cloud-only: self-hosted logs in with an API key only.
    const password = await api.call("POST", "/v1/auth/login", { key: null, body: { email: "owner@localhost", password: "whatever1" } });
    expect(password.status).toBe(400);
  });

  test("login throttling: after 10 failures for one key the 11th attempt → 429; other keys are unaffected", async () => {
    const fresh = await createTestApi();
    const wrong = "svc_" + "3".repeat(64);
    for (let i = 0; i < 10; i++) {
      expectEnvelope(await fresh.call("POST", "/v1/auth/login", { key: null, body: { apiKey: wrong } }), 401, AUTH_FAILED);
    }
    expectEnvelope(await fresh.call("POST", "/v1/auth/login", { key: null, body: { apiKey: wrong } }), 429, "Too many attempts, try again later");
    expectEnvelope(await fresh.call("POST", "/v1/auth/login", { key: null, body: { apiKey: wrong } }), 429, "Too many attempts, try again later");
    const ok = await fresh.call("POST", "/v1/auth/login", { key: null, body: { apiKey: fresh.projectKey } });
    expect(ok.status).toBe(200);
  });
});
