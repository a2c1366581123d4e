// The `inject` stage — credential injection (docs/injection.md#precedence, docs/injection.md#injection-variants): every matching credential the agent may use, in
// precedence order (later writes win). A credential that cannot be obtained (external vault failure) or
// applied safely stops the request. Inline values and cached vault values apply synchronously; only a
// vault reference missing from the cache makes this stage asynchronous.
import { applyInjection } from "../../core/inject.ts";
import { isHeaderSafeValue } from "../../core/secretRules.ts";
import { log } from "../../observability/log.ts";
import type { Lookup } from "../../vault/resolver.ts";
import type { GatewayContext } from "../context.ts";
import { credentialUnavailable } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { matchingCredentials, type CompiledSecret } from "../snapshot.ts";

export function inject(rq: ProxyRequest, g: GatewayContext): Response | undefined | Promise<Response | undefined> {
  const matched = matchingCredentials(rq.credentials.injectable, rq.host, rq.path);
  rq.matched = matched;
  // External-vault secrets carry no value in the snapshot: take it from the vault cache, or look it up.
  let vault: Map<string, Lookup> | null = null;
  let pending: Promise<void>[] | null = null;
  for (const secret of matched) {
    if (secret.value !== null) continue;
    const ref = secret.opRef;
    if (ref === null) return credentialUnavailableFor(rq);
    const known = g.vault.peek(ref);
    if (known !== undefined && !known.ok) return credentialUnavailableFor(rq);
    vault ??= new Map();
    if (known !== undefined) vault.set(ref, known);
    else if (!vault.has(ref)) {
      vault.set(ref, { ok: false, reason: "pending" });
      (pending ??= []).push(g.vault.resolve(ref).then((r) => void vault!.set(ref, r)));
    }
  }
  if (pending === null) return apply(rq, matched, vault);
  return Promise.all(pending).then(() => apply(rq, matched, vault));
}

function apply(rq: ProxyRequest, matched: CompiledSecret[], vault: Map<string, Lookup> | null): Response | undefined {
  let target = rq.upstreamTarget;
  for (const secret of matched) {
    let value = secret.value;
    if (value === null) {
      const found = vault?.get(secret.opRef!);
      if (!found?.ok) return credentialUnavailableFor(rq);
      value = found.value;
      // Inline values are checked when stored; a vault value only now: a header must not break.
      if (intoHeader(secret) && !isHeaderSafeValue(value)) {
        log.warn("external vault value cannot go into a header", { opRef: secret.opRef, reason: "not_printable_ascii" });
        return credentialUnavailableFor(rq, VAULT_VALUE_NOT_HEADER_SAFE);
      }
    }
    const out = applyInjection(secret, value, rq.headers, target);
    if (!out.ok) return credentialUnavailableFor(rq);
    target = out.pathAndQuery;
    rq.injectionCount += out.count;
    if (out.count > 0) rq.injectedValues.push(value);
  }
  rq.upstreamTarget = target;
  return undefined;
}

function intoHeader(secret: CompiledSecret): boolean {
  return secret.type !== "generic" || secret.injection?.headerName !== undefined;
}

export const VAULT_VALUE_NOT_HEADER_SAFE =
  "The value in the external vault cannot be sent in an HTTP header: it must contain only printable ASCII characters (no line breaks, control or non-ASCII characters).";

/** The request is answered 502 `credential_unavailable` and logged as an error; nothing goes upstream. */
export function credentialUnavailableFor(rq: ProxyRequest, reason?: string): Response {
  rq.decision = "error";
  return credentialUnavailable(rq.host, reason);
}
