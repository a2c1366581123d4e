// Encoded request bodies read by the leak guard (docs/guards.md#credential-leak-guard): which codings are decoded,
// read as sent or refused; a body handed on chunk by chunk as the agent encoded it, each chunk only once what it
// decodes to has been read, so the chunk that completes a value is never handed on; a body that is not what its
// coding says errors; a small body that inflates to 64 MiB is read through without being held.
import { describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { NeedleSet } from "../../src/core/needles.ts";
import { NeedleStream } from "../../src/core/needleStream.ts";
import { bodyCoding, decodedScan, UndecodableBody } from "../../src/gateway/decodedScan.ts";

const VALUE = "sk-live-0123456789-abcdef";
const watcher = () =>
  new NeedleStream(new NeedleSet([VALUE]), {
    replacement: () => {
      throw new Error("leak");
    },
  });
/** A scan that finds nothing to object to. */
const inert = () => new NeedleStream(new NeedleSet(["never-there-xyz"]), { replacement: () => null });

function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.subarray(at, at + size));
      at += size;
    },
  });
}

async function drain(s: ReadableStream<Uint8Array>): Promise<{ bytes: number; error: unknown }> {
  let bytes = 0;
  try {
    for await (const c of s) bytes += c.byteLength;
    return { bytes, error: null };
  } catch (error) {
    return { bytes, error };
  }
}

describe("bodyCoding", () => {
  test("one known compression is decoded; identity and aws-chunked are read as sent; anything else is unreadable", () => {
    expect(bodyCoding(null)).toEqual({ kind: "plain" });
    expect(bodyCoding("identity")).toEqual({ kind: "plain" });
    expect(bodyCoding(" aws-chunked ")).toEqual({ kind: "plain" });
    for (const c of ["gzip", "x-gzip", "deflate", "br", "zstd"]) expect(bodyCoding(c.toUpperCase())).toEqual({ kind: "decode", coding: c });
    expect(bodyCoding("identity, gzip")).toEqual({ kind: "decode", coding: "gzip" });
    for (const c of ["compress", "gzip, br", "aws-chunked, gzip", "exi"]) expect(bodyCoding(c)).toEqual({ kind: "unreadable", coding: c });
  });
});

describe("decodedScan", () => {
  test("the chunk whose decoding completes the value is not handed on; the ones before are, as sent", async () => {
    const plain = Buffer.concat([Buffer.alloc(300_000, "a"), Buffer.from(VALUE), Buffer.alloc(10, "b")]);
    const gz = gzipSync(plain, { level: 0 });
    const out: Buffer[] = [];
    let error: unknown = null;
    try {
      for await (const c of decodedScan(chunked(gz, 4096), "gzip", inert(), watcher(), null, () => {})) out.push(Buffer.from(c));
    } catch (e) {
      error = e;
    }
    expect((error as Error).message).toBe("leak");
    const sent = Buffer.concat(out);
    expect(sent.equals(gz.subarray(0, sent.length))).toBe(true);
    // The value sits at byte 300 000 of the decoded body: (stored blocks) about as far into the encoded one.
    expect(sent.length).toBeLessThan(300_000 + VALUE.length);
    expect(sent.length).toBeGreaterThan(300_000 - 8192);
  });

  test("a body that is not gzip errors, and the caller hears it first", async () => {
    let told = false;
    const r = await drain(decodedScan(chunked(Buffer.from("plain text, not gzip"), 8), "gzip", inert(), inert(), null, () => (told = true)));
    expect(r.error).toBeInstanceOf(UndecodableBody);
    expect(told).toBe(true);
  });

  test("a clean body goes on whole and unchanged; atEnd runs once it has been read", async () => {
    const gz = gzipSync(Buffer.alloc(100_000, "z"));
    let ended = false;
    const r = await drain(decodedScan(chunked(gz, 1000), "gzip", inert(), watcher(), () => (ended = true), () => {}));
    expect(r).toEqual({ bytes: gz.length, error: null });
    expect(ended).toBe(true);
  });

  test("a few KiB that inflate to 64 MiB are read through, 16 KiB at a time, with the value at the end found", async () => {
    const bomb = gzipSync(Buffer.concat([Buffer.alloc(64 * 1024 * 1024), Buffer.from(VALUE)]));
    expect(bomb.length).toBeLessThan(100_000);
    const r = await drain(decodedScan(chunked(bomb, 65536), "gzip", inert(), watcher(), null, () => {}));
    expect((r.error as Error).message).toBe("leak");
  });
});
