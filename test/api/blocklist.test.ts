// App blocklists (docs/policy.md#app-blocklists blocklist rows and "Blocklist", docs/policy.md#app-blocklists, docs/api.md#organization-level-routes
// variant, docs/policy.md#managed-rules `include=managed` and managed-rule ids, docs/injection.md#host-and-path-patterns host pattern messages). Entries are managed
// block rules, live at once (no publish).
import { describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addMember, addOrganization, addProject, expectEnvelope, expectFlat, expectUnauthorized, UUID_V4 } from "./helpers.ts";

const UNKNOWN = "00000000-0000-4000-8000-000000000000";
const EITHER = "Provide either { hostId } or { name, hostPattern }";
const ENTRY_KEYS = ["custom", "enabled", "hostId", "hostPattern", "name", "ruleId", "scope"];
const GIST = { hostId: "gist", custom: false, name: "GitHub Gists", hostPattern: "gist.github.com" };
const UPLOADS = { hostId: "uploads", custom: false, name: "GitHub uploads", hostPattern: "uploads.github.com" };
const inactive = (e: object) => ({ ...e, ruleId: null, enabled: false, scope: null });

const list = async (a: TestApi, provider = "github", prefix = "/v1/apps", key?: string) => {
  const res = await a.call("GET", `${prefix}/${provider}/blocklist`, { key });
  expect(res.status).toBe(200);
  return res.body as any[];
};
const add = (a: TestApi, body: unknown, provider = "github", prefix = "/v1/apps", key?: string) => a.call("POST", `${prefix}/${provider}/blocklist`, { key, body });
const managed = async (a: TestApi, prefix = "/v1/policy", key?: string) =>
  ((await a.call("GET", `${prefix}/rules?include=managed`, { key })).body as any[]).filter((r) => r.source === "blocklist");

describe("GET /apps/{provider}/blocklist", () => {
  test("every predefined host, inactive: ruleId null, scope null; an app without predefined hosts → []", async () => {
    const a = await createTestApi();
    const entries = await list(a);
    for (const e of entries) expect(Object.keys(e).sort()).toEqual(ENTRY_KEYS);
    expect(entries).toEqual([inactive(GIST), inactive(UPLOADS)]);
    expect(await list(a, "resend")).toEqual([]);
    expect((await list(a, "google-drive")).map((e) => e.hostId)).toEqual(["drive_web", "drive_downloads", "docs_web"]);
    expectFlat(await a.call("GET", "/v1/apps/x/blocklist"), 404, "Unknown provider: x");
    expectUnauthorized(await a.call("GET", "/v1/apps/github/blocklist", { key: null }));
  });
});

describe("POST /apps/{provider}/blocklist", () => {
  test("{hostId} activates a predefined host: 200 entry enabled, scope project; again → 409", async () => {
    const a = await createTestApi();
    const res = await add(a, { hostId: "gist" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...GIST, ruleId: expect.stringMatching(UUID_V4), enabled: true, scope: "project" });
    expect(await list(a)).toEqual([res.body, inactive(UPLOADS)]);
    const again = await add(a, { hostId: "gist" });
    expect(again.text).toBe('{"error":{"message":"This host is already blocked","type":"invalid_request_error"}}');
    expectEnvelope(again, 409, "This host is already blocked");
  });

  test("{name, hostPattern} creates a custom rule: hostId custom:<pattern>, lowercased, trimmed; a duplicate → 409", async () => {
    const a = await createTestApi();
    const res = await add(a, { name: "  Evil mirror  ", hostPattern: " Evil.Example.COM " });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      hostId: "custom:evil.example.com",
      ruleId: expect.stringMatching(UUID_V4),
      enabled: true,
      custom: true,
      name: "Evil mirror",
      hostPattern: "evil.example.com",
      scope: "project",
    });
    const wild = await add(a, { name: "Any pages", hostPattern: "*.pages.example.com" });
    expect(wild.body.hostId).toBe("custom:*.pages.example.com");
    expect(await list(a)).toEqual([inactive(GIST), inactive(UPLOADS), res.body, wild.body]);
    expectEnvelope(await add(a, { name: "Other name", hostPattern: "evil.example.com" }), 409, "This host is already blocked");
    // A custom pattern equal to a predefined host is its own entry.
    expect((await add(a, { name: "Gists", hostPattern: "gist.github.com" })).body.hostId).toBe("custom:gist.github.com");
  });

  test("shape: Provide either { hostId } or { name, hostPattern } (flat 400)", async () => {
    const a = await createTestApi();
    for (const body of [
      {},
      { name: "x" },
      { hostPattern: "x.com" },
      { hostId: "gist", name: "x" },
      { hostId: "gist", hostPattern: "x.com" },
      { hostId: "gist", name: "x", hostPattern: "x.com" },
      { hostId: "  " },
      { name: "  ", hostPattern: "x.com" },
      { name: "x", hostPattern: "   " },
    ]) {
      expectFlat(await add(a, body), 400, EITHER);
    }
    expectFlat(await a.call("POST", "/v1/apps/github/blocklist"), 400, EITHER);
    expectFlat(await add(a, { hostId: 5 }), 400, "hostId must be a string");
    expectFlat(await add(a, { name: "n".repeat(256), hostPattern: "x.com" }), 400, "name must be at most 255 characters");
    expectFlat(await add(a, "{nope"), 400, "Request body must be valid JSON");
    expect((await list(a)).every((e) => e.ruleId === null)).toBe(true);
  });

  test("hostPattern messages (docs/injection.md#secrets), flat 400", async () => {
    const a = await createTestApi();
    const cases: [string, string][] = [
      ["https://evil.example.com", "Enter a hostname, not a URL (remove http:// or https://)"],
      ["http://evil.example.com", "Enter a hostname, not a URL (remove http:// or https://)"],
      ["evil.example.com/path", "Enter a hostname only, not a path (use the path pattern field for paths)"],
      ["evil example.com", "Host pattern must not contain spaces"],
      ["api.*.example.com", "Wildcards are only allowed as a leading subdomain, e.g. *.example.com"],
      ["*evil.example.com", "Wildcards are only allowed as a leading subdomain, e.g. *.example.com"],
      ["*", "Wildcards are only allowed as a leading subdomain, e.g. *.example.com"],
      ["*.com", "A wildcard can't cover a public suffix like *.com; use a specific domain, e.g. *.example.com"],
      ["*.co.uk", "A wildcard can't cover a public suffix like *.com; use a specific domain, e.g. *.example.com"],
      [`${Array(5).fill("a".repeat(60)).join(".")}.com`, "hostPattern must be at most 255 characters"],
      ["exa_mple..com", "Enter a valid hostname, e.g. api.example.com"],
    ];
    for (const [hostPattern, message] of cases) expectFlat(await add(a, { name: "n", hostPattern }), 400, message);
    expect((await list(a)).filter((e) => e.custom)).toEqual([]);
  });

  test("unknown hostId → 400 envelope; unknown provider → flat 404; hosts of another app are unknown", async () => {
    const a = await createTestApi();
    const res = await add(a, { hostId: "nope" });
    expect(res.text).toBe('{"error":{"message":"Unknown blocklist host ID","type":"invalid_request_error"}}');
    expectEnvelope(res, 400, "Unknown blocklist host ID");
    expectEnvelope(await add(a, { hostId: "registry" }), 400, "Unknown blocklist host ID"); // gitlab's
    expectEnvelope(await add(a, { hostId: "custom:evil.example.com" }), 400, "Unknown blocklist host ID");
    expectFlat(await add(a, { hostId: "gist" }, "x"), 404, "Unknown provider: x");
    expectEnvelope(await add(a, { hostId: "gist" }, "resend"), 400, "Unknown blocklist host ID");
    expect((await add(a, { name: "Resend dashboard", hostPattern: "resend.com" }, "resend")).status).toBe(200);
  });
});

describe("PATCH/DELETE /apps/{provider}/blocklist/{ruleId}", () => {
  test("PATCH {enabled} → {success:true}; a disabled entry is re-activated by POST; validation and 404", async () => {
    const a = await createTestApi();
    const entry = (await add(a, { hostId: "uploads" })).body;
    const off = await a.call("PATCH", `/v1/apps/github/blocklist/${entry.ruleId}`, { body: { enabled: false } });
    expect(off.status).toBe(200);
    expect(off.body).toEqual({ success: true });
    expect((await list(a))[1]).toEqual({ ...entry, enabled: false });
    expect(await managed(a)).toEqual([]);
    const on = await add(a, { hostId: "uploads" });
    expect(on.status).toBe(200);
    expect(on.body).toEqual(entry);
    expect((await a.call("PATCH", `/v1/apps/github/blocklist/${entry.ruleId}`, { body: { enabled: true } })).status).toBe(200);

    expectFlat(await a.call("PATCH", `/v1/apps/github/blocklist/${entry.ruleId}`, { body: {} }), 400, "enabled is required");
    expectFlat(await a.call("PATCH", `/v1/apps/github/blocklist/${entry.ruleId}`, { body: { enabled: null } }), 400, "enabled is required");
    expectFlat(await a.call("PATCH", `/v1/apps/github/blocklist/${entry.ruleId}`, { body: { enabled: "no" } }), 400, "enabled must be a boolean");
    const missing = await a.call("PATCH", `/v1/apps/github/blocklist/${UNKNOWN}`, { body: { enabled: false } });
    expect(missing.text).toBe('{"error":{"message":"Blocklist rule not found","type":"not_found_error"}}');
    expectEnvelope(missing, 404, "Blocklist rule not found");
    // The rule belongs to github: through another app's path it is not found.
    expectEnvelope(await a.call("PATCH", `/v1/apps/gitlab/blocklist/${entry.ruleId}`, { body: { enabled: false } }), 404, "Blocklist rule not found");
    expectFlat(await a.call("PATCH", `/v1/apps/x/blocklist/${entry.ruleId}`, { body: { enabled: false } }), 404, "Unknown provider: x");
  });

  test("DELETE → 204 empty, then 404; the predefined host shows inactive again", async () => {
    const a = await createTestApi();
    const entry = (await add(a, { hostId: "gist" })).body;
    const custom = (await add(a, { name: "Evil", hostPattern: "evil.example.com" })).body;
    expectEnvelope(await a.call("DELETE", `/v1/apps/gitlab/blocklist/${entry.ruleId}`), 404, "Blocklist rule not found");
    const del = await a.call("DELETE", `/v1/apps/github/blocklist/${entry.ruleId}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expectEnvelope(await a.call("DELETE", `/v1/apps/github/blocklist/${entry.ruleId}`), 404, "Blocklist rule not found");
    expect((await a.call("DELETE", `/v1/apps/github/blocklist/${custom.ruleId}`)).status).toBe(204);
    expect(await list(a)).toEqual([inactive(GIST), inactive(UPLOADS)]);
    expectFlat(await a.call("DELETE", `/v1/apps/x/blocklist/${UNKNOWN}`), 404, "Unknown provider: x");
  });

  test("another project's rule, and the organization's rule, are not the project's to change", async () => {
    const a = await createTestApi();
    const other = await addProject(a, "Blocklist other");
    const theirs = (await add(a, { hostId: "gist" }, "github", "/v1/apps", other.projectKey)).body;
    expect((await list(a)).map((e) => e.ruleId)).toEqual([null, null]);
    expectEnvelope(await a.call("PATCH", `/v1/apps/github/blocklist/${theirs.ruleId}`, { body: { enabled: false } }), 404, "Blocklist rule not found");
    expectEnvelope(await a.call("DELETE", `/v1/apps/github/blocklist/${theirs.ruleId}`), 404, "Blocklist rule not found");
    const org = (await add(a, { hostId: "uploads" }, "github", "/v1/org/apps", a.orgKey)).body;
    expectEnvelope(await a.call("DELETE", `/v1/apps/github/blocklist/${org.ruleId}`), 404, "Blocklist rule not found");
    expectEnvelope(await a.call("DELETE", `/v1/org/apps/github/blocklist/${theirs.ruleId}`, { key: a.orgKey }), 404, "Blocklist rule not found");
  });
});

describe("organization blocklist", () => {
  test("O·admin; scope organization; the organization's rule wins in every project's view; another organization never sees it", async () => {
    const a = await createTestApi();
    const member = await addMember(a, "member");
    expectEnvelope(await add(a, { hostId: "gist" }, "github", "/v1/org/apps", member.projectKey), 403, "Insufficient permissions");
    expectEnvelope(await a.call("GET", "/v1/org/apps/github/blocklist", { key: member.projectKey }), 403, "Insufficient permissions");

    const own = (await add(a, { hostId: "gist" })).body;
    const org = await add(a, { hostId: "gist" }, "github", "/v1/org/apps", a.orgKey);
    expect(org.status).toBe(200);
    expect(org.body).toEqual({ ...GIST, ruleId: expect.stringMatching(UUID_V4), enabled: true, scope: "organization" });
    expect(org.body.ruleId).not.toBe(own.ruleId);
    expect(await list(a)).toEqual([org.body, inactive(UPLOADS)]);
    expect(await list(a, "github", "/v1/org/apps", a.orgKey)).toEqual([org.body, inactive(UPLOADS)]);
    // The organization's rule applies to every project.
    const second = await addProject(a, "Blocklist second");
    expect(await list(a, "github", "/v1/apps", second.projectKey)).toEqual([org.body, inactive(UPLOADS)]);
    // Disabled, it still wins in the view (an organization rule wins); the project's own stays underneath.
    await a.call("PATCH", `/v1/org/apps/github/blocklist/${org.body.ruleId}`, { key: a.orgKey, body: { enabled: false } });
    expect((await list(a))[0]).toEqual({ ...org.body, enabled: false });
    expect((await a.call("DELETE", `/v1/org/apps/github/blocklist/${org.body.ruleId}`, { key: a.orgKey })).status).toBe(204);
    expect(await list(a)).toEqual([own, inactive(UPLOADS)]);

    const custom = await add(a, { name: "Org evil", hostPattern: "evil.example.com" }, "github", "/v1/org/apps", a.orgKey);
    expect(custom.body).toMatchObject({ hostId: "custom:evil.example.com", custom: true, scope: "organization" });
    // The organization already blocks it; the project view lists it once.
    const mine = await add(a, { name: "Mine", hostPattern: "evil.example.com" });
    expect(mine.status).toBe(200);
    expect((await list(a)).filter((e) => e.custom)).toEqual([custom.body]);
    expectEnvelope(await add(a, { name: "Again", hostPattern: "evil.example.com" }, "github", "/v1/org/apps", a.orgKey), 409, "This host is already blocked");

    const otherOrg = await addOrganization(a, "Blocklist other org");
    expect(await list(a, "github", "/v1/apps", otherOrg.projectKey)).toEqual([inactive(GIST), inactive(UPLOADS)]);
    expect(await list(a, "github", "/v1/org/apps", otherOrg.orgKey)).toEqual([inactive(GIST), inactive(UPLOADS)]);
  });
});

describe("blocklist entries as managed rules (docs/policy.md#managed-rules include=managed)", () => {
  test("listed as published managed rules: source blocklist, name `Block <name>`, network target {hostPattern, pathPattern:/*}", async () => {
    const a = await createTestApi();
    const gist = (await add(a, { hostId: "gist" })).body;
    const custom = (await add(a, { name: "Evil mirror", hostPattern: "evil.example.com" })).body;
    // Without include=managed, only custom rules.
    expect((await a.call("GET", "/v1/policy/rules")).body).toEqual([]);
    const rules = await managed(a);
    expect(rules.map((r) => r.id)).toEqual([gist.ruleId, custom.ruleId]);
    expect(rules[0]).toMatchObject({
      id: gist.ruleId,
      logicalId: gist.ruleId,
      scope: "project",
      status: "published",
      generation: 0,
      priority: 0,
      enabled: true,
      isDefault: false,
      source: "blocklist",
      name: "Block GitHub Gists",
      action: "block",
      rateLimit: null,
      rateLimitWindow: null,
      requireApproval: false,
      conditions: null,
      identities: [],
      targets: [{ kind: "network", hostPattern: "gist.github.com", pathPattern: "/*" }],
    });
    expect(rules[1]).toMatchObject({ name: "Block Evil mirror", targets: [{ kind: "network", hostPattern: "evil.example.com", pathPattern: "/*" }] });
    // Drafts and published custom lists are untouched: managed rules are outside draft/publish.
    expect((await a.call("GET", "/v1/policy/rules?status=published&include=managed")).body.filter((r: any) => r.source === "blocklist")).toHaveLength(2);

    // Disabled → gone from the managed list; the organization's rules show under /org/policy.
    await a.call("PATCH", `/v1/apps/github/blocklist/${custom.ruleId}`, { body: { enabled: false } });
    expect((await managed(a)).map((r) => r.id)).toEqual([gist.ruleId]);
    const org = (await add(a, { hostId: "uploads" }, "github", "/v1/org/apps", a.orgKey)).body;
    expect((await managed(a)).map((r) => r.id)).toEqual([gist.ruleId]);
    const orgRules = await managed(a, "/v1/org/policy", a.orgKey);
    expect(orgRules).toHaveLength(1);
    expect(orgRules[0]).toMatchObject({ id: org.ruleId, scope: "organization", source: "blocklist", name: "Block GitHub uploads", targets: [{ kind: "network", hostPattern: "uploads.github.com", pathPattern: "/*" }] });
  });

  test("PATCH/DELETE of a managed id through /policy/rules → 404 Policy rule not found.; the entry survives", async () => {
    const a = await createTestApi();
    const gist = (await add(a, { hostId: "gist" })).body;
    const org = (await add(a, { hostId: "uploads" }, "github", "/v1/org/apps", a.orgKey)).body;
    expectEnvelope(await a.call("PATCH", `/v1/policy/rules/${gist.ruleId}`, { body: { name: "x" } }), 404, "Policy rule not found.");
    expectEnvelope(await a.call("DELETE", `/v1/policy/rules/${gist.ruleId}`), 404, "Policy rule not found.");
    expectEnvelope(await a.call("GET", `/v1/policy/rules/${gist.ruleId}`), 404, "Policy rule not found.");
    expectEnvelope(await a.call("PATCH", `/v1/org/policy/rules/${org.ruleId}`, { key: a.orgKey, body: { enabled: false } }), 404, "Policy rule not found.");
    expectEnvelope(await a.call("DELETE", `/v1/org/policy/rules/${org.ruleId}`, { key: a.orgKey }), 404, "Policy rule not found.");
    expect((await list(a)).map((e) => e.enabled)).toEqual([true, true]);
    // A reorder never names managed rules.
    const custom = (await a.call("POST", "/v1/policy/rules", { body: { name: "r", action: "allow", targets: [{ kind: "network", hostPattern: "api.x.com" }] } })).body;
    expect((await a.call("PUT", "/v1/policy/rules/order", { body: { orderedIds: [custom.id] } })).status).toBe(200);
    expectEnvelope(await a.call("PUT", "/v1/policy/rules/order", { body: { orderedIds: [custom.id, gist.ruleId] } }), 409, "Rule set changed — refresh and try again.");
  });

  test("an active entry marks the effective credentials of a secret on that host blocked, without a publish", async () => {
    const a = await createTestApi();
    const secret = (await a.call("POST", "/v1/secrets", { body: { name: "gist", type: "generic", value: "v", hostPattern: "gist.github.com", injectionConfig: { headerName: "x-k" } } })).body.id;
    const agent = (await a.call("GET", "/v1/agents/default")).body.id;
    const status = async () => (await a.call("GET", `/v1/agents/${agent}/effective-credentials`)).body.secrets.find((s: any) => s.id === secret).status;
    expect(await status()).toBe("usable");
    const gist = (await add(a, { hostId: "gist" })).body;
    expect(await status()).toBe("blocked");
    await a.call("PATCH", `/v1/apps/github/blocklist/${gist.ruleId}`, { body: { enabled: false } });
    expect(await status()).toBe("usable");
    await add(a, { hostId: "gist" }, "github", "/v1/org/apps", a.orgKey);
    expect(await status()).toBe("blocked");
  });
});
