// What a reviewer sees of a held request (docs/policy.md#approvals): a summary and a text preview of the first
// 16 KiB of the body, with credentials and bulky values redacted. Pure.
import type { ApprovalSummary } from "./model.ts";

const SENSITIVE = ["authorization", "password", "passwd", "secret", "token", "api_key", "apikey", "access_key", "accesskey", "private_key", "client_secret", "refresh_token"];
const BASE64_RUN = /[A-Za-z0-9+/_-]{100,}={0,2}/g;
const BODY_CAP = 500;
const DETAIL_CAP = 240;
const PREVIEW_CAP = 3000;
const LONG_STRING = 96;

export function isSensitiveKey(key: string): boolean {
  const k = key.toLowerCase();
  return SENSITIVE.some((w) => k.includes(w));
}

function cap(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, n - 1)}…`;
}

function redactString(s: string): string {
  const base64 = s.replace(BASE64_RUN, (run) => `<${run.length} chars, base64>`);
  if (base64 !== s) return base64;
  return s.length > LONG_STRING ? `<${s.length} chars>` : s;
}

function redactJson(v: unknown): unknown {
  if (typeof v === "string") return redactString(v);
  if (Array.isArray(v)) return v.map(redactJson);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, isSensitiveKey(k) ? "***" : redactJson(x)]));
  }
  return v;
}

// A JSON body longer than the peek is cut and no longer parses; its `"key": value` pairs with sensitive keys
// must still be masked, or the preview would show them verbatim.
const JSON_PAIR = /("((?:[^"\\]|\\.)*)"\s*:\s*)("(?:[^"\\]|\\.)*(?:"|$)|[^\s,{}[\]]+)/g;

function redactJsonText(text: string): string {
  return text.replace(JSON_PAIR, (pair, prefix: string, key: string) => (isSensitiveKey(key) ? `${prefix}"***"` : pair));
}

function looksBinary(bytes: Uint8Array, truncated: boolean): string | null {
  try {
    // A body cut at the peek limit may end inside a character: streaming mode leaves that tail undecoded
    // instead of calling the whole text binary. Control bytes other than whitespace mean binary.
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: truncated });
    return /[\u0000-\u0008\u000e-\u001f]/.test(text) ? null : text;
  } catch {
    return null;
  }
}

/** The body as a reviewer may see it, or null for an empty body. */
export function renderBody(bytes: Uint8Array, contentType: string | null, truncated: boolean): string | null {
  if (bytes.byteLength === 0) return null;
  const text = looksBinary(bytes, truncated);
  if (text === null) return `<binary, ${bytes.byteLength}${truncated ? "+" : ""} bytes>`;
  try {
    return cap(JSON.stringify(redactJson(JSON.parse(text))), BODY_CAP);
  } catch {}
  if ((contentType ?? "").includes("application/x-www-form-urlencoded")) {
    const params = new URLSearchParams(text);
    const parts = [...params].map(([k, v]) => `${k}=${isSensitiveKey(k) ? "***" : redactString(v)}`);
    return cap(parts.join("&"), BODY_CAP);
  }
  const masked = /^\s*[[{]/.test(text) ? redactJsonText(text) : text;
  return cap(masked.replace(BASE64_RUN, (run) => `<${run.length} chars, base64>`), BODY_CAP);
}

export function approvalSummary(method: string, path: string, body: string | null): ApprovalSummary {
  // Every detail value is capped at 240 (docs/policy.md#approvals), the Body one included.
  const details = [{ label: "Endpoint", value: cap(path, DETAIL_CAP) }];
  if (body !== null) details.push({ label: "Body", value: cap(body, DETAIL_CAP) });
  return { action: `${method} request`, details };
}

/** The text preview: the summary, with the body at its own 500-character cap rather than the detail cap. */
export function summaryPreview(summary: ApprovalSummary, body: string | null): string {
  const lines = summary.details.map((d) => `${d.label}: ${d.label === "Body" && body !== null ? body : d.value}`);
  return cap([summary.action, ...lines].join("\n"), PREVIEW_CAP);
}
