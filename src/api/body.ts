// Reads a request body as JSON whatever its Content-Type (CONTRACT §0.2), capped at 1 MiB (413 beyond).
import { ApiError } from "../core/errors.ts";

export const MAX_BODY_BYTES = 1024 * 1024;
const TOO_LARGE = (): ApiError => ApiError.envelope(413, "Request body too large");

/** Raw body bytes, or null when the request has no body. */
async function readCapped(request: Request): Promise<Uint8Array | null> {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > MAX_BODY_BYTES) throw TOO_LARGE();
  if (!request.body) return null;
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      throw TOO_LARGE();
    }
    chunks.push(value);
  }
  if (size === 0) return null;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

/** The parsed JSON body, or `undefined` when there is none (empty or whitespace only). */
export async function readJsonBody(request: Request): Promise<unknown> {
  const bytes = await readCapped(request);
  if (bytes === null) return undefined;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw ApiError.flat(400, "Request body must be valid JSON");
  }
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw ApiError.flat(400, "Request body must be valid JSON");
  }
}
