// core/mcpArguments.ts: canonical arguments, their hash, previews and the JSON-pointer globs of a custom grant.
import { describe, expect, test } from "bun:test";
import { parseStrictJson, type JsonObject } from "../../src/core/jsonRpc.ts";
import { argumentsHash, argumentsPreview, argumentViolation, canonicalArguments, globMatches, valueAtPointer } from "../../src/core/mcpArguments.ts";

const obj = (text: string) => {
  const r = parseStrictJson(text);
  if (!r.ok) throw new Error(r.reason);
  return r.value as JsonObject;
};

describe("canonical arguments and their hash", () => {
  test("key order, whitespace and escapes do not change the hash; values do", () => {
    const a = obj('{"path":"/tmp/a","mode":{"x":1,"a":[1,2]}}');
    const b = obj('{ "mode" : {"a":[1, 2],"x":1.0}, "p\\u0061th":"/tmp/a" }');
    expect(canonicalArguments(a)).toBe('{"mode":{"a":[1,2],"x":1},"path":"/tmp/a"}');
    expect(argumentsHash(a)).toBe(argumentsHash(b));
    expect(argumentsHash(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(argumentsHash(obj('{"path":"/tmp/b","mode":{"x":1,"a":[1,2]}}'))).not.toBe(argumentsHash(a));
    expect(argumentsHash(obj('{"mode":{"x":1,"a":[2,1]},"path":"/tmp/a"}'))).not.toBe(argumentsHash(a));
  });

  test("previews are JSON, cut at 4 KiB on a character boundary", () => {
    expect(argumentsPreview(obj('{"a":1}'))).toBe('{\n  "a": 1\n}');
    const big = argumentsPreview(obj(JSON.stringify({ text: "é".repeat(5000) })));
    expect(Buffer.byteLength(big)).toBeLessThanOrEqual(4096);
    expect(big).toMatch(/… \(\d+ bytes, cut\)$/);
    expect(big).not.toContain("\uFFFD");
  });
});

describe("JSON pointers and globs", () => {
  const args = obj('{"path":"/tmp/x","opts":{"a/b":"s","m~n":true,"n":42},"list":["first","second"],"nil":null}');

  test("pointers follow RFC 6901", () => {
    expect(valueAtPointer(args, "/path")).toBe("/tmp/x");
    expect(valueAtPointer(args, "/opts/a~1b")).toBe("s");
    expect(valueAtPointer(args, "/opts/m~0n")).toBe(true);
    expect(valueAtPointer(args, "/list/1")).toBe("second");
    expect(valueAtPointer(args, "/list/01")).toBeUndefined();
    expect(valueAtPointer(args, "/list/-")).toBeUndefined();
    expect(valueAtPointer(args, "/missing/x")).toBeUndefined();
    expect(valueAtPointer(args, "path")).toBeUndefined();
    expect(valueAtPointer(args, "/toString")).toBeUndefined();
    expect(valueAtPointer(args, "")).toBe(args);
  });

  test("globs: * is any run, the rest is literal", () => {
    expect(globMatches("/tmp/*", "/tmp/a/b")).toBe(true);
    expect(globMatches("/tmp/*", "/etc/passwd")).toBe(false);
    expect(globMatches("*.md", "README.md")).toBe(true);
    expect(globMatches("a*b*c", "abc")).toBe(true);
    expect(globMatches("a*b*c", "acb")).toBe(false);
    expect(globMatches("ab*ba", "aba")).toBe(false);
    expect(globMatches("main", "main")).toBe(true);
    expect(globMatches("main", "main2")).toBe(false);
    expect(globMatches("?", "x")).toBe(false);
    expect(globMatches("*", "")).toBe(true);
  });

  test("the first broken pointer is named; missing, null, objects and arrays break a glob", () => {
    expect(argumentViolation(args, { "/path": "/tmp/*", "/opts/n": "4*" })).toBeNull();
    expect(argumentViolation(args, { "/opts/m~0n": "true" })).toBeNull();
    expect(argumentViolation(args, { "/path": "/var/*" })).toBe("/path");
    expect(argumentViolation(args, { "/path": "*", "/absent": "*" })).toBe("/absent");
    expect(argumentViolation(args, { "/nil": "*" })).toBe("/nil");
    expect(argumentViolation(args, { "/opts": "*" })).toBe("/opts");
    expect(argumentViolation(args, { "/list": "*" })).toBe("/list");
    expect(argumentViolation(obj("{}"), {})).toBeNull();
  });
});
