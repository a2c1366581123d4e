// Pure secret rules (docs/injection.md#injection-variants, docs/injection.md#secrets messages and LLM normalisation, preview).
import { describe, expect, test } from "bun:test";
import { injectionConfigError, isHeaderSafeValue, isPathSafeValue, normalizeInjectionConfig, normalizeLlmValue, previewOf, defaultLlmHost } from "../../src/core/secretRules.ts";

const SHAPE =
  "injectionConfig must be exactly one of: {headerName, valueFormat}, {paramName, paramFormat}, {pathTemplate}, {pathRegex, pathReplacement}, {placeholder, surfaces}, {awsSigV4}, {githubApp}, {database}, {gcpServiceAccount}, {azureClientSecret}";

describe("injectionConfigError: the four variants", () => {
  test.each([
    [{ headerName: "x-api-key" }],
    [{ headerName: "authorization", valueFormat: "Bearer {value}" }],
    [{ paramName: "api_key" }],
    [{ paramName: "key", paramFormat: "k-{value}" }],
    [{ pathTemplate: "/bot{value}" }],
    [{ pathTemplate: "/{value}/x" }],
    [{ pathRegex: "^/proj/[^/]+/", pathReplacement: "/proj/{value}/" }],
    [{ pathRegex: "^/a/([^/]+)/", pathReplacement: "/a/$1/{value}/" }],
    [{ placeholder: "CREDGATE_STRIPE_KEY" }],
    [{ placeholder: "cg.ph-1~x", surfaces: ["body", "websocket"] }],
  ])("valid: %j", (cfg) => {
    expect(injectionConfigError(cfg)).toBeNull();
  });

  test.each([
    [{ headerName: "x", valueFormat: "Bearer" }, "valueFormat must contain {value}"],
    [{ headerName: "x", valueFormat: "" }, "valueFormat must contain {value}"],
    [{ paramName: "p", paramFormat: "nope" }, "paramFormat must contain {value}"],
    [{ pathTemplate: "bot{value}" }, "Path template must start with /"],
    [{ pathTemplate: "/bot" }, "Path template must contain {value} exactly once"],
    [{ pathTemplate: "/{value}/{value}" }, "Path template must contain {value} exactly once"],
    [{ pathRegex: "(", pathReplacement: "{value}" }, "Invalid regular expression"],
    [{ pathRegex: "[a-", pathReplacement: "/{value}" }, "Invalid regular expression"],
    [{ pathRegex: "^/a/", pathReplacement: "/b/" }, "Replacement must include {value} (where the secret goes)"],
    [{ placeholder: "short" }, "placeholder must be 8-128 characters of A-Z a-z 0-9 . _ ~ -"],
    [{ placeholder: "with space inside" }, "placeholder must be 8-128 characters of A-Z a-z 0-9 . _ ~ -"],
    [{ placeholder: "p".repeat(129) }, "placeholder must be 8-128 characters of A-Z a-z 0-9 . _ ~ -"],
    [{ placeholder: "CREDGATE_KEY", surfaces: [] }, "surfaces must be a non-empty list of: header, query, path, body, websocket"],
    [{ placeholder: "CREDGATE_KEY", surfaces: ["cookie"] }, "surfaces must be a non-empty list of: header, query, path, body, websocket"],
    [{ placeholder: "CREDGATE_KEY", surfaces: "body" }, "surfaces must be a non-empty list of: header, query, path, body, websocket"],
  ])("%j → %p", (cfg, message) => {
    expect(injectionConfigError(cfg)).toBe(message);
  });

  test("an invalid regex is reported before a replacement without {value}", async () => {
    expect(injectionConfigError({ pathRegex: "(", pathReplacement: "/b/" })).toBe("Invalid regular expression");
  });

  test("a header name that is not an HTTP token is rejected", async () => {
    expect(injectionConfigError({ headerName: "bad header" })).not.toBeNull();
    expect(injectionConfigError({ headerName: "x:y" })).not.toBeNull();
    expect(injectionConfigError({ headerName: "" })).not.toBeNull();
  });

  test.each([
    [{}],
    [{ headerName: "a", paramName: "b" }],
    [{ headerName: "a", pathTemplate: "/{value}" }],
    [{ paramName: "a", pathRegex: "x", pathReplacement: "{value}" }],
    [{ headerName: "a", extra: "x" }],
    [{ headerName: "a", paramFormat: "{value}" }],
    [{ paramName: "a", valueFormat: "{value}" }],
    [{ pathTemplate: "/{value}", pathReplacement: "{value}" }],
    [{ pathRegex: "x" }],
    [{ pathReplacement: "{value}" }],
    [{ valueFormat: "{value}" }],
    [{ unknown: "x" }],
    [{ headerName: 5 }],
    [{ headerName: null }],
    [{ headerName: "x", valueFormat: null }],
    [{ pathTemplate: ["/{value}"] }],
    [{ headerName: { nested: "x" } }],
    [{ placeholder: 12345678 }],
    [{ placeholder: "CREDGATE_KEY", headerName: "x" }],
    [{ headerName: "x", surfaces: ["header"] }],
    [{ surfaces: ["header"] }],
    [null],
    [undefined],
    ["x-api-key"],
    [42],
    [true],
    [[{ headerName: "x" }]],
  ])("malformed or mixed → the 'exactly one of' message: %j", (cfg) => {
    expect(injectionConfigError(cfg)).toBe(SHAPE);
  });

  test("normalised form fills the default formats", async () => {
    expect(normalizeInjectionConfig({ headerName: "x-k" })).toEqual({ headerName: "x-k", valueFormat: "{value}" });
    expect(normalizeInjectionConfig({ paramName: "k" })).toEqual({ paramName: "k", paramFormat: "{value}" });
    expect(normalizeInjectionConfig({ pathTemplate: "/b{value}" })).toEqual({ pathTemplate: "/b{value}" });
    expect(normalizeInjectionConfig({ pathRegex: "^/a", pathReplacement: "/{value}" })).toEqual({ pathRegex: "^/a", pathReplacement: "/{value}" });
    expect(normalizeInjectionConfig({ placeholder: "CREDGATE_KEY" })).toEqual({ placeholder: "CREDGATE_KEY", surfaces: ["header", "query", "path", "body", "websocket"] });
    expect(normalizeInjectionConfig({ placeholder: "CREDGATE_KEY", surfaces: ["body", "header"] })).toEqual({ placeholder: "CREDGATE_KEY", surfaces: ["header", "body"] });
  });
});

describe("normalizeLlmValue", () => {
  test("llm_a: sk-ant-oat means oauth, anything else api-key", async () => {
    expect(normalizeLlmValue("llm_a", "sk-ant-oat01-abcdef", undefined)).toEqual({ value: "sk-ant-oat01-abcdef", authMode: "oauth" });
    expect(normalizeLlmValue("llm_a", "sk-ant-api03-abcdef", undefined)).toEqual({ value: "sk-ant-api03-abcdef", authMode: "api-key" });
    expect(normalizeLlmValue("llm_a", "anything", undefined).authMode).toBe("api-key");
    // Only a prefix counts.
    expect(normalizeLlmValue("llm_a", "x-sk-ant-oat01", undefined).authMode).toBe("api-key");
  });

  test("llm_a: an explicit authMode wins", async () => {
    expect(normalizeLlmValue("llm_a", "sk-ant-oat01-abcdef", "api-key").authMode).toBe("api-key");
    expect(normalizeLlmValue("llm_a", "sk-ant-api03-abcdef", "oauth").authMode).toBe("oauth");
  });

  test("llm_b: a Codex auth.json is oauth; the access token is the value, with its account id", async () => {
    const authJson = JSON.stringify({
      auth_mode: "chatgpt",
      OPENAI_API_KEY: null,
      tokens: { id_token: "idt", access_token: "eyJ-access-token-value", refresh_token: "rt", account_id: "acct-123" },
      last_refresh: "2025-01-01T00:00:00Z",
    });
    expect(normalizeLlmValue("llm_b", authJson, undefined)).toEqual({ value: "eyJ-access-token-value", authMode: "oauth", accountId: "acct-123" });
    // Pretty-printed, with surrounding whitespace, is the same file.
    const pretty = "\n  " + JSON.stringify(JSON.parse(authJson), null, 2);
    expect(normalizeLlmValue("llm_b", pretty, undefined)).toEqual({ value: "eyJ-access-token-value", authMode: "oauth", accountId: "acct-123" });
  });

  test("llm_b: an auth.json without account id is oauth without accountId", async () => {
    const r = normalizeLlmValue("llm_b", JSON.stringify({ tokens: { access_token: "at-1" } }), undefined);
    expect(r).toEqual({ value: "at-1", authMode: "oauth" });
    expect("accountId" in r).toBe(false);
  });

  test("llm_b: {auth_mode:'apikey', OPENAI_API_KEY} yields the key", async () => {
    const r = normalizeLlmValue("llm_b", JSON.stringify({ auth_mode: "apikey", OPENAI_API_KEY: "sk-proj-xyz" }), undefined);
    expect(r).toEqual({ value: "sk-proj-xyz", authMode: "api-key" });
  });

  test("llm_b: a plain key, or JSON of another shape, is api-key and kept verbatim", async () => {
    expect(normalizeLlmValue("llm_b", "sk-proj-abc", undefined)).toEqual({ value: "sk-proj-abc", authMode: "api-key" });
    const other = JSON.stringify({ hello: "world" });
    expect(normalizeLlmValue("llm_b", other, undefined)).toEqual({ value: other, authMode: "api-key" });
    expect(normalizeLlmValue("llm_b", "{not json", undefined)).toEqual({ value: "{not json", authMode: "api-key" });
  });

  test("llm_b: an explicit authMode wins", async () => {
    expect(normalizeLlmValue("llm_b", "sk-proj-abc", "oauth").authMode).toBe("oauth");
    const authJson = JSON.stringify({ tokens: { access_token: "at-2", account_id: "a" } });
    const r = normalizeLlmValue("llm_b", authJson, "api-key");
    expect(r.authMode).toBe("api-key");
    expect(r.value).toBe("at-2");
  });

  test("default hosts per type and auth mode", async () => {
    expect(defaultLlmHost("llm_a", "api-key")).toBe("api.anthropic.com");
    expect(defaultLlmHost("llm_a", "oauth")).toBe("api.anthropic.com");
    expect(defaultLlmHost("llm_b", "api-key")).toBe("api.openai.com");
    expect(defaultLlmHost("llm_b", "oauth")).toBe("chatgpt.com");
  });
});

describe("previewOf", () => {
  const MASK = "••••••••";
  test("shorter than 16 characters is fully masked", async () => {
    expect(previewOf("")).toBe(MASK);
    expect(previewOf("a")).toBe(MASK);
    expect(previewOf("123456789012345")).toBe(MASK);
  });
  test("16 characters or more: first 4 + mask + last 4", async () => {
    expect(previewOf("1234567890123456")).toBe(`1234${MASK}3456`);
    expect(previewOf("abcdefghijklmnopqrst")).toBe(`abcd${MASK}qrst`);
    const long = "sk-ant-api03-" + "x".repeat(80) + "WXYZ";
    expect(previewOf(long)).toBe(`sk-a${MASK}WXYZ`);
  });
});

describe("isPathSafeValue", () => {
  test.each(["abc", "ABC-123_xyz.~", "a:b", "a=b", "123456:ABCdef", "ü"])("safe: %p", (v) => {
    expect(isPathSafeValue(v)).toBe(true);
  });
  test.each(["a/b", "a?b", "a#b", "a%2F", "a b", "a\tb", "a\nb", "a\rb", "a\u0000b", "a\u001fb", "a\u007fb", "/"])("unsafe: %j", (v) => {
    expect(isPathSafeValue(v)).toBe(false);
  });
});

describe("isHeaderSafeValue: printable ASCII only", () => {
  test.each(["ghp_abc123", "Bearer x.y-z_~!", " spaces inside ", "", "a/b?c#d%e"])("%j is safe", (v) => {
    expect(isHeaderSafeValue(v)).toBe(true);
  });
  test.each(["ghp_abc\u2026", "tokén", "a\r\nb", "a\nb", "a\tb", "a\u0000b", "a\u007fb", "\u{1F511}"])("%j is not", (v) => {
    expect(isHeaderSafeValue(v)).toBe(false);
  });
});
