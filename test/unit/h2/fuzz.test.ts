// Fuzzing the HTTP/2 frame layer (docs/gateway.md#http2-and-grpc), as the HTTP/1.1 head parser is fuzzed:
// fast-check generates frame sequences — every frame type (and unknown ones), random flags, stream ids,
// payloads, valid and broken header blocks, mixed with well-formed requests — and byte splits of them, fed to a
// server session that answers every stream it opens. Whatever comes: nothing throws, at most 100 streams are
// ever open, a connection error always leaves a GOAWAY as the last frame before the transport ends, and a
// conversation cut into arbitrary pieces reads exactly as it does whole. The seed is fixed;
// CREDGATE_FUZZ_RUNS and CREDGATE_FUZZ_SEED make a larger or another run.
import { expect, test } from "bun:test";
import fc from "fast-check";
import * as f from "../../../src/gateway/h2/frames.ts";
import { HpackEncoder, type HeaderField } from "../../../src/gateway/h2/hpack.ts";
import { H2Session, type H2Stream, type H2Transport } from "../../../src/gateway/h2/session.ts";

const RUNS = Number(process.env.CREDGATE_FUZZ_RUNS ?? 300);
const SEED = Number(process.env.CREDGATE_FUZZ_SEED ?? 20261126);

class Sink implements H2Transport {
  readonly written: Buffer[] = [];
  ended = false;
  readonly needsDrain = false;
  write(data: Uint8Array): void {
    if (this.ended) throw new Error("written after end");
    this.written.push(Buffer.from(data));
  }
  end(): void {
    this.ended = true;
  }
  destroy(): void {
    this.ended = true;
  }
  /** The frame types written, in order. */
  types(): number[] {
    let buf = Buffer.concat(this.written);
    const out: number[] = [];
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      out.push(buf[3]!);
      buf = buf.subarray(9 + len);
    }
    return out;
  }
}

/** A server session that answers each stream with a small body, and records what it saw. */
function server() {
  const sink = new Sink();
  let maxOpen = 0;
  const seen: string[] = [];
  const session: H2Session = new H2Session("server", sink, {
    stream(stream: H2Stream, fields: HeaderField[]) {
      maxOpen = Math.max(maxOpen, session.activeStreams);
      seen.push(`${stream.id} ${fields.map(([n, v]) => `${n}=${v}`).join(",")}`);
      stream.handler = { onHeaders() {}, onData: (s, c) => s.consumed(c.length), onReset() {}, onWritable() {} };
      stream.sendHeaders([[":status", "200"]], false);
      stream.sendData(Buffer.from("ok"), false);
    },
    tooLarge(stream) {
      seen.push(`${stream.id} too large`);
      stream.reset(f.REFUSED_STREAM);
    },
  });
  return { session, sink, seen, maxOpen: () => maxOpen };
}

// A fresh encoder per block: a generated block must not refer to table entries of another run.
const request = (id: number, path: string, end: boolean) =>
  f.headerFrames(
    id,
    new HpackEncoder().encode([
      [":method", "GET"],
      [":scheme", "https"],
      [":authority", "a.test"],
      [":path", path],
    ]),
    end,
    16_384,
  );

const arbFrame: fc.Arbitrary<Buffer> = fc.oneof(
  // Any frame: type 0–12, any flags, a small stream id, a random payload.
  fc.record({ type: fc.integer({ min: 0, max: 12 }), flags: fc.integer({ min: 0, max: 255 }), stream: fc.integer({ min: 0, max: 12 }), payload: fc.uint8Array({ maxLength: 64 }) }).map((x) => f.frame(x.type, x.flags, x.stream, Buffer.from(x.payload))),
  // A well-formed request on an odd stream, with or without its end.
  fc.record({ stream: fc.integer({ min: 0, max: 60 }), path: fc.string({ maxLength: 20 }), end: fc.boolean() }).map((x) => request(x.stream * 2 + 1, `/${x.path}`, x.end)),
  // DATA, RST_STREAM and WINDOW_UPDATE with well-formed payloads.
  fc.record({ stream: fc.integer({ min: 1, max: 12 }), len: fc.integer({ min: 0, max: 40_000 }), end: fc.boolean() }).map((x) => f.frame(f.DATA, x.end ? f.END_STREAM : 0, x.stream, Buffer.alloc(Math.min(x.len, 16_384)))),
  fc.record({ stream: fc.integer({ min: 1, max: 12 }), code: fc.integer({ min: 0, max: 14 }) }).map((x) => f.rstStream(x.stream, x.code)),
  fc.record({ stream: fc.integer({ min: 0, max: 12 }), inc: fc.integer({ min: 0, max: 0x7fffffff }) }).map((x) => f.windowUpdate(x.stream, x.inc)),
  // SETTINGS with random pairs.
  fc.array(fc.tuple(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 0xffffffff })), { maxLength: 4 }).map((pairs) => f.settingsFrame(pairs)),
  // A header block of random bytes (HEADERS or CONTINUATION).
  fc.record({ cont: fc.boolean(), stream: fc.integer({ min: 1, max: 12 }), end: fc.boolean(), bytes: fc.uint8Array({ maxLength: 80 }) }).map((x) => f.frame(x.cont ? f.CONTINUATION : f.HEADERS, x.end ? f.END_HEADERS : 0, x.stream, Buffer.from(x.bytes))),
);

const conversation = fc.array(arbFrame, { maxLength: 40 }).map((frames) => Buffer.concat([f.PREFACE, f.settingsFrame([]), ...frames]));

test("any frame sequence: nothing throws, ≤ 100 streams open, a connection error ends with GOAWAY", () => {
  let served = 0;
  fc.assert(
    fc.property(conversation, (bytes) => {
      const s = server();
      s.session.receive(bytes);
      if (s.seen.length > 0) served++;
      expect(s.maxOpen()).toBeLessThanOrEqual(100);
      expect(s.session.activeStreams).toBeGreaterThanOrEqual(0);
      if (s.session.failure) {
        expect(s.sink.ended).toBe(true);
        expect(s.sink.types().at(-1)).toBe(f.GOAWAY);
      }
    }),
    { numRuns: RUNS, seed: SEED },
  );
  // The generator reaches the streams' handling, not only the connection errors.
  expect(served).toBeGreaterThan(RUNS / 10);
});

test("a conversation cut into arbitrary pieces reads as it does whole", () => {
  fc.assert(
    fc.property(conversation, fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 30 }), (bytes, cuts) => {
      const whole = server();
      whole.session.receive(bytes);
      const pieces = server();
      let at = 0;
      for (let i = 0; at < bytes.length; i++) {
        const n = cuts[i % cuts.length]!;
        pieces.session.receive(bytes.subarray(at, at + n));
        at += n;
      }
      expect(pieces.seen).toEqual(whole.seen);
      expect(pieces.session.failure?.code ?? null).toBe(whole.session.failure?.code ?? null);
    }),
    { numRuns: RUNS, seed: SEED },
  );
});

test("random bytes in place of a preface are refused with GOAWAY PROTOCOL_ERROR", () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 200 }), (bytes) => {
      fc.pre(!Buffer.from(bytes).subarray(0, f.PREFACE.length).equals(f.PREFACE.subarray(0, Math.min(bytes.length, f.PREFACE.length))));
      const s = server();
      s.session.receive(Buffer.from(bytes));
      expect(s.session.failure?.code).toBe(f.PROTOCOL_ERROR);
      expect(s.sink.types().at(-1)).toBe(f.GOAWAY);
    }),
    { numRuns: RUNS, seed: SEED },
  );
});
