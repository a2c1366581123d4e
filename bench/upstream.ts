// The benchmark's HTTPS upstream, run as its own process so it never shares an event loop with the load
// client or the gateway. It prints one JSON line `{"port":…}` on stdout once listening.
//   GET /      a small JSON body (the throughput/latency target)
//   POST /body reads the request body to its end, answers its length
//   GET /echo  the SHA-256 of the Authorization header it received, to prove the gateway injected the secret
//   GET /sse   text/event-stream: the first event at once, then SSE_EVENTS-1 more every SSE_GAP_MS
//   GET /stats {requests, connections}: requests answered and distinct client connections seen so far
//   POST /v1/messages, POST /v1/unmetered  an Anthropic Messages answer (SSE when the body asks to stream,
//              else JSON), with usage: the same bytes on both paths, only the first is metered by the gateway
// Usage: bun bench/upstream.ts <cert.pem> <key.pem>
const [certFile, keyFile] = process.argv.slice(2);
if (!certFile || !keyFile) {
  console.error("usage: bun bench/upstream.ts <cert.pem> <key.pem>");
  process.exit(2);
}

const SSE_EVENTS = 4;
const SSE_GAP_MS = 10;
const SMALL = JSON.stringify({ ok: true, service: "bench-upstream", items: [1, 2, 3] });
const encoder = new TextEncoder();

function sse(): Response {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let n = 0;
      const send = () => {
        controller.enqueue(encoder.encode(`id: ${n}\nevent: tick\ndata: {"n":${n}}\n\n`));
        n += 1;
        if (n >= SSE_EVENTS) controller.close();
        else timer = setTimeout(send, SSE_GAP_MS);
      };
      send();
    },
    cancel() {
      clearTimeout(timer);
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}

/** Anthropic's event sequence: message_start (input usage), deltas, message_delta (output usage), stop. */
const ANTHROPIC_EVENTS = [
  `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}\n\n`,
  `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}\n\n`,
  `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":12}}\n\n`,
  `event: message_stop\ndata: {"type":"message_stop"}\n\n`,
];
const ANTHROPIC_JSON = JSON.stringify({
  id: "msg_bench",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5",
  content: [{ type: "text", text: "Hello" }],
  stop_reason: "end_turn",
  usage: { input_tokens: 25, output_tokens: 12 },
});

function anthropicSse(): Response {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let n = 0;
      const send = () => {
        controller.enqueue(encoder.encode(ANTHROPIC_EVENTS[n]!));
        n += 1;
        if (n >= ANTHROPIC_EVENTS.length) controller.close();
        else timer = setTimeout(send, SSE_GAP_MS);
      };
      send();
    },
    cancel() {
      clearTimeout(timer);
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" } });
}

/** The token the bench's Google token endpoint mints. */
const BENCH_GCP_TOKEN = "ya29.bench-minted-token-0123456789abcdef";

let requests = 0;
const ports = new Set<number>();

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  tls: { cert: Bun.file(certFile), key: Bun.file(keyFile) },
  idleTimeout: 0,
  async fetch(req, srv) {
    requests += 1;
    const port = srv.requestIP(req)?.port;
    if (port !== undefined) ports.add(port);
    const path = req.url.slice(req.url.indexOf("/", 8));
    if (path === "/") return new Response(SMALL, { headers: { "content-type": "application/json" } });
    if (path === "/sse") return sse();
    if (path === "/stats") return Response.json({ requests, connections: ports.size });
    // A digest, not the header itself: the gateway's echo guard would redact a reflected credential (docs/guards.md#echo-guard).
    if (path === "/echo") {
      const auth = req.headers.get("authorization");
      return Response.json({
        authorizationSha256: auth === null ? null : new Bun.CryptoHasher("sha256").update(auth).digest("hex"),
        // A SigV4 signature's scope and a digest of its key id, to prove the gateway re-signed with the real key
        // (the key id itself would come back redacted: the echo guard watches it).
        authorizationKeyIdSha256: sigV4KeyIdDigest(auth),
        authorizationScope: /^AWS4-HMAC-SHA256 Credential=[^/,]+\/([^,]+)/.exec(auth ?? "")?.[1] ?? null,
        host: req.headers.get("host"),
      });
    }
    // A Google token endpoint and a GCS object read (bench/cloudToken.ts): one fixed token, the small body.
    if (req.method === "POST" && path === "/token") return Response.json({ access_token: BENCH_GCP_TOKEN, expires_in: 3599, token_type: "Bearer" });
    if (path.startsWith("/storage/v1/b/")) return new Response(SMALL, { headers: { "content-type": "application/json", "x-goog-generation": "1" } });
    // A body read to its end (the placeholder bench rows): its length back.
    if (req.method === "POST" && path === "/body") return Response.json({ bytes: (await req.arrayBuffer()).byteLength });
    if (req.method === "POST" && (path === "/v1/messages" || path === "/v1/unmetered")) {
      const body = await req.text();
      return body.includes('"stream":true') ? anthropicSse() : new Response(ANTHROPIC_JSON, { headers: { "content-type": "application/json" } });
    }
    return new Response("not found", { status: 404 });
  },
});

process.stdout.write(JSON.stringify({ port: server.port }) + "\n");
process.on("SIGTERM", () => process.exit(0));
process.on("SIGINT", () => process.exit(0));

/** The SHA-256 of a SigV4 `Authorization`'s access key id, or null. */
function sigV4KeyIdDigest(auth: string | null): string | null {
  const keyId = /^AWS4-HMAC-SHA256 Credential=([^/,]+)\//.exec(auth ?? "")?.[1];
  return keyId === undefined ? null : new Bun.CryptoHasher("sha256").update(keyId).digest("hex");
}
