// Secrets, project and organization (docs/injection.md#secrets).
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, test } from "bun:test";
import { createTestApi, type TestApi } from "../support/app.ts";
import { addMember, addOrganization, addProject, expectEnvelope, expectFlat, ISO_MS, UUID_V4 } from "./helpers.ts";

const MSG = {
  hostRequired: "Host pattern is required",
  url: "Enter a hostname, not a URL (remove http:// or https://)",
  path: "Enter a hostname only, not a path (use the path pattern field for paths)",
  spaces: "Host pattern must not contain spaces",
  wildcard: "Wildcards are only allowed as a leading subdomain, e.g. *.example.com",
  publicSuffix: "A wildcard can't cover a public suffix like *.com; use a specific domain, e.g. *.example.com",
  injectionRequired: "Header name, parameter name, or URL path template is required for generic secrets",
  shape: "injectionConfig must be exactly one of: {headerName, valueFormat}, {paramName, paramFormat}, {pathTemplate}, {pathRegex, pathReplacement}, {placeholder, surfaces}, {awsSigV4}, {githubApp}, {database}, {gcpServiceAccount}, {azureClientSecret}",
  vaultScope: "External vault is only available for project-scoped secrets",
  vaultUnconfigured: "External vault is not configured on this server",
  pathValue: "Secret value can't contain / ? # % whitespace or control characters when injected into the URL path",
  headerValue: "value must contain only printable ASCII characters when injected into a header",
  noFields: "No fields to update",
  notFound: "Secret not found",
};
const MASK = "••••••••";
const CREATED_KEYS = ["createdAt", "hostPattern", "id", "name", "opRef", "pathPattern", "preview", "storeRef", "type", "valueSource"];
const SECRET_KEYS = ["createdAt", "hostPattern", "id", "injectionConfig", "metadata", "name", "opRef", "pathPattern", "scope", "storeRef", "type", "typeLabel", "valueSource"];

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});

let seq = 0;
const generic = (over: Record<string, unknown> = {}) => ({
  name: `s-${++seq}`,
  type: "generic",
  value: "v",
  hostPattern: "api.x.com",
  injectionConfig: { headerName: "x-k" },
  ...over,
});

async function create(a: TestApi, body: Record<string, unknown>, path = "/v1/secrets", key?: string) {
  const res = await a.call("POST", path, { body, key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

async function listed(a: TestApi, id: string, key?: string) {
  const res = await a.call("GET", "/v1/secrets", { key });
  return res.body.find((s: any) => s.id === id);
}

describe("POST /secrets: generic", () => {
  test("example 18: 20-character inline value → 201 with preview, no value; lists never carry it", async () => {
    const value = "abcd1234567890efWXYZ";
    const res = await api.call("POST", "/v1/secrets", { body: generic({ name: "  Stripe  ", value, pathPattern: "/v1/*" }) });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(CREATED_KEYS);
    expect(res.body).toMatchObject({
      name: "Stripe",
      type: "generic",
      valueSource: "inline",
      opRef: null,
      hostPattern: "api.x.com",
      pathPattern: "/v1/*",
      preview: `abcd${MASK}WXYZ`,
    });
    expect(res.body.id).toMatch(UUID_V4);
    expect(res.body.createdAt).toMatch(ISO_MS);
    expect(res.text).not.toContain(value);
    const list = await api.call("GET", "/v1/secrets");
    expect(list.text).not.toContain(value);
    const item = list.body.find((s: any) => s.id === res.body.id);
    expect(Object.keys(item).sort()).toEqual(SECRET_KEYS);
    expect(item).toEqual({
      id: res.body.id,
      name: "Stripe",
      type: "generic",
      valueSource: "inline",
      opRef: null,
      storeRef: null,
      hostPattern: "api.x.com",
      pathPattern: "/v1/*",
      injectionConfig: { headerName: "x-k", valueFormat: "{value}" },
      metadata: null,
      scope: "project",
      typeLabel: "Generic Secret",
      createdAt: res.body.createdAt,
    });
    const one = await api.call("GET", `/v1/secrets/${res.body.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(item);
  });

  test("preview: under 16 characters fully masked, 16 shows first and last 4", async () => {
    expect((await create(api, generic({ value: "123456789012345" }))).preview).toBe(MASK);
    expect((await create(api, generic({ value: "x" }))).preview).toBe(MASK);
    expect((await create(api, generic({ value: "1234567890123456" }))).preview).toBe(`1234${MASK}3456`);
  });

  test("the four injection variants are stored in their normalised form", async () => {
    const cases: [unknown, unknown][] = [
      [{ headerName: "authorization", valueFormat: "Bearer {value}" }, { headerName: "authorization", valueFormat: "Bearer {value}" }],
      [{ paramName: "api_key" }, { paramName: "api_key", paramFormat: "{value}" }],
      [{ pathTemplate: "/bot{value}" }, { pathTemplate: "/bot{value}" }],
      [{ pathRegex: "^/proj/[^/]+/", pathReplacement: "/proj/{value}/" }, { pathRegex: "^/proj/[^/]+/", pathReplacement: "/proj/{value}/" }],
    ];
    for (const [injectionConfig, stored] of cases) {
      const created = await create(api, generic({ injectionConfig, value: "tok123" }));
      expect((await listed(api, created.id)).injectionConfig).toEqual(stored);
    }
  });

  test("hostPattern is trimmed; a leading wildcard is kept; pathPattern '*' and null accepted", async () => {
    const a = await create(api, generic({ hostPattern: "  API.Example.com  ", pathPattern: null }));
    expect(a.hostPattern.toLowerCase()).toBe("api.example.com");
    expect(a.pathPattern).toBeNull();
    const b = await create(api, generic({ hostPattern: "*.example.com", pathPattern: "*" }));
    expect(b.hostPattern).toBe("*.example.com");
    const c = await create(api, generic({ hostPattern: "*.localhost" }));
    expect(c.hostPattern).toBe("*.localhost");
  });

  test("example 13: a URL as hostPattern → flat seed message", async () => {
    const body = { name: "s", type: "generic", value: "v", hostPattern: "https://api.x.com", injectionConfig: { headerName: "x-k" } };
    const res = await api.call("POST", "/v1/secrets", { body });
    expect(res.text).toBe('{"error":"Enter a hostname, not a URL (remove http:// or https://)"}');
  });

  test.each([
    [undefined, MSG.hostRequired],
    [null, MSG.hostRequired],
    ["", MSG.hostRequired],
    ["   ", MSG.hostRequired],
    ["https://api.x.com", MSG.url],
    ["api.x.com/v1", MSG.path],
    ["api x.com", MSG.spaces],
    ["a*.example.com", MSG.wildcard],
    ["*", MSG.wildcard],
    ["*.com", MSG.publicSuffix],
    ["*.co.uk", MSG.publicSuffix],
    ["*.github.io", MSG.publicSuffix],
    ["https://api x.com/v1", MSG.url],
    ["api x.com/v1", MSG.path],
    ["a* b", MSG.spaces],
    ["x".repeat(256), "hostPattern must be at most 255 characters"],
  ])("example 14 and docs/injection.md#host-and-path-patterns host checks: hostPattern %j → %p", async (hostPattern, message) => {
    const body: Record<string, unknown> = generic({ hostPattern });
    if (hostPattern === undefined) delete body.hostPattern;
    expectFlat(await api.call("POST", "/v1/secrets", { body }), 400, message);
  });

  test("hostPattern of the wrong type", async () => {
    expectFlat(await api.call("POST", "/v1/secrets", { body: generic({ hostPattern: 5 }) }), 400, "hostPattern must be a string");
  });

  test("example 15: no injectionConfig (absent or null) → envelope; mixed variants → flat 'exactly one of'", async () => {
    const body: Record<string, unknown> = generic();
    delete body.injectionConfig;
    expectEnvelope(await api.call("POST", "/v1/secrets", { body }), 400, MSG.injectionRequired);
    expectEnvelope(await api.call("POST", "/v1/secrets", { body: generic({ injectionConfig: null }) }), 400, MSG.injectionRequired);
    expectFlat(await api.call("POST", "/v1/secrets", { body: generic({ injectionConfig: { headerName: "a", paramName: "b" } }) }), 400, MSG.shape);
  });

  test.each([
    [{}, MSG.shape],
    [{ headerName: "x", other: "y" }, MSG.shape],
    [{ pathRegex: "^/a" }, MSG.shape],
    ["x-api-key", MSG.shape],
    [["headerName"], MSG.shape],
    [{ headerName: 1 }, MSG.shape],
    [{ headerName: "x", valueFormat: "Bearer" }, "valueFormat must contain {value}"],
    [{ pathTemplate: "bot{value}" }, "Path template must start with /"],
    [{ pathTemplate: "/bot" }, "Path template must contain {value} exactly once"],
    [{ pathTemplate: "/{value}{value}" }, "Path template must contain {value} exactly once"],
    [{ pathRegex: "(", pathReplacement: "/{value}" }, "Invalid regular expression"],
    [{ pathRegex: "^/a", pathReplacement: "/b" }, "Replacement must include {value} (where the secret goes)"],
  ])("injectionConfig %j → flat %p", async (injectionConfig, message) => {
    expectFlat(await api.call("POST", "/v1/secrets", { body: generic({ injectionConfig, value: "tok" }) }), 400, message);
  });

  test.each([
    [{ type: "generic" }, "name is required"],
    [{ name: "", type: "generic" }, "name must be 1-255 characters"],
    [{ name: "x".repeat(256), type: "generic" }, "name must be 1-255 characters"],
    [{ name: "s" }, "type is required"],
    [{ name: "s", type: "llm_c" }, "type must be one of: llm_a, llm_b, generic"],
    [{ name: "s", type: "generic", valueSource: "store" }, "valueSource must be one of: inline, external_vault, vault"],
    [{ name: "s", type: "generic", valueSource: "vault" }, "storeRef is required when valueSource is vault"],
    [{ name: "s", type: "generic", valueSource: "vault", storeRef: "  " }, "storeRef is required when valueSource is vault"],
    [{ name: "s", type: "generic", valueSource: "vault", storeRef: "op://a/b/c" }, "storeRef must start with vault://, vault-db://, aws-sm://, gcp-sm://, azure-kv:// or cmd://"],
    [{ name: "s", type: "generic", valueSource: "vault", storeRef: "vault://secret" }, "storeRef must look like vault://<mount>/<path>#<field>"],
    [{ name: "s", type: "generic", hostPattern: "api.x.com", injectionConfig: { headerName: "x" } }, "value is required"],
    [{ name: "s", type: "generic", value: "", hostPattern: "api.x.com", injectionConfig: { headerName: "x" } }, "value is required"],
    [{ name: "s", type: "generic", value: "x".repeat(10001), hostPattern: "api.x.com", injectionConfig: { headerName: "x" } }, "value must be 1-10000 characters"],
    [{ name: "s", type: "generic", value: 5, hostPattern: "api.x.com", injectionConfig: { headerName: "x" } }, "value must be a string"],
    [{ name: "s", type: "generic", valueSource: "external_vault", hostPattern: "api.x.com", injectionConfig: { headerName: "x" } }, "opRef is required when valueSource is external_vault"],
    [{ name: "s", type: "generic", valueSource: "external_vault", opRef: "vault/item/field", hostPattern: "api.x.com", injectionConfig: { headerName: "x" } }, "opRef must look like op://vault/item/field"],
    [{ name: "s", type: "generic", valueSource: "external_vault", opRef: "op://v//f", hostPattern: "api.x.com", injectionConfig: { headerName: "x" } }, "opRef must look like op://vault/item/field"],
    [{ name: "s", type: "generic", valueSource: "external_vault", opRef: "op://v/i", hostPattern: "api.x.com", injectionConfig: { headerName: "x" } }, "opRef must look like op://vault/item/field"],
    [{ name: "s", type: "generic", value: "v", hostPattern: "api.x.com", pathPattern: "v1/*", injectionConfig: { headerName: "x" } }, "pathPattern must be * or start with /"],
    [{ name: "s", type: "llm_a", value: "k", metadata: { authMode: "bearer" } }, "metadata.authMode must be one of: api-key, oauth"],
  ])("field checks: %j → flat %p", async (body, message) => {
    expectFlat(await api.call("POST", "/v1/secrets", { body }), 400, message);
  });

  test.each([
    // Everything wrong: the first field in table order is reported.
    [{ name: "", type: "x", valueSource: "x", hostPattern: "https://x", injectionConfig: {} }, "name must be 1-255 characters"],
    [{ name: "s", type: "x", valueSource: "x", hostPattern: "https://x", injectionConfig: {} }, "type must be one of: llm_a, llm_b, generic"],
    [{ name: "s", type: "generic", valueSource: "x", hostPattern: "https://x", injectionConfig: {} }, "valueSource must be one of: inline, external_vault, vault"],
    [{ name: "s", type: "generic", hostPattern: "https://x", injectionConfig: {} }, "value is required"],
    [{ name: "s", type: "generic", value: "v", hostPattern: "https://x", pathPattern: "x", injectionConfig: {} }, MSG.url],
    [{ name: "s", type: "generic", value: "v", hostPattern: "api.x.com", pathPattern: "x", injectionConfig: {} }, "pathPattern must be * or start with /"],
    [{ name: "s", type: "generic", value: "v", hostPattern: "api.x.com", pathPattern: "/x", injectionConfig: {} }, MSG.shape],
    [{ name: "s", type: "generic", valueSource: "external_vault", opRef: "bad", hostPattern: "https://x" }, "opRef must look like op://vault/item/field"],
  ])("check order: %j → %p", async (body, message) => {
    expectFlat(await api.call("POST", "/v1/secrets", { body }), 400, message);
  });

  test("host checks come before the injectionConfig envelope; schema checks before service checks", async () => {
    expectFlat(await api.call("POST", "/v1/secrets", { body: { name: "s", type: "generic", value: "v", hostPattern: "a b" } }), 400, MSG.spaces);
    // A path-template value check (service) never hides a schema failure.
    const body = generic({ value: "a/b", pathPattern: "nope", injectionConfig: { pathTemplate: "/x{value}" } });
    expectFlat(await api.call("POST", "/v1/secrets", { body }), 400, "pathPattern must be * or start with /");
  });

  test("a value spliced into the URL path must be path-safe (service check, envelope)", async () => {
    for (const value of ["a/b", "a?b", "a#b", "a%2F", "a b", "a\u0001b"]) {
      for (const injectionConfig of [{ pathTemplate: "/bot{value}" }, { pathRegex: "^/p/[^/]+", pathReplacement: "/p/{value}" }]) {
        expectEnvelope(await api.call("POST", "/v1/secrets", { body: generic({ value, injectionConfig }) }), 400, MSG.pathValue);
      }
    }
    // The same value is fine in a header or a query parameter.
    expect((await api.call("POST", "/v1/secrets", { body: generic({ value: "a/b?c#d%e" }) })).status).toBe(201);
    expect((await api.call("POST", "/v1/secrets", { body: generic({ value: "a/b?c", injectionConfig: { paramName: "k" } }) })).status).toBe(201);
  });
});

describe("values that cannot go into a header are refused when stored (flat 400 naming value)", () => {
  // A token pasted with a typographic ellipsis, a non-ASCII letter, CR/LF (header injection), a tab, DEL.
  const BAD = ["ghp_abcdef\u2026", "tokén", "tok\r\nX-Evil: 1", "tok\nline", "a\tb", "a\u007fb", "\u{1F511}key"];

  test.each(BAD)("create %j: generic header, llm_a, llm_b (also inside a Codex auth.json), org secret", async (value) => {
    expectFlat(await api.call("POST", "/v1/secrets", { body: generic({ value }) }), 400, MSG.headerValue);
    expectFlat(await api.call("POST", "/v1/secrets", { body: generic({ value: `x${value}`, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } }) }), 400, MSG.headerValue);
    expectFlat(await api.call("POST", "/v1/secrets", { body: { name: "a", type: "llm_a", value: `sk-ant-api03-${value}` } }), 400, MSG.headerValue);
    expectFlat(await api.call("POST", "/v1/secrets", { body: { name: "b", type: "llm_b", value: `sk-proj-${value}` } }), 400, MSG.headerValue);
    const codex = JSON.stringify({ tokens: { access_token: `eyJ${value}`, refresh_token: "r", account_id: "acct" } });
    expectFlat(await api.call("POST", "/v1/secrets", { body: { name: "codex", type: "llm_b", value: codex } }), 400, MSG.headerValue);
    expectFlat(await api.call("POST", "/v1/org/secrets", { key: api.orgKey, body: generic({ value }) }), 400, MSG.headerValue);
  });

  test("the check applies after normalisation: a pretty-printed auth.json is fine, a non-ASCII account id is not", async () => {
    const codex = (accountId: string) => JSON.stringify({ tokens: { access_token: "eyJ-access", refresh_token: "r", account_id: accountId } }, null, 2);
    expect((await api.call("POST", "/v1/secrets", { body: { name: "codex-ok", type: "llm_b", value: codex("acct-1") } })).status).toBe(201);
    expectFlat(await api.call("POST", "/v1/secrets", { body: { name: "codex-bad", type: "llm_b", value: codex("acct\u2026") } }), 400, MSG.headerValue);
  });

  test("the same values are fine where they are not a header: a query parameter", async () => {
    for (const value of ["ghp_abcdef\u2026", "tokén", "a\tb"]) {
      expect((await api.call("POST", "/v1/secrets", { body: generic({ value, injectionConfig: { paramName: "key" } }) })).status).toBe(201);
    }
  });

  test("a valueFormat that is not printable ASCII is refused", async () => {
    for (const valueFormat of ["Bearer\u00a0{value}", "Token \u2014 {value}", "Bearer\t{value}"]) {
      expectFlat(await api.call("POST", "/v1/secrets", { body: generic({ injectionConfig: { headerName: "authorization", valueFormat } }) }), 400, "valueFormat must contain only printable ASCII characters");
    }
  });

  test("update: a new value, or a switch into a header, is refused the same way and changes nothing", async () => {
    const header = await create(api, generic({ value: "good-value" }));
    const before = await listed(api, header.id);
    for (const value of BAD) expectFlat(await api.call("PATCH", `/v1/secrets/${header.id}`, { body: { value } }), 400, MSG.headerValue);
    expect(await listed(api, header.id)).toEqual(before);

    const param = await create(api, generic({ value: "ghp_abcdef\u2026", injectionConfig: { paramName: "key" } }));
    expectFlat(await api.call("PATCH", `/v1/secrets/${param.id}`, { body: { injectionConfig: { headerName: "authorization" } } }), 400, MSG.headerValue);
    expect((await listed(api, param.id)).injectionConfig).toEqual({ paramName: "key", paramFormat: "{value}" });

    const llm = await create(api, { name: "llm-b", type: "llm_b", value: "sk-proj-good" });
    expectFlat(await api.call("PATCH", `/v1/secrets/${llm.id}`, { body: { value: "sk-proj-\u2026" } }), 400, MSG.headerValue);
    const org = await create(api, generic(), "/v1/org/secrets", api.orgKey);
    expectFlat(await api.call("PATCH", `/v1/org/secrets/${org.id}`, { key: api.orgKey, body: { value: "tok\r\nX: y" } }), 400, MSG.headerValue);
    // A rename of a stored secret is not blocked by the check.
    expect((await api.call("PATCH", `/v1/secrets/${param.id}`, { body: { name: "renamed" } })).status).toBe(200);
  });
});

describe("POST /secrets: LLM types", () => {
  test("llm_a: default host api.anthropic.com; api-key vs sk-ant-oat → oauth; typeLabel", async () => {
    const key = await create(api, { name: "anthropic", type: "llm_a", value: "sk-ant-api03-abcdefghijklmnop" });
    expect(key.hostPattern).toBe("api.anthropic.com");
    expect(key.preview).toBe(`sk-a${MASK}mnop`);
    expect(await listed(api, key.id)).toMatchObject({ metadata: { authMode: "api-key" }, injectionConfig: null, typeLabel: "Anthropic-compatible API Key", scope: "project" });
    const oauth = await create(api, { name: "claude-oauth", type: "llm_a", value: "sk-ant-oat01-abcdefghijklmnop" });
    expect(oauth.hostPattern).toBe("api.anthropic.com");
    expect((await listed(api, oauth.id)).metadata).toEqual({ authMode: "oauth" });
  });

  test("an explicit metadata.authMode wins", async () => {
    const a = await create(api, { name: "forced", type: "llm_a", value: "sk-ant-oat01-abcdefghijklmnop", metadata: { authMode: "api-key" } });
    expect((await listed(api, a.id)).metadata).toEqual({ authMode: "api-key" });
    const b = await create(api, { name: "forced-b", type: "llm_b", value: "plain-token-value-123", metadata: { authMode: "oauth" } });
    expect(b.hostPattern).toBe("chatgpt.com");
    expect((await listed(api, b.id)).metadata).toEqual({ authMode: "oauth" });
  });

  test("llm_b: a plain key → api.openai.com, api-key; typeLabel", async () => {
    const s = await create(api, { name: "openai", type: "llm_b", value: "sk-proj-0123456789abcdef" });
    expect(s.hostPattern).toBe("api.openai.com");
    expect(await listed(api, s.id)).toMatchObject({ metadata: { authMode: "api-key" }, typeLabel: "OpenAI-compatible API Key", injectionConfig: null });
  });

  test("llm_b: a Codex auth.json → oauth with accountId, host chatgpt.com; the file is never echoed", async () => {
    const accessToken = "eyJhbGciOi.codex-access-token.sig0123";
    const authJson = JSON.stringify({
      auth_mode: "chatgpt",
      OPENAI_API_KEY: null,
      tokens: { id_token: "eyJ.id.token", access_token: accessToken, refresh_token: "rt-secret-refresh", account_id: "acct-42" },
      last_refresh: "2025-01-01T00:00:00Z",
    });
    const res = await api.call("POST", "/v1/secrets", { body: { name: "codex", type: "llm_b", value: authJson } });
    expect(res.status).toBe(201);
    expect(res.body.hostPattern).toBe("chatgpt.com");
    expect(res.body.preview).toBe(`${accessToken.slice(0, 4)}${MASK}${accessToken.slice(-4)}`);
    for (const fragment of [accessToken, "rt-secret-refresh", "eyJ.id.token"]) expect(res.text).not.toContain(fragment);
    expect((await listed(api, res.body.id)).metadata).toEqual({ authMode: "oauth", accountId: "acct-42" });
  });

  test("llm_b: {auth_mode:'apikey', OPENAI_API_KEY} → the key is extracted", async () => {
    const key = "sk-proj-extracted-0123456789";
    const res = await api.call("POST", "/v1/secrets", { body: { name: "codex-key", type: "llm_b", value: JSON.stringify({ auth_mode: "apikey", OPENAI_API_KEY: key }) } });
    expect(res.status).toBe(201);
    expect(res.body.hostPattern).toBe("api.openai.com");
    expect(res.body.preview).toBe(`sk-p${MASK}6789`);
    expect((await listed(api, res.body.id)).metadata).toEqual({ authMode: "api-key" });
  });

  test("LLM types accept a custom hostPattern (checked like any other) and ignore injectionConfig", async () => {
    const s = await create(api, { name: "proxy", type: "llm_a", value: "k1", hostPattern: "llm.internal.example", injectionConfig: { junk: true } });
    expect(s.hostPattern).toBe("llm.internal.example");
    expect((await listed(api, s.id)).injectionConfig).toBeNull();
    const blank = await create(api, { name: "blank-host", type: "llm_b", value: "k2", hostPattern: "  " });
    expect(blank.hostPattern).toBe("api.openai.com");
    expectFlat(await api.call("POST", "/v1/secrets", { body: { name: "bad", type: "llm_a", value: "k", hostPattern: "https://x.com" } }), 400, MSG.url);
    expectFlat(await api.call("POST", "/v1/secrets", { body: { name: "bad", type: "llm_b", value: "k", hostPattern: "*.com" } }), 400, MSG.publicSuffix);
  });
});

describe("external vault", () => {
  const vaultBody = (over: Record<string, unknown> = {}) => generic({ valueSource: "external_vault", opRef: "op://v/i/f", value: undefined, ...over });

  test("without CREDGATE_OP_CONNECT_HOST → envelope 'not configured'", async () => {
    expectEnvelope(await api.call("POST", "/v1/secrets", { body: vaultBody() }), 400, MSG.vaultUnconfigured);
  });

  test("example 16: on an organization secret → envelope scope message (configured or not)", async () => {
    const body = { name: "s", type: "generic", valueSource: "external_vault", opRef: "op://v/i/f", hostPattern: "api.x.com", injectionConfig: { headerName: "x-k" } };
    expectEnvelope(await api.call("POST", "/v1/org/secrets", { key: api.orgKey, body }), 400, MSG.vaultScope);
    const vaulted = await createTestApi({ CREDGATE_OP_CONNECT_HOST: "http://127.0.0.1:1" });
    expectEnvelope(await vaulted.call("POST", "/v1/org/secrets", { key: vaulted.orgKey, body }), 400, MSG.vaultScope);
    expect((await vaulted.call("GET", "/v1/org/secrets", { key: vaulted.orgKey })).body).toEqual([]);
  });

  test("configured → 201 without preview; opRef and opDisplay kept; a stray value is ignored", async () => {
    const vaulted = await createTestApi({ CREDGATE_OP_CONNECT_HOST: "http://127.0.0.1:1" });
    const res = await vaulted.call("POST", "/v1/secrets", {
      body: vaultBody({ opRef: "op://Private/Stripe/credential", opDisplay: { vault: "Private", item: "Stripe", field: "credential" }, value: "stray-value-xyz" }),
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(CREATED_KEYS.filter((k) => k !== "preview"));
    expect(res.body).toMatchObject({ valueSource: "external_vault", opRef: "op://Private/Stripe/credential" });
    expect(res.text).not.toContain("stray-value-xyz");
    const item = await listed(vaulted, res.body.id);
    expect(item).toMatchObject({ valueSource: "external_vault", opRef: "op://Private/Stripe/credential" });
    expect(item.metadata).toEqual({ opDisplay: { vault: "Private", item: "Stripe", field: "credential" } });
  });
});

describe("listing and visibility", () => {
  test("project list = own + organization secrets, createdAt desc; org list = organization only", async () => {
    const fresh = await createTestApi();
    const p1 = await create(fresh, generic({ name: "p1" }));
    await Bun.sleep(3);
    const o1 = await create(fresh, generic({ name: "o1" }), "/v1/org/secrets", fresh.orgKey);
    await Bun.sleep(3);
    const p2 = await create(fresh, { name: "p2", type: "llm_a", value: "k" });
    const list = (await fresh.call("GET", "/v1/secrets")).body;
    expect(list.map((s: any) => [s.name, s.scope])).toEqual([
      ["p2", "project"],
      ["o1", "organization"],
      ["p1", "project"],
    ]);
    const org = await fresh.call("GET", "/v1/org/secrets", { key: fresh.orgKey });
    expect(org.status).toBe(200);
    expect(org.body.map((s: any) => s.id)).toEqual([o1.id]);
    expect(org.body[0].scope).toBe("organization");
    expect(Object.keys(org.body[0]).sort()).toEqual(SECRET_KEYS);
    // The owner's project key has the organization context too (O·admin).
    expect((await fresh.call("GET", "/v1/org/secrets")).body.map((s: any) => s.id)).toEqual([o1.id]);
    // An org secret is readable from the project.
    expect((await fresh.call("GET", `/v1/secrets/${o1.id}`)).body.scope).toBe("organization");
    expect((await fresh.call("GET", `/v1/org/secrets/${o1.id}`, { key: fresh.orgKey })).body.id).toBe(o1.id);
    expectEnvelope(await fresh.call("GET", `/v1/org/secrets/${p1.id}`, { key: fresh.orgKey }), 404, MSG.notFound);
    expect(p2.id).toMatch(UUID_V4);
  });

  test("another project's and another organization's secrets are invisible", async () => {
    const fresh = await createTestApi();
    const second = await addProject(fresh, "Neighbour");
    const theirs = await create(fresh, generic({ name: "neighbour" }), "/v1/secrets", second.projectKey);
    const foreign = await addOrganization(fresh, "Foreign");
    const foreignOrg = await create(fresh, generic({ name: "foreign-org" }), "/v1/org/secrets", foreign.orgKey);
    const mine = (await fresh.call("GET", "/v1/secrets")).body.map((s: any) => s.id);
    expect(mine).not.toContain(theirs.id);
    expect(mine).not.toContain(foreignOrg.id);
    expect((await fresh.call("GET", "/v1/org/secrets", { key: fresh.orgKey })).body.map((s: any) => s.id)).not.toContain(foreignOrg.id);
    expectEnvelope(await fresh.call("GET", `/v1/secrets/${theirs.id}`), 404, MSG.notFound);
    expectEnvelope(await fresh.call("PATCH", `/v1/secrets/${theirs.id}`, { body: { name: "x" } }), 404, MSG.notFound);
    expectEnvelope(await fresh.call("DELETE", `/v1/secrets/${theirs.id}`), 404, MSG.notFound);
    expectEnvelope(await fresh.call("PATCH", `/v1/org/secrets/${foreignOrg.id}`, { key: fresh.orgKey, body: { name: "x" } }), 404, MSG.notFound);
    expectEnvelope(await fresh.call("GET", `/v1/secrets/${foreignOrg.id}`), 404, MSG.notFound);
  });

  test("organization secret routes are admin-only", async () => {
    const member = await addMember(api, "member");
    expectEnvelope(await api.call("GET", "/v1/org/secrets", { key: member.projectKey }), 403, "Insufficient permissions");
    expectEnvelope(await api.call("POST", "/v1/org/secrets", { key: member.projectKey, body: generic() }), 403, "Insufficient permissions");
    // The member can still create project secrets.
    expect((await api.call("POST", "/v1/secrets", { key: member.projectKey, body: generic() })).status).toBe(201);
  });

  test("GET /secrets/{unknown} → 404 envelope", async () => {
    expectEnvelope(await api.call("GET", "/v1/secrets/00000000-0000-4000-8000-000000000000"), 404, MSG.notFound);
  });
});

describe("PATCH /secrets/{id}", () => {
  test("example 17: {} → flat 'No fields to update' (also an absent body); unknown id → 404 envelope", async () => {
    const s = await create(api, generic());
    const res = await api.call("PATCH", `/v1/secrets/${s.id}`, { body: {} });
    expect(res.text).toBe('{"error":"No fields to update"}');
    expectFlat(await api.call("PATCH", `/v1/secrets/${s.id}`), 400, MSG.noFields);
    expectEnvelope(await api.call("PATCH", "/v1/secrets/00000000-0000-4000-8000-000000000000", { body: { name: "x" } }), 404, MSG.notFound);
  });

  test("only ignored fields → envelope 'No fields to update'", async () => {
    const llm = await create(api, { name: "llm", type: "llm_a", value: "k" });
    expectEnvelope(await api.call("PATCH", `/v1/secrets/${llm.id}`, { body: { injectionConfig: { headerName: "x" } } }), 400, MSG.noFields);
    expectEnvelope(await api.call("PATCH", `/v1/secrets/${llm.id}`, { body: { unknownField: 1 } }), 400, MSG.noFields);
    const g = await create(api, generic());
    expectEnvelope(await api.call("PATCH", `/v1/secrets/${g.id}`, { body: { somethingElse: true } }), 400, MSG.noFields);
  });

  test("type cannot be changed (flat), whatever else is sent", async () => {
    const s = await create(api, generic());
    expectFlat(await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { type: "llm_a" } }), 400, "type cannot be changed");
    expectFlat(await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { type: "generic", name: "renamed" } }), 400, "type cannot be changed");
    expect((await listed(api, s.id)).name).toBe(s.name);
  });

  test("name, hostPattern, pathPattern and injectionConfig update; {success:true}", async () => {
    const s = await create(api, generic({ pathPattern: "/v1/*" }));
    const res = await api.call("PATCH", `/v1/secrets/${s.id}`, {
      body: { name: "  renamed  ", hostPattern: " *.example.com ", injectionConfig: { paramName: "key" } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect(await listed(api, s.id)).toMatchObject({ name: "renamed", hostPattern: "*.example.com", pathPattern: "/v1/*", injectionConfig: { paramName: "key", paramFormat: "{value}" } });
    await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { pathPattern: null } });
    expect((await listed(api, s.id)).pathPattern).toBeNull();
    await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { pathPattern: "/a" } });
    expect((await listed(api, s.id)).pathPattern).toBe("/a");
    await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { pathPattern: "  " } });
    expect((await listed(api, s.id)).pathPattern).toBeNull();
  });

  test.each([
    [{ name: "" }, "name must be 1-255 characters"],
    [{ name: 5 }, "name must be a string"],
    [{ valueSource: "other" }, "valueSource must be one of: inline, external_vault, vault"],
    [{ value: "" }, "value must be 1-10000 characters"],
    [{ hostPattern: "https://api.x.com" }, MSG.url],
    [{ hostPattern: "api.x.com/v1" }, MSG.path],
    [{ hostPattern: "api x.com" }, MSG.spaces],
    [{ hostPattern: "a*.x.com" }, MSG.wildcard],
    [{ hostPattern: "*.com" }, MSG.publicSuffix],
    [{ hostPattern: "" }, MSG.hostRequired],
    [{ pathPattern: "v1" }, "pathPattern must be * or start with /"],
    [{ opRef: "nope" }, "opRef must look like op://vault/item/field"],
    [{ injectionConfig: { headerName: "a", paramName: "b" } }, MSG.shape],
    [{ injectionConfig: { pathTemplate: "/nothing" } }, "Path template must contain {value} exactly once"],
  ])("generic secret PATCH %j → flat %p, nothing changed", async (body, message) => {
    const s = await create(api, generic());
    const before = await listed(api, s.id);
    expectFlat(await api.call("PATCH", `/v1/secrets/${s.id}`, { body }), 400, message);
    expect(await listed(api, s.id)).toEqual(before);
  });

  test("a new value re-checks path safety and recomputes LLM metadata", async () => {
    const path = await create(api, generic({ value: "safe", injectionConfig: { pathTemplate: "/bot{value}" } }));
    expectEnvelope(await api.call("PATCH", `/v1/secrets/${path.id}`, { body: { value: "un/safe" } }), 400, MSG.pathValue);
    expect((await api.call("PATCH", `/v1/secrets/${path.id}`, { body: { value: "still-safe" } })).status).toBe(200);
    // Switching an unsafe-valued header secret to path injection is refused too.
    const header = await create(api, generic({ value: "has/slash" }));
    expectEnvelope(await api.call("PATCH", `/v1/secrets/${header.id}`, { body: { injectionConfig: { pathTemplate: "/b{value}" } } }), 400, MSG.pathValue);
    expect((await listed(api, header.id)).injectionConfig).toEqual({ headerName: "x-k", valueFormat: "{value}" });

    const llm = await create(api, { name: "llm-a", type: "llm_a", value: "sk-ant-api03-x" });
    expect((await listed(api, llm.id)).metadata).toEqual({ authMode: "api-key" });
    expect((await api.call("PATCH", `/v1/secrets/${llm.id}`, { body: { value: "sk-ant-oat01-y" } })).status).toBe(200);
    expect((await listed(api, llm.id)).metadata).toEqual({ authMode: "oauth" });
  });

  test("switching to external_vault: not configured → envelope; on an org secret → scope message", async () => {
    const s = await create(api, generic());
    expectEnvelope(await api.call("PATCH", `/v1/secrets/${s.id}`, { body: { valueSource: "external_vault", opRef: "op://v/i/f" } }), 400, MSG.vaultUnconfigured);
    const o = await create(api, generic(), "/v1/org/secrets", api.orgKey);
    expectEnvelope(await api.call("PATCH", `/v1/org/secrets/${o.id}`, { key: api.orgKey, body: { valueSource: "external_vault", opRef: "op://v/i/f" } }), 400, MSG.vaultScope);
    expect((await listed(api, s.id)).valueSource).toBe("inline");
  });

  test("with a vault configured: inline → external_vault (opRef set) → inline again with a new value", async () => {
    const vaulted = await createTestApi({ CREDGATE_OP_CONNECT_HOST: "http://127.0.0.1:1" });
    const s = await create(vaulted, generic());
    expect((await vaulted.call("PATCH", `/v1/secrets/${s.id}`, { body: { valueSource: "external_vault", opRef: "op://v/i/f" } })).status).toBe(200);
    expect(await listed(vaulted, s.id)).toMatchObject({ valueSource: "external_vault", opRef: "op://v/i/f" });
    // The stored inline value is discarded.
    expect(await vaulted.core.store.query(sql`SELECT value_sealed FROM secrets WHERE id = ${s.id}`)).toEqual([{ value_sealed: null }]);
    expect((await vaulted.call("PATCH", `/v1/secrets/${s.id}`, { body: { value: "back-inline" } })).status).toBe(200);
    expect(await listed(vaulted, s.id)).toMatchObject({ valueSource: "inline", opRef: null });
  });

  test("an organization secret appears in the project list but project routes cannot PATCH or DELETE it", async () => {
    const o = await create(api, generic({ name: "org-owned" }), "/v1/org/secrets", api.orgKey);
    expect((await listed(api, o.id)).scope).toBe("organization");
    expectEnvelope(await api.call("PATCH", `/v1/secrets/${o.id}`, { body: { name: "hijacked" } }), 404, MSG.notFound);
    expectEnvelope(await api.call("DELETE", `/v1/secrets/${o.id}`), 404, MSG.notFound);
    expect((await listed(api, o.id)).name).toBe("org-owned");
    // And the reverse: a project secret is not an org secret.
    const p = await create(api, generic());
    expectEnvelope(await api.call("PATCH", `/v1/org/secrets/${p.id}`, { key: api.orgKey, body: { name: "x" } }), 404, MSG.notFound);
    expectEnvelope(await api.call("DELETE", `/v1/org/secrets/${p.id}`, { key: api.orgKey }), 404, MSG.notFound);
    // The org routes manage it.
    expect((await api.call("PATCH", `/v1/org/secrets/${o.id}`, { key: api.orgKey, body: { name: "org-renamed" } })).body).toEqual({ success: true });
    expect((await listed(api, o.id)).name).toBe("org-renamed");
    expectFlat(await api.call("PATCH", `/v1/org/secrets/${o.id}`, { key: api.orgKey, body: {} }), 400, MSG.noFields);
    expect((await api.call("DELETE", `/v1/org/secrets/${o.id}`, { key: api.orgKey })).status).toBe(204);
    expect(await listed(api, o.id)).toBeUndefined();
  });
});

describe("DELETE /secrets/{id}", () => {
  test("204 with an empty body; then 404", async () => {
    const s = await create(api, generic());
    const res = await api.call("DELETE", `/v1/secrets/${s.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expectEnvelope(await api.call("GET", `/v1/secrets/${s.id}`), 404, MSG.notFound);
    expectEnvelope(await api.call("DELETE", `/v1/secrets/${s.id}`), 404, MSG.notFound);
  });
});

describe("secret values never leave the server", () => {
  test("no response of any secret endpoint contains a stored value", async () => {
    const fresh = await createTestApi({ CREDGATE_OP_CONNECT_HOST: "http://127.0.0.1:1" });
    const values = ["generic-header-value-0001", "generic-param-value-0002", "pathvalue0003", "sk-ant-api03-value-0004", "sk-proj-value-0005", "org-secret-value-0006", "patched-value-0007"];
    const texts: string[] = [];
    const call = async (method: string, path: string, opts: { key?: string; body?: unknown } = {}) => {
      const r = await fresh.call(method, path, opts);
      texts.push(r.text);
      return r;
    };
    const g = (await call("POST", "/v1/secrets", { body: generic({ value: values[0] }) })).body;
    await call("POST", "/v1/secrets", { body: generic({ value: values[1], injectionConfig: { paramName: "k" } }) });
    await call("POST", "/v1/secrets", { body: generic({ value: values[2], injectionConfig: { pathTemplate: "/b{value}" } }) });
    await call("POST", "/v1/secrets", { body: { name: "a", type: "llm_a", value: values[3] } });
    await call("POST", "/v1/secrets", { body: { name: "b", type: "llm_b", value: values[4] } });
    const o = (await call("POST", "/v1/org/secrets", { key: fresh.orgKey, body: generic({ value: values[5] }) })).body;
    await call("PATCH", `/v1/secrets/${g.id}`, { body: { value: values[6] } });
    await call("GET", "/v1/secrets");
    await call("GET", `/v1/secrets/${g.id}`);
    await call("GET", `/v1/secrets/${o.id}`);
    await call("GET", "/v1/org/secrets", { key: fresh.orgKey });
    await call("GET", `/v1/org/secrets/${o.id}`, { key: fresh.orgKey });
    await call("GET", "/v1/counts");
    await call("PATCH", `/v1/secrets/${g.id}`, { body: { value: "" } });
    expect(texts.length).toBe(14);
    for (const text of texts) for (const v of values) expect(text).not.toContain(v);
    // Every list item has no value-like field at all.
    const list = (await fresh.call("GET", "/v1/secrets")).body;
    for (const item of list) {
      expect("value" in item).toBe(false);
      expect("valueSealed" in item).toBe(false);
    }
  });
});
