// GitHub App installation tokens (docs/injection.md#github-app): a request to a host a `githubApp` secret
// matches gets the installation's token — `Authorization: Bearer` on the API, Basic `x-access-token:<token>` for
// git over HTTPS on github.com. The token comes from the shared cache synchronously when it is there; otherwise
// it is minted (once for every process and instance) and the request waits. A failed mint → 502
// credential_unavailable, nothing forwarded.
import type { GithubAppConfig } from "../../core/records/secrets.ts";
import type { GithubAppTokens, MintedToken } from "../../services/githubApps.ts";
import { credentialUnavailableFor } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { PASS, type RequestVerdict, type Stage } from "../stage.ts";

export interface GithubAppDeps {
  tokens: Pick<GithubAppTokens, "peek" | "token">;
}

/** Hosts where git speaks HTTPS with Basic auth; every other host the secret matches gets a Bearer token. */
const GIT_HOSTS = new Set(["github.com", "www.github.com"]);

function apply(rq: ProxyRequest, minted: MintedToken): RequestVerdict {
  if (!minted.ok) return credentialUnavailableFor(rq);
  if (GIT_HOSTS.has(rq.host)) {
    const basic = Buffer.from(`x-access-token:${minted.token}`).toString("base64");
    rq.headers.set("authorization", `Basic ${basic}`);
    rq.recordInjection(minted.token);
    // The Basic form too, so the echo guard redacts it as sent.
    rq.recordInjection(basic, 0);
  } else {
    rq.headers.set("authorization", `Bearer ${minted.token}`);
    rq.recordInjection(minted.token);
  }
  return PASS;
}

export function githubAppStage({ tokens }: GithubAppDeps): Stage {
  return {
    name: "github-app",
    reads: ["secrets"],
    provides: ["githubToken"],
    request(rq) {
      const signing = rq.signing;
      if (signing.length === 0) return PASS;
      // The last matching GitHub App secret wins, as later writes do (docs/injection.md#precedence).
      for (let i = signing.length - 1; i >= 0; i--) {
        const { secret, value } = signing[i]!;
        const cfg: GithubAppConfig | undefined = secret.injection?.githubApp;
        if (cfg === undefined) continue;
        const hit = tokens.peek(cfg);
        if (hit !== undefined && hit.ok) return apply(rq, hit);
        return tokens.token(cfg, value).then((minted) => apply(rq, minted));
      }
      return PASS;
    },
  };
}
