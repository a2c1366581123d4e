// Reading usage from the vendors' real response formats (docs/budgets.md#usage), whole and split at every byte
// boundary, with the bounds (256 KiB JSON, 512 KiB per SSE line), aborts and missing usage.
import { describe, expect, test } from "bun:test";
import { meteredApi, meteredApiOf, requestHints, SSE_LINE_LIMIT, UsageReader, JSON_LIMIT, type MeteredApi } from "../../src/core/usage.ts";
import type { MeteredType, Usage } from "../../src/core/pricing.ts";
import { pathReadings } from "../../src/core/pathReadings.ts";
import { anthropicJson, anthropicSse, chatJson, chatSse, responsesJson, responsesSse } from "../support/llm/wire.ts";

const enc = new TextEncoder();

function read(type: MeteredType, api: MeteredApi, contentType: string, body: string, split = 0, complete = true): Usage | null {
  const r = new UsageReader(type, api, contentType);
  const bytes = enc.encode(body);
  if (split > 0) for (let i = 0; i < bytes.length; i += split) r.push(bytes.subarray(i, i + split));
  else r.push(bytes);
  return r.result(complete);
}

const usage = (model: string, inputTokens: number, outputTokens: number, cacheWriteTokens = 0, cacheReadTokens = 0): Usage => ({ model, inputTokens, outputTokens, cacheWriteTokens, cacheReadTokens });

describe("metered endpoints", () => {
  test("llm_a POST …/v1/messages; llm_b POST …/v1/chat/completions and …/v1/responses; nothing else", () => {
    expect(meteredApi("llm_a", "POST", "/v1/messages")).toBe("messages");
    expect(meteredApi("llm_a", "POST", "/proxy/v1/messages")).toBe("messages");
    expect(meteredApi("llm_a", "GET", "/v1/messages")).toBeNull();
    expect(meteredApi("llm_a", "POST", "/v1/messages/count_tokens")).toBeNull();
    expect(meteredApi("llm_b", "POST", "/v1/chat/completions")).toBe("chat_completions");
    expect(meteredApi("llm_b", "POST", "/v1/responses")).toBe("responses");
    expect(meteredApi("llm_b", "POST", "/v1/embeddings")).toBeNull();
    expect(meteredApi("llm_a", "POST", "/v1/chat/completions")).toBeNull();
  });
});

describe("metered endpoints, fail closed (docs/budgets.md#metering)", () => {
  test("repeated slashes, a trailing slash and case are ignored; the method's case too", () => {
    for (const p of ["/v1/messages/", "//v1//messages", "/V1/Messages", "/proxy/V1/MESSAGES/"]) expect({ p, api: meteredApi("llm_a", "POST", p) }).toEqual({ p, api: "messages" });
    expect(meteredApi("llm_a", "post", "/v1/messages")).toBe("messages");
    expect(meteredApi("llm_b", "POST", "/V1/Chat/Completions/")).toBe("chat_completions");
    expect(meteredApi("llm_b", "POST", "/v1/responses//")).toBe("responses");
    expect(meteredApi("llm_a", "POST", "/v1/messages/count_tokens/")).toBeNull();
  });

  test("any reading of the path names the endpoint: every spelling of the finding is metered", () => {
    for (const p of ["/v1/messages/", "/v1/%6Dessages", "/v1/./messages", "/V1/messages", "/v1/messages;x", "/v1/messages%2F", "/v1/x/../messages"]) {
      expect({ p, api: meteredApiOf("llm_a", "POST", pathReadings(p)) }).toEqual({ p, api: "messages" });
    }
    expect(meteredApiOf("llm_b", "POST", pathReadings("/v1/chat%2Fcompletions"))).toBe("chat_completions");
    expect(meteredApiOf("llm_a", "POST", pathReadings("/v1/models"))).toBeNull();
  });
});

describe("llm_a messages", () => {
  const u = { input_tokens: 1200, output_tokens: 345, cache_creation_input_tokens: 50, cache_read_input_tokens: 700 };
  test("JSON: top-level usage and model", () => {
    expect(read("llm_a", "messages", "application/json", anthropicJson("claude-sonnet-4-5", u))).toEqual(usage("claude-sonnet-4-5", 1200, 345, 50, 700));
  });
  test("SSE: input and cache tokens from message_start, output from the last message_delta; any split", () => {
    const body = anthropicSse("claude-opus-4-1", u).join("");
    for (const split of [0, 1, 7, 64]) expect(read("llm_a", "messages", "text/event-stream; charset=utf-8", body, split)).toEqual(usage("claude-opus-4-1", 1200, 345, 50, 700));
  });
  test("SSE aborted after message_start: what was reported so far", () => {
    const events = anthropicSse("claude-haiku-4-5", u);
    expect(read("llm_a", "messages", "text/event-stream", events.slice(0, 3).join(""), 0, false)).toEqual({ ...usage("claude-haiku-4-5", 1200, 1, 50, 700) });
  });
  test("no usage, or a body that is not JSON: null (the estimate is charged)", () => {
    expect(read("llm_a", "messages", "application/json", '{"type":"message","content":[]}')).toBeNull();
    expect(read("llm_a", "messages", "application/json", "<html>oops</html>")).toBeNull();
    expect(read("llm_a", "messages", "text/event-stream", "event: ping\ndata: {\"type\":\"ping\"}\n\n")).toBeNull();
  });
});

describe("llm_b chat completions", () => {
  test("JSON: usage with cached tokens", () => {
    expect(read("llm_b", "chat_completions", "application/json", chatJson("gpt-4o-2024-08-06", { prompt_tokens: 900, completion_tokens: 12, cached_tokens: 512 }))).toEqual(usage("gpt-4o-2024-08-06", 900, 12, 0, 512));
  });
  test("SSE with include_usage: the last chunk's usage; any split", () => {
    const body = chatSse("gpt-4.1-mini", { prompt_tokens: 30, completion_tokens: 9, cached_tokens: 0 }).join("");
    for (const split of [0, 3, 50]) expect(read("llm_b", "chat_completions", "text/event-stream", body, split)).toEqual(usage("gpt-4.1-mini", 30, 9, 0, 0));
  });
  test("SSE without include_usage: null (no usage is reported)", () => {
    expect(read("llm_b", "chat_completions", "text/event-stream", chatSse("gpt-4.1-mini", null).join(""))).toBeNull();
  });
  test("CRLF line ends", () => {
    const body = chatSse("gpt-5", { prompt_tokens: 1, completion_tokens: 2 }).join("").replace(/\n/g, "\r\n");
    expect(read("llm_b", "chat_completions", "text/event-stream", body, 5)).toEqual(usage("gpt-5", 1, 2, 0, 0));
  });
});

describe("llm_b responses", () => {
  test("JSON: the response object's usage", () => {
    expect(read("llm_b", "responses", "application/json", responsesJson("o3", { input_tokens: 5000, output_tokens: 70, cached_tokens: 1000 }))).toEqual(usage("o3", 5000, 70, 0, 1000));
  });
  test("SSE: response.completed carries the usage; earlier events have none", () => {
    const body = responsesSse("gpt-5-mini", { input_tokens: 77, output_tokens: 8, cached_tokens: 3 }).join("");
    for (const split of [0, 11]) expect(read("llm_b", "responses", "text/event-stream", body, split)).toEqual(usage("gpt-5-mini", 77, 8, 0, 3));
  });
  test("SSE aborted before response.completed: nothing reported (zeros)", () => {
    const events = responsesSse("gpt-5-mini", { input_tokens: 77, output_tokens: 8 });
    expect(read("llm_b", "responses", "text/event-stream", events.slice(0, -1).join(""), 0, false)).toEqual(usage("gpt-5-mini", 0, 0, 0, 0));
  });
});

describe("bounds", () => {
  test("a JSON body over 256 KiB is not parsed: null", () => {
    const big = anthropicJson("claude-sonnet-4-5", { input_tokens: 1, output_tokens: 1 }, "x".repeat(JSON_LIMIT));
    expect(read("llm_a", "messages", "application/json", big, 65536)).toBeNull();
  });
  test("an SSE line over 512 KiB is skipped; the lines after it still count", () => {
    const events = anthropicSse("claude-sonnet-4-5", { input_tokens: 10, output_tokens: 20 });
    const huge = `data: ${JSON.stringify({ type: "content_block_delta", delta: { type: "text_delta", text: "y".repeat(SSE_LINE_LIMIT + 10) } })}\n\n`;
    const body = [events[0], huge, ...events.slice(1)].join("");
    expect(read("llm_a", "messages", "text/event-stream", body, 100_000)).toEqual(usage("claude-sonnet-4-5", 10, 20, 0, 0));
  });
});

describe("request hints for the estimate", () => {
  test("model and the output cap by any of its three names", () => {
    expect(requestHints('{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[]}')).toEqual({ model: "claude-sonnet-4-5", maxOutputTokens: 1024 });
    expect(requestHints('{"model":"gpt-5","max_completion_tokens":300}')).toEqual({ model: "gpt-5", maxOutputTokens: 300 });
    expect(requestHints('{"model":"o3","max_output_tokens":77,"input":"hi"}')).toEqual({ model: "o3", maxOutputTokens: 77 });
    expect(requestHints('{"model":"gpt-4o"}')).toEqual({ model: "gpt-4o", maxOutputTokens: null });
  });
  test("a truncated body: found by scanning its start", () => {
    expect(requestHints('{"model":"claude-haiku-4-5","max_tokens":50,"messages":[{"role":"user","content":"aaaa')).toEqual({ model: "claude-haiku-4-5", maxOutputTokens: 50 });
    expect(requestHints("not json")).toEqual({ model: null, maxOutputTokens: null });
  });
});
