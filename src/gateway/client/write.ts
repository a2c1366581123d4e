// Writes a Reply to the agent as HTTP/1.1: the status line, the headers (framing and Connection decided
// here), then the body as it comes, through the reply's transforms, with backpressure. The head waits for
// the first body bytes so that a small response leaves in one write.
import { STATUS_CODES } from "node:http";
import { lastChunk } from "../http1/body.ts";
import type { BodyTransform, Reply } from "../reply.ts";
import type { AgentSocket } from "./socket.ts";

/** Where a reply goes: the agent's socket, and a way to hear when it has drained. */
export interface ReplyTarget {
  readonly socket: AgentSocket;
  whenDrained(fn: (() => void) | null): void;
}

export interface WriteOptions {
  method: string;
  /** Close the connection after this answer (said in the head). */
  close: boolean;
  signal: AbortSignal;
}

const CRLF = Buffer.from("\r\n");
/** Past this many bytes waiting, they are written at once rather than at the end of the tick. */
const MAX_PENDING = 64 * 1024;

const SKIPPED = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "set-cookie"]);

function bodyless(method: string, status: number): boolean {
  return method === "HEAD" || status === 204 || status === 304 || (status >= 100 && status < 200);
}

function headOf(reply: Reply, framing: string, close: boolean, keepLength: boolean): Buffer {
  let head = `HTTP/1.1 ${reply.status} ${reply.statusText || STATUS_CODES[reply.status] || ""}\r\n`;
  for (const [name, value] of reply.headers) {
    if (SKIPPED.has(name) && !(keepLength && name === "content-length")) continue;
    head += `${name}: ${value}\r\n`;
  }
  for (const cookie of reply.headers.getSetCookie()) head += `set-cookie: ${cookie}\r\n`;
  head += framing;
  if (close) head += "connection: close\r\n";
  return Buffer.from(`${head}\r\n`, "latin1");
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

export function writeReply(target: ReplyTarget, reply: Reply, opts: WriteOptions): Promise<void> {
  const socket = target.socket;
  const noBody = bodyless(opts.method, reply.status);
  const source = noBody ? null : reply.body;
  if (noBody && reply.body) reply.body.cancel();
  const transforms = reply.transforms;
  const resizes = transforms.some((t) => t.resizes);
  const length = source === null ? 0 : resizes ? null : source.length;
  const chunked = length === null;
  const framing = noBody ? "" : chunked ? "transfer-encoding: chunked\r\n" : `content-length: ${length}\r\n`;

  if (source === null) {
    socket.write(headOf(reply, framing, opts.close, noBody));
    reply.finish(true);
    return Promise.resolve();
  }
  return new Promise<void>((resolve) => {
    let finished = false;
    // Body bytes wait for the end of the current tick and leave in one write with whatever else is ready: a
    // small response is one TLS record and one syscall, and a stream's chunks still go out as they come. A
    // body of unknown length that is complete before anything left gets a Content-Length after all.
    let headSent = false;
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    let scheduled = false;
    const framed = (pieces: Uint8Array[]): Uint8Array[] =>
      chunked ? pieces.flatMap((p) => [Buffer.from(`${p.byteLength.toString(16)}\r\n`, "latin1"), p, CRLF]) : pieces;
    const write = (parts: Uint8Array[]) => {
      if (parts.length > 0) socket.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    };
    const flush = () => {
      scheduled = false;
      const parts = framed(pending);
      pending = [];
      pendingBytes = 0;
      if (!headSent) {
        headSent = true;
        parts.unshift(headOf(reply, framing, opts.close, false));
      }
      write(parts);
    };
    const queue = (data: Uint8Array) => {
      pending.push(data);
      pendingBytes += data.byteLength;
    };
    const done = (complete: boolean) => {
      if (finished) return;
      finished = true;
      opts.signal.removeEventListener("abort", onAbort);
      target.whenDrained(null);
      reply.finish(complete);
      resolve();
    };
    const onDrain = () => source.resume();
    const onAbort = () => {
      source.cancel();
      endTransforms(transforms, false);
      done(false);
    };
    opts.signal.addEventListener("abort", onAbort, { once: true });
    source.start({
      data(data) {
        if (finished) return false;
        let out = data;
        for (const t of transforms) out = t.data(out);
        if (out.byteLength > 0) queue(out);
        if (pendingBytes >= MAX_PENDING) flush();
        else if (!scheduled) {
          scheduled = true;
          queueMicrotask(flush);
        }
        if (!socket.needsDrain) return true;
        target.whenDrained(onDrain);
        return false;
      },
      end() {
        if (finished) return;
        for (const tail of endTransforms(transforms, true)) queue(tail);
        if (!headSent && chunked) {
          headSent = true;
          write([headOf(reply, `content-length: ${pendingBytes}\r\n`, opts.close, false), ...pending]);
          pending = [];
        } else {
          const parts = framed(pending);
          pending = [];
          if (!headSent) parts.unshift(headOf(reply, framing, opts.close, false));
          headSent = true;
          if (chunked) parts.push(lastChunk());
          write(parts);
        }
        done(true);
      },
      error() {
        if (finished) return;
        endTransforms(transforms, false);
        // Mid-body there is no way to say it in HTTP/1.1 but to end the connection short of the length or
        // the last chunk: what came is delivered, then the agent sees the transfer cut.
        flush();
        socket.end();
        done(false);
      },
    });
  });
}
