// Usage as the LLM vendors report it (docs/budgets.md#usage usage table), read from a response while it streams
// past: JSON bodies (kept up to 256 KiB, parsed at the end) or SSE `data:` lines (each up to 512 KiB, parsed
// as they complete). Nothing is held back from the client; this only looks at copies of the chunks. Pure.
import type { MeteredType, Usage } from "./pricing.ts";

/** Which metered API a request calls (docs/budgets.md#metering). */
export type MeteredApi = "messages" | "chat_completions" | "responses";

export const JSON_LIMIT = 256 * 1024;
export const SSE_LINE_LIMIT = 512 * 1024;

/**
 * The metered API of a request, or null: `llm_a` POST …/v1/messages; `llm_b` POST …/v1/chat/completions,
 * …/v1/responses. Vendors' routers forgive more than a path pattern does, so repeated slashes and a trailing
 * slash are ignored and case is not compared (docs/budgets.md#metering).
 */
export function meteredApi(type: MeteredType, method: string, path: string): MeteredApi | null {
  if (method.toUpperCase() !== "POST") return null;
  const p = path.replace(/\/{2,}/g, "/").replace(/\/$/, "").toLowerCase();
  if (type === "llm_a") return p.endsWith("/v1/messages") ? "messages" : null;
  if (p.endsWith("/v1/chat/completions")) return "chat_completions";
  if (p.endsWith("/v1/responses")) return "responses";
  return null;
}

/** The metered API any reading of the path names (docs/budgets.md#metering), the path as sent first; null when none does. */
export function meteredApiOf(type: MeteredType, method: string, readings: readonly string[]): MeteredApi | null {
  for (const path of readings) {
    const api = meteredApi(type, method, path);
    if (api !== null) return api;
  }
  return null;
}

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null);

interface Reported {
  model: string | null;
  input: number | null;
  output: number | null;
  cacheWrite: number | null;
  cacheRead: number | null;
}

export class UsageReader {
  readonly #reported: Reported = { model: null, input: null, output: null, cacheWrite: null, cacheRead: null };
  readonly #sse: boolean;
  readonly #decoder = new TextDecoder();
  /** JSON: the body so far (null once over the limit). SSE: the current, unfinished line. */
  #text: string | null = "";
  #skipLine = false;

  constructor(
    private readonly type: MeteredType,
    private readonly api: MeteredApi,
    contentType: string | null,
  ) {
    this.#sse = (contentType ?? "").toLowerCase().includes("text/event-stream");
  }

  /** One chunk of the response body, as it passes to the client. */
  push(chunk: Uint8Array): void {
    const text = this.#decoder.decode(chunk, { stream: true });
    if (!this.#sse) {
      if (this.#text === null) return;
      this.#text = this.#text.length + text.length > JSON_LIMIT ? null : this.#text + text;
      return;
    }
    let rest = this.#text! + text;
    for (let nl = rest.indexOf("\n"); nl !== -1; nl = rest.indexOf("\n")) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      if (this.#skipLine) this.#skipLine = false;
      else this.#line(line.endsWith("\r") ? line.slice(0, -1) : line);
    }
    // A line longer than the limit is not parsed (its end is skipped when it comes).
    if (rest.length > SSE_LINE_LIMIT) {
      this.#skipLine = true;
      rest = "";
    }
    this.#text = rest;
  }

  /**
   * What the response reported. `complete`: the body ended normally; then a response with no usable usage is
   * null (the caller charges the estimate). On an abort, whatever was reported so far (zeros if nothing; a
   * JSON body is only parsed once complete).
   */
  result(complete: boolean): Usage | null {
    if (!this.#sse && complete && this.#text !== null) {
      try {
        this.#event(JSON.parse(this.#text + this.#decoder.decode()));
      } catch {
        // Unparseable: no usage.
      }
    }
    const r = this.#reported;
    const any = r.input !== null || r.output !== null;
    if (complete && !any) return null;
    return { model: r.model, inputTokens: r.input ?? 0, outputTokens: r.output ?? 0, cacheWriteTokens: r.cacheWrite ?? 0, cacheReadTokens: r.cacheRead ?? 0 };
  }

  #line(line: string): void {
    if (!line.startsWith("data:")) return;
    const payload = line.slice(5).trim();
    if (!payload || payload === "[DONE]") return;
    try {
      this.#event(JSON.parse(payload));
    } catch {
      // A line that is not JSON carries no usage.
    }
  }

  /** One parsed JSON document: an SSE event, or the whole JSON body. */
  #event(doc: unknown): void {
    if (typeof doc !== "object" || doc === null) return;
    const d = doc as Record<string, any>;
    const r = this.#reported;
    if (this.type === "llm_a") {
      if (d.type === "message_start" && typeof d.message === "object" && d.message !== null) {
        if (typeof d.message.model === "string") r.model = d.message.model;
        this.#anthropicUsage(d.message.usage);
      } else if (d.type === "message_delta") {
        const out = num(d.usage?.output_tokens);
        if (out !== null) r.output = out;
      } else if (d.type === undefined || d.type === "message") {
        // The JSON form: top-level `usage` (and `model`).
        if (typeof d.model === "string") r.model = d.model;
        this.#anthropicUsage(d.usage);
      }
      return;
    }
    if (this.api === "responses") {
      // SSE: `response.*` events carry the response (the final usage on `response.completed`); JSON: the
      // response object itself.
      const response = typeof d.type === "string" && d.type.startsWith("response.") ? d.response : d.object === "response" ? d : null;
      if (typeof response !== "object" || response === null) return;
      if (typeof response.model === "string") r.model = response.model;
      const u = response.usage;
      if (typeof u !== "object" || u === null) return;
      r.input = num(u.input_tokens) ?? r.input;
      r.output = num(u.output_tokens) ?? r.output;
      r.cacheRead = num(u.input_tokens_details?.cached_tokens) ?? r.cacheRead;
      return;
    }
    // Chat completions: every chunk names the model; `usage` arrives on the last one (with include_usage).
    if (typeof d.model === "string") r.model = d.model;
    const u = d.usage;
    if (typeof u !== "object" || u === null) return;
    r.input = num(u.prompt_tokens) ?? r.input;
    r.output = num(u.completion_tokens) ?? r.output;
    r.cacheRead = num(u.prompt_tokens_details?.cached_tokens) ?? r.cacheRead;
  }

  #anthropicUsage(u: unknown): void {
    if (typeof u !== "object" || u === null) return;
    const usage = u as Record<string, unknown>;
    const r = this.#reported;
    r.input = num(usage.input_tokens) ?? r.input;
    r.cacheWrite = num(usage.cache_creation_input_tokens) ?? r.cacheWrite;
    r.cacheRead = num(usage.cache_read_input_tokens) ?? r.cacheRead;
    r.output = num(usage.output_tokens) ?? r.output;
  }
}

/** What the admission estimate needs from a request body (docs/budgets.md#admission): the model and the output-token cap. */
export function requestHints(body: string): { model: string | null; maxOutputTokens: number | null } {
  try {
    const d = JSON.parse(body) as Record<string, unknown>;
    const cap = num(d.max_tokens) ?? num(d.max_completion_tokens) ?? num(d.max_output_tokens);
    return { model: typeof d.model === "string" ? d.model : null, maxOutputTokens: cap };
  } catch {
    // A body too long to have been read whole, or not JSON: look for the fields at the top of it.
    const model = /"model"\s*:\s*"([^"]{1,200})"/.exec(body)?.[1] ?? null;
    const cap = /"max_(?:tokens|completion_tokens|output_tokens)"\s*:\s*(\d{1,9})/.exec(body)?.[1];
    return { model, maxOutputTokens: cap ? Number(cap) : null };
  }
}
