// A request body the leak guard reads decoded while it goes upstream as the agent encoded it
// (docs/guards.md#credential-leak-guard): each chunk the agent sent is read as it is (what reaches the wire is what
// a receiver sees, whatever it decodes) and fed to zlib's streaming decoder for its coding (gzip, deflate, br,
// zstd), whose output is read as it comes, piece by piece; only then is the chunk itself handed on — so the chunk
// whose decoding completes a value is never written. The decoder holds its own window (32 KiB for deflate, a few
// MiB at most for zstd), never the body, and a small chunk that inflates to gigabytes is read 16 KiB at a time. A
// body that does not decode as its Content-Encoding says cannot be read: the stream errors with UndecodableBody.
import * as zlib from "node:zlib";
import type { NeedleStream } from "../core/needleStream.ts";

/** A body that is not what its Content-Encoding says. */
export class UndecodableBody extends Error {}

type Decoder = zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | zlib.ZstdDecompress;

const DECODERS: Record<string, () => Decoder> = {
  gzip: () => zlib.createGunzip(),
  "x-gzip": () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
  zstd: () => zlib.createZstdDecompress(),
};

/** What a Content-Encoding asks of the leak guard. */
export type BodyCoding =
  /** Nothing to undo (none, `identity`, `aws-chunked`): read as sent. */
  | { kind: "plain" }
  /** One coding to undo: gzip, deflate, br or zstd. */
  | { kind: "decode"; coding: string }
  /** A coding credgate cannot read (named as the agent wrote the header): another, or several stacked. */
  | { kind: "unreadable"; coding: string };

export function bodyCoding(contentEncoding: string | null): BodyCoding {
  if (contentEncoding === null) return { kind: "plain" };
  const codings = contentEncoding
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity");
  if (codings.every((c) => c === "aws-chunked")) return { kind: "plain" };
  if (codings.length === 1 && DECODERS[codings[0]!] !== undefined) return { kind: "decode", coding: codings[0]! };
  return { kind: "unreadable", coding: contentEncoding.trim() };
}

/** Runs `act` and waits for it to call back — or for the decoder to fail or be destroyed (it then never will). */
function settled(decoder: Decoder, act: (done: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      decoder.off("close", done);
      decoder.off("error", done);
      resolve();
    };
    decoder.once("close", done);
    decoder.once("error", done);
    act(done);
  });
}

/**
 * The body as the agent sent it, each chunk handed on once `raw` has read it and `decoded` has read what it
 * decodes to (both throw at a misplaced value); `atEnd` runs once the whole body has been read, before its end is
 * passed on.
 */
export function decodedScan(
  source: ReadableStream<Uint8Array>,
  coding: string,
  raw: NeedleStream,
  decoded: NeedleStream,
  atEnd: (() => void) | null,
  /** Told when the body turns out not to be `coding` (before the stream errors). */
  undecodable: () => void,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  const decoder = DECODERS[coding]!();
  let failure: unknown = null;
  decoder.on("data", (piece: Buffer) => {
    if (failure !== null) return;
    try {
      decoded.push(piece);
    } catch (err) {
      failure = err;
      decoder.destroy();
    }
  });
  decoder.on("error", (err: Error) => {
    if (failure !== null) return;
    failure = new UndecodableBody(`not ${coding}: ${err.message}`);
    undecodable();
  });
  const check = () => {
    if (failure !== null) throw failure;
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          for (;;) {
            const r = await reader.read();
            if (r.done) {
              raw.end();
              await settled(decoder, (done) => {
                decoder.once("end", done);
                decoder.end();
              });
              check();
              decoded.end();
              atEnd?.();
              controller.close();
              return;
            }
            raw.push(r.value);
            await settled(decoder, (done) => decoder.write(r.value, done));
            check();
            if (r.value.byteLength > 0) return controller.enqueue(r.value);
          }
        } catch (err) {
          decoder.destroy();
          reader.cancel(err).catch(() => {});
          throw err;
        }
      },
      cancel(reason) {
        decoder.destroy();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
