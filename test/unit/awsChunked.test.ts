// The aws-chunked re-signer (docs/injection.md#aws-signature-v4): the new chain is the one AWS computes (checked
// against HMACs written here from the published algorithm), the body keeps its length, data and trailers pass
// unchanged, and a body that does not decode errors the stream.
import { describe, expect, test } from "bun:test";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { AwsChunkedError, looksChunkSigned, resignChunks } from "../../src/gateway/signing/awsChunked.ts";

const KEY = Buffer.from("0123456789abcdef0123456789abcdef");
const EMPTY = createHash("sha256").update("").digest("hex");
const sign = async (s: string) => createHmac("sha256", KEY).update(s).digest("hex");
const chain = (trailer: boolean) => ({ longDate: "20250301T120000Z", scope: "20250301/us-east-1/s3/aws4_request", seed: "f".repeat(64), trailer, sign });

function body(data: Buffer, chunk: number, trailer: string | null): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < data.length; i += chunk) {
    const c = data.subarray(i, i + chunk);
    parts.push(Buffer.from(`${c.length.toString(16)};chunk-signature=${"1".repeat(64)}\r\n`), c, Buffer.from("\r\n"));
  }
  parts.push(Buffer.from(`0;chunk-signature=${"2".repeat(64)}\r\n`));
  parts.push(Buffer.from(trailer === null ? "\r\n" : `${trailer}\r\nx-amz-trailer-signature:${"3".repeat(64)}\r\n\r\n`));
  return Buffer.concat(parts);
}

/** Feeds `bytes` in pieces of `piece` bytes (chunk boundaries fall anywhere). */
function stream(bytes: Buffer, piece: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(new Uint8Array(bytes.subarray(at, (at += piece))));
    },
  });
}

async function collect(s: ReadableStream<Uint8Array>): Promise<Buffer> {
  return Buffer.from(await new Response(s).arrayBuffer());
}

function expectedSignatures(data: Buffer, chunk: number, trailer: string | null): string[] {
  let previous = "f".repeat(64);
  const out: string[] = [];
  const sizes: Buffer[] = [];
  for (let i = 0; i < data.length; i += chunk) sizes.push(data.subarray(i, i + chunk));
  sizes.push(Buffer.alloc(0));
  for (const c of sizes) {
    const s = `AWS4-HMAC-SHA256-PAYLOAD\n20250301T120000Z\n20250301/us-east-1/s3/aws4_request\n${previous}\n${EMPTY}\n${createHash("sha256").update(c).digest("hex")}`;
    previous = createHmac("sha256", KEY).update(s).digest("hex");
    out.push(previous);
  }
  if (trailer !== null) {
    const hash = createHash("sha256").update(`${trailer}\n`).digest("hex");
    out.push(createHmac("sha256", KEY).update(`AWS4-HMAC-SHA256-TRAILER\n20250301T120000Z\n20250301/us-east-1/s3/aws4_request\n${previous}\n${hash}`).digest("hex"));
  }
  return out;
}

describe("resignChunks", () => {
  for (const [trailer, piece] of [[null, 7], [null, 100_000], ["x-amz-checksum-crc32:AAAAAA==", 13], ["x-amz-checksum-crc32:AAAAAA==", 1 << 20]] as const) {
    test(`re-signs every chunk${trailer ? " and the trailer" : ""}, read ${piece} bytes at a time`, async () => {
      const data = randomBytes(200_000);
      const input = body(data, 65536, trailer);
      const out = await collect(resignChunks(stream(input, piece), chain(trailer !== null)));
      expect(out.length).toBe(input.length);
      const expected = expectedSignatures(data, 65536, trailer);
      expect([...out.toString("latin1").matchAll(/(?:chunk-signature=|x-amz-trailer-signature:)([0-9a-f]{64})/g)].map((m) => m[1])).toEqual(expected);
      // Everything but the signatures is the agent's, byte for byte.
      const blank = (b: Buffer) => b.toString("latin1").replace(/(chunk-signature=|x-amz-trailer-signature:)[0-9a-f]{64}/g, "$1");
      expect(blank(out)).toBe(blank(input));
    });
  }

  test("a body that does not decode, or ends early, errors the stream", async () => {
    await expect(collect(resignChunks(stream(Buffer.from("hello world\r\n"), 5), chain(false)))).rejects.toBeInstanceOf(AwsChunkedError);
    const cut = body(randomBytes(1000), 512, null).subarray(0, 700);
    await expect(collect(resignChunks(stream(cut, 64), chain(false)))).rejects.toBeInstanceOf(AwsChunkedError);
  });

  test("looksChunkSigned reads the first chunk line", () => {
    expect(looksChunkSigned(body(Buffer.from("x"), 1, null))).toBe(true);
    expect(looksChunkSigned(Buffer.from("plain body"))).toBe(false);
  });
});
