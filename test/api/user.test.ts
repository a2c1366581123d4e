// The calling user (docs/api.md#users-and-keys) and the organization's settings and API key (docs/api.md#organization-level-routes).
import { beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addMember, expectEnvelope, expectFlat, expectUnauthorized, ISO_MS, UUID_V4 } from "./helpers.ts";

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

describe("GET/PATCH /user", () => {
  test("GET /user → User {id, email, name, createdAt}, with a project key or an org key (no project header)", async () => {
    for (const key of [api.projectKey, api.orgKey]) {
      const res = await api.call("GET", "/v1/user", { key });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(["createdAt", "email", "id", "name"]);
      expect(res.body.id).toMatch(UUID_V4);
      expect(res.body.email).toBe("owner@localhost");
      expect(res.body.createdAt).toMatch(ISO_MS);
    }
    expectUnauthorized(await api.call("GET", "/v1/user", { key: null }));
  });

  test("each key acts as its holder", async () => {
    const member = await addMember(api, "member", "someone@example.com");
    const res = await api.call("GET", "/v1/user", { key: member.projectKey });
    expect(res.body).toMatchObject({ id: member.user.id, email: "someone@example.com" });
  });

  test("PATCH /user {name} → 200 {id, email, name}, trimmed", async () => {
    const fresh = await createTestApi();
    const res = await fresh.call("PATCH", "/v1/user", { body: { name: "  Ada Lovelace  " } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["email", "id", "name"]);
    expect(res.body).toMatchObject({ email: "owner@localhost", name: "Ada Lovelace" });
    expect((await fresh.call("GET", "/v1/user", { key: fresh.orgKey })).body.name).toBe("Ada Lovelace");
    expect((await fresh.call("PATCH", "/v1/user", { body: { name: "x".repeat(255) } })).status).toBe(200);
  });

  test.each([
    [{ name: "" }, "name must be 1-255 characters"],
    [{ name: "   " }, "name must be 1-255 characters"],
    [{ name: "x".repeat(256) }, "name must be 1-255 characters"],
    [{ name: 42 }, "name must be a string"],
    [{ name: null }, "name is required"],
    [{}, "name is required"],
  ])("PATCH /user %j → flat %p", async (body, message) => {
    const before = (await api.call("GET", "/v1/user")).body.name;
    expectFlat(await api.call("PATCH", "/v1/user", { body }), 400, message);
    expect((await api.call("GET", "/v1/user")).body.name).toBe(before);
  });
});

describe("GET /user/api-key and regeneration", () => {
  test("GET /user/api-key with the project key → {apiKey} = that key", async () => {
    const res = await api.call("GET", "/v1/user/api-key");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ apiKey: api.projectKey });
  });

  test("a member gets their own project key", async () => {
    const member = await addMember(api, "member");
    expect((await api.call("GET", "/v1/user/api-key", { key: member.projectKey })).body).toEqual({ apiKey: member.projectKey });
  });

  test("a missing key is created on demand for an admin's org key + X-Project-Id", async () => {
    const { orgs, apiKeys } = api.core.services;
    const user = await orgs.createUser("keyless-admin@example.com", "Keyless");
    await orgs.addMember(api.organizationId, user.id, "admin");
    const orgKey = await apiKeys.keyFor({ kind: "organization", userId: user.id, organizationId: api.organizationId });
    const res = await api.call("GET", "/v1/user/api-key", { key: orgKey, headers: { "x-project-id": api.projectId } });
    expect(res.status).toBe(200);
    expect(res.body.apiKey).toMatch(/^svc_[0-9a-f]{64}$/);
    expect(res.body.apiKey).not.toBe(api.projectKey);
    // Stable on repeat, and usable.
    expect((await api.call("GET", "/v1/user/api-key", { key: orgKey, headers: { "x-project-id": api.projectId } })).body.apiKey).toBe(res.body.apiKey);
    expect((await api.call("GET", "/v1/user", { key: res.body.apiKey })).body.email).toBe("keyless-admin@example.com");
  });

  test("POST /user/api-key/regenerate → a new key; the old one dies at once", async () => {
    const fresh = await createTestApi();
    const old = fresh.projectKey;
    const res = await fresh.call("POST", "/v1/user/api-key/regenerate", { key: old });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(["apiKey"]);
    expect(res.body.apiKey).toMatch(/^svc_[0-9a-f]{64}$/);
    expect(res.body.apiKey).not.toBe(old);
    expectUnauthorized(await fresh.call("GET", "/v1/agents", { key: old }));
    expect((await fresh.call("GET", "/v1/agents", { key: res.body.apiKey })).status).toBe(200);
    expect((await fresh.call("GET", "/v1/user/api-key", { key: res.body.apiKey })).body).toEqual({ apiKey: res.body.apiKey });
    // The org key is untouched.
    expect((await fresh.call("GET", "/v1/org/settings", { key: fresh.orgKey })).status).toBe(200);
  });

  test("regeneration through an org key needs X-Project-Id", async () => {
    const fresh = await createTestApi();
    expectEnvelope(await fresh.call("POST", "/v1/user/api-key/regenerate", { key: fresh.orgKey }), 400, "X-Project-Id header is required");
    expect((await fresh.call("GET", "/v1/agents", { key: fresh.projectKey })).status).toBe(200);
    const res = await fresh.call("POST", "/v1/user/api-key/regenerate", { key: fresh.orgKey, headers: { "x-project-id": fresh.projectId } });
    expect(res.status).toBe(200);
    expectUnauthorized(await fresh.call("GET", "/v1/agents", { key: fresh.projectKey }));
  });
});

describe("organization settings and API key (docs/api.md#organization-level-routes)", () => {
  test("GET /org/settings → Organization", async () => {
    const res = await api.call("GET", "/v1/org/settings", { key: api.orgKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: api.organizationId,
      name: "Default Organization",
      slug: "default-organization",
      partnerManaged: false,
      partnerDetached: false,
      claimed: true,
      createdAt: expect.stringMatching(ISO_MS),
    });
    expect(res.body.id).toMatch(/^[a-z]{16}$/);
    expect(api.projectId).toMatch(/^[a-z]{16}$/);
    // Bootstrap (docs/configuration.md#first-start): "Default Organization", "Default Project", owner@localhost.
    expect((await api.core.services.orgs.getProject(api.projectId))?.name).toBe("Default Project");
    // The owner's project key gives the same organization context.
    expect((await api.call("GET", "/v1/org/settings")).body.id).toBe(api.organizationId);
  });

  test("PATCH /org/settings {name} → Organization; validation is flat 400", async () => {
    const fresh = await createTestApi();
    const res = await fresh.call("PATCH", "/v1/org/settings", { key: fresh.orgKey, body: { name: "Acme" } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: fresh.organizationId, name: "Acme" });
    expectFlat(await fresh.call("PATCH", "/v1/org/settings", { key: fresh.orgKey, body: { name: "" } }), 400, "name must be 1-255 characters");
    expectFlat(await fresh.call("PATCH", "/v1/org/settings", { key: fresh.orgKey, body: { name: "x".repeat(256) } }), 400, "name must be 1-255 characters");
    expectFlat(await fresh.call("PATCH", "/v1/org/settings", { key: fresh.orgKey, body: {} }), 400, "name is required");
    expect((await fresh.call("GET", "/v1/org/settings", { key: fresh.orgKey })).body.name).toBe("Acme");
    const member = await addMember(fresh, "member");
    expectEnvelope(await fresh.call("PATCH", "/v1/org/settings", { key: member.projectKey, body: { name: "Hijack" } }), 403, "Insufficient permissions");
  });

  test("GET /org/api-key → the caller's org key; a project key, whatever its holder's role → 403", async () => {
    expect((await api.call("GET", "/v1/org/api-key", { key: api.orgKey })).body).toEqual({ apiKey: api.orgKey });
    // The default key of these calls is the owner's project key: a key for one project never mints one for all.
    expectEnvelope(await api.call("GET", "/v1/org/api-key"), 403, "Insufficient permissions");
    expectEnvelope(await api.call("POST", "/v1/org/api-key/regenerate"), 403, "Insufficient permissions");
    expect((await api.call("GET", "/v1/org/api-key", { key: api.orgKey })).body).toEqual({ apiKey: api.orgKey });
  });

  test("POST /org/api-key/regenerate → new org key; the old one → 401", async () => {
    const fresh = await createTestApi();
    const res = await fresh.call("POST", "/v1/org/api-key/regenerate", { key: fresh.orgKey });
    expect(res.status).toBe(200);
    expect(res.body.apiKey).toMatch(/^svc_org_[0-9a-f]{64}$/);
    expect(res.body.apiKey).not.toBe(fresh.orgKey);
    expectUnauthorized(await fresh.call("GET", "/v1/org/settings", { key: fresh.orgKey }));
    expect((await fresh.call("GET", "/v1/org/settings", { key: res.body.apiKey })).status).toBe(200);
    expect((await fresh.call("GET", "/v1/org/api-key", { key: res.body.apiKey })).body).toEqual({ apiKey: res.body.apiKey });
    // The project key is untouched.
    expect((await fresh.call("GET", "/v1/agents")).status).toBe(200);
  });
});
