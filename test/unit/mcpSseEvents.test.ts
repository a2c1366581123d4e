// The SSE reader credgate's own MCP client uses (src/services/mcp/sseEvents.ts): events as the stream gives them,
// whatever the chunking, line endings and comments, and bounded.
import { describe, expect, test } from "bun:test";
import { sseEvents } from "../../src/services/mcp/sseEvents.ts";

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const chunk of chunks) c.enqueue(enc.encode(chunk));
      c.close();
    },
  });
}

async function all(chunks: string[], max = 1024) {
  const out: { event: string; data: string }[] = [];
  for await (const e of sseEvents(streamOf(chunks), max)) out.push(e);
  return out;
}

describe("sseEvents", () => {
  test("events with names, multi-line data and comments; the default name is message", async () => {
    expect(await all([": keep-alive\n\nevent: endpoint\ndata: /messages?sessionId=1\n\ndata: {\"a\":\ndata: 1}\n\n"])).toEqual([
      { event: "endpoint", data: "/messages?sessionId=1" },
      { event: "message", data: '{"a":\n1}' },
    ]);
  });

  test("the same events whatever the chunking, with CRLF split between chunks", async () => {
    const text = "event: endpoint\r\ndata: one\r\n\r\ndata: two\r\n\r\n";
    const expected = [
      { event: "endpoint", data: "one" },
      { event: "message", data: "two" },
    ];
    for (let cut = 1; cut < text.length; cut++) expect(await all([text.slice(0, cut), text.slice(cut)])).toEqual(expected);
    expect(await all([...text])).toEqual(expected);
  });

  test("an event larger than the bound is refused", async () => {
    await expect(all([`data: ${"x".repeat(2000)}`], 1024)).rejects.toThrow("an event of the stream is larger than 1024 bytes");
  });
});
