// Default interception (docs/gateway.md#pipeline, step 3): a Codex-style token refresh whose refresh_token is
// the `credgate-managed` placeholder is answered locally, so agents holding the stub never reach the vendor.
import type { ProxyRequest } from "../request.ts";
import { answer, PASS, type RequestVerdict, type Stage } from "../stage.ts";

const PLACEHOLDER = "credgate-managed";
const MAX_BODY = 64 * 1024;

function refreshTokenOf(text: string): string | null {
  try {
    const v = JSON.parse(text);
    if (v && typeof v === "object" && typeof v.refresh_token === "string") return v.refresh_token;
  } catch {}
  return new URLSearchParams(text).get("refresh_token");
}

async function intercept(rq: ProxyRequest): Promise<RequestVerdict> {
  const head = await rq.peekBody(MAX_BODY + 1);
  if (head.byteLength > MAX_BODY || refreshTokenOf(new TextDecoder().decode(head)) !== PLACEHOLDER) return PASS;
  await rq.body?.cancel().catch(() => {});
  return answer(
    "allowed",
    new Response(JSON.stringify({ access_token: PLACEHOLDER, refresh_token: PLACEHOLDER, token_type: "Bearer", expires_in: 2592000 }), {
      status: 200,
      headers: { "content-type": "application/json" },
    }),
  );
}

export function interceptStage(): Stage {
  return {
    name: "intercept",
    reads: [],
    provides: [],
    request(rq) {
      // Synchronous for every other request: no promise on every request's path.
      if (rq.method !== "POST" || rq.host !== "auth.openai.com" || rq.path !== "/oauth/token" || !rq.body) return PASS;
      return intercept(rq);
    },
  };
}
