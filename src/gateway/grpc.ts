// gRPC at the gateway (docs/gateway.md#http2-and-grpc): which requests are gRPC calls, and how a refusal of the
// gateway's own reaches a gRPC client — never as JSON, which it cannot read, but as a trailers-only answer
// (HTTP 200, `content-type: application/grpc`, `grpc-status`, `grpc-message`), the status mapped from the HTTP
// status the answer would have had and the message `<error>: <message>` percent-encoded as the gRPC spec asks.
import type { HeaderField } from "./h2/hpack.ts";

/** `application/grpc`, `application/grpc+proto`, `application/grpc;…` (not grpc-web: it is made for HTTP/1.1). */
export function isGrpcContentType(value: string | null): boolean {
  if (value === null || value.length < 16) return false;
  const lower = value.toLowerCase();
  return lower.startsWith("application/grpc") && (lower.length === 16 || lower[16] === "+" || lower[16] === ";");
}

/** gRPC status codes (grpc/doc/statuscodes.md). */
export const GrpcStatus = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
  UNKNOWN: 2,
} as const;

/** The gRPC status of a gateway answer with this HTTP status (docs/agent-errors.md#grpc). */
export function grpcStatusFor(httpStatus: number): number {
  switch (httpStatus) {
    case 407:
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.NOT_FOUND;
    case 409:
      return GrpcStatus.FAILED_PRECONDITION;
    case 429:
      return GrpcStatus.RESOURCE_EXHAUSTED;
    case 502:
    case 503:
      return GrpcStatus.UNAVAILABLE;
    case 504:
      return GrpcStatus.DEADLINE_EXCEEDED;
    case 400:
    case 431:
      return GrpcStatus.INTERNAL;
    default:
      return GrpcStatus.UNKNOWN;
  }
}

/** Percent-encodes a grpc-message: UTF-8 bytes outside 0x20–0x7E, and `%` itself. */
export function grpcPercentEncode(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The trailers-only answer for a gateway answer of `status` whose JSON body was `body` (its error and message). */
export function grpcRefusal(status: number, body: string, requestId: string): HeaderField[] {
  let text = `HTTP ${status}`;
  try {
    const json = JSON.parse(body) as { error?: unknown; message?: unknown };
    if (typeof json.error === "string" && typeof json.message === "string") text = `${json.error}: ${json.message}`;
  } catch {
    // Not the gateway's JSON: the status alone says it.
  }
  return [
    [":status", "200"],
    ["content-type", "application/grpc"],
    ["grpc-status", String(grpcStatusFor(status))],
    ["grpc-message", grpcPercentEncode(text)],
    ["x-request-id", requestId],
  ];
}
