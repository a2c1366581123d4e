// Cloud identities (docs/cloud-identities.md#minting): a request to a host a `gcpServiceAccount` or
// `azureClientSecret` secret matches gets that identity's access token as `Authorization: Bearer`, in place of
// whatever the agent sent (its placeholder token). The token comes from the shared cache synchronously when it is
// there; otherwise it is minted (once for every process and instance) and the request waits. A failed mint, or an
// Azure secret without a scope on a host that implies none → 502 credential_unavailable, nothing forwarded.
import { azureScopeForHost, GCP_DEFAULT_SCOPES } from "../../core/cloudIdentity.ts";
import type { CloudTokens, TokenOutcome } from "../../services/cloudTokens.ts";
import { credentialUnavailableFor } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { PASS, type RequestVerdict, type Stage } from "../stage.ts";

export interface CloudTokenDeps {
  tokens: Pick<CloudTokens, "peek" | "token" | "gcpKey" | "gcpKeyFor" | "azureKeyFor">;
}

const DEFAULT_SCOPES = GCP_DEFAULT_SCOPES.join(" ");

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
        const cfg = secret.injection;
        let cacheKey: string;
        if (cfg?.gcpServiceAccount !== undefined) {
          const key = tokens.gcpKey(value);
          if (key === null) return credentialUnavailableFor(rq);
          cacheKey = tokens.gcpKeyFor(key, cfg.gcpServiceAccount.scopes?.join(" ") ?? DEFAULT_SCOPES);
        } else if (cfg?.azureClientSecret !== undefined) {
          const scope = cfg.azureClientSecret.scope ?? azureScopeForHost(rq.host);
          if (scope === null) return credentialUnavailableFor(rq);
          cacheKey = tokens.azureKeyFor(cfg.azureClientSecret, scope);
        } else continue;
        const hit = tokens.peek(cacheKey);
        if (hit !== undefined && hit.ok) return apply(rq, hit);
        return tokens.token(cacheKey, value).then((minted) => apply(rq, minted));
      }
      return PASS;
    },
  };
}
