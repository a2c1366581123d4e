// A raw PostgreSQL v3 client for the database listener's tests: exact bytes, split wherever a test wants, for
// what real drivers never send (pipelines mixing protocols, FunctionCall, a header cut across writes, malformed
// and random packets for the fuzz). Messages it receives are split with the broker's own MessageReader
// (test/unit/postgresWire.test.ts holds that reader to node-postgres's protocol code).
import * as net from "node:net";
import * as tls from "node:tls";
import { MessageReader, message, parseErrorFields, type Message } from "../../src/gateway/postgres/wire.ts";

const enc = new TextEncoder();
const cstr = (...parts: string[]): Uint8Array => enc.encode(parts.map((p) => `${p}\0`).join(""));
const int32 = (n: number): Uint8Array => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n | 0);
  return b;
};
const int16 = (n: number): Uint8Array => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const cat = (...parts: Uint8Array[]): Uint8Array => Buffer.concat(parts);

export const PROTOCOL_3 = 196608;

export const fe = {
  /** Any startup-phase packet: Int32 length (itself included), Int32 code, payload. */
  untyped: (code: number, payload: Uint8Array = new Uint8Array(0)): Uint8Array => cat(int32(8 + payload.length), int32(code), payload),
  /** Any typed message, the type given as a char or a byte (0x00, 0xff, … for the fuzz). */
  typed: (type: string | number, body: Uint8Array = new Uint8Array(0)): Uint8Array => message(typeof type === "number" ? String.fromCharCode(type) : type, body),
  startup(params: Record<string, string>, protocol = PROTOCOL_3): Uint8Array {
    const body = cat(int32(protocol), ...Object.entries(params).map(([k, v]) => cstr(k, v)), Uint8Array.of(0));
    return cat(int32(body.length + 4), body);
  },
  sslRequest: (): Uint8Array => cat(int32(8), int32(80877103)),
  gssencRequest: (): Uint8Array => cat(int32(8), int32(80877104)),
  cancelRequest: (processId: number, secretKey: number): Uint8Array => cat(int32(16), int32(80877102), int32(processId), int32(secretKey)),
  password: (p: string): Uint8Array => message("p", cstr(p)),
  query: (sql: string): Uint8Array => message("Q", cstr(sql)),
  parse: (name: string, sql: string): Uint8Array => message("P", cat(cstr(name, sql), int16(0))),
  /** Bind with text parameters. */
  bind: (portal: string, statement: string, params: string[] = []): Uint8Array =>
    message("B", cat(cstr(portal, statement), int16(0), int16(params.length), ...params.map((p) => cat(int32(Buffer.byteLength(p)), enc.encode(p))), int16(0))),
  describePortal: (portal: string): Uint8Array => message("D", cat(Uint8Array.of(0x50), cstr(portal))),
  execute: (portal: string, maxRows = 0): Uint8Array => message("E", cat(cstr(portal), int32(maxRows))),
  flush: (): Uint8Array => message("H"),
  sync: (): Uint8Array => message("S"),
  terminate: (): Uint8Array => message("X"),
  /** FunctionCall of function `oid` with text arguments. */
  functionCall: (oid: number, args: string[]): Uint8Array =>
    message("F", cat(int32(oid), int16(0), int16(args.length), ...args.map((a) => cat(int32(Buffer.byteLength(a)), enc.encode(a))), int16(0))),
  copyData: (data: Uint8Array | string): Uint8Array => message("d", typeof data === "string" ? enc.encode(data) : data),
  copyDone: (): Uint8Array => message("c"),
};

/** A received message, shown as a test compares it: its type, and for errors the SQLSTATE and message. */
export interface Seen {
  type: string;
  code?: string;
  message?: string;
  severity?: string;
  /** ReadyForQuery's status, CommandComplete's tag, a DataRow's first column as text. */
  text?: string;
}

/** A received message as `Seen`. */
export function describeMessage(m: Message): Seen {
  const type = String.fromCharCode(m.type);
  if (type === "E" || type === "N") {
    const f = parseErrorFields(m.body);
    return { type, code: f.get("C")!, message: f.get("M")!, severity: f.get("S")! };
  }
  if (type === "Z") return { type, text: String.fromCharCode(m.body[0]!) };
  if (type === "K") {
    const b = Buffer.from(m.body);
    return { type, text: `${b.readInt32BE(0)} ${b.readInt32BE(4)}` };
  }
  if (type === "v") {
    const b = Buffer.from(m.body);
    const names = b.subarray(8).toString().split("\0").filter(Boolean);
    return { type, text: `${b.readInt32BE(0) >>> 16}.${b.readInt32BE(0) & 0xffff} ${names.join(",")}` };
  }
  if (type === "C") return { type, text: Buffer.from(m.body.subarray(0, m.body.length - 1)).toString() };
  if (type === "D") {
    const b = Buffer.from(m.body);
    const len = b.readInt32BE(2);
    return { type, text: len < 0 ? "NULL" : b.subarray(6, 6 + len).toString() };
  }
  return { type };
}

export class RawPg {
  readonly #reader = new MessageReader();
  #waiters: (() => void)[] = [];
  #closed = false;
  #raw: Buffer[] = [];
  readonly received: Message[] = [];
  /** Bytes read before any message framing (the one-byte answers to SSLRequest and GSSENCRequest). */
  #byteMode = false;

  private constructor(public socket: net.Socket | tls.TLSSocket) {
    this.#listen(socket);
  }

  #listen(socket: net.Socket): void {
    socket.on("data", (chunk: Buffer) => {
      if (this.#byteMode) this.#raw.push(chunk);
      else {
        this.#reader.push(chunk);
        for (;;) {
          const m = this.#reader.next();
          if (m === null) break;
          if ("error" in m) throw new Error(m.error);
          // Copy: the reader hands views.
          this.received.push({ type: m.type, body: Buffer.from(m.body), raw: Buffer.from(m.raw) });
        }
      }
      this.#wake();
    });
    socket.on("close", () => {
      this.#closed = true;
      this.#wake();
    });
    socket.on("error", () => {});
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** A plain TCP connection to `port`, nothing sent. */
  static async open(port: number): Promise<RawPg> {
    const socket = net.connect({ host: "127.0.0.1", port });
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    return new RawPg(socket);
  }

  /** Connected, authenticated and ready (TLS when `ca` is given): the messages up to the first ReadyForQuery. */
  static async login(port: number, params: Record<string, string>, password: string, ca?: string): Promise<{ client: RawPg; startup: Seen[]; key: { processId: number; secretKey: number } }> {
    const client = await RawPg.open(port);
    if (ca !== undefined) await client.startTls(ca);
    client.send(fe.startup(params));
    const asked = await client.until((s) => s.type === "R" || s.type === "E");
    if (asked.at(-1)!.type === "E") throw Object.assign(new Error(asked.at(-1)!.message), asked.at(-1));
    client.send(fe.password(password));
    const startup = await client.until((s) => s.type === "Z" || s.type === "E");
    if (startup.at(-1)!.type === "E") throw Object.assign(new Error(startup.at(-1)!.message), startup.at(-1));
    const [processId, secretKey] = startup.find((s) => s.type === "K")!.text!.split(" ").map(Number);
    return { client, startup, key: { processId: processId!, secretKey: secretKey! } };
  }

  /** SSLRequest, `S`, then TLS verified against `ca` for 127.0.0.1. */
  async startTls(ca: string): Promise<void> {
    this.send(fe.sslRequest());
    const answer = await this.byte();
    if (answer !== "S") throw new Error(`SSLRequest answered ${answer}`);
    this.socket.removeAllListeners("data");
    this.socket.removeAllListeners("close");
    const secure = tls.connect({ socket: this.socket, ca, servername: "localhost" });
    await new Promise<void>((resolve, reject) => secure.once("secureConnect", resolve).once("error", reject));
    this.socket = secure;
    this.#listen(secure);
  }

  /** The next single byte (the answer to SSLRequest or GSSENCRequest). */
  async byte(timeoutMs = 10_000): Promise<string> {
    this.#byteMode = true;
    const deadline = Date.now() + timeoutMs;
    while (this.#raw.length === 0) {
      if (this.#closed || Date.now() > deadline) throw new Error("no answer byte");
      await this.#wait(deadline);
    }
    const chunk = this.#raw.shift()!;
    this.#byteMode = false;
    if (chunk.length > 1) {
      this.#reader.push(chunk.subarray(1));
    }
    return String.fromCharCode(chunk[0]!);
  }

  send(...parts: Uint8Array[]): void {
    if (!this.socket.destroyed) this.socket.write(Buffer.concat(parts));
  }

  #wait(deadline: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, Math.max(0, deadline - Date.now()));
      this.#waiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** Messages received until (and including) the first for which `stop` holds; taken off `received`. */
  async until(stop: (s: Seen) => boolean, timeoutMs = 20_000): Promise<Seen[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.received.findIndex((m) => stop(describeMessage(m)));
      if (i >= 0) return this.received.splice(0, i + 1).map(describeMessage);
      if (this.#closed) throw new Error(`closed before the expected message; got ${JSON.stringify(this.received.map(describeMessage))}`);
      if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(this.received.map(describeMessage))}`);
      await this.#wait(deadline);
    }
  }

  /** The next message received (taken off `received`), or null when the connection closed or `timeoutMs` passed first. */
  async next(timeoutMs = 15_000): Promise<Message | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this.received.shift();
      if (m !== undefined) return m;
      if (this.#closed || Date.now() >= deadline) return null;
      await this.#wait(deadline);
    }
  }

  /** Messages until the `n`th ReadyForQuery. */
  async readies(n: number, timeoutMs = 20_000): Promise<Seen[]> {
    const out: Seen[] = [];
    for (let i = 0; i < n; i++) out.push(...(await this.until((s) => s.type === "Z", timeoutMs)));
    return out;
  }

  /** Resolves once the connection has closed (true), or false after `timeoutMs`. */
  async closedWithin(timeoutMs = 10_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.#closed && Date.now() < deadline) await this.#wait(deadline);
    return this.#closed;
  }

  /** Everything received so far, described. */
  drainSeen(): Seen[] {
    return this.received.splice(0).map(describeMessage);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** The types of a list of messages, as one string ("12DCZ"). */
export const types = (seen: Seen[]): string => seen.map((s) => s.type).join("");
