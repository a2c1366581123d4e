// The one writer of raw gateway answers (src/gateway/errors.ts rawAnswer): what the listener writes for a
// refused CONNECT and the client connection for a head it could not read — a status line with its reason,
// a JSON body whose Content-Length counts bytes, x-should-retry where the catalogue wants it, the request's
// x-request-id always, and connection: close. Read back with the gateway's own response parser.
import { expect, test } from "bun:test";
import { egressDeniedAnswer, headTooLarge, PROXY_AUTH_REQUIRED, rawAnswer } from "../../src/gateway/errors.ts";
import { headerValue, parseResponseHead } from "../../src/gateway/http1/head.ts";

function read(raw: string) {
  const bytes = Buffer.from(raw);
  const end = bytes.indexOf("\r\n\r\n");
  const head = parseResponseHead(bytes, end)!;
  const body = bytes.subarray(end + 4);
  return { head, body: body.toString("utf8"), bodyBytes: body.length };
}

test("a 407: Proxy-Authenticate, the request id, connection close, no x-should-retry", () => {
  const { head, body, bodyBytes } = read(rawAnswer(PROXY_AUTH_REQUIRED, "req-1"));
  expect([head.status, head.reason]).toEqual([407, "Proxy Authentication Required"]);
  expect(headerValue(head.headers, "proxy-authenticate")).toBe('Basic realm="credgate"');
  expect(headerValue(head.headers, "x-request-id")).toBe("req-1");
  expect(headerValue(head.headers, "connection")).toBe("close");
  expect(headerValue(head.headers, "x-should-retry")).toBeNull();
  expect(JSON.parse(body).error).toBe("proxy_authentication_required");
  expect(Number(headerValue(head.headers, "content-length"))).toBe(bodyBytes);
});

test("a 403 carries x-should-retry: false; the length counts the bytes of a non-ASCII body", () => {
  const { head, bodyBytes } = read(rawAnswer(egressDeniedAnswer("bücher.test", "169.254.169.254"), "req-2"));
  expect([head.status, head.reason]).toEqual([403, "Forbidden"]);
  expect(headerValue(head.headers, "x-should-retry")).toBe("false");
  expect(Number(headerValue(head.headers, "content-length"))).toBe(bodyBytes);
  expect(headerValue(head.headers, "content-type")).toBe("application/json");
});

test("a 431 for a head too large", () => {
  const { head, body } = read(rawAnswer(headTooLarge(), "req-3"));
  expect([head.status, head.reason]).toEqual([431, "Request Header Fields Too Large"]);
  expect(JSON.parse(body)).toEqual({ error: "bad_request", message: "Request head too large." });
});
