// One attempt to send one channel request: through the egress guard (the address it checked is the one
// dialled), with a time limit, never following redirects. Errors are described without the URL (a Slack or ntfy
// URL is itself a credential).
import type { DialTarget, Outbound } from "../outbound.ts";
import type { ChannelRequest } from "./messages.ts";

/** What the egress guard answers (src/gateway/egressGuard.ts, handed in by the composition root). */
export type EgressAnswer = { kind: "dial"; target: DialTarget } | { kind: "denied"; address: string; reason: string } | { kind: "unresolved"; reason: string };
export interface EgressCheck {
  check(host: string, port: number): EgressAnswer | Promise<EgressAnswer>;
}

export interface SendResult {
  delivered: boolean;
  /** The receiver's HTTP status, or null when none came. */
  status: number | null;
  error: string | null;
}

/** How long one attempt may take, connection to the end of the answer's head. */
export const ATTEMPT_MS = 10_000;
const ERROR_BODY_MAX = 300;

/** The start of an answer's body (a vendor's error word, e.g. Slack's `invalid_blocks`), then the rest dropped. */
async function bodyStart(res: Response): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < ERROR_BODY_MAX) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // A body cut short says no more than its status.
  } finally {
    void reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).toString("utf8", 0, Math.min(size, ERROR_BODY_MAX)).replace(/\s+/g, " ").trim();
}

function secretPathRemoved(text: string, u: URL): string {
  return u.pathname.length > 1 ? text.split(u.pathname).join("/…") : text;
}

function describe(err: unknown, u: URL): string {
  const e = err as { name?: string; code?: string; message?: string };
  if (e.name === "TimeoutError" || e.name === "AbortError") return `no answer within ${ATTEMPT_MS / 1000} s`;
  // The URL (as given, or with the dialled address in it) must not reach the log.
  const message = secretPathRemoved((e.message ?? String(err)).split(u.href).join(u.hostname), u);
  return e.code && !message.includes(e.code) ? `${e.code}: ${message}` : message;
}

export async function sendChannelRequest(outbound: Outbound, egress: EgressCheck, url: string, req: ChannelRequest): Promise<SendResult> {
  const u = new URL(url);
  const port = Number(u.port) || (u.protocol === "https:" ? 443 : 80);
  const verdict = await egress.check(u.hostname, port);
  if (verdict.kind === "denied") {
    return { delivered: false, status: null, error: `credgate does not connect to ${verdict.address} (${u.hostname}): the destination is an internal or reserved address.` };
  }
  if (verdict.kind === "unresolved") return { delivered: false, status: null, error: `${u.hostname} could not be resolved: ${verdict.reason}` };
  try {
    const res = await outbound.fetchAt(u, verdict.target, {
      method: "POST",
      headers: req.headers,
      body: req.body,
      redirect: "manual",
      signal: AbortSignal.timeout(ATTEMPT_MS),
    });
    if (res.status >= 200 && res.status < 300) {
      void res.body?.cancel().catch(() => {});
      return { delivered: true, status: res.status, error: null };
    }
    // A receiver's error page may echo the path it was posted to: the secret part of a Slack or ntfy URL.
    const start = secretPathRemoved(await bodyStart(res), u);
    return { delivered: false, status: res.status, error: `HTTP ${res.status}${start ? `: ${start}` : ""}` };
  } catch (err) {
    return { delivered: false, status: null, error: describe(err, u) };
  }
}
