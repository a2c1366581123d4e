// Writes a Reply to the agent as HTTP/1.1: the status line, the headers (framing and Connection decided
// here), then the body as it comes, through the reply's transforms, with backpressure. The head waits for
// the first body bytes so that a small response leaves in one write.
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { lastChunk } from "../http1/body.ts";
import type { BodyTransform, Reply } from "../reply.ts";

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

export function writeReply(socket: Duplex, reply: Reply, opts: WriteOptions): Promise<void> {
  const noBody = bodyless(opts.method, reply.status);
  const source = noBody ? null : reply.body;
  if (noBody && reply.body) reply.body.cancel();
  const transforms = reply.transforms;
  const resizes = transforms.some((t) => t.resizes);
  const length = source === null ? 0 : resizes ? null : source.length;
  const chunked = length === null;
  const framing = noBody ? "" : chunked ? "transfer-encoding: chunked\r\n" : `content-length: ${length}\r\n`;
  const head = headOf(reply, framing, opts.close, noBody);

  if (source === null) {
    socket.write(head);
    reply.finish(true);
    return Promise.resolve();
  }
  return new Promise<void>((resolve) => {
    let finished = false;
    // Bytes wait for the end of the current tick and leave in one write: a small response's head, body and
    // last chunk are one TLS record and one syscall, and a stream's chunks still go out as they come.
    let pending: Uint8Array[] = [head];
    let pendingBytes = head.byteLength;
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      if (pending.length === 0) return;
      const out = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
      pending = [];
      pendingBytes = 0;
      socket.write(out);
    };
    const queue = (data: Uint8Array) => {
      if (chunked) pending.push(Buffer.from(`${data.byteLength.toString(16)}\r\n`, "latin1"), data, CRLF);
      else pending.push(data);
      pendingBytes += data.byteLength + (chunked ? 12 : 0);
    };
    const done = (complete: boolean) => {
      if (finished) return;
      finished = true;
      opts.signal.removeEventListener("abort", onAbort);
      socket.off("drain", onDrain);
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
    socket.on("drain", onDrain);
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
        return !socket.writableNeedDrain;
      },
      end() {
        if (finished) return;
        for (const tail of endTransforms(transforms, true)) queue(tail);
        if (chunked) pending.push(lastChunk());
        flush();
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
