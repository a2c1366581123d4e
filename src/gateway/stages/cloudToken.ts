// Cloud identities (docs/cloud-identities.md#minting): a request to a host a `gcpServiceAccount` or
// `azureClientSecret` secret matches gets that identity's access token as `Authorization: Bearer`, in place of
// whatever the agent sent (its placeholder token). The token comes from the shared cache synchronously when it is
// there; otherwise it is minted (once for every process and instance) and the request waits. A failed mint, or an
// Azure secret without a scope on a host that implies none → 502 credential_unavailable, nothing forwarded.
import { azureScopeForHost, GCP_DEFAULT_SCOPES } from "../../core/cloudIdentity.ts";
import { isCloudIdentity } from "../../core/secretRules.ts";
import type { CloudTokens, TokenOutcome } from "../../services/cloudTokens.ts";
import { credentialUnavailableFor } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import type { CompiledSecret } from "../snapshot.ts";
import { PASS, type RequestVerdict, type Stage } from "../stage.ts";

export interface CloudTokenDeps {
  tokens: Pick<CloudTokens, "peek" | "token" | "gcpKey" | "gcpKeyFor" | "azureKeyFor">;
}

const DEFAULT_SCOPES = GCP_DEFAULT_SCOPES.join(" ");

/**
 * A secret's cache key when its host does not enter into it (Google; Azure with a scope of its own), made once per
 * compiled secret (a snapshot rebuild makes new ones): a cached token then costs one WeakMap and one Map lookup.
 * Null: the key is not a service-account key.
 */
const fixedKeys = new WeakMap<CompiledSecret, string | null>();
/** The same for a key kept in a vault or a secret store (docs/injection.md#secret-stores): made again when the value changes. */
const fetchedKeys = new WeakMap<CompiledSecret, { value: string; key: string | null }>();

function cacheKeyOf(tokens: CloudTokenDeps["tokens"], secret: CompiledSecret, value: string, host: string): string | null {
  const cfg = secret.injection!;
  const azure = cfg.azureClientSecret;
  if (azure !== undefined && azure.scope === undefined) {
    const scope = azureScopeForHost(host);
    return scope === null ? null : tokens.azureKeyFor(azure, scope);
  }
  const fetched = secret.value === null ? fetchedKeys.get(secret) : undefined;
  let key = secret.value === null ? (fetched?.value === value ? fetched.key : undefined) : fixedKeys.get(secret);
  if (key === undefined) {
    if (azure !== undefined) key = tokens.azureKeyFor(azure, azure.scope!);
    else {
      const gcp = tokens.gcpKey(value);
      key = gcp === null ? null : tokens.gcpKeyFor(gcp, cfg.gcpServiceAccount!.scopes?.join(" ") ?? DEFAULT_SCOPES);
    }
    // A vault or store value may change under the same compiled secret: kept with the value it was made from.
    if (secret.value !== null) fixedKeys.set(secret, key);
    else fetchedKeys.set(secret, { value, key });
  }
  return key;
}

function apply(rq: ProxyRequest, minted: TokenOutcome): RequestVerdict {
  if (!minted.ok) return credentialUnavailableFor(rq);
  rq.headers.set("authorization", `Bearer ${minted.token}`);
  rq.recordInjection(minted.token);
  return PASS;
}

export function cloudTokenStage({ tokens }: CloudTokenDeps): Stage {
  return {
    name: "cloud-token",
    reads: ["secrets"],
    provides: ["cloudToken"],
    request(rq) {
      const signing = rq.signing;
      if (signing.length === 0) return PASS;
      // The last matching cloud identity wins, as later writes do (docs/injection.md#precedence).
      for (let i = signing.length - 1; i >= 0; i--) {
        const { secret, value } = signing[i]!;
        if (!isCloudIdentity(secret.injection)) continue;
        // Azure on a host that implies no resource (and no scope on the secret), or a value that is no key: 502.
        const cacheKey = cacheKeyOf(tokens, secret, value, rq.host);
        if (cacheKey === null) return credentialUnavailableFor(rq);
        const hit = tokens.peek(cacheKey);
        if (hit !== undefined && hit.ok) return apply(rq, hit);
        return tokens.token(cacheKey, value).then((minted) => apply(rq, minted));
      }
      return PASS;
    },
  };
}
