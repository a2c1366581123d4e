// The readings of a path (docs/injection.md#every-reading-of-a-path): the path as sent, its RFC 3986 normal
// form, and each with %2F/%5C/\ as separators and `;` parameters stripped.
import { describe, expect, test } from "bun:test";
import { normalForm, pathReadings, removeDotSegments, targetReadings } from "../../src/core/pathReadings.ts";

describe("pathReadings", () => {
  test("a plain path has one reading, itself", () => {
    for (const p of ["/", "/v1/messages", "/repos/a/b/issues", "/files/a.json", "/a-b_c~d", "*", "/.well", "/x.y/z"]) {
      const readings = pathReadings(p);
      // `/.well` starts a segment with a dot: looked at, but it reads only one way.
      expect(readings).toEqual([p]);
    }
  });

  test("every spelling of /admin/x that an origin may serve as /admin/x has /admin/x among its readings, the path as sent first", () => {
    for (const p of ["/%61dmin/x", "/./admin/x", "/x/../admin/x", "/x/%2e%2e/admin/x", "/x/%2E%2E/admin/x", "/admin%2Fx", "/admin%2fx", "/admin;v=1/x", "/admin%5Cx", "/admin\\x", "/x/..%2Fadmin/x", "/x/..//admin/x", "/admin//x", "/;x/admin/x"]) {
      const readings = pathReadings(p);
      expect(readings[0]).toBe(p);
      expect({ p, has: readings.includes("/admin/x") }).toEqual({ p, has: true });
      expect(new Set(readings).size).toBe(readings.length);
    }
  });

  test("a key with `..` is kept as sent (an origin such as S3 reads it literally) beside its normal form", () => {
    expect(pathReadings("/public/../private/a")).toEqual(["/public/../private/a", "/private/a"]);
  });

  test("case is kept: /ADMIN is not /admin, and %41 decodes to A", () => {
    expect(pathReadings("/ADMIN/x")).toEqual(["/ADMIN/x"]);
    expect(pathReadings("/%41dmin/x")).toEqual(["/%41dmin/x", "/Admin/x"]);
  });

  test("percent-encodings of reserved characters stay encoded in the normal form, their hex uppercased", () => {
    expect(normalForm("/a%3fb/%7e%2d")).toBe("/a%3Fb/~-");
    expect(normalForm("/a%20b")).toBe("/a%20b");
  });

  test("the readings of a pathological path stay few", () => {
    expect(pathReadings("/a;x%2F..%2F..%2Fb/./c%5C..\\d//e").length).toBeLessThanOrEqual(10);
  });
});

describe("pathReadings on arbitrary input", () => {
  test("never throws; the path as sent first; no duplicates; at most 10; no dot segment in the normal form", () => {
    const alphabet = ["/", ".", "..", "%2e", "%2E", "%2F", "%2f", "%5C", "\\", ";", "=", "a", "A", "%61", "%", "%zz", "%3B", "~", "#"];
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 3000; i++) {
      let p = "/";
      const n = Math.floor(next() * 12);
      for (let j = 0; j < n; j++) p += alphabet[Math.floor(next() * alphabet.length)];
      const readings = pathReadings(p);
      expect(readings[0]).toBe(p);
      expect(new Set(readings).size).toBe(readings.length);
      expect(readings.length).toBeLessThanOrEqual(10);
      // The normal form has no dot segment left (what an origin that removes them would serve).
      expect(normalForm(p).split("/").some((seg) => seg === "." || seg === "..")).toBe(false);
    }
  });
});

describe("targetReadings", () => {
  test("the query is not part of any reading", () => {
    expect(targetReadings("/v1/x?a=/../admin")).toEqual(["/v1/x"]);
    expect(targetReadings("/x/../admin?q")).toEqual(["/x/../admin", "/admin"]);
  });

  test("a `#` in the target: the path ended there (first) and the path kept whole, as Go's net/http reads it", () => {
    expect(targetReadings("/public#/../../private/a?q=1")).toEqual(["/public", "/public#/../../private/a", "/private/a"]);
    expect(targetReadings("/a?b#c")).toEqual(["/a"]);
  });
});

describe("removeDotSegments (RFC 3986 §5.2.4)", () => {
  test.each([
    ["/a/b/c/./../../g", "/a/g"],
    ["/x/..", "/"],
    ["/..", "/"],
    ["/a/.", "/a/"],
    ["/a/./", "/a/"],
    ["/x//../a", "/x/a"],
    ["/a/..b/.c", "/a/..b/.c"],
    ["*", "*"],
  ])("%s → %s", (input, output) => {
    expect(removeDotSegments(input)).toBe(output);
  });
});
