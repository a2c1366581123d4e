// HPACK (docs/gateway.md#http2-and-grpc): the decoder against RFC 7541's own examples (Appendix C.3 without
// Huffman, C.4 with), the encoder through the decoder over many blocks (the dynamic table stays in step both
// ways), credentials never indexed, and the limits: a table size update beyond the announced size is an attack
// (calm), a header list past its limit is flagged oversize while the table still stays in step.
import { describe, expect, test } from "bun:test";
import { HpackDecoder, HpackEncoder, HpackError, type HeaderField } from "../../../src/gateway/h2/hpack.ts";

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ""), "hex");
const LIMIT = 65_536;

const C3_1: HeaderField[] = [[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"]];
const C3_2: HeaderField[] = [...C3_1, ["cache-control", "no-cache"]];
const C3_3: HeaderField[] = [[":method", "GET"], [":scheme", "https"], [":path", "/index.html"], [":authority", "www.example.com"], ["custom-key", "custom-value"]];

describe("the decoder, RFC 7541 Appendix C", () => {
  test("C.3: three requests without Huffman coding, the dynamic table carried across them", () => {
    const d = new HpackDecoder();
    expect(d.decode(hex("828684410f7777772e6578616d706c652e636f6d"), LIMIT).headers).toEqual(C3_1);
    expect(d.decode(hex("828684be58086e6f2d6361636865"), LIMIT).headers).toEqual(C3_2);
    expect(d.decode(hex("828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565"), LIMIT).headers).toEqual(C3_3);
  });

  test("C.4: the same requests with Huffman coding", () => {
    const d = new HpackDecoder();
    expect(d.decode(hex("828684418cf1e3c2e5f23a6ba0ab90f4ff"), LIMIT).headers).toEqual(C3_1);
    expect(d.decode(hex("828684be5886a8eb10649cbf"), LIMIT).headers).toEqual(C3_2);
    expect(d.decode(hex("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf"), LIMIT).headers).toEqual(C3_3);
  });

  test("an index beyond the table, a truncated string, bad Huffman padding: errors, not guesses", () => {
    expect(() => new HpackDecoder().decode(hex("be"), LIMIT)).toThrow(HpackError);
    expect(() => new HpackDecoder().decode(hex("400a6375"), LIMIT)).toThrow(HpackError);
    expect(() => new HpackDecoder().decode(hex("0081 00 0100"), LIMIT)).toThrow(HpackError);
  });
});

describe("the limits", () => {
  test("a table size update beyond the announced 4096 is an attack (calm); within it, accepted", () => {
    try {
      new HpackDecoder().decode(hex("3fe1ff03"), LIMIT);
      throw new Error("accepted");
    } catch (err) {
      expect(err).toBeInstanceOf(HpackError);
      expect((err as HpackError).calm).toBe(true);
    }
    expect(new HpackDecoder().decode(hex("3fe11f 82"), LIMIT).headers).toEqual([[":method", "GET"]]);
  });

  test("an entry referenced past the list limit (an HPACK bomb) is flagged oversize; the table stays in step", () => {
    const d = new HpackDecoder();
    const entry = Buffer.concat([Buffer.from([0x40, 0x01, 0x78, 0x7f, 0x81, 0x1e]), Buffer.alloc(127 + 1 + 0x1e * 128, 0x61)]);
    const value = entry.subarray(6).toString("latin1");
    const bomb = Buffer.concat([entry, Buffer.alloc(100, 0xbe)]);
    const out = d.decode(bomb, 8192);
    expect(out.oversize).toBe(true);
    expect(out.headers).toEqual([]);
    // The entry was inserted all the same: the next block may use it.
    expect(d.decode(hex("be"), 8192).headers).toEqual([["x", value]]);
  });
});

describe("the encoder", () => {
  test("round trip over many blocks: repeated fields indexed, indexes stay in step with the decoder", () => {
    const e = new HpackEncoder();
    const d = new HpackDecoder();
    const blocks: HeaderField[][] = [];
    for (let i = 0; i < 300; i++) {
      blocks.push([
        [":status", i % 7 === 0 ? "404" : "200"],
        ["content-type", "application/grpc"],
        ["x-request-id", crypto.randomUUID()],
        [`x-n-${i % 40}`, `value-${i % 13}`],
        ["grpc-status", String(i % 3)],
      ]);
    }
    let bytes = 0;
    for (const fields of blocks) {
      const block = e.encode(fields);
      bytes += block.length;
      expect(d.decode(block, LIMIT).headers).toEqual(fields);
    }
    // Indexing pays: later blocks are far smaller than literals would be.
    expect(bytes).toBeLessThan(blocks.length * 120);
  });

  test("credentials are never indexed: each block carries them as never-indexed literals", () => {
    const e = new HpackEncoder();
    const fields: HeaderField[] = [["authorization", "Bearer secret-value"], ["cookie", "a=b"]];
    const first = e.encode(fields);
    const second = e.encode(fields);
    expect(second.length).toBe(first.length);
    expect(first[0]! & 0xf0).toBe(0x10);
    expect(new HpackDecoder().decode(second, LIMIT).headers).toEqual(fields);
  });

  test("the peer's smaller table size: announced by an update at the start of the next block", () => {
    const e = new HpackEncoder();
    const d = new HpackDecoder();
    expect(d.decode(e.encode([["x-a", "1"]]), LIMIT).headers).toEqual([["x-a", "1"]]);
    e.setMaxSize(0);
    const block = e.encode([["x-a", "1"]]);
    expect(block[0]).toBe(0x20);
    expect(d.decode(block, LIMIT).headers).toEqual([["x-a", "1"]]);
  });
});
