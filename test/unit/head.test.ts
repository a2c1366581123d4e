// The HTTP/1.1 head parser (src/gateway/http1/head.ts) reads heads in place, by index. Its answers are checked
// against a plain reference reading (split into lines, trim, a regex for the status line, which is what the
// parser did before it read in place) on fixed cases and on thousands of generated heads, valid and broken.
import { describe, expect, test } from "bun:test";
import { FORBIDDEN_IN_VALUE, hasNamePrefix, isNamed, parseAuthority, parseRequestHead, parseResponseHead, TOKEN, type HeaderLines } from "../../src/gateway/http1/head.ts";

const TARGET = /^[\x21-\x7e\x80-\xff]+$/;

function referenceLines(lines: string[]): HeaderLines | null {
  const out: HeaderLines = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) return null;
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return null;
    const value = line.slice(colon + 1).trim();
    if (FORBIDDEN_IN_VALUE.test(value)) return null;
    out.push([name, value]);
  }
  return out;
}

function referenceRequest(text: string) {
  const lines = text.split("\r\n");
  const first = lines[0]!;
  const sp1 = first.indexOf(" ");
  const sp2 = first.lastIndexOf(" ");
  if (sp1 <= 0 || sp2 <= sp1 + 1) return null;
  const method = first.slice(0, sp1);
  const target = first.slice(sp1 + 1, sp2);
  const version = first.slice(sp2 + 1);
  if (!TOKEN.test(method) || !TARGET.test(target) || (version !== "HTTP/1.1" && version !== "HTTP/1.0")) return null;
  const headers = referenceLines(lines);
  return headers ? { method, target, http10: version === "HTTP/1.0", headers } : null;
}

function referenceResponse(text: string) {
  const lines = text.split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0]!);
  if (!m) return null;
  const headers = referenceLines(lines);
  return headers ? { status: Number(m[1]), reason: m[2] ?? "", headers } : null;
}

/** The head as the connection hands it over: the bytes before the blank line's CRLFCRLF. */
const bytes = (text: string) => Buffer.from(`${text}\r\n\r\n`, "latin1");
const request = (text: string) => parseRequestHead(bytes(text), text.length);
const response = (text: string) => parseResponseHead(bytes(text), text.length);

describe("request heads", () => {
  test("the request line byte for byte, header names as sent, values trimmed, repeats kept", () => {
    expect(request("GET /a/../%2F?q={x}&q=\xe9 HTTP/1.1\r\nHost: h:1\r\nX-A:  one \t\r\nx-a:two\r\nEmpty:")).toEqual({
      method: "GET",
      target: "/a/../%2F?q={x}&q=\xe9",
      http10: false,
      headers: [
        ["Host", "h:1"],
        ["X-A", "one"],
        ["x-a", "two"],
        ["Empty", ""],
      ],
    });
    expect(request("GET / HTTP/1.0")).toEqual({ method: "GET", target: "/", http10: true, headers: [] });
  });

  test("refused: a space in the target, a bad version, no colon, an empty or spaced name, NUL or a bare CR or LF in a value", () => {
    for (const bad of [
      "GET /a b HTTP/1.1",
      "GET / HTTP/2",
      "GET /  HTTP/1.1",
      " GET / HTTP/1.1",
      "GET / HTTP/1.1\r\nNoColon",
      "GET / HTTP/1.1\r\n: empty",
      "GET / HTTP/1.1\r\nBad Name: x",
      "GET / HTTP/1.1\r\nX: a\0b",
      "GET / HTTP/1.1\r\nX: a\rb",
      "GET / HTTP/1.1\r\nX: a\nb",
      "GET / HTTP/1.1\r\n folded: x",
    ]) {
      expect(request(bad)).toBeNull();
    }
  });
});

describe("CONNECT targets (authority-form)", () => {
  test.each([
    ["api.example.test:443", { host: "api.example.test", port: 443 }],
    ["api.example.test:8443", { host: "api.example.test", port: 8443 }],
    ["api.example.test", { host: "api.example.test", port: 443 }],
    ["127.0.0.1:80", { host: "127.0.0.1", port: 80 }],
    ["[::1]:8443", { host: "[::1]", port: 8443 }],
    ["[::ffff:169.254.169.254]:443", { host: "[::ffff:169.254.169.254]", port: 443 }],
  ])("%s", (target, authority) => {
    expect(parseAuthority(target)).toEqual(authority);
  });

  test.each(["", ":443", "host:0", "host:65536", "host:123456", "host:-1", "user@host:443", "host/path:443", "host:443/x", "[::1", "::1:443", "host?:443", "http://host:443"])(
    "%p is refused",
    (target) => {
      expect(parseAuthority(target)).toBeNull();
    },
  );
});

describe("response heads", () => {
  test("status, reason (possibly empty or absent) and the header lines", () => {
    expect(response("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: x")).toEqual({ status: 200, reason: "OK", headers: [["Content-Length", "2"], ["Date", "x"]] });
    expect(response("HTTP/1.0 404")).toEqual({ status: 404, reason: "", headers: [] });
    expect(response("HTTP/1.1 204 ")).toEqual({ status: 204, reason: "", headers: [] });
    expect(response("HTTP/1.1 299 Odd  reason ")).toEqual({ status: 299, reason: "Odd  reason ", headers: [] });
  });

  test("refused: another version, a status not of three digits, no space before the reason, a bare CR in the reason", () => {
    for (const bad of ["HTTP/2 200 OK", "HTTP/1.2 200 OK", "HTTP/1.1 20 OK", "HTTP/1.1 2000", "HTTP/1.1 200OK", "HTTP/1.1 20x OK", "HTTP/1.1 200 O\rK", "http/1.1 200 OK"]) {
      expect(response(bad)).toBeNull();
    }
  });
});

describe("header names", () => {
  test("isNamed: the same name in any case of its letters, nothing else", () => {
    for (const name of ["content-length", "Content-Length", "CONTENT-LENGTH", "cOnTeNt-LeNgTh"]) expect(isNamed(name, "content-length")).toBe(true);
    for (const name of ["content-lengthx", "content-lengt", "content_length", "content-lenGth ", "Content-Lengtx"]) expect(isNamed(name, "content-length")).toBe(false);
    // Only letters have a case: ^ is not ~, and digits and dashes match only themselves.
    expect(isNamed("a^b", "a~b")).toBe(false);
    expect(isNamed("x-b3-id", "x-b3-id")).toBe(true);
    expect(isNamed("x-b\x13-id", "x-b3-id")).toBe(false);
    // Every name the lowercase way agrees (printable ASCII names against lowercase targets).
    for (let c = 0x21; c < 0x7f; c++) {
      const name = `x${String.fromCharCode(c)}`;
      for (const target of ["xa", "xz", "x-", "x0", "x~", "x_"]) expect(isNamed(name, target)).toBe(name.toLowerCase() === target);
    }
  });

  test("hasNamePrefix: a lowercase prefix in any case", () => {
    expect(hasNamePrefix("X-Credgate-Connection-Id", "x-credgate-")).toBe(true);
    expect(hasNamePrefix("x-credgate-", "x-credgate-")).toBe(true);
    expect(hasNamePrefix("X-Credgat", "x-credgate-")).toBe(false);
    expect(hasNamePrefix("X-Credgate_Id", "x-credgate-")).toBe(false);
  });
});

describe("the same answers as the reference reading", () => {
  // Pieces that sit on every boundary the parser looks at: separators, whitespace trim takes, bytes refused.
  const PIECES = ["GET", "POST", "HTTP/1.1", "HTTP/1.0", "HTTP/1.", "HTTP/1.1 200", "HTTP/1.1 204 ", " ", "  ", "/", "/p?q", "\r\n", "\r", "\n", ":", ": ", "\t", "\x0b", "\x0c", "\xa0", "\0", "a", "X-Y", "Host", "é", "200", "OK", "{}", '"', "%2F", "?"];
  let seed = 0x2f6b3a1;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed % n;
  };
  /** A head as the connection hands it over: what comes before the first CRLFCRLF (so never ending in CRLF). */
  const generated = (start: string) => {
    for (;;) {
      let text = start;
      const parts = random(14);
      for (let i = 0; i < parts; i++) text += PIECES[random(PIECES.length)];
      if (`${text}\r\n\r\n`.indexOf("\r\n\r\n") === text.length) return text;
    }
  };

  const kinds = [
    { kind: "request", starts: ["GET / HTTP/1.1\r\nX: ", "GET ", "", "POST /x HTTP/1.0\r\n"], ours: request, reference: referenceRequest },
    { kind: "response", starts: ["HTTP/1.1 200 OK\r\nX: ", "HTTP/1.1 ", "", "HTTP/1.0 404"], ours: response, reference: referenceResponse },
  ] as const;
  for (const { kind, starts, ours, reference } of kinds) {
    test(`20,000 generated ${kind} heads`, () => {
      let accepted = 0;
      for (let i = 0; i < 20_000; i++) {
        const text = generated(starts[random(starts.length)]!);
        const answer = ours(text);
        expect(answer).toEqual(reference(text) as never);
        if (answer) accepted++;
      }
      // Both kinds were generated: the comparison covered answers, not only refusals.
      expect(accepted).toBeGreaterThan(1_000);
    });
  }
});
