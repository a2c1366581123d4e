// An MCP server's response bodies as the gateway reads them (docs/gateway.md#mcp-servers): an SSE stream event by
// event — each event goes on as soon as it is whole, only the event still arriving is held (at most
// SSE_EVENT_LIMIT) — and a JSON body whole, up to JSON_BODY_LIMIT, when it answers a tools/list. The stream can
// also be given events of the gateway's own (a refusal on an HTTP+SSE session), which go between two of the
// server's events, never inside one.
import type { BodySink, BodySource, BodyTransform } from "../reply.ts";

/** The largest SSE event held while it arrives (16 MiB); a longer one ends the stream. */
export const SSE_EVENT_LIMIT = 16 * 1024 * 1024;
/** The largest JSON response body read to filter a tools/list result (16 MiB). */
export const JSON_BODY_LIMIT = 16 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One SSE event's fields, as a client reads them (RFC: the `data` lines joined by `\n`). */
export interface SseEvent {
  event: string;
  data: string | null;
  /** Every line that is not a `data` line (event, id, retry, comments), as sent. */
  otherLines: string[];
}

export function parseSseEvent(text: string): SseEvent {
  let event = "message";
  let data: string[] | null = null;
  const otherLines: string[] = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === "") continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") (data ??= []).push(value);
    else {
      if (field === "event") event = value;
      otherLines.push(line);
    }
  }
  return { event, data: data === null ? null : data.join("\n"), otherLines };
}

/** The event again with `data` in place of its data lines (other lines kept, so ids and types survive). */
export function sseEventWith(ev: SseEvent, data: string): string {
  const lines = [...ev.otherLines, ...data.split("\n").map((d) => `data: ${d}`)];
  return `${lines.join("\n")}\n\n`;
}

/**
 * A body source over an SSE stream that hands each whole event to `rewrite` (its bytes; the text to send instead,
 * or null to send it on as it came) and can be given events to send between two of the server's.
 */
export class SseEventSource implements BodySource {
  readonly length = null;
  #sink: BodySink | null = null;
  /** The bytes of the event still arriving. */
  #held: Uint8Array = new Uint8Array(0);
  #atLineStart = true;
  #prevCR = false;
  #pending: string[] = [];
  #ended = false;
  /** Nothing more to read: chunks go on as they come (stopReading). */
  #raw = false;
  #closed: (() => void) | null;

  constructor(
    private readonly inner: BodySource,
    /** Given each whole event's bytes (a view: read it, do not keep it). */
    private readonly rewrite: (event: Buffer) => string | null,
    onClosed: (() => void) | null = null,
  ) {
    this.#closed = onClosed;
  }

  start(sink: BodySink): void {
    this.#sink = sink;
    this.inner.start({
      data: (chunk) => this.#data(chunk),
      end: () => {
        if (this.#held.byteLength > 0) this.#emitOne(this.#held);
        this.#held = new Uint8Array(0);
        this.#close();
        sink.end();
      },
      error: (err) => {
        this.#close();
        sink.error(err);
      },
    });
    if (this.#pending.length > 0 && this.#held.byteLength === 0) this.#flushPending();
  }

  resume(): void {
    this.inner.resume();
  }

  cancel(): void {
    this.#close();
    this.inner.cancel();
  }

  /**
   * Nothing more needs reading (no tool list to cut, no session to answer on): from now on the stream is relayed
   * as it comes, and no event is held. Events of the gateway's own can no longer be sent.
   */
  stopReading(): void {
    this.#raw = true;
  }

  /** Sends an event of the gateway's own: now when no event of the server's is half through, else after it. */
  inject(eventText: string): void {
    if (this.#ended) return;
    this.#pending.push(eventText);
    if (this.#sink !== null && this.#held.byteLength === 0) this.#flushPending();
  }

  #flushPending(): void {
    const text = this.#pending.join("");
    this.#pending = [];
    this.#sink!.data(encoder.encode(text));
  }

  #close(): void {
    this.#ended = true;
    const closed = this.#closed;
    this.#closed = null;
    closed?.();
  }

  #emitOne(bytes: Uint8Array): Uint8Array {
    const replaced = this.rewrite(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    return replaced === null ? bytes : encoder.encode(replaced);
  }

  #data(chunk: Uint8Array): boolean {
    if (this.#raw && this.#held.byteLength === 0) return this.#sink!.data(chunk);
    const held = this.#held;
    const scanFrom = held.byteLength;
    const buf = scanFrom === 0 ? chunk : Buffer.concat([held, chunk]);
    const out: Uint8Array[] = [];
    let start = 0;
    for (let i = scanFrom; i < buf.byteLength; i++) {
      const b = buf[i]!;
      if (b === LF && this.#prevCR) {
        this.#prevCR = false;
        // The LF of a CRLF whose CR ended the last event: it goes on at once, so no event is left half through.
        if (i === start && this.#atLineStart) {
          out.push(buf.subarray(start, i + 1));
          start = i + 1;
        }
        continue;
      }
      if (b !== LF && b !== CR) {
        this.#prevCR = false;
        this.#atLineStart = false;
        continue;
      }
      this.#prevCR = b === CR;
      if (!this.#atLineStart) {
        this.#atLineStart = true;
        continue;
      }
      // A blank line: the event ends here.
      out.push(this.#emitOne(buf.subarray(start, i + 1)));
      if (this.#pending.length > 0) {
        out.push(encoder.encode(this.#pending.join("")));
        this.#pending = [];
      }
      start = i + 1;
      if (this.#raw) break;
    }
    if (this.#raw) {
      this.#pending = [];
      this.#ended = true;
      out.push(buf.subarray(start));
      start = buf.byteLength;
    }
    this.#held = start === buf.byteLength ? new Uint8Array(0) : buf.subarray(start).slice();
    if (this.#held.byteLength > SSE_EVENT_LIMIT) {
      this.#close();
      this.inner.cancel();
      this.#sink!.error(new Error(`an MCP server's SSE event is over ${SSE_EVENT_LIMIT} bytes`));
      return false;
    }
    if (out.length === 0) return true;
    return this.#sink!.data(out.length === 1 ? out[0]! : Buffer.concat(out));
  }
}

/**
 * A JSON response body read whole (it answers a tools/list, so it is one message or a batch), up to
 * JSON_BODY_LIMIT, and given to `rewrite` at its end; a longer one is replaced by `tooLarge()`.
 */
export function jsonBodyRewrite(rewrite: (text: string) => string | null, tooLarge: () => string): BodyTransform {
  let parts: Uint8Array[] | null = [];
  let size = 0;
  return {
    resizes: true,
    data(chunk) {
      if (parts === null) return new Uint8Array(0);
      size += chunk.byteLength;
      if (size > JSON_BODY_LIMIT) parts = null;
      else parts.push(chunk.slice());
      return new Uint8Array(0);
    },
    end(complete) {
      if (parts === null) return encoder.encode(tooLarge());
      if (!complete) return null;
      const whole = Buffer.concat(parts);
      parts = [];
      const replaced = rewrite(decoder.decode(whole));
      return replaced === null ? whole : encoder.encode(replaced);
    },
  };
}
