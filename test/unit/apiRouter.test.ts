// The API's router and where it reads the path from (docs/api.md#routing): pure, no listener.
import { describe, expect, test } from "bun:test";
import { requestTarget } from "../../src/api/requestTarget.ts";
import { Router } from "../../src/api/router.ts";

describe("requestTarget: the path and query come from the request target, whatever the Host", () => {
  const TARGET = "/v1/agents/abc?limit=5&x=%2F";
  const urls = [
    `http://x${TARGET}`,
    `http://ab${TARGET}`,
    `http://abc${TARGET}`,
    `https://x${TARGET}`,
    `https://ab${TARGET}`,
    `http://localhost:10254${TARGET}`,
    `http://[::1]:10254${TARGET}`,
    `http://[::1${TARGET}`, // Bun passes an unclosed IPv6 Host through as it came
    `http://user:pw@host${TARGET}`,
    `http://${"h".repeat(500)}${TARGET}`,
    TARGET, // an empty or malformed Host: Bun's request.url is the bare target
  ];
  test.each(urls)("%s", (url) => {
    const parsed = requestTarget(url);
    expect(parsed.pathname).toBe("/v1/agents/abc");
    expect(parsed.search).toBe("?limit=5&x=%2F");
    expect(parsed.searchParams.get("x")).toBe("/");
  });

  test("the authority ends where the WHATWG parser ends it: /, ?, # or a backslash", () => {
    expect(requestTarget("http://a\\b/v1/x").pathname).toBe("/b/v1/x");
    expect(requestTarget("http://a?b/v1/x").pathname).toBe("/");
    expect(requestTarget("http://a?b/v1/x").search).toBe("?b/v1/x");
    expect(requestTarget("http://a").pathname).toBe("/");
  });

  test("a target that starts with // stays a path (never a host), dot segments resolve, a fragment is dropped", () => {
    expect(requestTarget("//v1/agents").pathname).toBe("//v1/agents");
    expect(requestTarget("http://x//v1/agents").pathname).toBe("//v1/agents");
    expect(requestTarget("/a/../v1/./agents").pathname).toBe("/v1/agents");
    expect(requestTarget("http://x/v1/agents#frag").pathname).toBe("/v1/agents");
  });
});

describe("Router", () => {
  const router = new Router<string>();
  router.add("GET", "/v1/agents", "list");
  router.add("GET", "/v1/agents/default", "default");
  router.add("GET", "/v1/agents/:agentId", "one");
  router.add("DELETE", "/v1/agents/:agentId", "delete");
  router.add("GET", "/v1/agents/:agentId/grants/secrets/:secretId", "grant");
  router.add("GET", "/v1/agents/default/x/y", "deep-literal");
  router.add("GET", "/v1/credential-stubs/:agent", "stub");

  test("a literal segment wins over a parameter; the parameter is taken when the literal leads nowhere", () => {
    expect(router.find("GET", "/v1/agents/default")).toEqual({ value: "default", params: {} });
    expect(router.find("GET", "/v1/agents/other")).toEqual({ value: "one", params: { agentId: "other" } });
    expect(router.find("GET", "/v1/agents/default/x/y")).toEqual({ value: "deep-literal", params: {} });
    expect(router.find("GET", "/v1/agents/default/grants/secrets/s1")).toEqual({ value: "grant", params: { agentId: "default", secretId: "s1" } });
  });

  test("one tree per method: a literal of another method does not hide a parameter", () => {
    expect(router.find("DELETE", "/v1/agents/default")).toEqual({ value: "delete", params: { agentId: "default" } });
    expect(router.find("POST", "/v1/agents")).toBeNull();
    expect(router.find("get", "/v1/agents")).toBeNull();
  });

  test("one trailing slash is ignored; empty segments, other prefixes and case differences do not match", () => {
    expect(router.find("GET", "/v1/agents/")?.value).toBe("list");
    expect(router.find("GET", "/v1/agents/a/")?.value).toBe("one");
    for (const path of ["/v1/agents//", "//v1/agents", "/v1//agents", "/V1/agents", "/v1/Agents", "/aa/v1/agents", "/v1", "/", "", "v1/agents"]) {
      expect(router.find("GET", path)).toBeNull();
    }
  });

  test("parameters are percent-decoded; a malformed escape is kept as sent; literals compare the raw segment", () => {
    expect(router.find("GET", "/v1/credential-stubs/co%64ex")?.params).toEqual({ agent: "codex" });
    expect(router.find("GET", "/v1/credential-stubs/a%2Fb")?.params).toEqual({ agent: "a/b" });
    expect(router.find("GET", "/v1/credential-stubs/%ZZ")?.params).toEqual({ agent: "%ZZ" });
    expect(router.find("GET", "/v1/agents/%64efault")).toEqual({ value: "one", params: { agentId: "default" } });
  });

  test("a template defined twice for one method is refused", () => {
    expect(() => router.add("GET", "/v1/agents/:other", "dup")).toThrow("router: GET /v1/agents/:other is defined twice");
  });
});
