// Placeholder secrets through the API (docs/injection.md#placeholders): created, listed and edited like every
// variant; the placeholder's own rules, and its uniqueness among the secrets that can apply together — a project's,
// its organization's and its partner's — including one placeholder inside another, either way.
import { beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addProject, expectFlat } from "./helpers.ts";

const MSG = {
  placeholder: "placeholder must be 8-128 characters of A-Z a-z 0-9 . _ ~ -",
  surfaces: "surfaces must be a non-empty list of: header, query, path, body, websocket",
  header: "value must contain only printable ASCII characters when injected into a header",
  taken: (name: string) => `placeholder is already used by secret "${name}"`,
};
const ALL = ["header", "query", "path", "body", "websocket"];

let api: TestApi;
/** A partner-managed organization with its project (keys), another one; a second project in the bootstrap organization. */
let customer: { organizationId: string; projectId: string; orgApiKey: string; projectApiKey: string };
let partnerKey: string;
let otherProjectKey: string;
let otherCustomer: { projectApiKey: string };

beforeAll(async () => {
  api = await createTestApi({ CREDGATE_MODE: "cloud" });
  ({ partnerKey } = await api.core.services.partners.create("Acme Partner", "owner@acme.test"));
  for (const name of ["Customer", "Other customer"]) {
    const r = await api.call("POST", "/v1/partner/orgs", { key: partnerKey, body: { name } });
    expect(r.status).toBe(201);
    if (name === "Customer") customer = r.body;
    else otherCustomer = r.body;
  }
  otherProjectKey = (await addProject(api)).projectKey;
});

let seq = 0;
function body(injectionConfig: unknown, over: Record<string, unknown> = {}) {
  return { name: `ph-${++seq}`, type: "generic", value: `real-value-${seq}`, hostPattern: "api.example.com", injectionConfig, ...over };
}

async function create(path: string, key: string, injectionConfig: unknown, over: Record<string, unknown> = {}) {
  return api.call("POST", path, { key, body: body(injectionConfig, over) });
}

describe("placeholder secrets: create, list, edit", () => {
  test("stored with every surface by default, or the ones given (each once, in order); listed and read back", async () => {
    const all = await create("/v1/secrets", customer.projectApiKey, { placeholder: "CG_LIST_DEFAULT" });
    expect(all.status).toBe(201);
    const some = await create("/v1/secrets", customer.projectApiKey, { placeholder: "CG_LIST_SOME", surfaces: ["websocket", "body", "body"] });
    expect(some.status).toBe(201);
    const listed = (await api.call("GET", "/v1/secrets", { key: customer.projectApiKey })).body;
    expect(listed.find((s: any) => s.id === all.body.id).injectionConfig).toEqual({ placeholder: "CG_LIST_DEFAULT", surfaces: ALL });
    expect(listed.find((s: any) => s.id === some.body.id).injectionConfig).toEqual({ placeholder: "CG_LIST_SOME", surfaces: ["body", "websocket"] });
    const one = await api.call("GET", `/v1/secrets/${some.body.id}`, { key: customer.projectApiKey });
    expect(one.body.injectionConfig).toEqual({ placeholder: "CG_LIST_SOME", surfaces: ["body", "websocket"] });
    expect(JSON.stringify(listed)).not.toContain("real-value-");
  });

  test("edit: another header secret becomes a placeholder, a placeholder changes its surfaces or its placeholder", async () => {
    const s = await create("/v1/secrets", customer.projectApiKey, { headerName: "x-key" });
    const patch = (injectionConfig: unknown) => api.call("PATCH", `/v1/secrets/${s.body.id}`, { key: customer.projectApiKey, body: { injectionConfig } });
    expect((await patch({ placeholder: "CG_EDIT_ONE" })).status).toBe(200);
    expect((await patch({ placeholder: "CG_EDIT_ONE", surfaces: ["query"] })).status).toBe(200);
    expect((await api.call("GET", `/v1/secrets/${s.body.id}`, { key: customer.projectApiKey })).body.injectionConfig).toEqual({ placeholder: "CG_EDIT_ONE", surfaces: ["query"] });
    expect((await patch({ placeholder: "CG_EDIT_TWO" })).status).toBe(200);
    expectFlat(await patch({ placeholder: "bad one" }), 400, MSG.placeholder);
  });

  test.each([
    [{ placeholder: "short" }, MSG.placeholder],
    [{ placeholder: "has/slash/in" }, MSG.placeholder],
    [{ placeholder: "x".repeat(129) }, MSG.placeholder],
    [{ placeholder: "CG_OK_PLACEHOLDER", surfaces: [] }, MSG.surfaces],
    [{ placeholder: "CG_OK_PLACEHOLDER", surfaces: ["cookie"] }, MSG.surfaces],
    [{ placeholder: "CG_OK_PLACEHOLDER", surfaces: "body" }, MSG.surfaces],
  ])("%j → flat %p", async (injectionConfig, message) => {
    expectFlat(await create("/v1/secrets", customer.projectApiKey, injectionConfig), 400, message);
  });

  test("the value goes into headers: printable ASCII only", async () => {
    for (const value of ["tok\r\nX: y", "tokén", "a\tb"]) {
      expectFlat(await create("/v1/secrets", customer.projectApiKey, { placeholder: "CG_ASCII_ONLY" }, { value }), 400, MSG.header);
    }
    expect((await create("/v1/secrets", customer.projectApiKey, { placeholder: "CG_ASCII_ONLY" }, { value: `a+b/c=d&e "q" \\ x` })).status).toBe(201);
  });
});

describe("a placeholder is unique among the secrets that can apply together", () => {
  test("project ↔ organization, both ways; one inside another counts", async () => {
    expect((await create("/v1/org/secrets", api.orgKey, { placeholder: "CG_ORG_TOKEN" }, { name: "Org token" })).status).toBe(201);
    expectFlat(await create("/v1/secrets", api.projectKey, { placeholder: "CG_ORG_TOKEN" }), 400, MSG.taken("Org token"));
    expectFlat(await create("/v1/secrets", api.projectKey, { placeholder: "CG_ORG_TOKEN_LONGER" }), 400, MSG.taken("Org token"));
    expectFlat(await create("/v1/secrets", api.projectKey, { placeholder: "ORG_TOKE" }), 400, MSG.taken("Org token"));
    expect((await create("/v1/secrets", api.projectKey, { placeholder: "CG_PROJECT_TOKEN" }, { name: "Project token" })).status).toBe(201);
    expectFlat(await create("/v1/org/secrets", api.orgKey, { placeholder: "CG_PROJECT_TOKEN" }), 400, MSG.taken("Project token"));
    // Another project of the organization never shares a request with this one: free there, not at the organization.
    expect((await create("/v1/secrets", otherProjectKey, { placeholder: "CG_PROJECT_TOKEN" })).status).toBe(201);
  });

  test("partner ↔ its organizations and their projects, both ways; other organizations of other partners are free", async () => {
    expect((await create("/v1/partner/secrets", partnerKey, { placeholder: "CG_PARTNER_TOKEN" }, { name: "Partner token" })).status).toBe(201);
    expectFlat(await create("/v1/secrets", customer.projectApiKey, { placeholder: "CG_PARTNER_TOKEN" }), 400, MSG.taken("Partner token"));
    expectFlat(await create("/v1/org/secrets", customer.orgApiKey, { placeholder: "xCG_PARTNER_TOKENx" }), 400, MSG.taken("Partner token"));
    expect((await create("/v1/secrets", otherCustomer.projectApiKey, { placeholder: "CG_OTHER_PROJECT" }, { name: "Other project" })).status).toBe(201);
    expectFlat(await create("/v1/partner/secrets", partnerKey, { placeholder: "CG_OTHER_PROJECT" }), 400, MSG.taken("Other project"));
    const fresh = await api.core.services.partners.create("Second Partner", "owner@second.test");
    expect((await create("/v1/partner/secrets", fresh.partnerKey, { placeholder: "CG_OTHER_PROJECT" })).status).toBe(201);
  });

  test("an edit keeps its own placeholder, and cannot take another's", async () => {
    const mine = await create("/v1/secrets", customer.projectApiKey, { placeholder: "CG_MINE_TOKEN" });
    const theirs = await create("/v1/secrets", customer.projectApiKey, { placeholder: "CG_THEIRS_TOKEN" }, { name: "Theirs" });
    expect((await api.call("PATCH", `/v1/secrets/${mine.body.id}`, { key: customer.projectApiKey, body: { injectionConfig: { placeholder: "CG_MINE_TOKEN", surfaces: ["body"] } } })).status).toBe(200);
    expectFlat(await api.call("PATCH", `/v1/secrets/${mine.body.id}`, { key: customer.projectApiKey, body: { injectionConfig: { placeholder: "CG_THEIRS_TOKEN" } } }), 400, MSG.taken("Theirs"));
    expect(theirs.status).toBe(201);
    expect((await api.call("GET", `/v1/secrets/${mine.body.id}`, { key: customer.projectApiKey })).body.injectionConfig).toEqual({ placeholder: "CG_MINE_TOKEN", surfaces: ["body"] });
  });
});
