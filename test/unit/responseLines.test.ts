// An upstream's header lines on their way back to the agent (src/gateway/headers.ts): hop-by-hop headers and
// those its Connection header names are dropped wherever they stand, the rest kept in order.
import { describe, expect, test } from "bun:test";
import { connectionTokens, type HeaderLines } from "../../src/gateway/http1/head.ts";
import { responseLinesForAgent } from "../../src/gateway/headers.ts";

describe("responseLinesForAgent", () => {
  test("drops hop-by-hop and Connection-named lines in any case and at any place, keeping the rest in order", () => {
    const lines: HeaderLines = [
      ["Content-Type", "text/plain"],
      ["Connection", "keep-alive, X-Trace"],
      ["Set-Cookie", "a=1"],
      ["x-trace", "abc"],
      ["Keep-Alive", "timeout=5"],
      ["Set-Cookie", "b=2"],
      ["TRANSFER-ENCODING", "chunked"],
    ];
    expect(responseLinesForAgent(lines, connectionTokens(lines))).toEqual([
      ["Content-Type", "text/plain"],
      ["Set-Cookie", "a=1"],
      ["Set-Cookie", "b=2"],
    ]);
  });

  test("nothing to drop: the same lines; a control byte in a value: null", () => {
    const lines: HeaderLines = [
      ["Content-Type", "application/json"],
      ["Date", "Wed, 25 Nov 2026 23:58:37 GMT"],
    ];
    expect(responseLinesForAgent(lines, connectionTokens(lines))).toBe(lines);
    expect(responseLinesForAgent([["X-A", "ok"], ["X-B", "bell\x07"]], new Set())).toBeNull();
    expect(responseLinesForAgent([["X-A", "tab\tis fine"]], new Set())).toEqual([["X-A", "tab\tis fine"]]);
  });
});
