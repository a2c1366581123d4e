// Policy rules, project `/policy/*` and organization `/org/policy/*` (docs/policy.md#rules, docs/api.md#error-messages policy rows,
// docs/policy.md#draft-and-publish publish row; docs/policy.md#rules). Every validation failure is a 422 envelope.
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addMember, addOrganization, addProject, expectEnvelope, expectFlat, expectUnauthorized, ISO_MS, UUID_V4 } from "./helpers.ts";

const UNKNOWN = "00000000-0000-4000-8000-000000000000";
const MSG = {
  modifiers: "rate-limit and approval modifiers require action = allow",
  pair: "rateLimit and rateLimitWindow must be provided together",
  noFields: "At least one field must be provided",
  notFound: "Policy rule not found.",
  changed: "Rule set changed — refresh and try again.",
  noTarget: "A rule must name at least one target.",
  secretEither: "A secret target must name either a specific secret or a level, not both.",
  orgLevel: "A project rule's target can't scope to organization-level resources.",
  foreign: "A referenced connection or secret does not belong to this organization.",
  missing: "A referenced identity or resource does not exist.",
  status: "status must be one of: draft, published",
};
const RULE_KEYS = [
  "action",
  "conditions",
  "createdAt",
  "description",
  "enabled",
  "generation",
  "id",
  "identities",
  "isDefault",
  "logicalId",
  "name",
  "priority",
  "rateLimit",
  "rateLimitWindow",
  "requireApproval",
  "scope",
  "source",
  "status",
  "targets",
  "updatedAt",
];

const NET = { kind: "network", hostPattern: "api.x.com" };
const rule = (over: Record<string, unknown> = {}) => ({ name: "r", action: "allow", targets: [NET], ...over });

async function createRule(a: TestApi, body: Record<string, unknown>, prefix = "/v1/policy", key?: string) {
  const res = await a.call("POST", `${prefix}/rules`, { body, key });
  if (res.status !== 201) throw new Error(`create rule failed: ${res.status} ${res.text}`);
  return res.body;
}

async function newSecret(a: TestApi, name: string, path = "/v1/secrets", key?: string) {
  const res = await a.call("POST", path, { key, body: { name, type: "generic", value: "v", hostPattern: "api.x.com", injectionConfig: { headerName: "x-k" } } });
  if (res.status !== 201) throw new Error(`create secret failed: ${res.status} ${res.text}`);
  return res.body.id as string;
}

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

describe("POST /policy/rules: success", () => {
  test("201 draft rule with every field, defaults applied, priority = max draft priority + 1", async () => {
    const a = await createTestApi();
    const first = await a.call("POST", "/v1/policy/rules", { body: { name: "  First  ", action: "block", targets: [{ ...NET, pathPattern: "/admin/*", method: "DELETE" }] } });
    expect(first.status).toBe(201);
    expect(Object.keys(first.body).sort()).toEqual(RULE_KEYS);
    expect(first.body).toMatchObject({
      scope: "project",
      status: "draft",
      generation: 0,
      priority: 1,
      enabled: true,
      isDefault: false,
      source: "custom",
      name: "First",
      description: null,
      action: "block",
      rateLimit: null,
      rateLimitWindow: null,
      requireApproval: false,
      conditions: null,
      identities: [],
      targets: [{ kind: "network", hostPattern: "api.x.com", pathPattern: "/admin/*", method: "DELETE" }],
    });
    expect(first.body.id).toMatch(UUID_V4);
    expect(first.body.logicalId).toMatch(UUID_V4);
    expect(first.body.id).not.toBe(first.body.logicalId);
    expect(first.body.createdAt).toMatch(ISO_MS);
    expect(first.body.updatedAt).toMatch(ISO_MS);

    const agent = (await a.call("POST", "/v1/agents", { body: { name: "A", identifier: "a" } })).body.id;
    const second = await a.call("POST", "/v1/policy/rules", {
      body: {
        name: "Second",
        description: "limit sends",
        enabled: false,
        action: "allow",
        rateLimit: 5,
        rateLimitWindow: "minute",
        conditions: [{ target: "body", operator: "contains", value: "urgent" }],
        identities: [{ type: "agent", id: agent }],
        targets: [{ kind: "network", hostPattern: "*" }, { kind: "secret", secretScope: "project" }],
        ignoredKey: true,
      },
    });
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({
      priority: 2,
      enabled: false,
      description: "limit sends",
      rateLimit: 5,
      rateLimitWindow: "minute",
      requireApproval: false,
      conditions: [{ target: "body", operator: "contains", value: "urgent" }],
      identities: [{ type: "agent", id: agent }],
      targets: [{ kind: "network", hostPattern: "*" }, { kind: "secret", secretScope: "project" }],
    });
    expect(second.body).not.toHaveProperty("ignoredKey");
    const approval = await createRule(a, rule({ name: "Third", requireApproval: true }));
    expect(approval.priority).toBe(3);
    expect(approval.requireApproval).toBe(true);

    // GET returns the same draft; the list is ordered by priority.
    const got = await a.call("GET", `/v1/policy/rules/${second.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(second.body);
    const list = await a.call("GET", "/v1/policy/rules");
    expect(list.status).toBe(200);
    expect(list.body.map((r: any) => r.name)).toEqual(["First", "Second", "Third"]);
  });

  test("a deleted rule leaves a priority gap; the next rule still goes after the highest", async () => {
    const a = await createTestApi();
    const r1 = await createRule(a, rule({ name: "1" }));
    const r2 = await createRule(a, rule({ name: "2" }));
    const r3 = await createRule(a, rule({ name: "3" }));
    const del = await a.call("DELETE", `/v1/policy/rules/${r2.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expectEnvelope(await a.call("GET", `/v1/policy/rules/${r2.id}`), 404, MSG.notFound);
    expectEnvelope(await a.call("DELETE", `/v1/policy/rules/${r2.id}`), 404, MSG.notFound);
    const list = await a.call("GET", "/v1/policy/rules");
    expect(list.body.map((r: any) => [r.name, r.priority])).toEqual([
      ["1", 1],
      ["3", 3],
    ]);
    expect((await createRule(a, rule({ name: "4" }))).priority).toBe(4);
    // Deleting the highest lowers the next priority.
    await a.call("DELETE", `/v1/policy/rules/${r3.id}`);
    const list2 = await a.call("GET", "/v1/policy/rules");
    expect(list2.body.map((r: any) => r.priority)).toEqual([1, 4]);
    expect(r1.priority).toBe(1);
  });

  test("host patterns: a bare * and leading wildcards are accepted, trimmed", async () => {
    for (const hostPattern of ["*", "*.example.com", "  API.example.com  ", "127.0.0.1", "localhost"]) {
      const res = await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "network", hostPattern }] }) });
      expect({ hostPattern, status: res.status }).toEqual({ hostPattern, status: 201 });
      expect(res.body.targets[0].hostPattern).toBe(hostPattern.trim());
    }
  });
});

describe("POST /policy/rules: field validation (422 envelope, first failure)", () => {
  const cases: [string, unknown, string][] = [
    ["absent body", undefined, "Request body must be a JSON object"],
    ["body not an object", [], "Request body must be a JSON object"],
    ["name absent", { action: "allow", targets: [NET] }, "name is required"],
    ["name null", { name: null, action: "allow", targets: [NET] }, "name is required"],
    ["name blank after trim", rule({ name: "   " }), "name must be 1-255 characters"],
    ["name too long", rule({ name: "n".repeat(256) }), "name must be 1-255 characters"],
    ["name not a string", rule({ name: 5 }), "name must be a string"],
    ["description too long", rule({ description: "d".repeat(1001) }), "description must be at most 1000 characters"],
    ["description wrong type", rule({ description: 1 }), "description must be a string"],
    ["enabled wrong type", rule({ enabled: "yes" }), "enabled must be a boolean"],
    ["action absent", { name: "r", targets: [NET] }, "action is required"],
    ["action unknown", rule({ action: "deny" }), "action must be one of: allow, block"],
    ["rateLimit zero", rule({ rateLimit: 0, rateLimitWindow: "hour" }), "rateLimit must be between 1 and 1000000"],
    ["rateLimit too large", rule({ rateLimit: 1_000_001, rateLimitWindow: "hour" }), "rateLimit must be between 1 and 1000000"],
    ["rateLimit fractional", rule({ rateLimit: 1.5, rateLimitWindow: "hour" }), "rateLimit must be an integer"],
    ["rateLimit string", rule({ rateLimit: "5", rateLimitWindow: "hour" }), "rateLimit must be an integer"],
    ["rateLimitWindow unknown", rule({ rateLimit: 5, rateLimitWindow: "week" }), "rateLimitWindow must be one of: minute, hour, day"],
    ["requireApproval wrong type", rule({ requireApproval: "yes" }), "requireApproval must be a boolean"],
    ["conditions not an array", rule({ conditions: {} }), "conditions must be an array"],
    [
      "conditions: 11 items",
      rule({ conditions: Array.from({ length: 11 }, () => ({ target: "body", operator: "contains", value: "x" })) }),
      "conditions must have at most 10 items",
    ],
    ["condition not an object", rule({ conditions: ["x"] }), "conditions[0] must be an object"],
    ["condition target", rule({ conditions: [{ target: "header", operator: "contains", value: "x" }] }), "conditions[0].target must be one of: body"],
    ["condition operator", rule({ conditions: [{ target: "body", operator: "equals", value: "x" }] }), "conditions[0].operator must be one of: contains"],
    ["condition value absent", rule({ conditions: [{ target: "body", operator: "contains" }] }), "conditions[0].value is required"],
    ["condition value empty", rule({ conditions: [{ target: "body", operator: "contains", value: "" }] }), "conditions[0].value must be 1-1000 characters"],
    ["condition value too long", rule({ conditions: [{ target: "body", operator: "contains", value: "v".repeat(1001) }] }), "conditions[0].value must be 1-1000 characters"],
    ["condition strict", rule({ conditions: [{ target: "body", operator: "contains", value: "x", caseSensitive: true }] }), 'conditions[0] has unknown field "caseSensitive"'],
    ["second condition", rule({ conditions: [{ target: "body", operator: "contains", value: "x" }, { target: "body" }] }), "conditions[1].operator is required"],
    ["identities not an array", rule({ identities: "agent" }), "identities must be an array"],
    ["identities: 101 items", rule({ identities: Array.from({ length: 101 }, () => ({ type: "agent", id: UNKNOWN })) }), "identities must have at most 100 items"],
    ["identity type", rule({ identities: [{ type: "user", id: UNKNOWN }] }), "identities[0].type must be one of: agent"],
    ["identity id absent", rule({ identities: [{ type: "agent" }] }), "identities[0].id is required"],
    ["identity strict", rule({ identities: [{ type: "agent", id: UNKNOWN, name: "x" }] }), 'identities[0] has unknown field "name"'],
    ["targets not an array", rule({ targets: { kind: "network" } }), "targets must be an array"],
    ["targets: 101 items", rule({ targets: Array.from({ length: 101 }, () => NET) }), "targets must have at most 100 items"],
    ["target not an object", rule({ targets: ["api.x.com"] }), "targets[0] must be an object"],
    ["target kind absent", rule({ targets: [{ hostPattern: "api.x.com" }] }), "targets[0].kind is required"],
    ["target kind unknown", rule({ targets: [{ kind: "dns", hostPattern: "api.x.com" }] }), "targets[0].kind must be one of: network, app, connection, secret"],
    ["second target invalid", rule({ targets: [NET, { kind: "network", hostPattern: "https://api.x.com" }] }), "Enter a hostname, not a URL (remove http:// or https://)"],
    ["network strict", rule({ targets: [{ ...NET, port: 443 }] }), 'targets[0] has unknown field "port"'],
    ["network hostPattern absent", rule({ targets: [{ kind: "network" }] }), "Host pattern is required"],
    ["network hostPattern blank", rule({ targets: [{ kind: "network", hostPattern: "   " }] }), "Host pattern is required"],
    ["network hostPattern not a string", rule({ targets: [{ kind: "network", hostPattern: 5 }] }), "targets[0].hostPattern must be a string"],
    ["network hostPattern too long", rule({ targets: [{ kind: "network", hostPattern: `${"a".repeat(250)}.x.com` }] }), "targets[0].hostPattern must be at most 255 characters"],
    ["network hostPattern URL", rule({ targets: [{ kind: "network", hostPattern: "https://api.x.com" }] }), "Enter a hostname, not a URL (remove http:// or https://)"],
    ["network hostPattern path", rule({ targets: [{ kind: "network", hostPattern: "api.x.com/v1" }] }), "Enter a hostname only, not a path (use the path pattern field for paths)"],
    ["network hostPattern spaces", rule({ targets: [{ kind: "network", hostPattern: "api x.com" }] }), "Host pattern must not contain spaces"],
    ["network mid wildcard", rule({ targets: [{ kind: "network", hostPattern: "a*.x.com" }] }), "Wildcards are only allowed as a leading subdomain, e.g. *.example.com"],
    ["network *.*", rule({ targets: [{ kind: "network", hostPattern: "*.*" }] }), "Wildcards are only allowed as a leading subdomain, e.g. *.example.com"],
    ["network public suffix", rule({ targets: [{ kind: "network", hostPattern: "*.com" }] }), "A wildcard can't cover a public suffix like *.com; use a specific domain, e.g. *.example.com"],
    ["network private public suffix", rule({ targets: [{ kind: "network", hostPattern: "*.github.io" }] }), "A wildcard can't cover a public suffix like *.com; use a specific domain, e.g. *.example.com"],
    ["network pathPattern", rule({ targets: [{ ...NET, pathPattern: "v1/*" }] }), "targets[0].pathPattern must be * or start with /"],
    ["network pathPattern too long", rule({ targets: [{ ...NET, pathPattern: `/${"p".repeat(1000)}` }] }), "targets[0].pathPattern must be at most 1000 characters"],
    ["network method", rule({ targets: [{ ...NET, method: "TRACE" }] }), "targets[0].method must be one of: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, SQL, SSH"],
    ["app provider absent", rule({ targets: [{ kind: "app" }] }), "targets[0].provider is required"],
    ["app tools not an array", rule({ targets: [{ kind: "app", provider: "github", tools: "all" }] }), "targets[0].tools must be an array"],
    ["app tool empty", rule({ targets: [{ kind: "app", provider: "github", tools: [""] }] }), "targets[0].tools[0] must be 1-255 characters"],
    ["app strict", rule({ targets: [{ kind: "app", provider: "github", hostPattern: "x" }] }), 'targets[0] has unknown field "hostPattern"'],
    ["connection id absent", rule({ targets: [{ kind: "connection" }] }), "targets[0].connectionId is required"],
    ["secret scope unknown", rule({ targets: [{ kind: "secret", secretScope: "partner" }] }), "targets[0].secretScope must be one of: project, organization"],
    ["secret strict", rule({ targets: [{ kind: "secret", secretScope: "project", hostPattern: "x" }] }), 'targets[0] has unknown field "hostPattern"'],
    // Field order: name is reported before a bad action, action before a bad target.
    ["first failure wins", { name: "", action: "nope", targets: [{ kind: "x" }] }, "name must be 1-255 characters"],
    ["action before targets", { name: "r", action: "nope", targets: [{ kind: "x" }] }, "action must be one of: allow, block"],
  ];
  for (const [label, body, message] of cases) {
    test(`${label} → ${message}`, async () => {
      expectEnvelope(await api.call("POST", "/v1/policy/rules", { body }), 422, message);
    });
  }

  test("invalid JSON → 422 envelope", async () => {
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: "{nope" }), 422, "Request body must be valid JSON");
  });

  test("nothing is created by a rejected body", async () => {
    const a = await createTestApi();
    await a.call("POST", "/v1/policy/rules", { body: rule({ action: "nope" }) });
    await a.call("POST", "/v1/policy/rules", { body: rule({ targets: [] }) });
    expect((await a.call("GET", "/v1/policy/rules")).body).toEqual([]);
  });
});

describe("POST /policy/rules: modifier and service checks (422, in order)", () => {
  test("example 19: a modifier on block", async () => {
    const res = await api.call("POST", "/v1/policy/rules", {
      body: { name: "r", action: "block", rateLimit: 5, rateLimitWindow: "minute", targets: [{ kind: "network", hostPattern: "api.x.com" }] },
    });
    expect(res.text).toBe('{"error":{"message":"rate-limit and approval modifiers require action = allow","type":"validation_error"}}');
    expectEnvelope(res, 422, MSG.modifiers);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ action: "block", requireApproval: true }) }), 422, MSG.modifiers);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ action: "block", rateLimit: 5 }) }), 422, MSG.modifiers);
    // requireApproval:false and null modifiers are not modifiers.
    const ok = await api.call("POST", "/v1/policy/rules", { body: rule({ action: "block", requireApproval: false, rateLimit: null, rateLimitWindow: null }) });
    expect(ok.status).toBe(201);
  });

  test("example 20: only one of rateLimit and rateLimitWindow", async () => {
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ rateLimit: 5 }) }), 422, MSG.pair);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ rateLimitWindow: "day" }) }), 422, MSG.pair);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ rateLimit: 5, rateLimitWindow: null }) }), 422, MSG.pair);
  });

  test("the modifier check comes before the target checks", async () => {
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: { name: "r", action: "block", requireApproval: true } }), 422, MSG.modifiers);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: { name: "r", action: "allow", rateLimit: 1 } }), 422, MSG.pair);
  });

  test("targets absent or empty", async () => {
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: { name: "r", action: "allow" } }), 422, MSG.noTarget);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [] }) }), 422, MSG.noTarget);
  });

  test("a secret target with both or neither of secretId and secretScope", async () => {
    const own = await newSecret(api, "either");
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "secret" }] }) }), 422, MSG.secretEither);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "secret", secretId: own, secretScope: "project" }] }) }), 422, MSG.secretEither);
    const ok = await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "secret", secretId: own }] }) });
    expect(ok.status).toBe(201);
    expect(ok.body.targets).toEqual([{ kind: "secret", secretId: own }]);
  });

  test("a project rule naming an organization secret, or secretScope organization", async () => {
    const org = await newSecret(api, "org-secret", "/v1/org/secrets", api.orgKey);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "secret", secretId: org }] }) }), 422, MSG.orgLevel);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "secret", secretScope: "organization" }] }) }), 422, MSG.orgLevel);
    // The organization's own rules may name it.
    const ok = await api.call("POST", "/v1/org/policy/rules", { key: api.orgKey, body: rule({ targets: [{ kind: "secret", secretId: org }, { kind: "secret", secretScope: "organization" }] }) });
    expect(ok.status).toBe(201);
    expect(ok.body.scope).toBe("organization");
  });

  test("a secret of another project or organization does not belong", async () => {
    const other = await addProject(api, "Policy other project");
    const foreignProject = await newSecret(api, "foreign-p", "/v1/secrets", other.projectKey);
    const otherOrg = await addOrganization(api, "Policy other org");
    const foreignOrgSecret = await newSecret(api, "foreign-o", "/v1/org/secrets", otherOrg.orgKey);
    const foreignOrgProject = await newSecret(api, "foreign-op", "/v1/secrets", otherOrg.projectKey);
    for (const secretId of [foreignProject, foreignOrgSecret, foreignOrgProject]) {
      expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "secret", secretId }] }) }), 422, MSG.foreign);
    }
    // At organization scope a project secret of the same organization belongs; another organization's does not.
    expect((await api.call("POST", "/v1/org/policy/rules", { key: api.orgKey, body: rule({ targets: [{ kind: "secret", secretId: foreignProject }] }) })).status).toBe(201);
    for (const secretId of [foreignOrgSecret, foreignOrgProject]) {
      expectEnvelope(await api.call("POST", "/v1/org/policy/rules", { key: api.orgKey, body: rule({ targets: [{ kind: "secret", secretId }] }) }), 422, MSG.foreign);
    }
  });

  test("nonexistent agents, secrets and connections", async () => {
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ identities: [{ type: "agent", id: UNKNOWN }] }) }), 422, MSG.missing);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "secret", secretId: UNKNOWN }] }) }), 422, MSG.missing);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "connection", connectionId: UNKNOWN }] }) }), 422, MSG.missing);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "connection", connectionId: UNKNOWN, tools: ["send_email"] }] }) }), 422, MSG.missing);
    // An agent of another project is not an identity of a project rule, but is one of an organization rule.
    const other = await addProject(api, "Policy agent project");
    const foreignAgent = (await api.call("GET", "/v1/agents/default", { key: other.projectKey })).body.id;
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ identities: [{ type: "agent", id: foreignAgent }] }) }), 422, MSG.missing);
    const orgRule = await api.call("POST", "/v1/org/policy/rules", { key: api.orgKey, body: rule({ identities: [{ type: "agent", id: foreignAgent }] }) });
    expect(orgRule.status).toBe(201);
    expect(orgRule.body.identities).toEqual([{ type: "agent", id: foreignAgent }]);
    // Another organization's agent is unknown everywhere.
    const otherOrg = await addOrganization(api, "Policy agent org");
    const alien = (await api.call("GET", "/v1/agents/default", { key: otherOrg.projectKey })).body.id;
    expectEnvelope(await api.call("POST", "/v1/org/policy/rules", { key: api.orgKey, body: rule({ identities: [{ type: "agent", id: alien }] }) }), 422, MSG.missing);
  });

  test("the service checks run in contract order", async () => {
    const org = await newSecret(api, "order-org", "/v1/org/secrets", api.orgKey);
    const other = await addProject(api, "Policy order project");
    const foreign = await newSecret(api, "order-foreign", "/v1/secrets", other.projectKey);
    // either/both before organization-level, organization-level before foreign, foreign before missing, missing before provider.
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "secret", secretId: org }, { kind: "secret" }] }) }), 422, MSG.secretEither);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "secret", secretId: foreign }, { kind: "secret", secretId: org }] }) }), 422, MSG.orgLevel);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "secret", secretId: UNKNOWN }, { kind: "secret", secretId: foreign }] }) }), 422, MSG.foreign);
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "app", provider: "github" }, { kind: "secret", secretId: UNKNOWN }] }) }), 422, MSG.missing);
  });

  test("app targets: the catalog decides which providers and tool ids exist", async () => {
    expectEnvelope(await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "app", provider: "nope" }] }) }), 422, "Unknown provider: nope");
    expectEnvelope(
      await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [NET, { kind: "app", provider: "resend", tools: ["send_email", "fly", "swim"] }] }) }),
      422,
      'Unknown tool id(s) for "resend": fly, swim',
    );
    expectEnvelope(await api.call("POST", "/v1/org/policy/rules", { key: api.orgKey, body: rule({ targets: [{ kind: "app", provider: "nope" }] }) }), 422, "Unknown provider: nope");
    const ok = await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "app", provider: "resend", tools: ["send_email"] }] }) });
    expect(ok.status).toBe(201);
    expect(ok.body.targets).toEqual([{ kind: "app", provider: "resend", tools: ["send_email"] }]);
    expect((await api.call("POST", "/v1/policy/rules", { body: rule({ targets: [{ kind: "app", provider: "github" }] }) })).status).toBe(201);
  });
});

describe("GET /policy/rules", () => {
  test("status query: draft (default), published, else 422", async () => {
    const a = await createTestApi();
    await createRule(a, rule({ name: "d" }));
    expect((await a.call("GET", "/v1/policy/rules?status=draft")).body.map((r: any) => r.name)).toEqual(["d"]);
    expect((await a.call("GET", "/v1/policy/rules?status=")).body.map((r: any) => r.name)).toEqual(["d"]);
    const pub = await a.call("GET", "/v1/policy/rules?status=published");
    expect(pub.status).toBe(200);
    expect(pub.body).toEqual([]);
    expectEnvelope(await a.call("GET", "/v1/policy/rules?status=live"), 422, MSG.status);
    expectEnvelope(await a.call("GET", "/v1/policy/rules?status=DRAFT"), 422, MSG.status);
    expectEnvelope(await a.call("GET", "/v1/org/policy/rules?status=all", { key: a.orgKey }), 422, MSG.status);
  });

  test("ordered by priority then id; the Default Rule is never listed", async () => {
    const a = await createTestApi();
    const r1 = await createRule(a, rule({ name: "one" }));
    const r2 = await createRule(a, rule({ name: "two" }));
    await a.call("PATCH", "/v1/policy/default", { body: { action: "block" } });
    await a.call("PUT", "/v1/policy/rules/order", { body: { orderedIds: [r2.id, r1.id] } });
    const list = (await a.call("GET", "/v1/policy/rules")).body;
    expect(list.map((r: any) => r.name)).toEqual(["two", "one"]);
    expect(list.some((r: any) => r.isDefault)).toBe(false);
  });

  test("project and organization rules are separate lists", async () => {
    const a = await createTestApi();
    await createRule(a, rule({ name: "proj" }));
    await createRule(a, rule({ name: "org" }), "/v1/org/policy", a.orgKey);
    expect((await a.call("GET", "/v1/policy/rules")).body.map((r: any) => [r.name, r.scope])).toEqual([["proj", "project"]]);
    expect((await a.call("GET", "/v1/org/policy/rules", { key: a.orgKey })).body.map((r: any) => [r.name, r.scope])).toEqual([["org", "organization"]]);
    // An organization rule id is unknown on the project routes and vice versa.
    const orgId = (await a.call("GET", "/v1/org/policy/rules", { key: a.orgKey })).body[0].id;
    expectEnvelope(await a.call("GET", `/v1/policy/rules/${orgId}`), 404, MSG.notFound);
    expectEnvelope(await a.call("PATCH", `/v1/policy/rules/${orgId}`, { body: { name: "x" } }), 404, MSG.notFound);
    expectEnvelope(await a.call("DELETE", `/v1/policy/rules/${orgId}`), 404, MSG.notFound);
  });

  test("another project's rules are invisible", async () => {
    const a = await createTestApi();
    const other = await addProject(a, "Rules elsewhere");
    const theirs = await createRule(a, rule({ name: "theirs" }), "/v1/policy", other.projectKey);
    expect((await a.call("GET", "/v1/policy/rules")).body).toEqual([]);
    expectEnvelope(await a.call("GET", `/v1/policy/rules/${theirs.id}`), 404, MSG.notFound);
    expectEnvelope(await a.call("DELETE", `/v1/policy/rules/${theirs.id}`), 404, MSG.notFound);
    // The org key selects the project with X-Project-Id.
    const viaOrg = await a.call("GET", "/v1/policy/rules", { key: a.orgKey, headers: { "x-project-id": other.project.id } });
    expect(viaOrg.body.map((r: any) => r.id)).toEqual([theirs.id]);
    expectUnauthorized(await a.call("GET", "/v1/policy/rules", { key: a.orgKey }));
  });

  test("include=managed appends the live grant rules read-only", async () => {
    const a = await createTestApi();
    await createRule(a, rule({ name: "custom" }));
    const secret = await newSecret(a, "Stripe");
    const agent = (await a.call("POST", "/v1/agents", { body: { name: "Builder", identifier: "builder", mode: "grants" } })).body;
    expect((await a.call("PUT", `/v1/agents/${agent.id}/grants/secrets/${secret}`)).status).toBe(200);
    const plain = (await a.call("GET", "/v1/policy/rules")).body;
    expect(plain.map((r: any) => r.source)).toEqual(["custom"]);
    const res = await a.call("GET", "/v1/policy/rules?include=managed");
    expect(res.status).toBe(200);
    expect(res.body.map((r: any) => r.source)).toEqual(["custom", "grant"]);
    const managed = res.body[1];
    expect(managed).toMatchObject({
      scope: "project",
      status: "published",
      generation: 0,
      priority: 0,
      enabled: true,
      isDefault: false,
      source: "grant",
      name: "Grant: Builder · Stripe",
      action: "allow",
      requireApproval: false,
      identities: [{ type: "agent", id: agent.id }],
      targets: [{ kind: "secret", secretId: secret }],
    });
    // Managed rules are outside draft/publish: PATCH/DELETE of their id → 404.
    expectEnvelope(await a.call("PATCH", `/v1/policy/rules/${encodeURIComponent(managed.id)}`, { body: { name: "x" } }), 404, MSG.notFound);
    expectEnvelope(await a.call("DELETE", `/v1/policy/rules/${encodeURIComponent(managed.id)}`), 404, MSG.notFound);
    // Revoking the grant removes the rule at once.
    expect((await a.call("DELETE", `/v1/agents/${agent.id}/grants/secrets/${secret}`)).status).toBe(204);
    expect((await a.call("GET", "/v1/policy/rules?include=managed")).body.map((r: any) => r.source)).toEqual(["custom"]);
    // Published listing with managed rules: the published list is empty, the managed rule still shows.
    await a.call("PUT", `/v1/agents/${agent.id}/grants/secrets/${secret}`);
    const pub = await a.call("GET", "/v1/policy/rules?status=published&include=managed");
    expect(pub.body.map((r: any) => r.source)).toEqual(["grant"]);
  });
});

describe("PATCH /policy/rules/{id}", () => {
  test("partial update; priority, id and logicalId never change; nulls clear", async () => {
    const a = await createTestApi();
    await createRule(a, rule({ name: "first" }));
    const r = await createRule(a, rule({ name: "limited", description: "d", rateLimit: 3, rateLimitWindow: "hour", conditions: [{ target: "body", operator: "contains", value: "x" }] }));
    const res = await a.call("PATCH", `/v1/policy/rules/${r.id}`, { body: { name: "  renamed  ", priority: 99 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: r.id, logicalId: r.logicalId, name: "renamed", priority: 2, rateLimit: 3, rateLimitWindow: "hour", description: "d" });
    const cleared = await a.call("PATCH", `/v1/policy/rules/${r.id}`, { body: { description: null, rateLimit: null, rateLimitWindow: null, conditions: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ description: null, rateLimit: null, rateLimitWindow: null, conditions: null, priority: 2 });
    const retarget = await a.call("PATCH", `/v1/policy/rules/${r.id}`, { body: { targets: [{ kind: "network", hostPattern: "*.y.com", method: "POST" }], enabled: false, action: "block" } });
    expect(retarget.status).toBe(200);
    expect(retarget.body).toMatchObject({ targets: [{ kind: "network", hostPattern: "*.y.com", method: "POST" }], enabled: false, action: "block" });
    expect((await a.call("GET", `/v1/policy/rules/${r.id}`)).body).toEqual(retarget.body);
  });

  test("example 20: {} or an absent body → 422 At least one field must be provided", async () => {
    const r = await createRule(api, rule());
    const res = await api.call("PATCH", `/v1/policy/rules/${r.id}`, { body: {} });
    expect(res.text).toBe('{"error":{"message":"At least one field must be provided","type":"validation_error"}}');
    expectEnvelope(await api.call("PATCH", `/v1/policy/rules/${r.id}`), 422, MSG.noFields);
    // Unknown keys only: nothing applicable.
    expectEnvelope(await api.call("PATCH", `/v1/policy/rules/${r.id}`, { body: { priority: 5 } }), 422, MSG.noFields);
  });

  test("example 21: unknown id → 404", async () => {
    const res = await api.call("PATCH", `/v1/policy/rules/${UNKNOWN}`, { body: { name: "x" } });
    expect(res.text).toBe('{"error":{"message":"Policy rule not found.","type":"not_found_error"}}');
    expectEnvelope(await api.call("GET", `/v1/policy/rules/${UNKNOWN}`), 404, MSG.notFound);
    expectEnvelope(await api.call("GET", "/v1/policy/rules/not-a-uuid"), 404, MSG.notFound);
  });

  test("field validation uses the create messages", async () => {
    const r = await createRule(api, rule());
    const cases: [unknown, string][] = [
      [{ name: "" }, "name must be 1-255 characters"],
      [{ action: "deny" }, "action must be one of: allow, block"],
      [{ rateLimit: 0 }, "rateLimit must be between 1 and 1000000"],
      [{ conditions: [{ target: "body", operator: "contains", value: "x", y: 1 }] }, 'conditions[0] has unknown field "y"'],
      [{ targets: [{ kind: "network", hostPattern: "api.x.com/v1" }] }, "Enter a hostname only, not a path (use the path pattern field for paths)"],
      [{ targets: [{ kind: "network" }] }, "Host pattern is required"],
      [{ targets: [] }, MSG.noTarget],
      [{ identities: [{ type: "agent", id: UNKNOWN }] }, MSG.missing],
    ];
    for (const [body, message] of cases) expectEnvelope(await api.call("PATCH", `/v1/policy/rules/${r.id}`, { body }), 422, message);
    // Nothing was applied.
    expect((await api.call("GET", `/v1/policy/rules/${r.id}`)).body).toEqual(r);
  });

  test("modifiers are checked against the merged rule", async () => {
    const limited = await createRule(api, rule({ rateLimit: 5, rateLimitWindow: "minute" }));
    // Turning a rate-limited allow rule into a block keeps the stored modifiers → refused.
    expectEnvelope(await api.call("PATCH", `/v1/policy/rules/${limited.id}`, { body: { action: "block" } }), 422, MSG.modifiers);
    // Clearing only one of the pair leaves the other.
    expectEnvelope(await api.call("PATCH", `/v1/policy/rules/${limited.id}`, { body: { rateLimit: null } }), 422, MSG.pair);
    expectEnvelope(await api.call("PATCH", `/v1/policy/rules/${limited.id}`, { body: { rateLimitWindow: null } }), 422, MSG.pair);
    // Changing the window alone keeps the stored limit: fine.
    expect((await api.call("PATCH", `/v1/policy/rules/${limited.id}`, { body: { rateLimitWindow: "day" } })).body).toMatchObject({ rateLimit: 5, rateLimitWindow: "day" });
    // Block plus clearing the modifiers in one PATCH is accepted.
    const ok = await api.call("PATCH", `/v1/policy/rules/${limited.id}`, { body: { action: "block", rateLimit: null, rateLimitWindow: null } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ action: "block", rateLimit: null, rateLimitWindow: null });
    // On a block rule, adding a modifier alone is refused.
    expectEnvelope(await api.call("PATCH", `/v1/policy/rules/${limited.id}`, { body: { requireApproval: true } }), 422, MSG.modifiers);
    expectEnvelope(await api.call("PATCH", `/v1/policy/rules/${limited.id}`, { body: { rateLimit: 2, rateLimitWindow: "hour" } }), 422, MSG.modifiers);
    // An approval rule cannot become a block without dropping requireApproval.
    const approval = await createRule(api, rule({ requireApproval: true }));
    expectEnvelope(await api.call("PATCH", `/v1/policy/rules/${approval.id}`, { body: { action: "block" } }), 422, MSG.modifiers);
    expect((await api.call("PATCH", `/v1/policy/rules/${approval.id}`, { body: { action: "block", requireApproval: false } })).status).toBe(200);
  });
});

describe("PUT /policy/rules/order", () => {
  test("renumbers 1..N in the given order and returns the full draft list", async () => {
    const a = await createTestApi();
    const r1 = await createRule(a, rule({ name: "1" }));
    const r2 = await createRule(a, rule({ name: "2" }));
    const r3 = await createRule(a, rule({ name: "3" }));
    await a.call("DELETE", `/v1/policy/rules/${r2.id}`);
    const r4 = await createRule(a, rule({ name: "4" }));
    const res = await a.call("PUT", "/v1/policy/rules/order", { body: { orderedIds: [r4.id, r1.id, r3.id] } });
    expect(res.status).toBe(200);
    expect(res.body.map((r: any) => [r.name, r.priority])).toEqual([
      ["4", 1],
      ["1", 2],
      ["3", 3],
    ]);
    expect(Object.keys(res.body[0]).sort()).toEqual(RULE_KEYS);
    expect((await a.call("GET", "/v1/policy/rules")).body.map((r: any) => r.name)).toEqual(["4", "1", "3"]);
  });

  test("example 21: a list that does not name every non-default draft rule exactly once → 409", async () => {
    const a = await createTestApi();
    const r1 = await createRule(a, rule({ name: "1" }));
    const r2 = await createRule(a, rule({ name: "2" }));
    const r3 = await createRule(a, rule({ name: "3" }));
    const def = (await a.call("PATCH", "/v1/policy/default", { body: { action: "allow" } })).body;
    const bad = [[r1.id, r2.id], [r1.id, r2.id, r3.id, r3.id], [r1.id, r2.id, UNKNOWN], [r1.id, r2.id, r3.id, UNKNOWN], [r1.id, r2.id, r3.id, def.id], [r1.id, r1.id, r2.id]];
    for (const orderedIds of bad) {
      const res = await a.call("PUT", "/v1/policy/rules/order", { body: { orderedIds } });
      expect(res.text).toBe('{"error":{"message":"Rule set changed — refresh and try again.","type":"invalid_request_error"}}');
      expectEnvelope(res, 409, MSG.changed);
    }
    // A published copy's id is not a draft id.
    await a.call("POST", "/v1/policy/publish");
    const published = (await a.call("GET", "/v1/policy/rules?status=published")).body.map((r: any) => r.id);
    expectEnvelope(await a.call("PUT", "/v1/policy/rules/order", { body: { orderedIds: published } }), 409, MSG.changed);
    // Nothing was renumbered.
    expect((await a.call("GET", "/v1/policy/rules")).body.map((r: any) => [r.name, r.priority])).toEqual([
      ["1", 1],
      ["2", 2],
      ["3", 3],
    ]);
  });

  test("validation: orderedIds required, an array of strings, at least one", async () => {
    expectEnvelope(await api.call("PUT", "/v1/policy/rules/order", { body: {} }), 422, "orderedIds is required");
    expectEnvelope(await api.call("PUT", "/v1/policy/rules/order", { body: { orderedIds: "a" } }), 422, "orderedIds must be an array");
    expectEnvelope(await api.call("PUT", "/v1/policy/rules/order", { body: { orderedIds: [1] } }), 422, "orderedIds[0] must be a string");
    const empty = await api.call("PUT", "/v1/policy/rules/order", { body: { orderedIds: [] } });
    expect(empty.status).toBe(422);
    expect(empty.body.error.message).toMatch(/^orderedIds must have (at least )?1/);
  });
});

describe("Default Rule: GET and PATCH /policy/default", () => {
  test("virtual Default Rule when none is persisted", async () => {
    const a = await createTestApi();
    for (const q of ["", "?status=draft", "?status=published"]) {
      const res = await a.call("GET", `/v1/policy/default${q}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: "", logicalId: "", name: "Default Rule", action: "allow", priority: 0, isDefault: true, source: "default", createdAt: "1970-01-01T00:00:00.000Z" });
    }
    const org = await a.call("GET", "/v1/org/policy/default", { key: a.orgKey });
    expect(org.body).toMatchObject({ id: "", logicalId: "", name: "Default Rule", action: "allow", priority: 0, isDefault: true, source: "default", scope: "organization" });
    expectEnvelope(await a.call("GET", "/v1/policy/default?status=x"), 422, MSG.status);
  });

  test("PATCH creates the draft Default Rule, then updates it in place; published stays virtual until publish", async () => {
    const a = await createTestApi();
    const res = await a.call("PATCH", "/v1/policy/default", { body: { action: "block" } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(RULE_KEYS);
    expect(res.body).toMatchObject({ name: "Default Rule", action: "block", priority: 0, isDefault: true, source: "default", status: "draft", generation: 0, scope: "project" });
    expect(res.body.id).toMatch(UUID_V4);
    const again = await a.call("PATCH", "/v1/policy/default", { body: { action: "allow" } });
    expect(again.body.id).toBe(res.body.id);
    expect(again.body.action).toBe("allow");
    expect((await a.call("GET", "/v1/policy/default")).body).toMatchObject({ id: res.body.id, action: "allow" });
    expect((await a.call("GET", "/v1/policy/default?status=published")).body.id).toBe("");
    await a.call("PATCH", "/v1/policy/default", { body: { action: "block" } });
    await a.call("POST", "/v1/policy/publish");
    const pub = (await a.call("GET", "/v1/policy/default?status=published")).body;
    expect(pub).toMatchObject({ logicalId: res.body.logicalId, action: "block", status: "published", generation: 1, isDefault: true });
    expect(pub.id).not.toBe(res.body.id);
    // The Default Rule is not a custom rule: not editable through /rules/{id}.
    expectEnvelope(await a.call("PATCH", `/v1/policy/rules/${res.body.id}`, { body: { name: "x" } }), 404, MSG.notFound);
    expectEnvelope(await a.call("GET", `/v1/policy/rules/${res.body.id}`), 404, MSG.notFound);
    expectEnvelope(await a.call("DELETE", `/v1/policy/rules/${res.body.id}`), 404, MSG.notFound);
  });

  test("PATCH validation", async () => {
    expectEnvelope(await api.call("PATCH", "/v1/policy/default", { body: {} }), 422, "action is required");
    expectEnvelope(await api.call("PATCH", "/v1/policy/default"), 422, "Request body must be a JSON object");
    expectEnvelope(await api.call("PATCH", "/v1/policy/default", { body: { action: "deny" } }), 422, "action must be one of: allow, block");
    expectEnvelope(await api.call("PATCH", "/v1/org/policy/default", { key: api.orgKey, body: { action: 1 } }), 422, "action must be one of: allow, block");
  });
});

describe("POST /policy/publish, GET /policy/last-publish", () => {
  test("publish copies every draft (and a created Default Rule) into generation N+1 with new ids, same logicalIds", async () => {
    const a = await createTestApi();
    expect((await a.call("GET", "/v1/policy/last-publish")).body).toBeNull();
    const r1 = await createRule(a, rule({ name: "one" }));
    const r2 = await createRule(a, rule({ name: "two", action: "block" }));
    const first = await a.call("POST", "/v1/policy/publish");
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ generation: 1, ruleCount: 3 });
    // The publish created the draft Default Rule (allow).
    const def = (await a.call("GET", "/v1/policy/default")).body;
    expect(def).toMatchObject({ action: "allow", status: "draft", isDefault: true });
    expect(def.id).toMatch(UUID_V4);

    const pub1 = (await a.call("GET", "/v1/policy/rules?status=published")).body;
    expect(pub1.map((r: any) => [r.name, r.logicalId, r.status, r.generation, r.priority])).toEqual([
      ["one", r1.logicalId, "published", 1, 1],
      ["two", r2.logicalId, "published", 1, 2],
    ]);
    expect(pub1.map((r: any) => r.id)).not.toContain(r1.id);
    expect(pub1.map((r: any) => r.id)).not.toContain(r2.id);

    // Drafts stay editable; the published generation does not move until the next publish.
    await a.call("PATCH", `/v1/policy/rules/${r1.id}`, { body: { name: "one (edited)" } });
    await a.call("DELETE", `/v1/policy/rules/${r2.id}`);
    expect((await a.call("GET", "/v1/policy/rules?status=published")).body.map((r: any) => r.name)).toEqual(["one", "two"]);
    const second = await a.call("POST", "/v1/policy/publish");
    expect(second.body).toEqual({ generation: 2, ruleCount: 2 });
    const pub2 = (await a.call("GET", "/v1/policy/rules?status=published")).body;
    expect(pub2.map((r: any) => [r.name, r.logicalId, r.generation])).toEqual([["one (edited)", r1.logicalId, 2]]);
    expect(pub2[0].id).not.toBe(pub1[0].id);
    expect((await a.call("GET", "/v1/policy/default?status=published")).body).toMatchObject({ logicalId: def.logicalId, generation: 2 });

    const last = await a.call("GET", "/v1/policy/last-publish");
    expect(last.status).toBe(200);
    expect(Object.keys(last.body).sort()).toEqual(["appliedAt", "appliedBy", "generation", "ruleCount"]);
    expect(last.body).toMatchObject({ generation: 2, ruleCount: 2, appliedBy: { name: "Owner", email: "owner@localhost" } });
    expect(last.body.appliedAt).toMatch(ISO_MS);
  });

  test("published copies are not draft rules: GET/PATCH/DELETE by their id → 404", async () => {
    const a = await createTestApi();
    await createRule(a, rule({ name: "p" }));
    await a.call("POST", "/v1/policy/publish");
    const published = (await a.call("GET", "/v1/policy/rules?status=published")).body[0];
    expectEnvelope(await a.call("GET", `/v1/policy/rules/${published.id}`), 404, MSG.notFound);
    expectEnvelope(await a.call("PATCH", `/v1/policy/rules/${published.id}`, { body: { name: "x" } }), 404, MSG.notFound);
    expectEnvelope(await a.call("DELETE", `/v1/policy/rules/${published.id}`), 404, MSG.notFound);
    expect((await a.call("GET", "/v1/policy/rules?status=published")).body).toEqual([published]);
  });

  test("publishing an empty draft set publishes just the Default Rule", async () => {
    const a = await createTestApi();
    expect((await a.call("POST", "/v1/policy/publish")).body).toEqual({ generation: 1, ruleCount: 1 });
    expect((await a.call("GET", "/v1/policy/rules?status=published")).body).toEqual([]);
    expect((await a.call("GET", "/v1/policy/default?status=published")).body).toMatchObject({ action: "allow", generation: 1, status: "published" });
  });

  test("only the newest 10 generations are kept", async () => {
    const a = await createTestApi();
    await createRule(a, rule());
    for (let i = 1; i <= 12; i++) expect((await a.call("POST", "/v1/policy/publish")).body.generation).toBe(i);
    const generations = (
      await a.core.store.query<{ generation: number }>(
        sql`SELECT DISTINCT generation FROM policy_rules WHERE status = 'published' AND project_id = ${a.projectId} ORDER BY generation`,
      )
    ).map((r) => Number(r.generation));
    expect(generations).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect((await a.call("GET", "/v1/policy/rules?status=published")).body[0].generation).toBe(12);
    expect((await a.call("GET", "/v1/policy/last-publish")).body.generation).toBe(12);
  });

  test("project and organization generations are independent; appliedBy names the key holder", async () => {
    const a = await createTestApi();
    const admin = await addMember(a, "admin");
    await createRule(a, rule({ name: "org rule" }), "/v1/org/policy", a.orgKey);
    expect((await a.call("POST", "/v1/org/policy/publish", { key: admin.orgKey })).body).toEqual({ generation: 1, ruleCount: 2 });
    expect((await a.call("POST", "/v1/org/policy/publish", { key: a.orgKey })).body).toEqual({ generation: 2, ruleCount: 2 });
    expect((await a.call("GET", "/v1/policy/last-publish")).body).toBeNull();
    expect((await a.call("POST", "/v1/policy/publish")).body).toEqual({ generation: 1, ruleCount: 1 });
    const orgLast = (await a.call("GET", "/v1/org/policy/last-publish", { key: a.orgKey })).body;
    expect(orgLast).toMatchObject({ generation: 2, ruleCount: 2, appliedBy: { email: "owner@localhost" } });
    await a.call("POST", "/v1/org/policy/publish", { key: admin.orgKey });
    expect((await a.call("GET", "/v1/org/policy/last-publish", { key: a.orgKey })).body.appliedBy).toEqual({ name: admin.user.name, email: admin.user.email });
    const orgPub = (await a.call("GET", "/v1/org/policy/rules?status=published", { key: a.orgKey })).body;
    expect(orgPub.map((r: any) => [r.name, r.scope, r.generation])).toEqual([["org rule", "organization", 3]]);
  });
});

describe("organization scope /org/policy/*: O·admin", () => {
  test("org key and an owner's project key pass; a member → 403; a member's org key → 401; partner-less session-less → 401", async () => {
    const a = await createTestApi();
    const member = await addMember(a, "member");
    const admin = await addMember(a, "admin");
    expect((await a.call("GET", "/v1/org/policy/rules", { key: a.orgKey })).status).toBe(200);
    expect((await a.call("GET", "/v1/org/policy/rules", { key: admin.orgKey })).status).toBe(200);
    expect((await a.call("GET", "/v1/org/policy/rules", { key: a.projectKey })).status).toBe(200);
    const created = await a.call("POST", "/v1/org/policy/rules", { key: admin.projectKey, body: rule({ name: "by admin" }) });
    expect(created.status).toBe(201);
    expect(created.body.scope).toBe("organization");
    for (const [method, path, body] of [
      ["GET", "/v1/org/policy/rules", undefined],
      ["POST", "/v1/org/policy/rules", rule()],
      ["PATCH", `/v1/org/policy/rules/${created.body.id}`, { name: "x" }],
      ["DELETE", `/v1/org/policy/rules/${created.body.id}`, undefined],
      ["PUT", "/v1/org/policy/rules/order", { orderedIds: [created.body.id] }],
      ["GET", "/v1/org/policy/default", undefined],
      ["PATCH", "/v1/org/policy/default", { action: "block" }],
      ["POST", "/v1/org/policy/publish", undefined],
      ["GET", "/v1/org/policy/last-publish", undefined],
      ["GET", "/v1/org/policy/effective-app-permissions?provider=github", undefined],
    ] as const) {
      expectEnvelope(await a.call(method, path, { key: member.projectKey, body }), 403, "Insufficient permissions");
      expectUnauthorized(await a.call(method, path, { key: member.orgKey, body }));
      expectUnauthorized(await a.call(method, path, { key: null, body }));
    }
    // The member can still use the project routes.
    expect((await a.call("GET", "/v1/policy/rules", { key: member.projectKey })).status).toBe(200);
    // Nothing changed.
    expect((await a.call("GET", "/v1/org/policy/rules", { key: a.orgKey })).body.map((r: any) => r.name)).toEqual(["by admin"]);
    expect((await a.call("GET", "/v1/org/policy/last-publish", { key: a.orgKey })).body).toBeNull();
  });

  test("another organization's rules are invisible", async () => {
    const a = await createTestApi();
    const other = await addOrganization(a, "Policy neighbours");
    const theirs = await createRule(a, rule({ name: "theirs" }), "/v1/org/policy", other.orgKey);
    expect((await a.call("GET", "/v1/org/policy/rules", { key: a.orgKey })).body).toEqual([]);
    expectEnvelope(await a.call("PATCH", `/v1/org/policy/rules/${theirs.id}`, { key: a.orgKey, body: { name: "x" } }), 404, MSG.notFound);
    expectEnvelope(await a.call("PUT", "/v1/org/policy/rules/order", { key: a.orgKey, body: { orderedIds: [theirs.id] } }), 409, MSG.changed);
  });

  test("project routes require a project context", async () => {
    expectUnauthorized(await api.call("GET", "/v1/policy/rules", { key: null }));
    expectUnauthorized(await api.call("POST", "/v1/policy/publish", { key: api.orgKey }));
  });
});

describe("GET /policy/effective-app-permissions", () => {
  test("unknown providers → flat 404; provider is required", async () => {
    const res = await api.call("GET", "/v1/policy/effective-app-permissions?provider=nope");
    expect(res.text).toBe('{"error":"No permission definition for provider: nope"}');
    expectFlat(res, 404, "No permission definition for provider: nope");
    expectFlat(await api.call("GET", "/v1/org/policy/effective-app-permissions?provider=nope", { key: api.orgKey }), 404, "No permission definition for provider: nope");
    expectEnvelope(await api.call("GET", "/v1/policy/effective-app-permissions"), 422, "provider is required");
    expectEnvelope(await api.call("GET", "/v1/policy/effective-app-permissions?provider="), 422, "provider is required");
    expectEnvelope(await api.call("GET", `/v1/policy/effective-app-permissions?provider=resend&agentId=${UNKNOWN}`), 404, "Agent not found");
  });
});
