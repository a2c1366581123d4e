// One call to HashiCorp Vault or OpenBao (docs/vault.md#kv-version-2-values): the address from
// CREDGATE_VAULT_ADDR, `X-Vault-Request: true` (Vault's guard against request forgery), `X-Vault-Namespace` when
// CREDGATE_VAULT_NAMESPACE is set, the token when there is one, JSON both ways, through the store fetch (the
// gateway's egress path). Failures become StoreErrors whose messages never hold a token, a value or Vault's body.
import { readBounded } from "../../core/boundedRead.ts";
import { parseJson, STORE_ANSWER_MAX } from "./cloudRequest.ts";
import { StoreError, type StoreFetch } from "./types.ts";

/** Each call to Vault is given up after this (the resolver may give a shorter signal). */
export const VAULT_CALL_TIMEOUT_MS = 15_000;

export interface VaultEndpoint {
  /** CREDGATE_VAULT_ADDR as a URL, path kept (a Vault behind a path prefix). */
  addr: URL;
  namespace: string | null;
  fetch: StoreFetch;
}

export interface VaultAnswer {
  status: number;
  /** The parsed JSON body (null when empty or not JSON): read by the caller, never quoted in a message. */
  body: any;
}

/** A usable CREDGATE_VAULT_ADDR (http or https), or null. */
export function vaultAddrOf(raw: string | null): URL | null {
  if (raw === null) return null;
  try {
    const url = new URL(raw);
    if (url.protocol !== "https:" && url.protocol !== "http:") return null;
    if (!url.pathname.endsWith("/")) url.pathname += "/";
    return url;
  } catch {
    return null;
  }
}

export async function vaultCall(
  endpoint: VaultEndpoint,
  call: { method: "GET" | "POST" | "PUT"; path: string; token: string | null; body?: unknown },
  signal: AbortSignal,
): Promise<VaultAnswer> {
  // Names are literal (docs/vault.md#kv-version-2-values): a `?`, `#` or `%` in one is part of the name, not URL syntax.
  const url = new URL(`v1/${call.path.split("/").map(encodeURIComponent).join("/")}`, endpoint.addr);
  const headers: Record<string, string> = { "x-vault-request": "true", accept: "application/json" };
  if (call.token !== null) headers["x-vault-token"] = call.token;
  if (endpoint.namespace !== null) headers["x-vault-namespace"] = endpoint.namespace;
  if (call.body !== undefined) headers["content-type"] = "application/json";
  const bounded = AbortSignal.any([signal, AbortSignal.timeout(VAULT_CALL_TIMEOUT_MS)]);
  let res: Response;
  try {
    res = await endpoint.fetch(url, { method: call.method, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body), signal: bounded, redirect: "manual" });
  } catch (err) {
    throw unreachable(endpoint, err, bounded);
  }
  let text: string | null;
  try {
    text = await readBounded(res.body, STORE_ANSWER_MAX);
  } catch (err) {
    throw unreachable(endpoint, err, bounded);
  }
  if (text === null) throw new StoreError("answer_too_large", `HashiCorp Vault sent an answer larger than ${STORE_ANSWER_MAX} bytes (${endpoint.addr.host})`);
  return { status: res.status, body: parseJson(text) };
}

function unreachable(endpoint: VaultEndpoint, err: unknown, signal: AbortSignal): StoreError {
  const host = endpoint.addr.host;
  // The outbound path's own refusals (egress guard, resolution) say what they need to; its network failures are Vault's.
  if (err instanceof StoreError && err.reason !== "unreachable" && err.reason !== "timeout") return err;
  if (signal.aborted || (err instanceof StoreError && err.reason === "timeout")) return new StoreError("timeout", `HashiCorp Vault at ${host} did not answer in time`);
  const code = err instanceof StoreError ? undefined : (err as NodeJS.ErrnoException).code;
  const why = err instanceof StoreError ? err.why : undefined;
  return new StoreError("unreachable", `HashiCorp Vault at ${host} could not be reached${code ? ` (${code})` : ""}${why ? ` ${why}` : ""}`, why);
}

/** The StoreError for an answer other than the one expected; `what` names what was asked (never a value). */
export function vaultFailure(answer: VaultAnswer, what: string): StoreError {
  const s = answer.status;
  if (s === 403) return new StoreError("permission_denied", `HashiCorp Vault denied credgate's token access to ${what} (permission denied)`);
  if (s === 404) return new StoreError("not_found", `HashiCorp Vault has nothing at ${what}`);
  if (s === 503) {
    const sealed = Array.isArray(answer.body?.errors) && answer.body.errors.some((e: unknown) => typeof e === "string" && /sealed/i.test(e));
    return new StoreError(sealed ? "sealed" : "unavailable", sealed ? "HashiCorp Vault is sealed" : "HashiCorp Vault is unavailable (503)");
  }
  if (s === 429) return new StoreError("rate_limited", "HashiCorp Vault is rate limiting credgate (429)");
  return new StoreError(s >= 500 ? "vault_error" : "unexpected_answer", `HashiCorp Vault answered ${s} for ${what}`);
}
