// The gateway's mark on HTTP+SSE message endpoints (docs/gateway.md#mcp-servers): appended to the event's URL
// whatever its shape, taken off exactly, valid only for the agent, server, path and query it was given for and
// under the key it was made with.
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mayBeJsonRpc } from "../../../src/core/jsonRpc.ts";
import { markedEndpoint, markValid, splitMark } from "../../../src/gateway/stages/mcpEndpoints.ts";

const key = randomBytes(32);
const base = "https://mcp.example.com/sse";

describe("the endpoint mark", () => {
  for (const data of ["/messages?sessionId=abc", "/messages", "/messages?", "/m?a=1&", "messages?sessionId=a#frag", "https://mcp.example.com/x/y?s=%20z"]) {
    test(`${data}: marked, split back, valid for its path and query only`, () => {
      const url = new URL(data, base);
      const marked = markedEndpoint(key, "agent-1", "srv-1", data, url);
      const sent = new URL(marked, base);
      const target = sent.pathname + sent.search;
      const split = splitMark(target)!;
      expect(split).not.toBeNull();
      const back = new URL(split.target, base);
      expect(back.pathname + back.search).toBe(url.pathname + url.search);
      expect(markValid(key, "agent-1", "srv-1", back.pathname + back.search, split.mark)).toBe(true);
      expect(markValid(key, "agent-2", "srv-1", back.pathname + back.search, split.mark)).toBe(false);
      expect(markValid(key, "agent-1", "srv-2", back.pathname + back.search, split.mark)).toBe(false);
      expect(markValid(key, "agent-1", "srv-1", `${back.pathname}x${back.search}`, split.mark)).toBe(false);
      expect(markValid(randomBytes(32), "agent-1", "srv-1", back.pathname + back.search, split.mark)).toBe(false);
    });
  }

  test("no mark, or one not at the end of the query, or of the wrong shape, is none", () => {
    expect(splitMark("/messages?sessionId=abc")).toBeNull();
    expect(splitMark(`/messages?xcredgate_mcp=${"A".repeat(43)}`)).toBeNull();
    expect(splitMark(`/messages?credgate_mcp=${"A".repeat(43)}&x=1`)).toBeNull();
    expect(splitMark(`/messages?credgate_mcp=${"A".repeat(42)}`)).toBeNull();
    expect(splitMark(`/messages?credgate_mcp=${"A".repeat(42)}%`)).toBeNull();
    expect(splitMark(`/messages?credgate_mcp=${"A".repeat(43)}`)).toEqual({ target: "/messages", mark: "A".repeat(43) });
  });
});

describe("a body that may be JSON-RPC", () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  test("an object or array after whitespace, NULs or a byte-order mark may be; a form, multipart or text may not", () => {
    for (const s of ['{"a":1}', "  \r\n\t[1]", "\uFEFF{}", ""]) expect(mayBeJsonRpc(enc(s))).toBe(true);
    expect(mayBeJsonRpc(new Uint8Array([0xff, 0xfe, 0x7b, 0x00]))).toBe(true);
    expect(mayBeJsonRpc(new Uint8Array([0x00, 0x00, 0x00, 0x7b]))).toBe(true);
    for (const s of ["a=b&c=d", "--boundary\r\n", "hello", "1", '"str"', "null"]) expect(mayBeJsonRpc(enc(s))).toBe(false);
  });
});
