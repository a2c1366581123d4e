// The LLM vendors' response wire formats (docs/budgets.md#usage usage table), as test fixtures: Anthropic Messages
// (JSON and the SSE event sequence), OpenAI Chat Completions (JSON and SSE with stream_options.include_usage)
// and OpenAI Responses (JSON and SSE ending in response.completed). Shapes follow the vendors' public API
// references; the fake upstreams of the e2e suites serve exactly these.

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

export function anthropicJson(model: string, usage: AnthropicUsage, text = "Hello!"): string {
  return JSON.stringify({
    id: "msg_01XFDUDYJgAACzvnptvVoYEL",
    type: "message",
    role: "assistant",
    model,
    content: [{ type: "text", text }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { cache_creation_input_tokens: 0, cache_read_input_tokens: 0, ...usage },
  });
}

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** Anthropic's streaming events for one text block; output_tokens arrives in message_delta. */
export function anthropicSse(model: string, usage: AnthropicUsage, words = ["Hello", " world", "!"]): string[] {
  const start = {
    type: "message_start",
    message: {
      id: "msg_014p7gG3wDgGV9EUtLvnow3U",
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: usage.input_tokens, cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0, cache_read_input_tokens: usage.cache_read_input_tokens ?? 0, output_tokens: 1 },
    },
  };
  return [
    sse("message_start", start),
    sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    sse("ping", { type: "ping" }),
    ...words.map((w) => sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: w } })),
    sse("content_block_stop", { type: "content_block_stop", index: 0 }),
    sse("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: usage.output_tokens } }),
    sse("message_stop", { type: "message_stop" }),
  ];
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens?: number;
}

const chatUsage = (u: ChatUsage) => ({
  prompt_tokens: u.prompt_tokens,
  completion_tokens: u.completion_tokens,
  total_tokens: u.prompt_tokens + u.completion_tokens,
  prompt_tokens_details: { cached_tokens: u.cached_tokens ?? 0, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
});

export function chatJson(model: string, usage: ChatUsage, text = "Hello!"): string {
  return JSON.stringify({
    id: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    object: "chat.completion",
    created: 1741569952,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: text, refusal: null, annotations: [] }, logprobs: null, finish_reason: "stop" }],
    usage: chatUsage(usage),
    service_tier: "default",
  });
}

/** Chat Completions chunks; with include_usage the last chunk has `choices: []` and the usage. */
export function chatSse(model: string, usage: ChatUsage | null, words = ["Hello", " world", "!"]): string[] {
  const chunk = (delta: unknown, finish: string | null) => ({
    id: "chatcmpl-123",
    object: "chat.completion.chunk",
    created: 1694268190,
    model,
    system_fingerprint: "fp_44709d6fcb",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(usage ? { usage: null } : {}),
  });
  const out = [`data: ${JSON.stringify(chunk({ role: "assistant", content: "" }, null))}\n\n`];
  for (const w of words) out.push(`data: ${JSON.stringify(chunk({ content: w }, null))}\n\n`);
  out.push(`data: ${JSON.stringify(chunk({}, "stop"))}\n\n`);
  if (usage) out.push(`data: ${JSON.stringify({ id: "chatcmpl-123", object: "chat.completion.chunk", created: 1694268190, model, system_fingerprint: "fp_44709d6fcb", choices: [], usage: chatUsage(usage) })}\n\n`);
  out.push("data: [DONE]\n\n");
  return out;
}

export interface ResponsesUsage {
  input_tokens: number;
  output_tokens: number;
  cached_tokens?: number;
}

function responseObject(model: string, status: string, usage: ResponsesUsage | null, text: string) {
  return {
    id: "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    object: "response",
    created_at: 1741476542,
    status,
    model,
    output:
      status === "completed"
        ? [{ type: "message", id: "msg_67ccd2bf17f0819081ff3bb2cf6508e6", status: "completed", role: "assistant", content: [{ type: "output_text", text, annotations: [] }] }]
        : [],
    usage: usage
      ? {
          input_tokens: usage.input_tokens,
          input_tokens_details: { cached_tokens: usage.cached_tokens ?? 0 },
          output_tokens: usage.output_tokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: usage.input_tokens + usage.output_tokens,
        }
      : null,
  };
}

export function responsesJson(model: string, usage: ResponsesUsage, text = "Hello!"): string {
  return JSON.stringify(responseObject(model, "completed", usage, text));
}

/** Responses streaming events: created, deltas, …, `response.completed` carrying the final usage. */
export function responsesSse(model: string, usage: ResponsesUsage, words = ["Hello", " world", "!"]): string[] {
  let seq = 0;
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`;
  return [
    ev("response.created", { response: responseObject(model, "in_progress", null, "") }),
    ev("response.in_progress", { response: responseObject(model, "in_progress", null, "") }),
    ev("response.output_item.added", { output_index: 0, item: { id: "msg_1", type: "message", status: "in_progress", role: "assistant", content: [] } }),
    ...words.map((w) => ev("response.output_text.delta", { item_id: "msg_1", output_index: 0, content_index: 0, delta: w })),
    ev("response.output_text.done", { item_id: "msg_1", output_index: 0, content_index: 0, text: words.join("") }),
    ev("response.completed", { response: responseObject(model, "completed", usage, words.join("")) }),
  ];
}
