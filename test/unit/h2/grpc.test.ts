// gRPC at the gateway (docs/gateway.md#http2-and-grpc, docs/agent-errors.md#grpc): which content types are
// gRPC calls, the status every refusal maps to, grpc-message percent-encoding, the trailers-only answer; and the
// CREDGATE_GATEWAY_HTTP2 setting.
import { describe, expect, test } from "bun:test";
import { grpcPercentEncode, grpcRefusal, grpcStatusFor, isGrpcContentType } from "../../../src/gateway/grpc.ts";

describe("gRPC calls", () => {
  test("application/grpc and its +proto / ;params forms; not grpc-web, not a prefix of another type", () => {
    for (const t of ["application/grpc", "application/grpc+proto", "Application/GRPC+json", "application/grpc;charset=utf-8"]) expect(isGrpcContentType(t)).toBe(true);
    for (const t of [null, "", "application/grpc-web", "application/grpc-web+proto", "application/grpcx", "application/json"]) expect(isGrpcContentType(t)).toBe(false);
  });
});

describe("refusals as gRPC statuses", () => {
  test("the mapping: 407→16, 403→7, 404→5, 409→9, 429→8, 502/503→14, 504→4", () => {
    const map = Object.fromEntries([407, 403, 404, 409, 429, 502, 503, 504].map((s) => [s, grpcStatusFor(s)]));
    expect(map).toEqual({ 407: 16, 403: 7, 404: 5, 409: 9, 429: 8, 502: 14, 503: 14, 504: 4 });
  });

  test("grpc-message is percent-encoded: bytes outside 0x20–0x7E and % itself, as UTF-8", () => {
    expect(grpcPercentEncode("plain text: ok")).toBe("plain text: ok");
    expect(grpcPercentEncode("100% sure")).toBe("100%25 sure");
    expect(grpcPercentEncode("naïve\n€")).toBe("na%C3%AFve%0A%E2%82%AC");
  });

  test("the trailers-only answer: HTTP 200, application/grpc, the status and `<error>: <message>`", () => {
    const body = JSON.stringify({ error: "rate_limited", message: "Rate limit of 1 per hour reached — 100% used." });
    expect(grpcRefusal(429, body, "req-1")).toEqual([
      [":status", "200"],
      ["content-type", "application/grpc"],
      ["grpc-status", "8"],
      ["grpc-message", "rate_limited: Rate limit of 1 per hour reached %E2%80%94 100%25 used."],
      ["x-request-id", "req-1"],
    ]);
  });

  test("an answer that is not the gateway's JSON still gets a status and says its HTTP status", () => {
    expect(grpcRefusal(503, "not json", "r")).toContainEqual(["grpc-message", "HTTP 503"]);
    expect(grpcRefusal(503, "not json", "r")).toContainEqual(["grpc-status", "14"]);
  });
});

describe("CREDGATE_GATEWAY_HTTP2", () => {
  test("on by default; on/off in any case; anything else refuses to start", async () => {
    const { ConfigError, loadConfig } = await import("../../../src/runtime/config.ts");
    expect(loadConfig({}, {}).gatewayHttp2).toBe(true);
    expect(loadConfig({}, { CREDGATE_GATEWAY_HTTP2: "OFF" }).gatewayHttp2).toBe(false);
    expect(loadConfig({}, { CREDGATE_GATEWAY_HTTP2: "on" }).gatewayHttp2).toBe(true);
    expect(() => loadConfig({}, { CREDGATE_GATEWAY_HTTP2: "h2" })).toThrow(new ConfigError('CREDGATE_GATEWAY_HTTP2 must be "on" or "off", got "h2"'));
  });
});
