// A response body encoded although the request asked for identity (docs/guards.md#echo-guard): the echo guard
// can only read it decoded, so it is decoded (gzip, deflate, br, zstd) and forwarded decoded, without
// Content-Encoding and Content-Length. An encoding not listed passes as it is.
import { StreamBody, type Reply } from "./reply.ts";

/** DecompressionStream's names (Bun's adds brotli and zstd to the standard ones). */
type Format = ConstructorParameters<typeof DecompressionStream>[0];
const FORMATS: Record<string, Format> = { gzip: "gzip", "x-gzip": "gzip", deflate: "deflate", br: "brotli" as Format, zstd: "zstd" as Format };

function formatOf(contentEncoding: string | null): Format | null {
  if (contentEncoding === null) return null;
  return FORMATS[contentEncoding.trim().toLowerCase()] ?? null;
}

/** One encoding credgate can undo (several stacked ones are left as they are). */
export function isDecodable(contentEncoding: string | null): boolean {
  return formatOf(contentEncoding) !== null;
}

export function decodedBody(reply: Reply): void {
  const format = formatOf(reply.header("content-encoding"))!;
  const encoded = reply.toResponse().body!;
  reply.body = new StreamBody(encoded.pipeThrough(new DecompressionStream(format)), null);
  reply.headers.delete("content-encoding");
  reply.headers.delete("content-length");
}
