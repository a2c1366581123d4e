// A tool call's arguments as grants and approvals see them (docs/gateway.md#mcp-servers): their canonical JSON,
// the SHA-256 an approval binds to, and the argument globs of a custom grant, each at a JSON pointer. Pure.
import { createHash } from "node:crypto";
import { canonicalJson } from "./canonicalJson.ts";
import { isJsonObject, type JsonObject, type JsonValue } from "./jsonRpc.ts";

/** The one text of the arguments: keys sorted, no whitespace (core/canonicalJson.ts). */
export function canonicalArguments(args: JsonObject): string {
  return canonicalJson(args);
}

/** SHA-256 (hex) of the canonical arguments: what an approval of an `ask` tool is bound to. */
export function argumentsHash(args: JsonObject): string {
  return createHash("sha256").update(canonicalArguments(args), "utf8").digest("hex");
}

/** The arguments' JSON for a reviewer, at most `maxBytes` (UTF-8) with a marker saying how much was cut. */
export function argumentsPreview(args: JsonObject, maxBytes = 4096): string {
  const text = JSON.stringify(args, null, 2);
  const bytes = Buffer.from(text, "utf8");
  if (bytes.byteLength <= maxBytes) return text;
  const marker = `… (${bytes.byteLength} bytes, cut)`;
  // Cut at a character boundary: the decoder drops a partial character at the end.
  const cut = new TextDecoder().decode(bytes.subarray(0, maxBytes - Buffer.byteLength(marker))).replace(/\uFFFD$/, "");
  return cut + marker;
}

/**
 * The value at an RFC 6901 JSON pointer ("" is the whole value; `~1` is `/`, `~0` is `~`), or undefined when
 * nothing is there. Array indexes are decimal without leading zeros.
 */
export function valueAtPointer(root: JsonValue, pointer: string): JsonValue | undefined {
  if (pointer === "") return root;
  if (!pointer.startsWith("/")) return undefined;
  let at: JsonValue | undefined = root;
  for (const raw of pointer.slice(1).split("/")) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(at)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      at = at[Number(token)];
    } else if (isJsonObject(at)) {
      at = Object.prototype.hasOwnProperty.call(at, token) ? at[token] : undefined;
    } else return undefined;
    if (at === undefined) return undefined;
  }
  return at;
}

/** A glob over a whole value: `*` is any run of characters (`/` included), everything else is itself. */
export function globMatches(glob: string, text: string): boolean {
  const parts = glob.split("*");
  if (parts.length === 1) return glob === text;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  let at = first.length;
  const end = text.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = text.indexOf(parts[i]!, at);
    if (found < 0 || found + parts[i]!.length > end) return false;
    at = found + parts[i]!.length;
  }
  return true;
}

/**
 * The first pointer (in the grant's order) whose argument breaks its glob, or null when all hold. A glob judges a
 * string, a number or a boolean by its JSON text (`42`, `true`); a pointer that names nothing, null, an object or
 * an array breaks it: fail closed, since the server's default for a missing argument is not ours to know.
 */
export function argumentViolation(args: JsonObject, globs: Readonly<Record<string, string>>): string | null {
  for (const pointer of Object.keys(globs)) {
    const v = valueAtPointer(args, pointer);
    const text = typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? JSON.stringify(v) : null;
    if (text === null || !globMatches(globs[pointer]!, text)) return pointer;
  }
  return null;
}
