// Credential injection (docs/injection.md): every matching credential the agent may use, in precedence order
// (later writes win). A credential that cannot be obtained (an external vault or secret store failure,
// docs/injection.md#secret-stores) or applied safely stops the request with 502 credential_unavailable naming
// the secret; nothing is forwarded. Inline values and cached vault and store values apply synchronously; only a
// reference missing from the cache makes this stage asynchronous.
import { injectsIntoHeader, isHeaderSafeValue, isSignedOrMinted } from "../../core/secretRules.ts";
import { log } from "../../observability/log.ts";
import type { Lookup, VaultResolver } from "../../vault/resolver.ts";
import { credentialUnavailableFor } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { matchingCredentials, type CompiledSecret } from "../snapshot.ts";
import { PASS, type RequestVerdict, type Stage } from "../stage.ts";

export interface InjectDeps {
  vault: Pick<VaultResolver, "peek" | "resolve">;
}

export const VAULT_VALUE_NOT_HEADER_SAFE =
  "The value in the external vault cannot be sent in an HTTP header: it must contain only printable ASCII characters (no line breaks, control or non-ASCII characters).";
export const STORE_VALUE_NOT_HEADER_SAFE =
  "The value in the secret store cannot be sent in an HTTP header: it must contain only printable ASCII characters (no line breaks, control or non-ASCII characters).";

function apply(rq: ProxyRequest, matched: readonly CompiledSecret[], vault: Map<string, Lookup> | null): RequestVerdict {
  for (const secret of matched) {
    let value = secret.value;
    if (value === null) {
      const ref = secret.valueRef!;
      const found = vault?.get(ref);
      if (!found?.ok) return credentialUnavailableFor(rq, undefined, secret.name);
      value = found.value;
      // Inline values are checked when stored; a vault or store value only now: a header must not break.
      if (injectsIntoHeader(secret.type, secret.injection) && !isHeaderSafeValue(value)) {
        const op = ref.startsWith("op://");
        log.warn(op ? "external vault value cannot go into a header" : "secret store value cannot go into a header", { [op ? "opRef" : "storeRef"]: ref, reason: "not_printable_ascii" });
        return credentialUnavailableFor(rq, op ? VAULT_VALUE_NOT_HEADER_SAFE : STORE_VALUE_NOT_HEADER_SAFE, secret.name);
      }
    }
    // Signed and minted credentials are made by their own stages (aws-sign, github-app), from this value.
    if (isSignedOrMinted(secret.injection)) rq.signing = [...rq.signing, { secret, value }];
    else if (!rq.applyCredential(secret, value)) return credentialUnavailableFor(rq);
  }
  return PASS;
}

export function injectStage({ vault: resolver }: InjectDeps): Stage {
  return {
    name: "inject",
    reads: ["agent"],
    provides: ["secrets"],
    request(rq) {
      const matched = matchingCredentials(rq.credentials.injectable, rq.host, rq.pathReadings);
      rq.matched = matched;
      // Vault and store secrets carry no value in the snapshot: take it from the cache, or look it up.
      let vault: Map<string, Lookup> | null = null;
      let pending: Promise<void>[] | null = null;
      for (const secret of matched) {
        if (secret.value !== null) continue;
        const ref = secret.valueRef;
        if (ref === null) return credentialUnavailableFor(rq, undefined, secret.name);
        const known = resolver.peek(ref);
        if (known !== undefined && !known.ok) return credentialUnavailableFor(rq, undefined, secret.name);
        vault ??= new Map();
        if (known !== undefined) vault.set(ref, known);
        else if (!vault.has(ref)) {
          vault.set(ref, { ok: false, reason: "pending" });
          (pending ??= []).push(resolver.resolve(ref).then((r) => void vault!.set(ref, r)));
        }
      }
      if (pending === null) return apply(rq, matched, vault);
      return Promise.all(pending).then(() => apply(rq, matched, vault));
    },
  };
}
