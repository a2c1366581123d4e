// Agents (docs/api.md#agents-and-tokens without grants; docs/api.md#agents-and-tokens).
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, test } from "bun:test";
import { tokenHash } from "../../src/crypto/hash.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addProject, AGENT_TOKEN, expectEnvelope, expectFlat, ISO_MS, UUID_V4 } from "./helpers.ts";

const IDENTIFIER_MESSAGE =
  "Identifier must be 1-50 characters, start with a letter or number, and contain only lowercase letters, numbers, and hyphens";

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

async function createAgent(a: TestApi, body: Record<string, unknown>) {
  const res = await a.call("POST", "/v1/agents", { body });
  expect(res.status).toBe(201);
  return res.body;
}

const AGENT_KEYS_WITH_TOKEN = ["accessToken", "createdAt", "id", "identifier", "isDefault", "lastSeenAt", "mode", "name", "updatedAt"];
const AGENT_KEYS = AGENT_KEYS_WITH_TOKEN.filter((k) => k !== "accessToken");

describe("GET /agents and the default agent", () => {
  test("a new project has the Default Agent {Default Agent, default, all, isDefault}", async () => {
    const res = await api.call("GET", "/v1/agents");
    expect(res.status).toBe(200);
    const def = res.body[0];
    expect(Object.keys(def).sort()).toEqual(AGENT_KEYS_WITH_TOKEN);
    expect(def).toMatchObject({ name: "Default Agent", identifier: "default", mode: "all", isDefault: true, lastSeenAt: null });
    expect(def.id).toMatch(UUID_V4);
    expect(def.accessToken).toMatch(AGENT_TOKEN);
    expect(def.accessToken).toBe(api.core.bootstrap.defaultAgentToken);
    expect(def.createdAt).toMatch(ISO_MS);
    expect(def.updatedAt).toMatch(ISO_MS);
  });

  test("GET /agents/default → Agent with accessToken", async () => {
    const res = await api.call("GET", "/v1/agents/default");
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(AGENT_KEYS_WITH_TOKEN);
    expect(res.body.isDefault).toBe(true);
    expect(res.body.accessToken).toMatch(AGENT_TOKEN);
  });

  test("GET /agents/default without a default agent → flat 404", async () => {
    const fresh = await createTestApi();
    await fresh.core.store.query(sql`DELETE FROM agents WHERE project_id = ${fresh.projectId}`);
    expectFlat(await fresh.call("GET", "/v1/agents/default"), 404, "No default agent found");
    expect((await fresh.call("GET", "/v1/agents")).body).toEqual([]);
  });

  test("GET /agents/{id} → Agent without accessToken; unknown → 404 envelope", async () => {
    const def = (await api.call("GET", "/v1/agents/default")).body;
    const res = await api.call("GET", `/v1/agents/${def.id}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(AGENT_KEYS);
    expect(res.text).not.toContain("agt_");
    expectEnvelope(await api.call("GET", "/v1/agents/00000000-0000-4000-8000-000000000000"), 404, "Agent not found");
    expectEnvelope(await api.call("GET", "/v1/agents/not-a-uuid"), 404, "Agent not found");
  });

  test("ordering: isDefault desc, then createdAt desc", async () => {
    const fresh = await createTestApi();
    const ids: string[] = [];
    for (const identifier of ["first", "second", "third"]) {
      ids.push((await createAgent(fresh, { name: identifier, identifier })).id);
      await Bun.sleep(3);
    }
    let list = (await fresh.call("GET", "/v1/agents")).body;
    expect(list.map((a: any) => a.identifier)).toEqual(["default", "third", "second", "first"]);
    expect(list.every((a: any) => AGENT_TOKEN.test(a.accessToken))).toBe(true);

    expect((await fresh.call("POST", `/v1/agents/${ids[0]}/set-default`)).status).toBe(200);
    list = (await fresh.call("GET", "/v1/agents")).body;
    expect(list.map((a: any) => a.identifier)).toEqual(["first", "third", "second", "default"]);
    expect(list.filter((a: any) => a.isDefault).length).toBe(1);
  });

  test("agents are project-scoped", async () => {
    const other = await addProject(api, "Agents Elsewhere");
    const mine = await createAgent(api, { name: "Mine", identifier: "mine-only" });
    expectEnvelope(await api.call("GET", `/v1/agents/${mine.id}`, { key: other.projectKey }), 404, "Agent not found");
    expectEnvelope(await api.call("PATCH", `/v1/agents/${mine.id}`, { key: other.projectKey, body: { name: "x" } }), 404, "Agent not found");
    expectEnvelope(await api.call("DELETE", `/v1/agents/${mine.id}`, { key: other.projectKey }), 404, "Agent not found");
    expectEnvelope(await api.call("POST", `/v1/agents/${mine.id}/set-default`, { key: other.projectKey }), 404, "Agent not found");
    expectEnvelope(await api.call("POST", `/v1/agents/${mine.id}/regenerate-token`, { key: other.projectKey }), 404, "Agent not found");
    // The same identifier may exist in another project.
    expect((await api.call("POST", "/v1/agents", { key: other.projectKey, body: { name: "Mine", identifier: "mine-only" } })).status).toBe(201);
    expect((await api.call("GET", `/v1/agents/${mine.id}`)).body.name).toBe("Mine");
  });
});

describe("POST /agents", () => {
  test("example 7: 201 {id,name,identifier,mode:'grants',isDefault:false,createdAt}, then 409 on the same identifier", async () => {
    const res = await api.call("POST", "/v1/agents", { body: { name: "A", identifier: "a1" } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(["createdAt", "id", "identifier", "isDefault", "mode", "name"]);
    expect(res.body).toMatchObject({ name: "A", identifier: "a1", mode: "grants", isDefault: false });
    expect(res.body.id).toMatch(UUID_V4);
    expect(res.body.createdAt).toMatch(ISO_MS);
    expect(res.text).not.toContain("agt_");
    expectEnvelope(await api.call("POST", "/v1/agents", { body: { name: "B", identifier: "a1" } }), 409, "An agent with this identifier already exists");
    expectEnvelope(await api.call("POST", "/v1/agents", { body: { name: "Dup of default", identifier: "default" } }), 409, "An agent with this identifier already exists");
  });

  test("example 6: a bad identifier → 400 flat seed message", async () => {
    const res = await api.call("POST", "/v1/agents", { body: { name: "A", identifier: "Bad_Id" } });
    expect(res.text).toBe(JSON.stringify({ error: IDENTIFIER_MESSAGE }));
    expectFlat(res, 400, IDENTIFIER_MESSAGE);
  });

  test("mode 'all' is kept; parentIdentifier is accepted and ignored; name is trimmed", async () => {
    const res = await api.call("POST", "/v1/agents", { body: { name: "  Spaced  ", identifier: "all-mode", mode: "all", parentIdentifier: "default" } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: "Spaced", mode: "all", isDefault: false });
    expect("parentIdentifier" in res.body).toBe(false);
  });

  test.each([
    [{ identifier: "x1" }, "name is required"],
    [{ name: null, identifier: "x1" }, "name is required"],
    [{ name: "", identifier: "x1" }, "name must be 1-255 characters"],
    [{ name: "    ", identifier: "x1" }, "name must be 1-255 characters"],
    [{ name: "x".repeat(256), identifier: "x1" }, "name must be 1-255 characters"],
    [{ name: 5, identifier: "x1" }, "name must be a string"],
    [{ name: "A" }, IDENTIFIER_MESSAGE],
    [{ name: "A", identifier: null }, IDENTIFIER_MESSAGE],
    [{ name: "A", identifier: "" }, IDENTIFIER_MESSAGE],
    [{ name: "A", identifier: "UPPER" }, IDENTIFIER_MESSAGE],
    [{ name: "A", identifier: "-lead" }, IDENTIFIER_MESSAGE],
    [{ name: "A", identifier: "under_score" }, IDENTIFIER_MESSAGE],
    [{ name: "A", identifier: "sp ace" }, IDENTIFIER_MESSAGE],
    [{ name: "A", identifier: "a".repeat(51) }, IDENTIFIER_MESSAGE],
    [{ name: "A", identifier: "ünïcode" }, IDENTIFIER_MESSAGE],
    [{ name: "A", identifier: 12 }, IDENTIFIER_MESSAGE],
    [{ name: "A", identifier: "ok-1", mode: "some" }, "mode must be one of: all, grants"],
    [{ name: "A", identifier: "ok-1", mode: 1 }, "mode must be one of: all, grants"],
    [{ name: "", identifier: "Bad_Id", mode: "x" }, "name must be 1-255 characters"],
    [{ name: "A", identifier: "Bad_Id", mode: "x" }, IDENTIFIER_MESSAGE],
  ])("%j → %p", async (body, message) => {
    expectFlat(await api.call("POST", "/v1/agents", { body }), 400, message);
  });

  test("identifier boundaries: 1 and 50 characters, digits first, hyphens inside", async () => {
    for (const identifier of ["z", "9lives", "a".repeat(50), "a-b-c", "x-"]) {
      const res = await api.call("POST", "/v1/agents", { body: { name: "Edge", identifier } });
      expect(res.status).toBe(201);
      expect(res.body.identifier).toBe(identifier);
    }
    expect((await api.call("POST", "/v1/agents", { body: { name: "x".repeat(255), identifier: "long-name" } })).status).toBe(201);
  });
});

describe("PATCH /agents/{id}", () => {
  test("updates name and mode; response has no accessToken", async () => {
    const agent = await createAgent(api, { name: "Patch me", identifier: "patch-me" });
    const res = await api.call("PATCH", `/v1/agents/${agent.id}`, { body: { name: "  Patched  " } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(AGENT_KEYS);
    expect(res.body).toMatchObject({ id: agent.id, name: "Patched", mode: "grants", identifier: "patch-me" });
    const res2 = await api.call("PATCH", `/v1/agents/${agent.id}`, { body: { mode: "all" } });
    expect(res2.body).toMatchObject({ name: "Patched", mode: "all" });
    expect((await api.call("GET", `/v1/agents/${agent.id}`)).body).toMatchObject({ name: "Patched", mode: "all" });
  });

  test("identifier is immutable: a body with only identifier has no field to update", async () => {
    const agent = await createAgent(api, { name: "Immutable", identifier: "immutable" });
    expectFlat(await api.call("PATCH", `/v1/agents/${agent.id}`, { body: { identifier: "changed" } }), 400, "No fields to update");
    const res = await api.call("PATCH", `/v1/agents/${agent.id}`, { body: { identifier: "changed", name: "Still" } });
    expect(res.status).toBe(200);
    expect(res.body.identifier).toBe("immutable");
  });

  test("{} or an absent body → flat 'No fields to update'", async () => {
    const agent = await createAgent(api, { name: "Empty", identifier: "empty-patch" });
    expectFlat(await api.call("PATCH", `/v1/agents/${agent.id}`, { body: {} }), 400, "No fields to update");
    expectFlat(await api.call("PATCH", `/v1/agents/${agent.id}`), 400, "No fields to update");
  });

  test("validator messages", async () => {
    const agent = await createAgent(api, { name: "Valid", identifier: "valid-patch" });
    expectFlat(await api.call("PATCH", `/v1/agents/${agent.id}`, { body: { name: "" } }), 400, "name must be 1-255 characters");
    expectFlat(await api.call("PATCH", `/v1/agents/${agent.id}`, { body: { name: "x".repeat(256) } }), 400, "name must be 1-255 characters");
    expectFlat(await api.call("PATCH", `/v1/agents/${agent.id}`, { body: { mode: "none" } }), 400, "mode must be one of: all, grants");
    expectFlat(await api.call("PATCH", `/v1/agents/${agent.id}`, { body: { name: 1, mode: "none" } }), 400, "name must be a string");
    expect((await api.call("GET", `/v1/agents/${agent.id}`)).body).toMatchObject({ name: "Valid", mode: "grants" });
  });

  test("unknown id → 404 envelope", async () => {
    expectEnvelope(await api.call("PATCH", "/v1/agents/00000000-0000-4000-8000-000000000000", { body: { name: "x" } }), 404, "Agent not found");
  });
});

describe("DELETE, set-default, regenerate-token", () => {
  test("example 8: the default agent cannot be deleted nor set default again", async () => {
    const def = (await api.call("GET", "/v1/agents/default")).body;
    expectEnvelope(await api.call("DELETE", `/v1/agents/${def.id}`), 400, "Cannot delete the default agent");
    expectEnvelope(await api.call("POST", `/v1/agents/${def.id}/set-default`), 400, "Agent is already the default");
    expect((await api.call("GET", `/v1/agents/${def.id}`)).status).toBe(200);
  });

  test("DELETE → 204 with an empty body; then 404", async () => {
    const agent = await createAgent(api, { name: "Doomed", identifier: "doomed" });
    const res = await api.call("DELETE", `/v1/agents/${agent.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expectEnvelope(await api.call("GET", `/v1/agents/${agent.id}`), 404, "Agent not found");
    expectEnvelope(await api.call("DELETE", `/v1/agents/${agent.id}`), 404, "Agent not found");
    // Its identifier is free again.
    expect((await api.call("POST", "/v1/agents", { body: { name: "Reborn", identifier: "doomed" } })).status).toBe(201);
  });

  test("set-default → {success:true}; exactly one default; the old default becomes deletable", async () => {
    const fresh = await createTestApi();
    const oldDefault = (await fresh.call("GET", "/v1/agents/default")).body;
    const agent = await createAgent(fresh, { name: "New default", identifier: "new-default" });
    const res = await fresh.call("POST", `/v1/agents/${agent.id}/set-default`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    const now = (await fresh.call("GET", "/v1/agents/default")).body;
    expect(now.id).toBe(agent.id);
    expect(now.isDefault).toBe(true);
    expect((await fresh.call("GET", `/v1/agents/${oldDefault.id}`)).body.isDefault).toBe(false);
    expect((await fresh.call("GET", "/v1/agents")).body.filter((a: any) => a.isDefault).map((a: any) => a.id)).toEqual([agent.id]);
    expectEnvelope(await fresh.call("DELETE", `/v1/agents/${agent.id}`), 400, "Cannot delete the default agent");
    expect((await fresh.call("DELETE", `/v1/agents/${oldDefault.id}`)).status).toBe(204);
    expectEnvelope(await fresh.call("POST", "/v1/agents/00000000-0000-4000-8000-000000000000/set-default"), 404, "Agent not found");
  });

  test("regenerate-token → {accessToken}; the old token stops matching at once", async () => {
    const agent = await createAgent(api, { name: "Rotating", identifier: "rotating" });
    const before = (await api.call("GET", "/v1/agents")).body.find((a: any) => a.id === agent.id).accessToken;
    expect(before).toMatch(AGENT_TOKEN);
    const res = await api.call("POST", `/v1/agents/${agent.id}/regenerate-token`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(["accessToken"]);
    expect(res.body.accessToken).toMatch(AGENT_TOKEN);
    expect(res.body.accessToken).not.toBe(before);
    const listed = (await api.call("GET", "/v1/agents")).body;
    expect(listed.find((a: any) => a.id === agent.id).accessToken).toBe(res.body.accessToken);
    expect(JSON.stringify(listed)).not.toContain(before);
    // The gateway authenticates by token hash: the old one no longer names any agent, the new one does.
    const { store } = api.core;
    expect(await store.query(sql`SELECT id FROM agents WHERE token_hash = ${tokenHash(before)}`)).toEqual([]);
    expect(await store.query(sql`SELECT id FROM agents WHERE token_hash = ${tokenHash(res.body.accessToken)}`)).toEqual([{ id: agent.id }]);
    expectEnvelope(await api.call("POST", "/v1/agents/00000000-0000-4000-8000-000000000000/regenerate-token"), 404, "Agent not found");
  });

  test("the default agent's token in /agents/default follows regeneration", async () => {
    const fresh = await createTestApi();
    const def = (await fresh.call("GET", "/v1/agents/default")).body;
    const { accessToken } = (await fresh.call("POST", `/v1/agents/${def.id}/regenerate-token`)).body;
    expect((await fresh.call("GET", "/v1/agents/default")).body.accessToken).toBe(accessToken);
  });
});
