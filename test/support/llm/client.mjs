// A real client of the LLM vendors for the metering suites: the official Node SDKs (@anthropic-ai/sdk,
// openai), unmodified, with their fetch going through credgate's gateway (undici ProxyAgent, the agent's
// token in the proxy URL, the gateway CA from NODE_EXTRA_CA_CERTS). Prints one JSON line: what the SDK
// returned, or the HTTP error it raised. With `concurrent: N`, N such calls at once (spread over `proxies`
// when several gateways are given), printed as `{"results": [...]}`; with `total: M` too, M calls, N at a time.
//
//   node client.mjs '{"sdk":"anthropic","call":"stream","baseURL":"https://…","model":"…","proxy":"http://x:agt_…@127.0.0.1:10255"}'
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { fetch as undiciFetch, ProxyAgent } from "undici";

const opts = JSON.parse(process.argv[2]);
const dispatchers = (opts.proxies ?? [opts.proxy]).map((p) => new ProxyAgent(p));

async function main(out, controller, fetch) {
  if (opts.sdk === "anthropic") {
    const client = new Anthropic({ apiKey: "credgate-managed", baseURL: opts.baseURL, fetch, maxRetries: 0 });
    const params = { model: opts.model, max_tokens: opts.maxTokens ?? 256, messages: [{ role: "user", content: opts.prompt ?? "Say hello." }] };
    if (opts.call === "json") {
      const msg = await client.messages.create(params);
      out.text = msg.content.map((c) => c.text ?? "").join("");
      out.usage = msg.usage;
      return;
    }
    const stream = await client.messages.create({ ...params, stream: true }, { signal: controller.signal });
    for await (const event of stream) {
      out.events++;
      if (event.type === "content_block_delta") out.text += event.delta.text ?? "";
      if (event.type === "message_delta") out.usage = event.usage;
      if (opts.abortAfterEvents && out.events >= opts.abortAfterEvents) {
        out.aborted = true;
        controller.abort();
        break;
      }
    }
    return;
  }
  const client = new OpenAI({ apiKey: "credgate-managed", baseURL: opts.baseURL, fetch, maxRetries: 0 });
  if (opts.call === "chat-json") {
    const r = await client.chat.completions.create({ model: opts.model, max_completion_tokens: opts.maxTokens, messages: [{ role: "user", content: opts.prompt ?? "Say hello." }] });
    out.text = r.choices[0]?.message?.content ?? "";
    out.usage = r.usage;
  } else if (opts.call === "chat-stream") {
    const stream = await client.chat.completions.create(
      {
        model: opts.model,
        messages: [{ role: "user", content: "Say hello." }],
        stream: true,
        ...(opts.maxTokens ? { max_completion_tokens: opts.maxTokens } : {}),
        ...(opts.includeUsage === false ? {} : { stream_options: { include_usage: true } }),
      },
      { signal: controller.signal },
    );
    for await (const chunk of stream) {
      out.events++;
      out.text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) out.usage = chunk.usage;
      if (opts.abortAfterEvents && out.events >= opts.abortAfterEvents) {
        out.aborted = true;
        controller.abort();
        break;
      }
    }
  } else if (opts.call === "responses-json") {
    const r = await client.responses.create({ model: opts.model, input: "Say hello.", max_output_tokens: opts.maxTokens });
    out.text = r.output_text;
    out.usage = r.usage;
  } else if (opts.call === "responses-stream") {
    const stream = await client.responses.create({ model: opts.model, input: "Say hello.", stream: true });
    for await (const event of stream) {
      out.events++;
      if (event.type === "response.output_text.delta") out.text += event.delta;
      if (event.type === "response.completed") out.usage = event.response.usage;
    }
  } else {
    throw new Error(`unknown call ${opts.call}`);
  }
}

/** One call through the i-th gateway: what the SDK returned, or the error it raised. */
async function one(i) {
  const dispatcher = dispatchers[i % dispatchers.length];
  const fetch = (url, init) => undiciFetch(url, { ...init, dispatcher });
  const controller = new AbortController();
  const out = { text: "", usage: null, events: 0, aborted: false };
  try {
    await main(out, controller, fetch);
    return out;
  } catch (err) {
    if (out.aborted || err?.name === "AbortError" || err?.constructor?.name === "APIUserAbortError") return { ...out, aborted: true };
    return { error: { status: err?.status ?? null, body: err?.error ?? null, message: String(err?.message ?? err) } };
  }
}

/** `total` calls, `concurrent` at a time, in the order they were started. */
async function pool(total, concurrent) {
  const results = [];
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      results[i] = await one(i);
    }
  };
  await Promise.all(Array.from({ length: concurrent }, worker));
  return results;
}

// Exits once the line is written: a large one to a pipe would be cut short by exiting at once.
process.stdout.write(`${JSON.stringify(opts.concurrent ? { results: await pool(opts.total ?? opts.concurrent, opts.concurrent) } : await one(0))}\n`, () => process.exit(0));
