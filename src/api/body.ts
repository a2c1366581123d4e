// Reads a request body as JSON whatever its Content-Type (docs/api.md#bodies-and-formats), capped at 1 MiB (413 beyond).
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
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw ApiError.flat(400, "Request body must be valid JSON");
  }
  const nul = nulPath(value);
  if (nul !== null) throw ApiError.flat(400, `${nul || "Request body"} must not contain NUL characters`);
  return value;
}

/**
 * The path of the first string value holding U+0000 (or of the object with such a key), or null. No field of
 * ours can hold one, and PostgreSQL cannot store one in text, so it is refused up front, the same on both
 * engines. Walked with an explicit stack: a hostile body may nest far deeper than the call stack allows.
 */
function nulPath(root: unknown): string | null {
  const stack: [unknown, string][] = [[root, ""]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === "string") {
      if (value.includes("\u0000")) return path;
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}[${i}]`]);
    } else if (typeof value === "object" && value !== null) {
      const entries = Object.entries(value);
      // A key with a NUL is reported as its object (the key itself is not worth echoing).
      if (entries.some(([key]) => key.includes("\u0000"))) return path;
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, v] = entries[i]!;
        stack.push([v, path ? `${path}.${key}` : key]);
      }
    }
  }
  return null;
}
