// What travels back through the stages to the agent: a status, headers and a body that is pushed, chunk by
// chunk, with backpressure. An upstream response's body comes straight off the upstream socket; a gateway
// answer (or the API's, on control paths) is a Web Response whose stream is read. Response-phase stages add
// body transforms (a metering tap, the echo guard) and end callbacks (the log row) instead of wrapping streams.
// An upstream's headers stay the lines it sent (names as spelled, repeats kept) unless a stage asks for a
// Headers object: most replies are relayed without one being built.
import { headerValue, type HeaderLines } from "./http1/head.ts";

export interface BodySink {
  /** One chunk of body data; false asks the source to stop until `resume()`. */
  data(chunk: Uint8Array): boolean;
  end(): void;
  error(err: Error): void;
}

export interface BodySource {
  /** The body's length when the sender announced it. */
  readonly length: number | null;
  start(sink: BodySink): void;
  resume(): void;
  /** The agent went away or the body is not wanted: stop and free what holds it. */
  cancel(): void;
}

export interface BodyTransform {
  /** The bytes to send on for this chunk (the chunk itself when nothing changes). */
  data(chunk: Uint8Array): Uint8Array;
  /** At the end of the body (`complete` false when it was cut short): bytes still held back, if any. */
  end(complete: boolean): Uint8Array | null;
  /** Whether the transform can change the body's length (the length header is then dropped). */
  readonly resizes: boolean;
}

export class Reply {
  readonly transforms: BodyTransform[] = [];
  /** An upstream's response (relayed as it is), as opposed to an answer of the gateway's own. */
  fromUpstream = false;
  /** The agent's connection was handed to a raw pipe (WebSocket after 101): nothing is left to write. */
  takenOver = false;
  #ended: ((complete: boolean) => void)[] | null = null;
  #finished = false;
  #headers: Headers | null;
  #lines: HeaderLines | null;
  /** Trailers of an HTTP/2 upstream (gRPC's status), known when the body has ended. */
  #trailers: HeaderLines | null = null;
  /** What `mapHeaderValues` asked for, applied to trailers too when they come (the echo guard). */
  #valueMap: ((value: string) => string) | null = null;

  constructor(
    public status: number,
    public statusText: string,
    headers: Headers | HeaderLines,
    public body: BodySource | null,
  ) {
    const isLines = Array.isArray(headers);
    this.#headers = isLines ? null : headers;
    this.#lines = isLines ? headers : null;
  }

  /** The headers as a Headers object (built from the lines on first use; the lines are then dropped). */
  get headers(): Headers {
    if (this.#headers === null) {
      this.#headers = new Headers(this.#lines!);
      this.#lines = null;
    }
    return this.#headers;
  }

  /** The first value of a header (`lowerName` in lower case), without building a Headers object. */
  header(lowerName: string): string | null {
    return this.#lines === null ? this.#headers!.get(lowerName) : headerValue(this.#lines, lowerName);
  }

  /** Trailers, set by the body's source before its end (header value maps applied). */
  get trailers(): HeaderLines | null {
    return this.#trailers;
  }

  set trailers(lines: HeaderLines | null) {
    const map = this.#valueMap;
    if (lines && map) for (const line of lines) line[1] = map(line[1]);
    this.#trailers = lines;
  }

  /** Replaces every header value by `fn(value)` (Set-Cookie values each on their own), trailers included. */
  mapHeaderValues(fn: (value: string) => string): void {
    // One map per reply in practice (the echo guard's): kept as it is, composed only if a second comes.
    const before = this.#valueMap;
    this.#valueMap = before === null ? fn : (value) => fn(before(value));
    if (this.#trailers) for (const line of this.#trailers) line[1] = fn(line[1]);
    if (this.#lines !== null) {
      for (const line of this.#lines) line[1] = fn(line[1]);
      return;
    }
    const headers = this.#headers!;
    const changed: [string, string][] = [];
    for (const [name, value] of headers) {
      if (name === "set-cookie") continue;
      const next = fn(value);
      if (next !== value) changed.push([name, next]);
    }
    for (const [name, value] of changed) headers.set(name, value);
    const cookies = headers.getSetCookie();
    const next = cookies.map(fn);
    if (next.some((c, i) => c !== cookies[i])) {
      headers.delete("set-cookie");
      for (const c of next) headers.append("set-cookie", c);
    }
  }

  /** Every header line as it goes to the agent: the upstream's lines, or one line per value (each Set-Cookie its own). */
  headerLines(): Iterable<[string, string]> {
    if (this.#lines !== null) return this.#lines;
    const headers = this.#headers!;
    const out: [string, string][] = [];
    for (const entry of headers) if (entry[0] !== "set-cookie") out.push(entry);
    for (const cookie of headers.getSetCookie()) out.push(["set-cookie", cookie]);
    return out;
  }

  static of(response: Response): Reply {
    const declared = response.headers.get("content-length");
    const body = response.body ? new StreamBody(response.body, declared === null ? null : Number(declared)) : null;
    return new Reply(response.status, response.statusText, response.headers, body);
  }

  /** `fn` runs once, when the body has been delivered (complete) or abandoned. */
  onEnd(fn: (complete: boolean) => void): void {
    if (this.#finished) fn(false);
    else (this.#ended ??= []).push(fn);
  }

  finish(complete: boolean): void {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#ended) for (const fn of this.#ended) fn(complete);
  }

  /** A Web Response over the same body, for the rare hook that has to read it (guidance). */
  toResponse(): Response {
    const source = this.body;
    let stream: ReadableStream<Uint8Array> | null = null;
    if (source) {
      stream = new ReadableStream<Uint8Array>({
        start(controller) {
          source.start({
            data: (chunk) => {
              controller.enqueue(chunk.slice());
              return (controller.desiredSize ?? 0) > 0;
            },
            end: () => controller.close(),
            error: (err) => controller.error(err),
          });
        },
        pull: () => source.resume(),
        cancel: () => source.cancel(),
      });
    }
    return new Response(stream, { status: this.status, statusText: this.statusText, headers: this.headers });
  }
}

/** A body read from a Web ReadableStream. */
export class StreamBody implements BodySource {
  #reader: { cancel(): Promise<void> } | null = null;
  #wake: (() => void) | null = null;
  #paused = false;
  #cancelled = false;

  constructor(
    private readonly stream: ReadableStream<Uint8Array>,
    readonly length: number | null,
  ) {}

  start(sink: BodySink): void {
    void this.#pump(sink);
  }

  async #pump(sink: BodySink): Promise<void> {
    const reader = this.stream.getReader();
    this.#reader = reader;
    try {
      for (;;) {
        if (this.#paused) await new Promise<void>((resolve) => (this.#wake = resolve));
        if (this.#cancelled) return;
        const r = await reader.read();
        if (this.#cancelled) return;
        if (r.done) return sink.end();
        if (!sink.data(r.value)) this.#paused = true;
      }
    } catch (err) {
      if (!this.#cancelled) sink.error(err as Error);
    }
  }

  resume(): void {
    this.#paused = false;
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  cancel(): void {
    if (this.#cancelled) return;
    this.#cancelled = true;
    this.resume();
    if (this.#reader) this.#reader.cancel().catch(() => {});
    else this.stream.cancel().catch(() => {});
  }
}
