// Hand-written PostgreSQL v3 frames and a raw socket that collects what the other side answers, for tests that
// speak to credgate's database listener byte by byte (fuzz, backpressure). Written from the protocol
// documentation, independent of credgate's own src/gateway/postgres/wire.ts.
import * as net from "node:net";
import * as tls from "node:tls";

export const PROTOCOL_3 = 196608;

const cstr = (s: string) => Buffer.from(`${s}\0`, "utf8");

/** An untyped startup-phase packet: Int32 length (itself included), Int32 code, payload. */
export function untyped(code: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(8);
  head.writeInt32BE(8 + payload.length, 0);
  head.writeInt32BE(code, 4);
  return Buffer.concat([head, payload]);
}

export function startup(params: Record<string, string>): Buffer {
  return untyped(PROTOCOL_3, Buffer.concat([...Object.entries(params).flatMap(([k, v]) => [cstr(k), cstr(v)]), Buffer.from([0])]));
}

export const sslRequest = () => untyped(80877103);
export const gssencRequest = () => untyped(80877104);
export function cancelRequest(pid: number, key: number): Buffer {
  const p = Buffer.alloc(8);
  p.writeInt32BE(pid, 0);
  p.writeInt32BE(key, 4);
  return untyped(80877102, p);
}

/** A typed message: 1-byte type, Int32 length (itself included), body. */
export function typed(type: string | number, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head[0] = typeof type === "number" ? type : type.charCodeAt(0);
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
}

export const password = (p: string) => typed("p", cstr(p));
export const query = (sql: string) => typed("Q", cstr(sql));
export const terminate = () => typed("X");

export interface Frame {
  type: string;
  body: Buffer;
}

/** Error or notice fields by their one-letter code. */
export function fields(body: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < body.length && body[i] !== 0) {
    const end = body.indexOf(0, i + 1);
    out[String.fromCharCode(body[i]!)] = body.subarray(i + 1, end).toString("utf8");
    i = end + 1;
  }
  return out;
}

/** A socket to the listener that keeps every byte it receives and splits typed frames on demand. */
export class RawConnection {
  received = Buffer.alloc(0);
  closed: Promise<void>;
  isClosed = false;
  #offset = 0;
  #waiters: (() => void)[] = [];

  constructor(public socket: net.Socket | tls.TLSSocket) {
    this.#listen(socket);
    this.closed = new Promise((resolve) => {
      socket.once("close", () => {
        this.isClosed = true;
        resolve();
        this.#wake();
      });
    });
    socket.on("error", () => {});
  }

  #listen(socket: net.Socket) {
    socket.on("data", (d: Buffer) => {
      this.received = Buffer.concat([this.received, d]);
      this.#wake();
    });
  }

  #wake() {
    for (const w of this.#waiters.splice(0)) w();
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", port }, () => resolve(new RawConnection(s)));
      s.once("error", reject);
    });
  }

  write(b: Buffer | Uint8Array): void {
    if (!this.socket.destroyed) this.socket.write(b);
  }

  /** Waits until `n` bytes past what was consumed have arrived (or the socket closed); returns them. */
  async bytes(n: number, ms = 15_000): Promise<Buffer> {
    const deadline = Date.now() + ms;
    while (this.received.length - this.#offset < n && !this.isClosed) {
      if (Date.now() > deadline) throw new Error(`waited ${ms} ms for ${n} bytes`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 100);
      });
    }
    const out = this.received.subarray(this.#offset, this.#offset + n);
    this.#offset += out.length;
    return out;
  }

  /** The next typed frame, or null when the socket closed first. */
  async frame(ms = 15_000): Promise<Frame | null> {
    const head = await this.bytes(5, ms);
    if (head.length < 5) return null;
    const len = head.readInt32BE(1);
    const body = await this.bytes(len - 4, ms);
    if (body.length < len - 4) return null;
    return { type: String.fromCharCode(head[0]!), body };
  }

  /** Frames up to and including the first of `type` (or the close). */
  async until(type: string, ms = 15_000): Promise<Frame[]> {
    const out: Frame[] = [];
    for (;;) {
      const f = await this.frame(ms);
      if (!f) return out;
      out.push(f);
      if (f.type === type) return out;
    }
  }

  /** Upgrades to TLS (after the listener answered 'S'). */
  async startTls(ca: string): Promise<void> {
    this.socket.removeAllListeners("data");
    const secure = tls.connect({ socket: this.socket as net.Socket, ca, servername: "localhost" });
    await new Promise<void>((resolve, reject) => {
      secure.once("secureConnect", () => resolve());
      secure.once("error", reject);
    });
    this.socket = secure;
    this.received = Buffer.alloc(0);
    this.#offset = 0;
    this.#listen(secure);
    secure.on("error", () => {});
  }

  close(): void {
    this.socket.destroy();
  }
}
