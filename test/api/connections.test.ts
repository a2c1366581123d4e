// App connections as a resource (docs/injection.md#app-connections) and the
// organization routes (docs/injection.md#app-connections). Connections come from direct connect (API-key apps) or, for OAuth apps, from
// the connection service itself (what the OAuth callback calls).
import { describe, expect, test } from "bun:test";
import type { ConnectionOwner } from "../../src/services/connections.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addMember, addOrganization, addProject, expectEnvelope, expectFlat, expectUnauthorized, ISO_MS } from "./helpers.ts";

const UNKNOWN = "00000000-0000-4000-8000-000000000000";
const CONNECTION_KEYS = ["connectedAt", "id", "label", "metadata", "provider", "scope", "scopes", "status"];
const ORG_CONNECTION_KEYS = ["connectedAt", "id", "label", "provider", "scope", "scopes", "status"];

async function connect(a: TestApi, provider: string, label: string, opts: { key?: string; org?: boolean } = {}) {
  const fields = provider === "resend" ? { apiKey: "re_x" } : provider === "datadog" ? { apiKey: "k", appKey: "a" } : { apiToken: "t" };
  const res = await a.call("POST", `/v1/${opts.org ? "org/" : ""}apps/${provider}/connect`, { key: opts.key ?? (opts.org ? a.orgKey : undefined), body: { fields, label } });
  if (res.status !== 200) throw new Error(`connect failed: ${res.status} ${res.text}`);
  await Bun.sleep(2); // distinct connectedAt
  return res.body.connection.id as string;
}

async function oauthConnection(a: TestApi, owner: ConnectionOwner, provider: string, label: string | null, metadata: Record<string, unknown> | null = null) {
  return await a.core.services.connections.save(owner, {
    provider,
    label,
    credential: { kind: "oauth", accessToken: `tok-${provider}`, refreshToken: "ref", expiresAt: Date.now() + 3_600_000, tokenType: "bearer" },
    scopes: ["repo", "read:user"],
    metadata,
  });
}

const projectOwner = (a: TestApi): ConnectionOwner => ({ scope: "project", projectId: a.projectId, organizationId: a.organizationId });
const orgOwner = (a: TestApi): ConnectionOwner => ({ scope: "organization", organizationId: a.organizationId });

describe("GET /connections", () => {
  test("the project's connections plus the organization's, connectedAt desc, Connection shape", async () => {
    const a = await createTestApi();
    expect((await a.call("GET", "/v1/connections")).body).toEqual([]);
    const first = await connect(a, "resend", "First");
    const org = await connect(a, "cloudflare", "Org CF", { org: true });
    const gh = await oauthConnection(a, projectOwner(a), "github", "octocat", { login: "octocat" });
    await Bun.sleep(2);
    const last = await connect(a, "resend", "Last");
    const res = await a.call("GET", "/v1/connections");
    expect(res.status).toBe(200);
    expect(res.body.map((c: any) => c.id)).toEqual([last, gh.id, org, first]);
    for (const c of res.body) {
      expect(Object.keys(c).sort()).toEqual(CONNECTION_KEYS);
      expect(c.connectedAt).toMatch(ISO_MS);
      expect(c.status).toBe("connected");
    }
    expect(res.body[1]).toEqual({ id: gh.id, provider: "github", label: "octocat", status: "connected", scopes: ["repo", "read:user"], scope: "project", metadata: { login: "octocat" }, connectedAt: gh.connectedAt });
    expect(res.body[2]).toEqual({ id: org, provider: "cloudflare", label: "Org CF", status: "connected", scopes: [], scope: "organization", metadata: null, connectedAt: expect.stringMatching(ISO_MS) });
    // A reconnect moves the connection to the top.
    await connect(a, "resend", "first");
    expect((await a.call("GET", "/v1/connections")).body.map((c: any) => c.id)).toEqual([first, last, gh.id, org]);
  });

  test("?provider= filters; an unknown provider → []", async () => {
    const a = await createTestApi();
    const r1 = await connect(a, "resend", "A");
    await connect(a, "cloudflare", "B");
    const r2 = await connect(a, "resend", "C", { org: true });
    expect((await a.call("GET", "/v1/connections?provider=resend")).body.map((c: any) => c.id)).toEqual([r2, r1]);
    expect((await a.call("GET", "/v1/connections?provider=cloudflare")).body.map((c: any) => c.label)).toEqual(["B"]);
    expect((await a.call("GET", "/v1/connections?provider=nope")).body).toEqual([]);
    expect((await a.call("GET", "/v1/connections?provider=")).body).toHaveLength(3);
  });

  test("another project's and another organization's connections are never listed", async () => {
    const a = await createTestApi();
    const other = await addProject(a, "Conn other");
    await connect(a, "resend", "Theirs", { key: other.projectKey });
    const otherOrg = await addOrganization(a, "Conn other org");
    await connect(a, "resend", "Alien org", { key: otherOrg.orgKey, org: true });
    await connect(a, "resend", "Alien project", { key: otherOrg.projectKey });
    const mine = await connect(a, "resend", "Mine");
    expect((await a.call("GET", "/v1/connections")).body.map((c: any) => c.id)).toEqual([mine]);
    expect((await a.call("GET", "/v1/connections", { key: other.projectKey })).body.map((c: any) => c.label)).toEqual(["Theirs"]);
    expectUnauthorized(await a.call("GET", "/v1/connections", { key: null }));
    expectUnauthorized(await a.call("GET", "/v1/connections", { key: a.orgKey }));
  });
});

describe("GET /connections/{id}", () => {
  test("own and organization connections; unknown, another project's or organization's → 404 envelope", async () => {
    const a = await createTestApi();
    const mine = await connect(a, "resend", "Mine");
    const org = await connect(a, "resend", "Org", { org: true });
    const res = await a.call("GET", `/v1/connections/${mine}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual((await a.call("GET", "/v1/connections")).body.find((c: any) => c.id === mine));
    expect((await a.call("GET", `/v1/connections/${org}`)).body.scope).toBe("organization");
    const other = await addProject(a, "Get other");
    const theirs = await connect(a, "resend", "Theirs", { key: other.projectKey });
    const otherOrg = await addOrganization(a, "Get other org");
    const alien = await connect(a, "resend", "Alien", { key: otherOrg.orgKey, org: true });
    for (const id of [UNKNOWN, "nope", theirs, alien]) {
      const r = await a.call("GET", `/v1/connections/${id}`);
      expectEnvelope(r, 404, "Connection not found");
    }
    // The organization's connection is visible from the other project too.
    expect((await a.call("GET", `/v1/connections/${org}`, { key: other.projectKey })).status).toBe(200);
    // An org key selects the project.
    expect((await a.call("GET", `/v1/connections/${theirs}`, { key: a.orgKey, headers: { "x-project-id": other.project.id } })).status).toBe(200);
  });
});

describe("PATCH /connections/{id}", () => {
  test("rename → {id, provider, status, label}; trimmed; Label is required (absent, null, blank); 404", async () => {
    const a = await createTestApi();
    const id = await connect(a, "resend", "Old");
    const res = await a.call("PATCH", `/v1/connections/${id}`, { body: { label: "  New name  " } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id, provider: "resend", status: "connected", label: "New name" });
    expect((await a.call("GET", `/v1/connections/${id}`)).body.label).toBe("New name");
    for (const body of [{}, { label: null }, { label: "" }, { label: "   " }]) {
      const r = await a.call("PATCH", `/v1/connections/${id}`, { body });
      expectFlat(r, 400, "Label is required");
    }
    expectFlat(await a.call("PATCH", `/v1/connections/${id}`), 400, "Request body must be a JSON object");
    expectFlat(await a.call("PATCH", `/v1/connections/${id}`, { body: { label: 5 } }), 400, "label must be a string");
    expectFlat(await a.call("PATCH", `/v1/connections/${id}`, { body: { label: "x".repeat(256) } }), 400, "label must be 1-255 characters");
    expectEnvelope(await a.call("PATCH", `/v1/connections/${UNKNOWN}`, { body: { label: "x" } }), 404, "Connection not found");
    // Validation comes first: an unknown id with a bad body is a 400.
    expectFlat(await a.call("PATCH", `/v1/connections/${UNKNOWN}`, { body: {} }), 400, "Label is required");
    expect((await a.call("GET", `/v1/connections/${id}`)).body.label).toBe("New name");
  });

  test("any member renames a project connection; an organization connection is renamed through the project route by admins only", async () => {
    const a = await createTestApi();
    const member = await addMember(a, "member");
    const id = await connect(a, "resend", "Mine");
    expect((await a.call("PATCH", `/v1/connections/${id}`, { key: member.projectKey, body: { label: "By member" } })).status).toBe(200);
    const org = await connect(a, "resend", "Org", { org: true });
    const res = await a.call("PATCH", `/v1/connections/${org}`, { body: { label: "Org renamed" } });
    expect(res.status).toBe(200);
    expect(res.body.label).toBe("Org renamed");
    // An organization-wide connection follows the organization's admin gate, also through the project routes.
    expectEnvelope(await a.call("PATCH", `/v1/connections/${org}`, { key: member.projectKey, body: { label: "By member" } }), 403, "Insufficient permissions");
    expectEnvelope(await a.call("DELETE", `/v1/connections/${org}`, { key: member.projectKey }), 403, "Insufficient permissions");
    expect((await a.call("GET", `/v1/connections/${org}`, { key: member.projectKey })).body.label).toBe("Org renamed");
    const other = await addProject(a, "Rename other");
    const theirs = await connect(a, "resend", "Theirs", { key: other.projectKey });
    expectEnvelope(await a.call("PATCH", `/v1/connections/${theirs}`, { body: { label: "x" } }), 404, "Connection not found");
    expect((await a.call("GET", `/v1/connections/${theirs}`, { key: other.projectKey })).body.label).toBe("Theirs");
  });
});

describe("DELETE /connections/{id}", () => {
  test("204 empty, then 404; its grants are gone", async () => {
    const a = await createTestApi();
    const id = await connect(a, "resend", "Doomed");
    const keep = await connect(a, "resend", "Kept");
    const agent = (await a.call("POST", "/v1/agents", { body: { name: "A", identifier: "a", mode: "grants" } })).body.id;
    expect((await a.call("PUT", `/v1/agents/${agent}/grants/connections/${id}`, { body: { access: "custom", allow: ["send_email"] } })).status).toBe(200);
    expect((await a.call("PUT", `/v1/agents/${agent}/grants/connections/${keep}`, { body: { access: "full" } })).status).toBe(200);
    const del = await a.call("DELETE", `/v1/connections/${id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expectEnvelope(await a.call("DELETE", `/v1/connections/${id}`), 404, "Connection not found");
    expectEnvelope(await a.call("GET", `/v1/connections/${id}`), 404, "Connection not found");
    expect((await a.call("GET", `/v1/agents/${agent}/grants`)).body.connections.map((g: any) => g.connectionId)).toEqual([keep]);
    expect((await a.call("GET", `/v1/agents/${agent}/connections`)).body).toEqual([{ appConnectionId: keep, sessionPolicy: null }]);
    expectFlat(await a.call("GET", `/v1/connections/${id}/grants`), 404, "Connection not found");
    const managed = (await a.call("GET", "/v1/policy/rules?include=managed")).body.filter((r: any) => r.source === "grant");
    expect(managed.map((r: any) => r.name)).toEqual(["Grant: A · Kept"]);
    expect((await a.call("GET", `/v1/agents/${agent}/effective-credentials`)).body.connections.map((c: any) => c.id)).toEqual([keep]);
  });

  test("another project's connection → 404 and survives; an organization connection is deletable from a project route", async () => {
    const a = await createTestApi();
    const other = await addProject(a, "Delete other");
    const theirs = await connect(a, "resend", "Theirs", { key: other.projectKey });
    expectEnvelope(await a.call("DELETE", `/v1/connections/${theirs}`), 404, "Connection not found");
    expect((await a.call("GET", `/v1/connections/${theirs}`, { key: other.projectKey })).status).toBe(200);
    const org = await connect(a, "resend", "Org", { org: true });
    expect((await a.call("DELETE", `/v1/connections/${org}`)).status).toBe(204);
    expect((await a.call("GET", "/v1/org/connections", { key: a.orgKey })).body).toEqual([]);
  });
});

describe("organization connections (docs/injection.md#app-connections)", () => {
  test("GET /org/connections: only organization connections, Organization connection shape (no metadata), ?provider=", async () => {
    const a = await createTestApi();
    await connect(a, "resend", "Project one");
    const o1 = await connect(a, "resend", "Org resend", { org: true });
    const o2 = await oauthConnection(a, orgOwner(a), "github", "acme-bot", { login: "acme-bot" });
    await Bun.sleep(2);
    const o3 = await connect(a, "cloudflare", "Org CF", { org: true });
    const res = await a.call("GET", "/v1/org/connections", { key: a.orgKey });
    expect(res.status).toBe(200);
    expect(res.body.map((c: any) => c.id)).toEqual([o3, o2.id, o1]);
    for (const c of res.body) expect(Object.keys(c).sort()).toEqual(ORG_CONNECTION_KEYS);
    expect(res.body[1]).toEqual({ id: o2.id, provider: "github", label: "acme-bot", status: "connected", scopes: ["repo", "read:user"], scope: "organization", connectedAt: o2.connectedAt });
    expect((await a.call("GET", "/v1/org/connections?provider=resend", { key: a.orgKey })).body.map((c: any) => c.id)).toEqual([o1]);
    // A project key of an admin or owner acts on its organization (O).
    expect((await a.call("GET", "/v1/org/connections")).body).toHaveLength(3);
  });

  test("GET /org/connections/{provider}: that provider's organization connections; unknown → []", async () => {
    const a = await createTestApi();
    const o1 = await connect(a, "resend", "R1", { org: true });
    const o2 = await connect(a, "resend", "R2", { org: true });
    await connect(a, "cloudflare", "CF", { org: true });
    await connect(a, "resend", "Project R");
    const res = await a.call("GET", "/v1/org/connections/resend", { key: a.orgKey });
    expect(res.status).toBe(200);
    expect(res.body.map((c: any) => c.id)).toEqual([o2, o1]);
    for (const c of res.body) expect(Object.keys(c).sort()).toEqual(ORG_CONNECTION_KEYS);
    expect((await a.call("GET", "/v1/org/connections/nope", { key: a.orgKey })).body).toEqual([]);
  });

  test("PATCH /org/connections/{id} (admin): {id, provider, status, label}; Label is required; project or foreign connection → 404", async () => {
    const a = await createTestApi();
    const org = await connect(a, "resend", "Org", { org: true });
    const res = await a.call("PATCH", `/v1/org/connections/${org}`, { key: a.orgKey, body: { label: " Shared mail " } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: org, provider: "resend", status: "connected", label: "Shared mail" });
    for (const body of [{}, { label: "" }, { label: "  " }, { label: null }]) expectFlat(await a.call("PATCH", `/v1/org/connections/${org}`, { key: a.orgKey, body }), 400, "Label is required");
    const project = await connect(a, "resend", "Project");
    expectEnvelope(await a.call("PATCH", `/v1/org/connections/${project}`, { key: a.orgKey, body: { label: "x" } }), 404, "Connection not found");
    expectEnvelope(await a.call("PATCH", `/v1/org/connections/${UNKNOWN}`, { key: a.orgKey, body: { label: "x" } }), 404, "Connection not found");
    const otherOrg = await addOrganization(a, "Org conn other");
    expectEnvelope(await a.call("PATCH", `/v1/org/connections/${org}`, { key: otherOrg.orgKey, body: { label: "x" } }), 404, "Connection not found");
    const admin = await addMember(a, "admin");
    expect((await a.call("PATCH", `/v1/org/connections/${org}`, { key: admin.orgKey, body: { label: "By admin" } })).body.label).toBe("By admin");
  });

  test("DELETE /org/connections/{id}: 204, then 404; a project connection → 404", async () => {
    const a = await createTestApi();
    const org = await connect(a, "resend", "Org", { org: true });
    const project = await connect(a, "resend", "Project");
    expectEnvelope(await a.call("DELETE", `/v1/org/connections/${project}`, { key: a.orgKey }), 404, "Connection not found");
    const del = await a.call("DELETE", `/v1/org/connections/${org}`, { key: a.orgKey });
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expectEnvelope(await a.call("DELETE", `/v1/org/connections/${org}`, { key: a.orgKey }), 404, "Connection not found");
    expect((await a.call("GET", "/v1/connections")).body.map((c: any) => c.id)).toEqual([project]);
  });

  test("O·admin: a member gets 403 on every organization connection route; no key → 401", async () => {
    const a = await createTestApi();
    const org = await connect(a, "resend", "Org", { org: true });
    const member = await addMember(a, "member");
    expectEnvelope(await a.call("GET", "/v1/org/connections", { key: member.projectKey }), 403, "Insufficient permissions");
    expectEnvelope(await a.call("GET", "/v1/org/connections/resend", { key: member.projectKey }), 403, "Insufficient permissions");
    expectEnvelope(await a.call("PATCH", `/v1/org/connections/${org}`, { key: member.projectKey, body: { label: "x" } }), 403, "Insufficient permissions");
    expectEnvelope(await a.call("DELETE", `/v1/org/connections/${org}`, { key: member.projectKey }), 403, "Insufficient permissions");
    expectUnauthorized(await a.call("GET", "/v1/org/connections", { key: null }));
    // The member still sees it through the project routes.
    expect((await a.call("GET", `/v1/connections/${org}`, { key: member.projectKey })).status).toBe(200);
  });
});
