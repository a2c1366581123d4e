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
  MessageReader,
  parameterStatus,
  parseErrorFields,
  parseParse,
  parsePassword,
  parseQuery,
  parseStartupPacket,
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
