// Writes a Reply to the agent as HTTP/1.1: the status line, the headers (framing and Connection decided
// here), then the body as it comes, through the reply's transforms, with backpressure. The head waits for
// the first body bytes so that a small response leaves in one write.
import { STATUS_CODES } from "node:http";
import { lastChunk } from "../http1/body.ts";
import { isNamed, isOneOf } from "../http1/head.ts";
import type { BodySink, BodySource, BodyTransform, Reply } from "../reply.ts";
import type { AgentSocket } from "./socket.ts";
import type { Outgoing } from "../writeBatch.ts";

/** Where a reply goes: the agent's socket, and a way to hear when it has drained. */
export interface ReplyTarget {
  readonly socket: AgentSocket;
  whenDrained(fn: (() => void) | null): void;
}

export interface WriteOptions {
  method: string;
  /** Close the connection after this answer (said in the head). */
  close: boolean;
  /**
   * The request was HTTP/1.0: a client that cannot read chunked framing. A body of unknown length is sent as it
   * comes and ends with the connection (close is then always set).
   */
  http10?: boolean;
}

/** Past this many bytes waiting, they are written at once rather than at the end of the tick. */
const MAX_PENDING = 64 * 1024;

/** Connection and framing headers: decided here, never copied (Content-Length too, unless kept). */
const DECIDED_HERE = ["connection", "keep-alive", "transfer-encoding"];

function isSkipped(name: string, keepLength: boolean): boolean {
  return isOneOf(name, DECIDED_HERE) || (!keepLength && isNamed(name, "content-length"));
}

function bodyless(method: string, status: number): boolean {
  return method === "HEAD" || status === 204 || status === 304 || (status >= 100 && status < 200);
}

/** The response head, as latin1 text (header values keep the bytes they were read with). */
function headOf(reply: Reply, framing: string, close: boolean, keepLength: boolean): string {
  let head = `HTTP/1.1 ${reply.status} ${reply.statusText || STATUS_CODES[reply.status] || ""}\r\n`;
  for (const [name, value] of reply.headerLines()) if (!isSkipped(name, keepLength)) head += `${name}: ${value}\r\n`;
  head += framing;
  if (close) head += "connection: close\r\n";
  return `${head}\r\n`;
}

/** Runs the end of every transform, each one's held-back bytes passing through the ones after it. */
function endTransforms(transforms: BodyTransform[], complete: boolean): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < transforms.length; i++) {
    let tail = transforms[i]!.end(complete);
    for (let j = i + 1; tail && j < transforms.length; j++) tail = transforms[j]!.data(tail);
    if (tail && tail.byteLength > 0) out.push(tail);
  }
  return out;
}

/** Where a reply is being written: what the connection needs to cut it short when the agent goes away. */
export interface ReplyInFlight {
  abort(): void;
}

/**
 * Writes `reply`; returns once it is written (undefined: a small reply usually is, at once) or a promise that
 * resolves once it is written or abandoned. `track` is told the writer while a body is being written, so that
 * the connection can abort it when the agent goes away (no abort listener per request).
 */
export function writeReply(target: ReplyTarget, reply: Reply, opts: WriteOptions, track: (w: ReplyInFlight | null) => void): Promise<void> | undefined {
  const socket = target.socket;
  const noBody = bodyless(opts.method, reply.status);
  const source = noBody ? null : reply.body;
  if (noBody && reply.body) reply.body.cancel();
  const transforms = reply.transforms;
  let resizes = false;
  for (const t of transforms) resizes ||= t.resizes;
  const length = source === null ? 0 : resizes ? null : source.length;
  const unsized = length === null;
  const chunked = unsized && !opts.http10;
  const framing = noBody || (unsized && !chunked) ? "" : chunked ? "transfer-encoding: chunked\r\n" : `content-length: ${length}\r\n`;

  if (source === null) {
    socket.writeLatin1(headOf(reply, framing, opts.close, noBody));
    reply.finish(true);
    return undefined;
  }
  const writer = new BodyWriter(target, reply, source, framing, unsized, chunked, opts.close, track);
  track(writer);
  // A body that was all there already (most small responses) has been written when start returns.
  source.start(writer);
  return writer.finished ? undefined : new Promise<void>((resolve) => (writer.whenDone = resolve));
}

/** Writers with body bytes waiting for the end of this tick: one microtask flushes them all. */
let flushing: BodyWriter[] = [];

function flushWriters(): void {
  const writers = flushing;
  flushing = [];
  for (const w of writers) w.flush();
}

/**
 * Body bytes wait for the end of the current tick and leave in one write with whatever else is ready: a
 * small response is one TLS record and one syscall, and a stream's chunks still go out as they come. A
 * body of unknown length that is complete before anything left gets a Content-Length after all.
 */
class BodyWriter implements BodySink, ReplyInFlight {
  #finished = false;
  /** Told once the reply is written or abandoned, when that happens after writeReply returned. */
  whenDone: (() => void) | null = null;
  #headSent = false;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #scheduled = false;

  constructor(
    private readonly target: ReplyTarget,
    private readonly reply: Reply,
    private readonly source: BodySource,
    private readonly framing: string,
    /** The length was not known when the head was made (chunked, or close-delimited for HTTP/1.0). */
    private readonly unsized: boolean,
    private readonly chunked: boolean,
    private readonly close: boolean,
    private readonly track: (w: ReplyInFlight | null) => void,
  ) {}

  get finished(): boolean {
    return this.#finished;
  }

  data(data: Uint8Array): boolean {
    if (this.#finished) return false;
    let out = data;
    for (const t of this.reply.transforms) out = t.data(out);
    if (out.byteLength > 0) this.#queue(out);
    if (this.#pendingBytes >= MAX_PENDING) this.flush();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      if (flushing.push(this) === 1) queueMicrotask(flushWriters);
    }
    if (!this.target.socket.needsDrain) return true;
    this.target.whenDrained(() => this.source.resume());
    return false;
  }

  end(): void {
    if (this.#finished) return;
    for (const tail of endTransforms(this.reply.transforms, true)) this.#queue(tail);
    if (!this.#headSent && this.unsized) {
      this.#headSent = true;
      this.#write([headOf(this.reply, `content-length: ${this.#pendingBytes}\r\n`, this.close, false), ...this.#pending]);
      this.#pending = [];
    } else {
      const parts = this.#framed(this.#pending);
      this.#pending = [];
      if (!this.#headSent) parts.unshift(headOf(this.reply, this.framing, this.close, false));
      this.#headSent = true;
      if (this.chunked) parts.push(lastChunk());
      this.#write(parts);
    }
    this.#done(true);
  }

  error(): void {
    if (this.#finished) return;
    endTransforms(this.reply.transforms, false);
    // Mid-body there is no way to say it in HTTP/1.1 but to end the connection short of the length or
    // the last chunk: what came is delivered, then the agent sees the transfer cut.
    this.flush();
    this.target.socket.end();
    this.#done(false);
  }

  /** The agent went away. */
  abort(): void {
    if (this.#finished) return;
    this.source.cancel();
    endTransforms(this.reply.transforms, false);
    this.#done(false);
  }

  #queue(data: Uint8Array): void {
    this.#pending.push(data);
    this.#pendingBytes += data.byteLength;
  }

  #framed(pieces: Uint8Array[]): Outgoing[] {
    if (!this.chunked) return pieces;
    const out: Outgoing[] = [];
    for (const p of pieces) out.push(`${p.byteLength.toString(16)}\r\n`, p, "\r\n");
    return out;
  }

  /** The socket gathers a turn's writes and sends them as one (writeBatch.ts): no joining here. */
  #write(parts: Outgoing[]): void {
    const socket = this.target.socket;
    for (const part of parts) {
      if (typeof part === "string") socket.writeLatin1(part);
      else socket.write(part);
    }
  }

  /** Writes what waits (at the end of the tick, or at once past MAX_PENDING). */
  flush(): void {
    this.#scheduled = false;
    if (this.#finished) return;
    const parts = this.#framed(this.#pending);
    this.#pending = [];
    this.#pendingBytes = 0;
    if (!this.#headSent) {
      this.#headSent = true;
      parts.unshift(headOf(this.reply, this.framing, this.close, false));
    }
    this.#write(parts);
  }

  #done(complete: boolean): void {
    if (this.#finished) return;
    this.#finished = true;
    this.target.whenDrained(null);
    this.reply.finish(complete);
    this.track(null);
    this.whenDone?.();
  }
}
