// HTTP/2 helpers for gateway tests: a real h2 origin (node:http2's secure server, h2 only, recording every
// stream and counting its connections), and a raw frame client that speaks HTTP/2 by hand inside a CONNECT
// tunnel — for what no well-behaved client sends (the attack limits). Its header blocks are HPACK literals
// without indexing (RFC 7541 §6.2.2), written here, not with the gateway's own encoder.
import * as http2 from "node:http2";
import { readFileSync } from "node:fs";
import * as tls from "node:tls";
import { basic, openConnect } from "./gateway.ts";
import type { TestPki } from "./upstream.ts";

export interface H2Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  bodyBytes: number;
}

export interface H2Origin {
  port: number;
  seen: H2Seen[];
  /** TLS connections the origin accepted (h2 multiplexing: few for many requests). */
  connections: number;
  stop(): Promise<void>;
}

/**
 * Routes: `/big?bytes=N` answers N bytes; `/slow?ms=N` answers after N ms; `/trailers` answers with a trailer;
 * anything else answers JSON `{path, proto, bodyBytes}` once the request body has ended.
 */
export async function startH2Origin(pki: TestPki): Promise<H2Origin> {
  const seen: H2Seen[] = [];
  const server = http2.createSecureServer({ cert: readFileSync(pki.certFile), key: readFileSync(pki.keyFile), allowHTTP1: false });
  const origin: H2Origin = { port: 0, seen, connections: 0, stop: () => new Promise<void>((r) => server.close(() => r())) };
  server.on("secureConnection", () => origin.connections++);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  origin.stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sessions) s.destroy();
      server.close(() => resolve());
    });
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    const path = String(headers[":path"]);
    const url = new URL(path, "https://origin");
    const flat: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) if (!k.startsWith(":")) flat[k] = String(v);
    const record: H2Seen = { method: String(headers[":method"]), path, headers: flat, bodyBytes: 0 };
    seen.push(record);
    stream.on("error", () => {});
    stream.on("data", (c: Buffer) => (record.bodyBytes += c.length));
    stream.on("end", () => {
      if (stream.destroyed) return;
      if (url.pathname === "/big") {
        const total = Number(url.searchParams.get("bytes"));
        stream.respond({ ":status": 200, "content-type": "application/octet-stream", "content-length": String(total) });
        const chunk = Buffer.alloc(16 * 1024, 0x61);
        let left = total;
        const write = () => {
          while (left > 0) {
            const n = Math.min(left, chunk.length);
            left -= n;
            if (!stream.write(chunk.subarray(0, n))) return void stream.once("drain", write);
          }
          stream.end();
        };
        return write();
      }
      if (url.pathname === "/slow") {
        setTimeout(() => {
          if (stream.destroyed) return;
          stream.respond({ ":status": 200, "content-type": "text/plain" });
          stream.end("slow done");
        }, Number(url.searchParams.get("ms")));
        return;
      }
      if (url.pathname === "/trailers") {
        stream.respond({ ":status": 200, "content-type": "text/plain" }, { waitForTrailers: true });
        stream.on("wantTrailers", () => stream.sendTrailers({ "x-checksum": "abc123" }));
        return void stream.end("with trailers");
      }
      stream.respond({ ":status": 200, "content-type": "application/json", "x-origin": "h2" });
      stream.end(JSON.stringify({ path, proto: "h2", bodyBytes: record.bodyBytes }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  origin.port = (server.address() as { port: number }).port;
  return origin;
}

// ── a raw HTTP/2 client ───────────────────────────────────────────────────────────────────────────────────

export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
export const FLAG = { END_STREAM: 1, ACK: 1, END_HEADERS: 4 } as const;
export const ERR = { NO_ERROR: 0, PROTOCOL_ERROR: 1, REFUSED_STREAM: 7, CANCEL: 8, ENHANCE_YOUR_CALM: 0xb } as const;

export interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}

function hpackInt(value: number, prefix: number, pattern: number): Buffer {
  const max = (1 << prefix) - 1;
  if (value < max) return Buffer.from([pattern | value]);
  const out = [pattern | max];
  value -= max;
  while (value >= 128) {
    out.push((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out.push(value);
  return Buffer.from(out);
}

function hpackString(s: string): Buffer {
  const raw = Buffer.from(s, "latin1");
  return Buffer.concat([hpackInt(raw.length, 7, 0), raw]);
}

/** A header block of literals without indexing, new names (RFC 7541 §6.2.2). */
export function headerBlock(fields: [string, string][]): Buffer {
  return Buffer.concat(fields.flatMap(([n, v]) => [Buffer.from([0x00]), hpackString(n), hpackString(v)]));
}

/** A dynamic table size update (RFC 7541 §6.3) to `size`. */
export function tableSizeUpdate(size: number): Buffer {
  return hpackInt(size, 5, 0x20);
}

export function rst(stream: number, code: number): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(code);
  return frame(FRAME.RST_STREAM, 0, stream, p);
}

export function settings(pairs: [number, number][] = []): Buffer {
  const p = Buffer.alloc(pairs.length * 6);
  pairs.forEach(([k, v], i) => {
    p.writeUInt16BE(k, i * 6);
    p.writeUInt32BE(v, i * 6 + 2);
  });
  return frame(FRAME.SETTINGS, 0, 0, p);
}

export class RawH2 {
  readonly frames: Frame[] = [];
  closed = false;
  #buf = Buffer.alloc(0);
  #waiters: (() => void)[] = [];

  constructor(readonly socket: tls.TLSSocket) {
    socket.on("data", (chunk: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, chunk]);
      while (this.#buf.length >= 9) {
        const len = this.#buf.readUIntBE(0, 3);
        if (this.#buf.length < 9 + len) break;
        const f: Frame = { type: this.#buf[3]!, flags: this.#buf[4]!, stream: this.#buf.readUInt32BE(5) & 0x7fffffff, payload: this.#buf.subarray(9, 9 + len) };
        this.#buf = this.#buf.subarray(9 + len);
        // SETTINGS are acknowledged and PINGs answered, as any client does.
        if (f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0) this.write(frame(FRAME.SETTINGS, FLAG.ACK, 0));
        this.frames.push(f);
      }
      this.#wake();
    });
    socket.on("close", () => {
      this.closed = true;
      this.#wake();
    });
    socket.on("error", () => {});
  }

  /** Through a CONNECT tunnel to `authority`, TLS with ALPN h2 (it must be chosen), the preface and SETTINGS sent. */
  static async open(gatewayPort: number, authority: string, token: string, ca: string, servername: string): Promise<RawH2> {
    const t = await openConnect(gatewayPort, authority, basic(token));
    if (t.connect.status !== 200) throw new Error(`CONNECT ${authority} answered ${t.connect.statusLine}`);
    const secure = tls.connect({ socket: t.socket, ca, servername, ALPNProtocols: ["h2"] });
    await new Promise<void>((resolve, reject) => {
      secure.once("secureConnect", resolve);
      secure.once("error", reject);
    });
    if (secure.alpnProtocol !== "h2") throw new Error(`ALPN chose ${secure.alpnProtocol}`);
    const raw = new RawH2(secure);
    raw.write(Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"));
    raw.write(settings());
    return raw;
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const fn of w) fn();
  }

  write(bytes: Buffer): void {
    if (!this.closed) this.socket.write(bytes);
  }

  /** A request's HEADERS (one frame, END_HEADERS) for `path` on `authority`. */
  request(stream: number, authority: string, path: string, opts: { method?: string; endStream?: boolean; extra?: [string, string][] } = {}): void {
    const block = headerBlock([[":method", opts.method ?? "GET"], [":scheme", "https"], [":authority", authority], [":path", path], ...(opts.extra ?? [])]);
    this.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | (opts.endStream === false ? 0 : FLAG.END_STREAM), stream, block));
  }

  /** The first frame matching `match`, waiting up to `ms`; null when none came (or the connection closed first). */
  async waitFor(match: (f: Frame) => boolean, ms = 10_000): Promise<Frame | null> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.frames.find(match);
      if (found) return found;
      if (this.closed || Date.now() > deadline) return null;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The GOAWAY the gateway sent: its error code. */
  async goaway(ms = 10_000): Promise<number | null> {
    const f = await this.waitFor((x) => x.type === FRAME.GOAWAY, ms);
    return f ? f.payload.readUInt32BE(4) : null;
  }

  /** The body bytes of `stream` so far, and whether it has ended. */
  body(stream: number): { text: string; ended: boolean } {
    const data = this.frames.filter((f) => f.stream === stream && f.type === FRAME.DATA);
    const ended = this.frames.some((f) => f.stream === stream && (f.flags & FLAG.END_STREAM) !== 0 && (f.type === FRAME.DATA || f.type === FRAME.HEADERS));
    return { text: Buffer.concat(data.map((f) => f.payload)).toString("latin1"), ended };
  }

  close(): void {
    this.socket.destroy();
  }
}

// ── an origin that goes away ──────────────────────────────────────────────────────────────────────────────

export interface GoawayOrigin {
  port: number;
  /** TLS connections accepted, and requests answered (HEADERS of the second and later connections). */
  connections: number;
  answered: number;
  stop(): Promise<void>;
}

/**
 * An h2 origin written frame by frame (as a server that is shutting down behaves): its first connection answers
 * the first request's HEADERS with GOAWAY (last stream 0: nothing was processed) and closes; every later
 * connection answers each request `200 text/plain` "answered on connection N".
 */
export async function startGoawayOrigin(pki: TestPki): Promise<GoawayOrigin> {
  const origin: GoawayOrigin = { port: 0, connections: 0, answered: 0, stop: async () => {} };
  const server = tls.createServer({ cert: readFileSync(pki.certFile), key: readFileSync(pki.keyFile), ALPNProtocols: ["h2"] }, (socket) => {
    const n = ++origin.connections;
    socket.on("error", () => {});
    socket.write(settings());
    let buf = Buffer.alloc(0);
    let preface = false;
    socket.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (!preface) {
        if (buf.length < 24) return;
        buf = buf.subarray(24);
        preface = true;
      }
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) return;
        const type = buf[3]!;
        const flags = buf[4]!;
        const stream = buf.readUInt32BE(5) & 0x7fffffff;
        buf = buf.subarray(9 + len);
        if (type === FRAME.SETTINGS && (flags & FLAG.ACK) === 0) socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0));
        if (type !== FRAME.HEADERS) continue;
        if (n === 1) {
          const p = Buffer.alloc(8);
          p.writeUInt32BE(0, 0);
          p.writeUInt32BE(ERR.NO_ERROR, 4);
          socket.end(frame(FRAME.GOAWAY, 0, 0, p));
          return;
        }
        origin.answered++;
        socket.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, stream, headerBlock([[":status", "200"], ["content-type", "text/plain"]])));
        socket.write(frame(FRAME.DATA, FLAG.END_STREAM, stream, Buffer.from(`answered on connection ${n}`)));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  origin.port = (server.address() as { port: number }).port;
  origin.stop = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return origin;
}

/** The static table's `:status` entries (RFC 7541 Appendix A). */
const STATIC_STATUS: Record<number, number> = { 8: 200, 9: 204, 10: 206, 11: 304, 12: 400, 13: 404, 14: 500 };

/**
 * The `:status` of a response HEADERS frame, read here without an HPACK table: it is the block's first field
 * (after any table size update), either a static-table entry or a literal with the static name `:status`
 * (index 8) and a raw (non-Huffman) value. Null when it is neither.
 */
export function statusOf(f: Frame): number | null {
  const p = f.payload;
  let at = 0;
  while (at < p.length && (p[at]! & 0xe0) === 0x20) at++;
  const b = p[at];
  if (b === undefined) return null;
  if ((b & 0x80) !== 0) return STATIC_STATUS[b & 0x7f] ?? null;
  const nameIndex = (b & 0xc0) === 0x40 ? b & 0x3f : b & 0x0f;
  if (nameIndex < 8 || nameIndex > 14) return null;
  const len = p[at + 1]!;
  if ((len & 0x80) !== 0) return null;
  return Number(p.subarray(at + 2, at + 2 + len).toString("latin1"));
}

/** DATA frames for `body`, split into frames of at most `size` bytes, END_STREAM on the last when `end`. */
export function dataFrames(stream: number, body: Buffer, end: boolean, size = 16_384): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < body.length || (out.length === 0 && end); at += size) {
    const part = body.subarray(at, at + size);
    out.push(frame(FRAME.DATA, end && at + size >= body.length ? FLAG.END_STREAM : 0, stream, part));
    if (body.length === 0) break;
  }
  return out;
}
