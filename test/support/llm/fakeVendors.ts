// A fake LLM vendor for the metering suites: one TLS server answering Anthropic's Messages API and OpenAI's
// Chat Completions and Responses APIs in their real wire formats (wire.ts), as JSON or SSE as the request
// asks. What it reports as usage is set per Host header, so scenarios on different hosts do not mix. It
// records what it received (the injected key, Accept-Encoding, body size) for the tests to check.
import type { Server } from "bun";
import { readFileSync } from "node:fs";
import type { TestPki } from "../upstream.ts";
import { anthropicJson, anthropicSse, chatJson, chatSse, responsesJson, responsesSse, type AnthropicUsage } from "./wire.ts";

export interface FakeUsage {
  input: number;
  output: number;
  cacheWrite?: number;
  cacheRead?: number;
  /** Milliseconds between SSE events (to abort mid-stream). */
  delayMs?: number;
  /** Answer with this status instead (an error body in the vendor's shape). */
  status?: number;
  /** Leave usage out entirely. */
  noUsage?: boolean;
}

export interface FakeSeen {
  host: string;
  path: string;
  apiKey: string | null;
  authorization: string | null;
  acceptEncoding: string | null;
  bodyBytes: number;
  model: string | null;
}

export interface FakeVendors {
  port: number;
  seen: FakeSeen[];
  setUsage(host: string, usage: FakeUsage): void;
  stop(): Promise<void>;
}

const DEFAULT_USAGE: FakeUsage = { input: 10, output: 5 };

export function startFakeVendors(pki: TestPki): FakeVendors {
  const usages = new Map<string, FakeUsage>();
  const seen: FakeSeen[] = [];
  const server: Server<unknown> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: readFileSync(pki.certFile, "utf8"), key: readFileSync(pki.keyFile, "utf8") },
    async fetch(req) {
      const url = new URL(req.url);
      const host = (req.headers.get("host") ?? "").replace(/:\d+$/, "");
      const raw = await req.text();
      let body: Record<string, any> = {};
      try {
        body = JSON.parse(raw);
      } catch {}
      const model = typeof body.model === "string" ? body.model : "unknown-model";
      seen.push({
        host,
        path: url.pathname,
        apiKey: req.headers.get("x-api-key"),
        authorization: req.headers.get("authorization"),
        acceptEncoding: req.headers.get("accept-encoding"),
        bodyBytes: Buffer.byteLength(raw),
        model,
      });
      const u = usages.get(host) ?? DEFAULT_USAGE;
      if (u.status) {
        const error = url.pathname.endsWith("/v1/messages")
          ? { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }
          : { error: { message: "The server had an error", type: "server_error", param: null, code: null } };
        return Response.json(error, { status: u.status });
      }
      const stream = body.stream === true;
      let json: string | null = null;
      let events: string[] = [];
      if (url.pathname.endsWith("/v1/messages")) {
        const usage: AnthropicUsage = { input_tokens: u.input, output_tokens: u.output, cache_creation_input_tokens: u.cacheWrite ?? 0, cache_read_input_tokens: u.cacheRead ?? 0 };
        if (stream) events = anthropicSse(model, usage);
        else json = anthropicJson(model, usage);
        if (u.noUsage) {
          json = json && JSON.stringify({ ...JSON.parse(json), usage: undefined });
          events = events.map((e) => e.replace(/"usage":\{[^}]*\}/g, '"x":0'));
        }
      } else if (url.pathname.endsWith("/v1/chat/completions")) {
        const usage = { prompt_tokens: u.input, completion_tokens: u.output, cached_tokens: u.cacheRead ?? 0 };
        if (stream) events = chatSse(model, body.stream_options?.include_usage && !u.noUsage ? usage : null);
        else json = chatJson(model, usage);
      } else if (url.pathname.endsWith("/v1/responses")) {
        const usage = { input_tokens: u.input, output_tokens: u.output, cached_tokens: u.cacheRead ?? 0 };
        if (stream) events = responsesSse(model, usage);
        else json = responsesJson(model, usage);
      } else {
        return Response.json({ error: "not a metered endpoint", path: url.pathname }, { status: 404 });
      }
      if (json !== null) return new Response(json, { headers: { "content-type": "application/json" } });
      const delay = u.delayMs ?? 0;
      const encoder = new TextEncoder();
      let i = 0;
      return new Response(
        new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (i >= events.length) return controller.close();
            if (delay && i > 0) await Bun.sleep(delay);
            controller.enqueue(encoder.encode(events[i++]!));
          },
        }),
        { headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" } },
      );
    },
  });
  return {
    port: server.port!,
    seen,
    setUsage: (host, usage) => usages.set(host, usage),
    stop: () => server.stop(true),
  };
}
