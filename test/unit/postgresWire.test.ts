// The broker's framing against node-postgres's own protocol code (pg-protocol): what its client writes, our reader
// splits; what our builders write, its parser reads.
import { describe, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { parse, serialize } from "pg-protocol";
import {
  authenticationCleartextPassword,
  authenticationOk,
  backendKeyData,
  errorResponse,
  HeaderAssembler,
  MessageReader,
  parameterStatus,
  parseErrorFields,
  parseParse,
  parsePassword,
  parseQuery,
  parseStartupPacket,
  message,
  readyForQuery,
  startupPacketLength,
  cancelRequest,
  sslRequest,
  startupMessage,
} from "../../src/gateway/postgres/wire.ts";

function bytes(b: Buffer | Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

async function parsedByPg(...messages: Uint8Array[]): Promise<{ name: string; [k: string]: unknown }[]> {
  const stream = new PassThrough();
  const seen: { name: string }[] = [];
  const done = parse(stream, (m) => seen.push(m as unknown as { name: string }));
  for (const m of messages) stream.write(Buffer.from(m));
  stream.end();
  await done;
  return seen as { name: string; [k: string]: unknown }[];
}

describe("startup packets", () => {
  test("a client's startup message, SSLRequest and CancelRequest", () => {
    const startup = bytes(serialize.startup({ user: "analytics", database: "app", application_name: "psql" }));
    expect(startupPacketLength(startup)).toBe(startup.byteLength);
    const parsed = parseStartupPacket(startup);
    // pg adds client_encoding of its own.
    expect(parsed).toEqual({
      kind: "startup",
      protocol: 196608,
      params: new Map([["user", "analytics"], ["database", "app"], ["application_name", "psql"], ["client_encoding", "UTF8"]]),
    });
    expect(parseStartupPacket(bytes(serialize.requestSsl()))).toEqual({ kind: "ssl" });
    expect(parseStartupPacket(bytes(serialize.cancel(1234, -99)))).toEqual({ kind: "cancel", processId: 1234, secretKey: -99 });
    // Ours, read back the same way.
    expect(parseStartupPacket(startupMessage({ user: "u", database: "d" }))).toEqual({ kind: "startup", protocol: 196608, params: new Map([["user", "u"], ["database", "d"]]) });
    expect(parseStartupPacket(sslRequest())).toEqual({ kind: "ssl" });
    expect(parseStartupPacket(cancelRequest(7, 8))).toEqual({ kind: "cancel", processId: 7, secretKey: 8 });
  });

  test("malformed packets are errors, never exceptions", () => {
    const good = startupMessage({ user: "u" });
    const cases: Uint8Array[] = [
      new Uint8Array(0),
      Uint8Array.of(0, 0, 0, 8),
      good.subarray(0, good.byteLength - 1), // length disagrees
      (() => {
        const b = good.slice();
        b[b.byteLength - 1] = 65; // no terminator
        return b;
      })(),
      (() => {
        const b = good.slice();
        new DataView(b.buffer).setInt32(4, 2 << 16); // protocol 2
        return b;
      })(),
      Uint8Array.of(0, 0, 0, 12, 4, 210, 22, 47, 0, 0, 0, 0), // SSLRequest with a body
      Uint8Array.of(0, 0, 0, 12, 4, 210, 22, 46, 0, 0, 0, 0), // CancelRequest cut short
    ];
    for (const c of cases) expect("error" in parseStartupPacket(c)).toBe(true);
  });
});

describe("typed messages", () => {
  test("what pg's client writes is split into messages, whatever the chunking", () => {
    const stream = [
      serialize.query("select 1; select 'a;b'"),
      serialize.parse({ name: "s1", text: "select $1::int", types: [23] }),
      serialize.bind({ statement: "s1", values: ["42"] }),
      serialize.describe({ type: "P" }),
      serialize.execute(),
      serialize.sync(),
      serialize.password("agt_secret"),
    ].map(bytes);
    const whole = new Uint8Array(stream.reduce((n, m) => n + m.byteLength, 0));
    let at = 0;
    for (const m of stream) {
      whole.set(m, at);
      at += m.byteLength;
    }
    for (const size of [1, 2, 3, 5, 7, 64, whole.byteLength]) {
      const reader = new MessageReader();
      const got: Uint8Array[] = [];
      for (let i = 0; i < whole.byteLength; i += size) {
        reader.push(whole.subarray(i, i + size));
        for (let m = reader.next(); m && !("error" in m); m = reader.next()) got.push(m.raw.slice());
      }
      expect(got).toEqual(stream);
      expect(reader.buffered).toBe(0);
    }
    const reader = new MessageReader();
    reader.push(whole);
    const q = reader.next() as { type: number; body: Uint8Array };
    expect(String.fromCharCode(q.type)).toBe("Q");
    expect(parseQuery(q.body)).toBe("select 1; select 'a;b'");
    const p = reader.next() as { body: Uint8Array };
    expect(parseParse(p.body)).toEqual({ name: "s1", query: "select $1::int" });
    for (let i = 0; i < 4; i++) reader.next();
    expect(parsePassword((reader.next() as { body: Uint8Array }).body)).toBe("agt_secret");
  });

  test("a length no message can have is an error", () => {
    const reader = new MessageReader();
    reader.push(Uint8Array.of(81, 0, 0, 0, 2));
    expect(reader.next()).toEqual({ error: "invalid message length 2" });
    const huge = new MessageReader();
    huge.push(Uint8Array.of(81, 0x7f, 0xff, 0xff, 0xff));
    expect(huge.next()).toEqual({ error: `invalid message length ${0x7fffffff}` });
  });

  test("what we build, pg's parser reads", async () => {
    const seen = await parsedByPg(
      authenticationCleartextPassword(),
      authenticationOk(),
      parameterStatus("server_version", "15.8"),
      backendKeyData(4242, -17),
      errorResponse("FATAL", "28P01", "credgate: invalid agent token"),
      readyForQuery("I".charCodeAt(0)),
    );
    expect(seen.map((m) => m.name)).toEqual(["authenticationCleartextPassword", "authenticationOk", "parameterStatus", "backendKeyData", "error", "readyForQuery"]);
    expect(seen[2]).toMatchObject({ parameterName: "server_version", parameterValue: "15.8" });
    expect(seen[3]).toMatchObject({ processID: 4242, secretKey: -17 });
    expect(seen[4]).toMatchObject({ severity: "FATAL", code: "28P01", message: "credgate: invalid agent token" });
    expect(seen[5]).toMatchObject({ status: "I" });
    const fields = parseErrorFields(errorResponse("ERROR", "25006", "credgate: this database credential is read-only").subarray(5));
    expect(Object.fromEntries(fields)).toEqual({ S: "ERROR", V: "ERROR", C: "25006", M: "credgate: this database credential is read-only" });
  });
});

describe("a header split across reads (HeaderAssembler)", () => {
  // Three messages back to back, with lengths whose four bytes all differ from one another.
  const stream = Buffer.concat([
    Buffer.from(message("T", new Uint8Array(0x0102 - 4).fill(0x61))),
    Buffer.from(message("Z", Uint8Array.of(0x49))),
    Buffer.from(message("D", new Uint8Array(0x0304 - 4).fill(0x62))),
  ]);
  const expected = [
    { type: 0x54, length: 0x0102 },
    { type: 0x5a, length: 5 },
    { type: 0x44, length: 0x0304 },
  ];

  /** Walks `chunks` as the relay does: a header read in place when whole in its chunk, else through the assembler. */
  function walk(chunks: Buffer[]): { type: number; length: number; assembled: boolean }[] {
    const header = new HeaderAssembler();
    const seen: { type: number; length: number; assembled: boolean }[] = [];
    let rem = 0;
    for (const chunk of chunks) {
      let pos = 0;
      while (pos < chunk.length) {
        if (rem > 0) {
          const take = Math.min(rem, chunk.length - pos);
          pos += take;
          rem -= take;
          continue;
        }
        if (header.splitAt(chunk, pos)) {
          const before = pos;
          pos = header.take(chunk, pos);
          expect(pos).toBeGreaterThan(before);
          if (header.partial) {
            expect(pos).toBe(chunk.length);
            break;
          }
          seen.push({ type: header.type, length: header.length, assembled: true });
          rem = header.length - 4;
        } else {
          seen.push({ type: chunk[pos]!, length: chunk.readInt32BE(pos + 1), assembled: false });
          rem = chunk.readInt32BE(pos + 1) - 4;
          pos += 5;
        }
      }
    }
    expect(header.partial).toBe(false);
    return seen;
  }

  test("every way of cutting one header (at each of its byte boundaries, any number of them) reads the same header", () => {
    const one = Buffer.from(message("Q", new TextEncoder().encode("SELECT 1\0")));
    for (let mask = 0; mask < 16; mask++) {
      const cuts = [1, 2, 3, 4].filter((_, i) => mask & (1 << i));
      const edges = [0, ...cuts, one.length];
      const chunks = edges.slice(1).map((end, i) => one.subarray(edges[i], end));
      const seen = walk(chunks);
      expect(seen).toEqual([{ type: 0x51, length: 13, assembled: mask !== 0 }]);
    }
  });

  test("a stream cut at every position, and at every pair of positions, reads every header", () => {
    const plain = expected.map((h) => ({ ...h, assembled: false }));
    expect(walk([stream])).toEqual(plain);
    for (let a = 1; a < stream.length; a++) {
      expect(walk([stream.subarray(0, a), stream.subarray(a)]).map(({ type, length }) => ({ type, length }))).toEqual(expected);
    }
    // Two cuts near each header: inside one header, and between it and the next.
    const starts = [0, 0x0103, 0x0103 + 6];
    for (const start of starts) {
      for (let a = start; a <= start + 5; a++) {
        for (let b = a + 1; b <= start + 6; b++) {
          const chunks = [stream.subarray(0, a), stream.subarray(a, b), stream.subarray(b)].filter((c) => c.length > 0);
          expect(walk(chunks).map(({ type, length }) => ({ type, length }))).toEqual(expected);
        }
      }
    }
  });

  test("byte by byte: each header assembled, the same buffer reused for every one", () => {
    const header = new HeaderAssembler();
    const buffer = header.bytes;
    const chunks = [...stream].map((b) => Buffer.of(b));
    const seen = walk(chunks);
    expect(seen).toEqual(expected.map((h) => ({ ...h, assembled: true })));
    // A header's bytes as they came, in the assembler's one buffer.
    let pos = 0;
    for (let i = 0; i < 5; i++) pos = header.take(Buffer.of(stream[i]!), 0);
    expect(pos).toBe(1);
    expect(header.partial).toBe(false);
    expect(header.bytes).toBe(buffer);
    expect([...header.bytes]).toEqual([...stream.subarray(0, 5)]);
  });
});
