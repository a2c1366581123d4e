// The HTTP/2 session (docs/gateway.md#http2-and-grpc), both roles: a client session and a server session
// joined by an in-memory wire, and a server session fed hand-built frames. Per-stream flow control (a stream
// whose consumer does not read stalls alone), the attack limits (concurrent streams, rapid reset, CONTINUATION
// flood, HPACK table size, header list size with the connection kept), and GOAWAY draining; control-frame
// answers the peer does not read (PING and SETTINGS floods), and resets the client provokes (MadeYouReset).
import { describe, expect, test } from "bun:test";
import * as f from "../../../src/gateway/h2/frames.ts";
import { HpackEncoder, type HeaderField } from "../../../src/gateway/h2/hpack.ts";
import { H2Session, type H2Stream, type H2Transport, type SessionEvents, type StreamHandler } from "../../../src/gateway/h2/session.ts";

/** One direction of an in-memory connection: bytes written reach the peer session on a later turn. */
class Wire implements H2Transport {
  peer: H2Session | null = null;
  readonly written: Buffer[] = [];
  ended = false;
  #queue: Buffer[] = [];
  #scheduled = false;
  readonly needsDrain = false;

  write(data: Uint8Array): void {
    const copy = Buffer.from(data);
    this.written.push(copy);
    this.#queue.push(copy);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      const chunk = Buffer.concat(this.#queue.splice(0));
      this.peer?.receive(chunk);
    });
  }

  end(): void {
    this.ended = true;
  }

  destroy(): void {
    this.ended = true;
  }

  /** The frames written so far (after the client preface, if any). */
  frames(): { type: number; flags: number; stream: number; payload: Buffer }[] {
    let buf = Buffer.concat(this.written);
    if (buf.subarray(0, f.PREFACE.length).equals(f.PREFACE)) buf = buf.subarray(f.PREFACE.length);
    const out = [];
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      out.push({ type: buf[3]!, flags: buf[4]!, stream: buf.readUInt32BE(5) & 0x7fffffff, payload: buf.subarray(9, 9 + len) });
      buf = buf.subarray(9 + len);
    }
    return out;
  }
}

const tick = () => new Promise<void>((r) => setImmediate(r));
async function settle(turns = 20) {
  for (let i = 0; i < turns; i++) await tick();
}

/** A client's stream consumer: collects the body, credits it only while `reading`. */
class Reader implements StreamHandler {
  bytes = 0;
  ended = false;
  status: string | null = null;
  reset: number | null = null;
  constructor(public reading: boolean) {}
  #held = 0;
  onHeaders(stream: H2Stream, fields: HeaderField[], endStream: boolean): void {
    if (!stream.responded) {
      stream.responded = true;
      this.status = fields.find(([n]) => n === ":status")?.[1] ?? null;
    }
    if (endStream) this.ended = true;
  }
  onData(stream: H2Stream, chunk: Buffer, endStream: boolean): void {
    this.bytes += chunk.length;
    if (this.reading) stream.consumed(chunk.length);
    else this.#held += chunk.length;
    if (endStream) this.ended = true;
  }
  onReset(_s: H2Stream, code: number): void {
    this.reset = code;
  }
  onWritable(): void {}
  readAll(stream: H2Stream): void {
    this.reading = true;
    stream.consumed(this.#held);
    this.#held = 0;
  }
}

/** A server that answers every request with `bytes` of body, written as its windows allow. */
function pair(bytes: number, events: SessionEvents = {}) {
  const toServer = new Wire();
  const toClient = new Wire();
  const server = new H2Session("server", toClient, {
    ...events,
    stream(stream) {
      stream.sendHeaders([[":status", "200"]], false);
      let left = bytes;
      const chunk = Buffer.alloc(16_384, 0x61);
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          const more = stream.sendData(chunk.subarray(0, n), left === 0);
          if (!more) return;
        }
      };
      stream.handler = { onHeaders() {}, onData() {}, onReset() {}, onWritable: pump };
      pump();
    },
  });
  const client = new H2Session("client", toServer, {});
  toServer.peer = server;
  toClient.peer = client;
  return { server, client, toServer, toClient };
}

const get = (path: string): HeaderField[] => [[":method", "GET"], [":scheme", "https"], [":authority", "a.test"], [":path", path]];

describe("flow control", () => {
  test("a stream whose consumer does not read stalls alone; its neighbours complete; it completes once read", async () => {
    const { client } = pair(2 * 1024 * 1024);
    await settle();
    const slow = new Reader(false);
    const slowStream = client.request(get("/slow"), true, slow);
    const fast = Array.from({ length: 5 }, () => new Reader(true));
    for (const r of fast) client.request(get("/fast"), true, r);
    await settle(400);
    for (const r of fast) expect(r).toMatchObject({ ended: true, bytes: 2 * 1024 * 1024, status: "200" });
    // The slow stream received its window (256 KiB) and no more.
    expect(slow.ended).toBe(false);
    expect(slow.bytes).toBeLessThanOrEqual(256 * 1024);
    expect(slow.bytes).toBeGreaterThan(0);
    slow.readAll(slowStream);
    await settle(400);
    expect(slow).toMatchObject({ ended: true, bytes: 2 * 1024 * 1024 });
  });
});

/** A server session fed frames by hand (a client that does what it likes). */
function rawServer(events: SessionEvents = {}) {
  const out = new Wire();
  const opened: H2Stream[] = [];
  const tooLarge: number[] = [];
  const server = new H2Session("server", out, {
    stream: (s) => opened.push(s),
    tooLarge: (s) => {
      tooLarge.push(s.id);
      s.sendHeaders([[":status", "431"]], true);
    },
    ...events,
  });
  const enc = new HpackEncoder();
  server.receive(Buffer.concat([f.PREFACE, f.settingsFrame([])]));
  const headers = (id: number, fields: HeaderField[], endStream = true) => server.receive(f.headerFrames(id, enc.encode(fields), endStream, 16_384));
  const goaway = () => {
    const g = out.frames().find((x) => x.type === f.GOAWAY);
    return g ? g.payload.readUInt32BE(4) : null;
  };
  return { server, out, opened, tooLarge, headers, enc, goaway };
}

describe("the attack limits", () => {
  test("100 concurrent streams; the 101st is refused (REFUSED_STREAM), the connection kept", () => {
    const s = rawServer();
    for (let i = 0; i < 101; i++) s.headers(1 + 2 * i, get(`/${i}`));
    expect(s.opened).toHaveLength(100);
    const rst = s.out.frames().find((x) => x.type === f.RST_STREAM);
    expect(rst).toMatchObject({ stream: 201 });
    expect(rst!.payload.readUInt32BE(0)).toBe(f.REFUSED_STREAM);
    expect(s.server.closed).toBe(false);
  });

  test("rapid reset: the 201st client reset within 10 s → GOAWAY ENHANCE_YOUR_CALM", () => {
    const s = rawServer();
    for (let i = 0; i < 200; i++) {
      s.headers(1 + 2 * i, get("/r"));
      s.server.receive(f.rstStream(1 + 2 * i, f.CANCEL));
    }
    expect(s.server.closed).toBe(false);
    s.headers(401, get("/r"));
    s.server.receive(f.rstStream(401, f.CANCEL));
    expect(s.goaway()).toBe(f.ENHANCE_YOUR_CALM);
    expect(s.server.closed).toBe(true);
  });

  test("32 CONTINUATION frames are a header block; the 33rd is a flood (ENHANCE_YOUR_CALM)", () => {
    const ok = rawServer();
    const block = ok.enc.encode([...get("/c"), ...Array.from({ length: 32 }, (_, i): HeaderField => [`x-${i}`, "v"])]);
    // HEADERS with the pseudo-fields, then one CONTINUATION per remaining field bytes, 32 in all.
    const parts = [block.subarray(0, 20), ...Array.from({ length: 32 }, (_, i) => block.subarray(20 + Math.floor(((block.length - 20) * i) / 32), 20 + Math.floor(((block.length - 20) * (i + 1)) / 32)))];
    parts.forEach((p, i) => ok.server.receive(f.frame(i === 0 ? f.HEADERS : f.CONTINUATION, (i === 0 ? f.END_STREAM : 0) | (i === parts.length - 1 ? f.END_HEADERS : 0), 1, p)));
    expect(ok.opened).toHaveLength(1);
    expect(ok.goaway()).toBeNull();

    const flood = rawServer();
    flood.server.receive(f.frame(f.HEADERS, f.END_STREAM, 1, flood.enc.encode(get("/"))));
    for (let i = 0; i < 33; i++) flood.server.receive(f.frame(f.CONTINUATION, 0, 1, Buffer.alloc(0)));
    expect(flood.goaway()).toBe(f.ENHANCE_YOUR_CALM);
  });

  test("an HPACK table size beyond the announced one → GOAWAY ENHANCE_YOUR_CALM", () => {
    const s = rawServer();
    s.server.receive(f.frame(f.HEADERS, f.END_STREAM | f.END_HEADERS, 1, Buffer.from([0x3f, 0xe1, 0xff, 0x03])));
    expect(s.goaway()).toBe(f.ENHANCE_YOUR_CALM);
  });

  test("a header list over 64 KiB: that stream is answered by the caller (tooLarge), the connection kept", () => {
    const s = rawServer();
    s.headers(1, [...get("/big"), ["x-big", "b".repeat(70_000)]]);
    expect(s.tooLarge).toEqual([1]);
    expect(s.opened).toHaveLength(0);
    s.headers(3, get("/next"));
    expect(s.opened.map((x) => x.id)).toEqual([3]);
    expect(s.goaway()).toBeNull();
  });
});

describe("GOAWAY", () => {
  test("open streams finish; new ones are refused; the transport ends once the last closes", () => {
    const s = rawServer();
    s.headers(1, get("/open"));
    s.server.goaway();
    expect(s.goaway()).toBe(f.NO_ERROR);
    s.headers(3, get("/late"));
    expect(s.opened.map((x) => x.id)).toEqual([1]);
    expect(s.out.frames().find((x) => x.type === f.RST_STREAM && x.stream === 3)!.payload.readUInt32BE(0)).toBe(f.REFUSED_STREAM);
    expect(s.out.ended).toBe(false);
    s.opened[0]!.sendHeaders([[":status", "200"]], true);
    expect(s.out.ended).toBe(true);
  });
});

/** A transport whose peer reads nothing (needsDrain) until it is told it drained: what it was handed, as writes. */
class Unread implements H2Transport {
  needsDrain = true;
  readonly writes: Buffer[] = [];
  ended = false;
  write(data: Uint8Array): void {
    this.writes.push(Buffer.from(data));
  }
  end(): void {
    this.ended = true;
  }
  destroy(): void {
    this.ended = true;
  }
  get bytes(): number {
    return this.writes.reduce((n, w) => n + w.length, 0);
  }
  goaway(): number | null {
    const w = this.writes.find((b) => b.length === 17 && b[3] === f.GOAWAY);
    return w ? w.readUInt32BE(13) : null;
  }
}

const pings = (n: number) => Buffer.concat(Array.from({ length: n }, (_, i) => f.frame(f.PING, 0, 0, Buffer.from([0, 0, 0, 0, i >>> 24, (i >>> 16) & 0xff, (i >>> 8) & 0xff, i & 0xff]))));

describe("control-frame floods (answers the peer does not read)", () => {
  test("the PING ACKs of one read are one write; past 1 MiB of them unread → GOAWAY ENHANCE_YOUR_CALM", () => {
    const t = new Unread();
    const s = new H2Session("server", t, {});
    s.receive(Buffer.concat([f.PREFACE, f.settingsFrame([])]));
    const before = t.writes.length;
    s.receive(pings(4000));
    // The SETTINGS ACK and 4000 PING ACKs: one buffer.
    expect(t.writes.length).toBe(before + 1);
    expect(t.writes.at(-1)!.length).toBe(4000 * 17);
    // 1 MiB is 61,681 ACKs: the read that passes it fails the session.
    for (let i = 0; i < 14; i++) s.receive(pings(4000));
    expect(s.closed).toBe(false);
    s.receive(pings(4000));
    expect(s.closed).toBe(true);
    expect(s.failure?.code).toBe(f.ENHANCE_YOUR_CALM);
    expect(t.goaway()).toBe(f.ENHANCE_YOUR_CALM);
    expect(t.ended).toBe(true);
  });

  test("answers that leave (the transport drains) do not count: a peer that reads may ping for ever", () => {
    const t = new Unread();
    const s = new H2Session("server", t, {});
    s.receive(Buffer.concat([f.PREFACE, f.settingsFrame([])]));
    for (let i = 0; i < 100; i++) {
      s.receive(pings(4000));
      s.receive(Buffer.concat(Array.from({ length: 100 }, () => f.settingsFrame([[f.SETTINGS_HEADER_TABLE_SIZE, 4096]]))));
      s.drained();
    }
    expect(s.closed).toBe(false);
    // And with nothing backed up, nothing counts at all.
    t.needsDrain = false;
    for (let i = 0; i < 100; i++) s.receive(pings(4000));
    expect(s.closed).toBe(false);
  });
});

describe("MadeYouReset: resets the client provokes count toward the rapid-reset limit", () => {
  test("a zero WINDOW_UPDATE on each open stream: 200 are reset, the 201st → GOAWAY ENHANCE_YOUR_CALM", () => {
    const s = rawServer();
    for (let i = 0; i < 200; i++) {
      s.headers(1 + 2 * i, get("/made"));
      s.server.receive(f.windowUpdate(1 + 2 * i, 0));
    }
    expect(s.server.closed).toBe(false);
    expect(s.out.frames().filter((x) => x.type === f.RST_STREAM && x.payload.readUInt32BE(0) === f.PROTOCOL_ERROR)).toHaveLength(200);
    s.headers(401, get("/made"));
    s.server.receive(f.windowUpdate(401, 0));
    expect(s.goaway()).toBe(f.ENHANCE_YOUR_CALM);
    expect(s.out.frames().filter((x) => x.type === f.RST_STREAM)).toHaveLength(200);
  });

  test("client RST_STREAM frames and provoked resets share the limit; REFUSED_STREAM is not counted", () => {
    const s = rawServer();
    for (let i = 0; i < 100; i++) {
      s.headers(1 + 2 * i, get("/shared"));
      s.server.receive(f.rstStream(1 + 2 * i, f.CANCEL));
    }
    for (let i = 100; i < 200; i++) {
      s.headers(1 + 2 * i, get("/shared"));
      // DATA on a half-closed (remote) stream: STREAM_CLOSED.
      s.server.receive(f.frame(f.DATA, 0, 1 + 2 * i, Buffer.from("late")));
    }
    expect(s.server.closed).toBe(false);
    s.server.receive(f.frame(f.DATA, 0, 399, Buffer.from("late again")));
    expect(s.goaway()).toBe(f.ENHANCE_YOUR_CALM);

    const refused = rawServer();
    for (let i = 0; i < 400; i++) refused.headers(1 + 2 * i, get("/many"));
    expect(refused.out.frames().filter((x) => x.type === f.RST_STREAM && x.payload.readUInt32BE(0) === f.REFUSED_STREAM)).toHaveLength(300);
    expect(refused.server.closed).toBe(false);
  });
});
