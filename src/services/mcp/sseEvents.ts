// Server-sent events read off a response body as they arrive (the MCP transports answer JSON-RPC in them):
// one event at a time, each bounded, so a server cannot make credgate hold more than one event's worth.
import { OutboundRefused } from "./egressFetch.ts";

export interface SseEvent {
  event: string;
  data: string;
}

/** The events of a `text/event-stream` body, in order; ends with the body. */
export async function* sseEvents(body: ReadableStream<Uint8Array>, maxEventBytes: number): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
        // A CR at the end may be the first half of a CRLF split across chunks: wait for the next one.
        if (nl === buffer.length - 1 && buffer[nl] === "\r") break;
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + (buffer.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length > 0) yield { event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
          size = 0;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const raw = colon < 0 ? "" : line.slice(colon + 1);
        const text = raw.startsWith(" ") ? raw.slice(1) : raw;
        if (field === "event") event = text;
        else if (field === "data") {
          size += text.length;
          data.push(text);
        }
      }
      if (size + buffer.length > maxEventBytes) throw new OutboundRefused(`an event of the stream is larger than ${maxEventBytes} bytes`);
    }
  } finally {
    void reader.cancel().catch(() => {});
  }
}
