// The forms of a credential value (docs/injection.md#placeholders, docs/guards.md#echo-guard,
// docs/guards.md#credential-leak-guard): how a placeholder's value is written into a URL, a form and a JSON string,
// and the spellings the echo and leak guards look for — checked against what real encoders produce.
import { describe, expect, test } from "bun:test";
import { base64Forms, echoForms, formEncode, hexForms, jsonEscape, jsonForms, leakForms, percentEncode, percentForms } from "../../src/core/valueForms.ts";
import { bodyKindOf, bodyValue, normalizeSurfaces, placeholderError, placeholdersClash, surfacesError } from "../../src/core/placeholders.ts";

const AWKWARD = `a+b/c=d&e "q" \\ <x> 'y' é€😀`;

describe("writing a value into a request", () => {
  test("URL: every byte outside [A-Za-z0-9._~-] percent-encoded (upper-case hex), UTF-8", () => {
    expect(percentEncode("a+b/c=d&e")).toBe("a%2Bb%2Fc%3Dd%26e");
    expect(percentEncode("Az09._~- é")).toBe("Az09._~-%20%C3%A9");
    expect(decodeURIComponent(percentEncode(AWKWARD))).toBe(AWKWARD);
  });

  test("form: + for space, as URLSearchParams reads it back", () => {
    expect(formEncode("a b+c&d=e")).toBe("a+b%2Bc%26d%3De");
    expect(new URLSearchParams(`k=${formEncode(AWKWARD)}`).get("k")).toBe(AWKWARD);
  });

  test("JSON: the inside of a string, as JSON.parse reads it back", () => {
    expect(jsonEscape('a"b\\c\n')).toBe('a\\"b\\\\c\\n');
    expect(JSON.parse(`"${jsonEscape(AWKWARD)}"`)).toBe(AWKWARD);
  });

  test("body kind by Content-Type: JSON and *+json, forms, everything else raw", () => {
    expect(bodyKindOf("application/json")).toBe("json");
    expect(bodyKindOf("Application/JSON; charset=utf-8")).toBe("json");
    expect(bodyKindOf("application/vnd.api+json")).toBe("json");
    expect(bodyKindOf("application/x-www-form-urlencoded")).toBe("form");
    expect(bodyKindOf("multipart/form-data; boundary=x")).toBe("raw");
    expect(bodyKindOf("text/plain")).toBe("raw");
    expect(bodyKindOf(null)).toBe("raw");
    expect(bodyValue("json", 'x"y')).toBe('x\\"y');
    expect(bodyValue("form", "x y")).toBe("x+y");
    expect(bodyValue("raw", "x y")).toBe("x y");
  });
});

describe("placeholder rules", () => {
  test("8-128 characters of A-Z a-z 0-9 . _ ~ -", () => {
    expect(placeholderError("CG_PH_12")).toBeNull();
    expect(placeholderError("a".repeat(128))).toBeNull();
    for (const bad of ["short", "a".repeat(129), "has space!", "slash/inside", 42, null]) expect(placeholderError(bad)).not.toBeNull();
  });

  test("surfaces: a non-empty list of the five; stored once each, in order", () => {
    expect(surfacesError(["body", "header"])).toBeNull();
    for (const bad of [[], ["cookie"], "body", [1]]) expect(surfacesError(bad)).not.toBeNull();
    expect(normalizeSurfaces(["body", "header", "body"])).toEqual(["header", "body"]);
    expect(normalizeSurfaces(undefined)).toEqual(["header", "query", "path", "body", "websocket"]);
  });

  test("a placeholder inside another clashes with it, either way", () => {
    expect(placeholdersClash("CG_TOKEN_A", "CG_TOKEN_A_LONG")).toBe(true);
    expect(placeholdersClash("CG_TOKEN_A_LONG", "CG_TOKEN_A")).toBe(true);
    expect(placeholdersClash("CG_TOKEN_A", "CG_TOKEN_B")).toBe(false);
  });
});

describe("the forms the guards look for", () => {
  const value = "sk_live_Zq9+/x=é";

  test("base64: the whole value (standard and URL-safe, padded or not) and the value at any offset in longer data", () => {
    const forms = base64Forms(value);
    const whole = Buffer.from(value).toString("base64");
    expect(forms).toContain(whole);
    expect(forms).toContain(whole.replace(/=+$/, ""));
    expect(forms).toContain(whole.replace(/\+/g, "-").replace(/\//g, "_"));
    for (const before of ["", "a", "ab", "abc", "user:", "x-access-token:"]) {
      for (const after of ["", "z", "zz", "zzz"]) {
        const data = Buffer.from(before + value + after);
        for (const encoded of [data.toString("base64"), data.toString("base64url")]) {
          expect(forms.some((f) => encoded.includes(f))).toBe(true);
        }
      }
    }
  });

  test("JSON: as JSON.stringify, PHP (\\/ and \\u escapes), Go (<>&), .NET (upper-case \\u00XX) write it", () => {
    const forms = jsonForms("a/b<c&d'e+f=g\"h é");
    expect(forms).toContain(JSON.stringify("a/b<c&d'e+f=g\"h é").slice(1, -1));
    expect(forms).toContain("a\\/b<c&d'e+f=g\\\"h \\u00e9");
    expect(forms).toContain("a/b\\u003cc\\u0026d'e+f=g\\\"h é");
    expect(forms).toContain("a/b\\u003Cc\\u0026d\\u0027e\\u002Bf=g\\u0022h \\u00E9");
    // A value with nothing to escape has one form: itself.
    expect(jsonForms("plain-value-123")).toEqual(["plain-value-123"]);
  });

  test("percent-encoded (strict, encodeURIComponent, form) and hex", () => {
    expect(percentForms("a b!")).toEqual(["a%20b%21", "a%20b!", "a+b%21"]);
    expect(hexForms("ab")).toEqual(["6162"]);
    expect(hexForms("a?")).toEqual(["613f", "613F"]);
  });

  test("the echo guard redacts values of 8 characters or more; the leak guard watches values of 12 or more", () => {
    expect(echoForms("short")).toEqual([]);
    expect(echoForms(value).every((f) => f.length >= 8)).toBe(true);
    expect(echoForms(value)).toContain(value);
    expect(leakForms("elevenchars")).toEqual([]);
    expect(leakForms("twelve-chars")).toContain("twelve-chars");
    // No hex for the leak guard: it looks for what a request could plausibly carry.
    expect(leakForms("twelve-chars")).not.toContain(Buffer.from("twelve-chars").toString("hex"));
  });
});
