// HTTP/2 message heads (docs/gateway.md#http2-and-grpc): what a request head must be to reach the pipeline
// (RFC 9113 §8.2 and RFC 9113 §8.3) — anything else is malformed and refused, never guessed — and how fields are made
// for an h2 peer from HTTP/1.1 lines.
import { describe, expect, test } from "bun:test";
import type { HeaderField } from "../../../src/gateway/h2/hpack.ts";
import { h2Fields, requestHead, responseHead, trailerFields } from "../../../src/gateway/h2/message.ts";

const base: HeaderField[] = [[":method", "POST"], [":scheme", "https"], [":authority", "api.test:8443"], [":path", "/v1/x?q=1"]];

describe("request heads", () => {
  test("a well-formed head: target, host from :authority, split cookies joined, content-length read", () => {
    const head = requestHead([...base, ["cookie", "a=1"], ["content-length", "12"], ["cookie", "b=2"], ["x-k", "v"]])!;
    expect(head).toMatchObject({ method: "POST", scheme: "https", authority: "api.test:8443", target: "/v1/x?q=1", contentLength: 12 });
    expect(head.headers).toEqual([["host", "api.test:8443"], ["content-length", "12"], ["x-k", "v"], ["cookie", "a=1; b=2"]]);
  });

  test("malformed heads are refused", () => {
    const bad: HeaderField[][] = [
      base.slice(1), // no :method
      base.filter(([n]) => n !== ":path"),
      [...base, [":path", "/again"]],
      [["x-first", "1"], ...base], // a pseudo-header after a regular field
      [...base, ["X-Upper", "1"]],
      [...base, ["connection", "keep-alive"]],
      [...base, ["transfer-encoding", "chunked"]],
      [...base, ["te", "gzip"]],
      [...base, ["x-split", "a\r\nb"]],
      [...base, ["content-length", "5"], ["content-length", "6"]],
      [...base, ["content-length", "-1"]],
      [...base, [":protocol", "websocket"]],
      [[":method", "CONNECT"], [":authority", "a:1"], [":path", "/"]],
    ];
    for (const fields of bad) expect(requestHead(fields)).toBeNull();
    expect(requestHead([...base, ["te", "trailers"]])).not.toBeNull();
  });
});

describe("responses and trailers", () => {
  test("a response head: one :status first; connection-specific fields refused", () => {
    expect(responseHead([[":status", "200"], ["content-type", "text/plain"]])).toEqual({ status: 200, headers: [["content-type", "text/plain"]] });
    expect(responseHead([["content-type", "text/plain"], [":status", "200"]])).toBeNull();
    expect(responseHead([[":status", "20"]])).toBeNull();
    expect(responseHead([[":status", "200"], ["keep-alive", "5"]])).toBeNull();
  });

  test("trailers: regular fields only", () => {
    expect(trailerFields([["grpc-status", "0"]])).toEqual([["grpc-status", "0"]]);
    expect(trailerFields([[":status", "200"]])).toBeNull();
  });

  test("fields for an h2 peer: names lowercased; hop-by-hop, host and te dropped", () => {
    expect(h2Fields([["Content-Type", "a"], ["Connection", "close"], ["Host", "h"], ["TE", "trailers"], ["Transfer-Encoding", "chunked"], ["X-K", "v"]], [])).toEqual([["content-type", "a"], ["x-k", "v"]]);
  });
});
