// One request to a cloud secret store (docs/secret-stores.md): a failure to reach it becomes a StoreError naming
// the store and host, and the answer is read as JSON (null when it is not). The answer is the caller's to judge;
// nothing of it goes into an error but codes the caller picks out.
import { readBounded } from "../../core/boundedRead.ts";
import { StoreError, type StoreFetch } from "./types.ts";

export interface StoreAnswer {
  status: number;
  headers: Headers;
  json: unknown;
}

export async function storeRequest(fetch: StoreFetch, label: string, url: URL, init: RequestInit & { signal: AbortSignal }): Promise<StoreAnswer> {
  let res: Response;
  try {
    res = await fetch(url, { redirect: "manual", ...init });
  } catch (err) {
    // The outbound path's own refusals (egress guard, resolution) say what they need to; a failure to connect is the store's.
    if (err instanceof StoreError && err.reason === "unreachable") throw new StoreError("unreachable", `${label} could not be reached (${url.host})${err.why ? ` ${err.why}` : ""}`, err.why);
    if (err instanceof StoreError) throw err;
    if (init.signal.aborted) throw new StoreError("timeout", `${label} did not answer in time (${url.host})`);
    throw new StoreError("unreachable", `${label} could not be reached (${url.host}): ${(err as Error).message}`);
  }
  const text = await readBounded(res.body, STORE_ANSWER_MAX).catch(() => null);
  if (text === null) throw new StoreError("answer_too_large", `${label} sent an answer larger than ${STORE_ANSWER_MAX} bytes (${url.host})`);
  return { status: res.status, headers: res.headers, json: parseJson(text) };
}

/** The most a store's answer may hold: secret values are at most 64 KiB in every cloud store, with room for JSON. */
export const STORE_ANSWER_MAX = 1024 * 1024;

/** The text as JSON, or null when it is not JSON (or there is none). */
export function parseJson(text: string | null): unknown {
  if (text === null || text === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A code from a store's answer, when it looks like one (letters, digits, `.`, `_`, `-`), else null. */
export function codeOf(v: unknown): string | null {
  return typeof v === "string" && /^[A-Za-z0-9._-]{1,100}$/.test(v) ? v : null;
}

/** Bytes as text when they are UTF-8, else null. */
export function utf8(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** A store's settings (by variable name) when every one is set, else null: a half-set identity is not configured. */
export function allSet<K extends string>(settings: Record<K, string | null>): Record<K, string> | null {
  return Object.values(settings).every((v) => v !== null) ? (settings as Record<K, string>) : null;
}
