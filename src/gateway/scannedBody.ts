// A request body read through a NeedleStream while it streams (docs/injection.md#placeholders,
// docs/guards.md#credential-leak-guard): each chunk goes on as the scan leaves it, only a possible needle's
// start is held back, and a scan that throws (a credential leaving for the wrong host) errors the stream
// before that chunk is handed on, so the forward stage aborts the upstream connection without writing it.
import type { NeedleStream } from "../core/needleStream.ts";

/** `atEnd`, when given, runs once the whole body has been read (the leak guard's look at h2 trailers); it may throw. */
export function scannedBody(source: ReadableStream<Uint8Array>, scan: NeedleStream, atEnd: (() => void) | null = null): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          for (;;) {
            const r = await reader.read();
            if (r.done) {
              const rest = scan.end();
              atEnd?.();
              if (rest.byteLength > 0) controller.enqueue(rest);
              controller.close();
              return;
            }
            const out = scan.push(r.value);
            if (out.byteLength > 0) return controller.enqueue(out);
          }
        } catch (err) {
          reader.cancel(err).catch(() => {});
          throw err;
        }
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** The whole body (at most what its Content-Length said), read through the scan: the one bounded buffer. */
export async function scannedWhole(source: ReadableStream<Uint8Array>, scan: NeedleStream): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  const reader = source.getReader();
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      const out = scan.push(r.value);
      if (out.byteLength > 0) parts.push(out);
    }
  } catch (err) {
    reader.cancel(err).catch(() => {});
    throw err;
  }
  parts.push(scan.end());
  return Buffer.concat(parts);
}
