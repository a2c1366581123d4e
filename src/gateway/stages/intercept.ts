// The `intercept` stage — default interception (docs/gateway.md#token-refresh-interception): a Codex-style token refresh whose refresh_token is the
// `credgate-managed` placeholder is answered locally, so agents holding the stub never reach the vendor.
import type { ProxyRequest } from "../request.ts";
import { peekStream } from "../peek.ts";

const PLACEHOLDER = "credgate-managed";
const MAX_BODY = 64 * 1024;

function refreshTokenOf(text: string): string | null {
  try {
    const v = JSON.parse(text);
    if (v && typeof v === "object" && typeof v.refresh_token === "string") return v.refresh_token;
  } catch {}
  return new URLSearchParams(text).get("refresh_token");
}

export function interceptPlaceholderRefresh(rq: ProxyRequest): Promise<Response | undefined> | undefined {
  // Synchronous for every other request: no promise on every request's path.
  if (rq.method !== "POST" || rq.host !== "auth.openai.com" || rq.path !== "/oauth/token" || !rq.body) return undefined;
  return intercept(rq, rq.body);
}

async function intercept(rq: ProxyRequest, body: ReadableStream<Uint8Array>): Promise<Response | undefined> {
  const { head, stream } = await peekStream(body, MAX_BODY + 1);
  rq.body = stream;
  if (head.byteLength > MAX_BODY || refreshTokenOf(new TextDecoder().decode(head)) !== PLACEHOLDER) return undefined;
  await stream.cancel().catch(() => {});
  rq.decision = "allowed";
  return new Response(
    JSON.stringify({ access_token: PLACEHOLDER, refresh_token: PLACEHOLDER, token_type: "Bearer", expires_in: 2592000 }),
    { status: 200, headers: { "content-type": "application/json" } },
  );
}
