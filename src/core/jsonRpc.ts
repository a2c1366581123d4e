// JSON-RPC messages as an MCP client posts them (docs/gateway.md#mcp-servers): one message or a batch, read from a
// whole body, strictly, so that what credgate judges is what any server reads. Pure.
//
// Strict on purpose: a server's parser and ours must not disagree about which tool is called. So a body is
// refused (never forwarded) when it is not UTF-8, not one JSON text, nests deeper than MAX_JSON_DEPTH, or has an
// object with the same key twice (`{"name":"read","name":"delete"}` is `read` to some parsers, `delete` to
// others) — the same ignoring case, too: Go's encoding/json matches keys to fields without regard to case (and
// with Unicode folding: `ſ` is `s`), so `{"name":"read","NAME":"delete"}` calls `delete` on a Go server. For the
// same reason the message's own fields (`method`, `params`, `name`, `arguments`, `id`) are found whatever their
// case: `{"METHOD":"tools/call"}` is a call to a Go server.

/** A JSON value as parsed here: objects have no prototype, so `__proto__` is an ordinary key. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

/** The largest MCP request body credgate reads to judge (4 MiB); a larger one is refused, not forwarded unread. */
export const MCP_BODY_LIMIT = 4 * 1024 * 1024;
/** Arrays and objects nested deeper than this are refused (a parser's stack is not an attacker's to spend). */
export const MAX_JSON_DEPTH = 128;

/** JSON-RPC error codes the gateway writes (docs/gateway.md#mcp-servers). */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;
export const TOOL_REFUSED = -32010;
export const CALL_NOT_APPROVED = -32011;

export type JsonParse = { ok: true; value: JsonValue } | { ok: false; reason: string };

class JsonSyntaxError extends Error {}

/** Parses one JSON text (RFC 8259) strictly: duplicate keys and nesting beyond MAX_JSON_DEPTH are errors. */
export function parseStrictJson(text: string): JsonParse {
  const p = new StrictParser(text);
  try {
    p.ws();
    const value = p.value(0);
    p.ws();
    if (p.i !== text.length) p.fail("unexpected text after the JSON value");
    return { ok: true, value };
  } catch (err) {
    if (err instanceof JsonSyntaxError) return { ok: false, reason: err.message };
    throw err;
  }
}

class StrictParser {
  i = 0;
  constructor(private readonly s: string) {}

  fail(what: string): never {
    throw new JsonSyntaxError(`${what} at offset ${this.i}`);
  }

  ws(): void {
    const s = this.s;
    for (;;) {
      const c = s.charCodeAt(this.i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) this.i++;
      else return;
    }
  }

  value(depth: number): JsonValue {
    const c = this.s[this.i];
    if (c === "{") return this.object(depth + 1);
    if (c === "[") return this.array(depth + 1);
    if (c === '"') return this.string();
    if (c === "t") return this.literal("true", true);
    if (c === "f") return this.literal("false", false);
    if (c === "n") return this.literal("null", null);
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return this.number();
    return this.fail(c === undefined ? "unexpected end of JSON" : "unexpected character");
  }

  literal<T>(word: string, v: T): T {
    if (!this.s.startsWith(word, this.i)) this.fail("unexpected character");
    this.i += word.length;
    return v;
  }

  number(): number {
    const m = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    m.lastIndex = this.i;
    const r = m.exec(this.s);
    if (!r || r[0] === "-") this.fail("invalid number");
    this.i += r[0].length;
    return Number(r[0]);
  }

  string(): string {
    const s = this.s;
    let i = this.i + 1;
    let out = "";
    let from = i;
    for (;;) {
      const c = s.charCodeAt(i);
      if (Number.isNaN(c)) {
        this.i = i;
        this.fail("unterminated string");
      }
      if (c === 0x22) break;
      if (c < 0x20) {
        this.i = i;
        this.fail("control character in a string");
      }
      if (c === 0x5c) {
        out += s.slice(from, i);
        const e = s[i + 1];
        const simple = e === undefined ? undefined : ESCAPES[e];
        if (simple !== undefined) {
          out += simple;
          i += 2;
        } else if (e === "u" && /^[0-9a-fA-F]{4}$/.test(s.slice(i + 2, i + 6))) {
          out += String.fromCharCode(parseInt(s.slice(i + 2, i + 6), 16));
          i += 6;
        } else {
          this.i = i;
          this.fail("invalid escape in a string");
        }
        from = i;
        continue;
      }
      i++;
    }
    out += s.slice(from, i);
    this.i = i + 1;
    return out;
  }

  array(depth: number): JsonValue[] {
    if (depth > MAX_JSON_DEPTH) this.fail(`JSON nested deeper than ${MAX_JSON_DEPTH}`);
    this.i++;
    const out: JsonValue[] = [];
    this.ws();
    if (this.s[this.i] === "]") {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      out.push(this.value(depth));
      this.ws();
      const c = this.s[this.i++];
      if (c === "]") return out;
      if (c !== ",") {
        this.i--;
        this.fail("expected , or ] in an array");
      }
    }
  }

  object(depth: number): JsonObject {
    if (depth > MAX_JSON_DEPTH) this.fail(`JSON nested deeper than ${MAX_JSON_DEPTH}`);
    this.i++;
    const out = Object.create(null) as JsonObject;
    let folded: Set<string> | null = null;
    this.ws();
    if (this.s[this.i] === "}") {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') this.fail("expected a string key");
      const at = this.i;
      const key = this.string();
      const f = foldKey(key);
      if ((folded ??= new Set()).has(f)) {
        this.i = at;
        this.fail(`duplicate key ${JSON.stringify(key)} (keys are compared ignoring case)`);
      }
      folded.add(f);
      this.ws();
      if (this.s[this.i++] !== ":") {
        this.i--;
        this.fail("expected : after a key");
      }
      this.ws();
      out[key] = this.value(depth);
      this.ws();
      const c = this.s[this.i++];
      if (c === "}") return out;
      if (c !== ",") {
        this.i--;
        this.fail("expected , or } in an object");
      }
    }
  }
}

/** A key as a case-insensitive parser matches it (Unicode simple folding, as Go's: `ſ` → `s`, `K` (Kelvin) → `k`). */
export function foldKey(key: string): string {
  return key.toUpperCase().toLowerCase();
}

/** The member of `obj` whose key folds to `name` (lowercase ASCII); duplicates ignoring case were refused. */
export function memberOf(obj: JsonObject, name: string): JsonValue | undefined {
  if (Object.prototype.hasOwnProperty.call(obj, name)) return obj[name];
  for (const key of Object.keys(obj)) if (foldKey(key) === name) return obj[key];
  return undefined;
}

const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

export function isJsonObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** What a message asks for, as credgate judges it. */
export type MessageKind = "tools/call" | "tools/list" | "other";

/** One JSON-RPC message of a body. */
export interface JsonRpcMessage {
  /** The message as parsed. */
  readonly value: JsonValue;
  /** Its `id` when it has a usable one (a request), else null (a notification, a response, or not a message). */
  readonly id: string | number | null;
  /**
   * `tools/call` and `tools/list` whatever their case and surrounding whitespace: a server that is lenient about
   * the name must not turn an unjudged `Tools/Call ` into a call.
   */
  readonly kind: MessageKind;
  /** The method as sent (null for a response). */
  readonly method: string | null;
}

/** A tool call read from a message: its tool name and arguments (absent arguments are `{}`). */
export interface ToolCall {
  readonly name: string;
  readonly arguments: JsonObject;
}

export type BodyRead =
  | { ok: true; batch: boolean; messages: JsonRpcMessage[] }
  | { ok: false; code: number; message: string };

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Whether a body starting with `head` may be read as JSON-RPC by some server: its first byte that is not
 * whitespace, a NUL or a byte-order mark's (UTF-8, UTF-16 or UTF-32) opens an object or an array — or there is
 * none yet. A form, a multipart body or plain text is none: no JSON parser reads a message from it.
 */
export function mayBeJsonRpc(head: Uint8Array): boolean {
  for (const b of head) {
    if (b === 0x7b || b === 0x5b) return true;
    if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d && b !== 0x00 && b !== 0xef && b !== 0xbb && b !== 0xbf && b !== 0xfe && b !== 0xff) return false;
  }
  return true;
}

/** Reads the JSON-RPC message (or batch) of a request body, at most MCP_BODY_LIMIT bytes (the caller bounds it). */
export function readJsonRpcBody(bytes: Uint8Array): BodyRead {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { ok: false, code: PARSE_ERROR, message: "credgate: the MCP request body is not UTF-8" };
  }
  const parsed = parseStrictJson(text);
  if (!parsed.ok) return { ok: false, code: PARSE_ERROR, message: `credgate: the MCP request body is not valid JSON (${parsed.reason})` };
  const v = parsed.value;
  if (Array.isArray(v)) {
    // A batch holds messages; one that holds another batch is no JSON-RPC a server should try to read.
    if (v.some((m) => Array.isArray(m))) return { ok: false, code: INVALID_REQUEST, message: "credgate: a JSON-RPC batch must not hold another batch" };
    return { ok: true, batch: true, messages: v.map(messageOf) };
  }
  return { ok: true, batch: false, messages: [messageOf(v)] };
}

function kindOf(method: string): MessageKind {
  const m = method.trim().toLowerCase();
  return m === "tools/call" ? "tools/call" : m === "tools/list" ? "tools/list" : "other";
}

function messageOf(value: JsonValue): JsonRpcMessage {
  if (!isJsonObject(value)) return { value, id: null, kind: "other", method: null };
  const rawId = memberOf(value, "id");
  const id = typeof rawId === "string" || typeof rawId === "number" ? rawId : null;
  const rawMethod = memberOf(value, "method");
  const method = typeof rawMethod === "string" ? rawMethod : null;
  return { value, id, kind: method === null ? "other" : kindOf(method), method };
}

/** The tool call of a `tools/call` message, or why it cannot be judged (then it is refused). */
export function toolCallOf(message: JsonRpcMessage): { ok: true; call: ToolCall } | { ok: false; message: string } {
  const params = isJsonObject(message.value) ? memberOf(message.value, "params") : undefined;
  if (!isJsonObject(params)) return { ok: false, message: "credgate: tools/call params must be an object" };
  const name = memberOf(params, "name");
  if (typeof name !== "string") return { ok: false, message: "credgate: tools/call params.name must be a string" };
  const args = memberOf(params, "arguments");
  if (args === undefined || args === null) return { ok: true, call: { name, arguments: Object.create(null) as JsonObject } };
  if (!isJsonObject(args)) return { ok: false, message: `credgate: tools/call arguments of ${name} must be an object` };
  return { ok: true, call: { name, arguments: args } };
}

/** A JSON-RPC error response. */
export function jsonRpcError(id: string | number | null, code: number, message: string): { jsonrpc: "2.0"; id: string | number | null; error: { code: number; message: string } } {
  return { jsonrpc: "2.0", id, error: { code, message } };
}

/** One SSE event carrying a JSON-RPC message, as Streamable HTTP and HTTP+SSE servers send them. */
export function sseMessageEvent(message: unknown): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}
