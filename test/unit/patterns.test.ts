// Host and path patterns (docs/injection.md#host-and-path-patterns host checks, docs/injection.md#host-and-path-patterns matching tables, docs/gateway.md#tunnels IPv6 host normalisation).
import { describe, expect, test } from "bun:test";
import { compileHostPattern, compilePathPattern, hostPatternError, matchHostPattern, matchPathPattern, normalizeHost } from "../../src/core/patterns.ts";

const MSG = {
  required: "Host pattern is required",
  url: "Enter a hostname, not a URL (remove http:// or https://)",
  path: "Enter a hostname only, not a path (use the path pattern field for paths)",
  spaces: "Host pattern must not contain spaces",
  wildcard: "Wildcards are only allowed as a leading subdomain, e.g. *.example.com",
  publicSuffix: "A wildcard can't cover a public suffix like *.com; use a specific domain, e.g. *.example.com",
};

describe("hostPatternError: each check and its message", () => {
  test.each([
    ["", MSG.required],
    ["   ", MSG.required],
    ["\t\n", MSG.required],
    ["https://api.x.com", MSG.url],
    ["http://api.x.com", MSG.url],
    ["ftp://api.x.com", MSG.url],
    ["api.x.com/v1", MSG.path],
    ["api.x.com/", MSG.path],
    ["api x.com", MSG.spaces],
    ["api\tx.com", MSG.spaces],
    ["a*.example.com", MSG.wildcard],
    ["*.*.example.com", MSG.wildcard],
    ["api.*.example.com", MSG.wildcard],
    ["example.*", MSG.wildcard],
    ["*example.com", MSG.wildcard],
    ["*", MSG.wildcard],
    ["*.com", MSG.publicSuffix],
    ["*.COM", MSG.publicSuffix],
    ["*.co.uk", MSG.publicSuffix],
    ["*.github.io", MSG.publicSuffix],
  ])("%p → %p", (pattern, message) => {
    expect(hostPatternError(pattern)).toBe(message);
  });

  test("absent or non-string input is 'required'", async () => {
    expect(hostPatternError(undefined)).toBe(MSG.required);
    expect(hostPatternError(null)).toBe(MSG.required);
  });

  test("longer than 255 characters (after trimming) is rejected before the URL check", async () => {
    const long = "https://" + "a".repeat(300) + ".com";
    const msg = hostPatternError(long);
    expect(msg).not.toBeNull();
    expect(msg).not.toBe(MSG.url);
    expect(msg).toBe("hostPattern must be at most 255 characters");
    // 255 characters exactly is within the limit: `*.` + a 253-character hostname.
    const ok = "*." + ["a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61)].join(".");
    expect(ok.length).toBe(255);
    expect(hostPatternError(ok)).toBeNull();
    // Surrounding whitespace does not count: trimmed first.
    expect(hostPatternError(`  ${ok}  `)).toBeNull();
  });

  test.each([
    ["https://api x.com/v1", MSG.url],
    ["api x.com/v1", MSG.path],
    ["*.com/x", MSG.path],
    ["a* b.com", MSG.spaces],
    ["*.c om", MSG.spaces],
    ["a*.com", MSG.wildcard],
  ])("check order: %p → %p", (pattern, message) => {
    expect(hostPatternError(pattern)).toBe(message);
  });

  test.each(["api.example.com", "*.example.com", "*.localhost", "localhost", "*.api.example.co.uk", "API.Example.COM", "  api.example.com  ", "127.0.0.1", "*.example.github.io"])(
    "accepted: %p",
    (pattern) => {
      expect(hostPatternError(pattern)).toBeNull();
    },
  );

  test("a bare * is accepted only where policy targets allow it", async () => {
    expect(hostPatternError("*")).toBe(MSG.wildcard);
    expect(hostPatternError("*", { allowAny: true })).toBeNull();
    expect(hostPatternError("*.com", { allowAny: true })).toBe(MSG.publicSuffix);
  });
});

describe("host matching (docs/injection.md#host-and-path-patterns table)", () => {
  test.each([
    ["api.example.com", "API.Example.com:8443", true],
    ["api.example.com", "api.example.com.", true],
    ["api.example.com", "api.example.com", true],
    ["API.EXAMPLE.COM", "api.example.com", true],
    ["api.example.com", "api.example.com.evil.com", false],
    ["api.example.com", "xapi.example.com", false],
    ["api.example.com", "example.com", false],
    ["*.example.com", "a.example.com", true],
    ["*.example.com", "a.b.example.com", true],
    ["*.example.com", "A.B.EXAMPLE.COM:443", true],
    ["*.example.com", "a.example.com.", true],
    ["*.example.com", "example.com", false],
    ["*.example.com", "example.com:443", false],
    ["*.example.com", "example.com.", false],
    ["*.example.com", "badexample.com", false],
    ["*.example.com", "a.example.com.evil.net", false],
    ["::1", "[::1]:443", true],
    ["127.0.0.1", "127.0.0.1:8080", true],
  ])("pattern %p, host %p → %p", (pattern, host, expected) => {
    expect(matchHostPattern(pattern, host)).toBe(expected);
  });

  test("compiled matchers take a normalised host", async () => {
    const m = compileHostPattern("*.example.com");
    expect(m(normalizeHost("X.Example.Com:1"))).toBe(true);
    expect(m(normalizeHost("example.com"))).toBe(false);
  });
});

describe("path matching (docs/injection.md#host-and-path-patterns table)", () => {
  test.each([
    ["/v1/*", "/v1", true],
    ["/v1/*", "/v1/models", true],
    ["/v1/*", "/v1/models/x/y", true],
    ["/v1/*", "/v1beta/models", false],
    ["/v1/*", "/v1?x=1", true],
    ["/v1/*", "/v1/models?x=1", true],
    ["/v1*", "/v1beta/models", true],
    ["/v1*", "/v1", true],
    ["/v1*", "/v2", false],
    ["/v1/models", "/v1/models?limit=5", true],
    ["/v1/models", "/v1/models", true],
    ["/v1/models", "/v1/models/x", false],
    ["/v1/models", "/V1/models", false],
    ["/repos/*/*/issues", "/repos/a/b/issues", true],
    ["/repos/*/*/issues", "/repos/a/b/c/issues", false],
    ["/repos/*/*/issues", "/repos/a/issues", false],
    ["/repos/*/*", "/repos/a", true],
    ["/repos/*/*", "/repos/a/b/c", true],
    ["/repos/*/*", "/other/a", false],
    ["/files/*.json", "/files/a.json", true],
    ["/files/*.json", "/files/a/b.json", false],
    ["/files/*.json", "/files/a.txt", false],
    [null, "/anything/at/all", true],
    [undefined, "/anything/at/all", true],
    ["", "/anything/at/all", true],
    ["*", "/anything/at/all", true],
    ["/*", "/", true],
    ["/*", "/anything/at/all", true],
  ] as [string | null | undefined, string, boolean][])("pattern %p, path %p → %p", (pattern, path, expected) => {
    expect(matchPathPattern(pattern, path)).toBe(expected);
  });

  test("matching uses the raw, undecoded path", async () => {
    expect(matchPathPattern("/a b", "/a%20b")).toBe(false);
    expect(matchPathPattern("/a%20b", "/a%20b")).toBe(true);
  });

  test("compiled matchers take the path without its query", async () => {
    const m = compilePathPattern("/v1/*");
    expect(m("/v1")).toBe(true);
    expect(m("/v1beta")).toBe(false);
  });
});

describe("normalizeHost", () => {
  test.each([
    ["[::1]:443", "::1"],
    ["[::1]", "::1"],
    ["[2001:DB8::1]:8443", "2001:db8::1"],
    ["::1", "::1"],
    ["Example.COM:80", "example.com"],
    ["example.com.", "example.com"],
    ["example.com.:443", "example.com"],
    ["  API.x.com  ", "api.x.com"],
  ])("%p → %p", (input, expected) => {
    expect(normalizeHost(input)).toBe(expected);
  });
});
