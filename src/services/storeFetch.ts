// The secret stores' outbound path (docs/injection.md#secret-stores): every store request is judged by the egress
// guard and dialled at the address it judged, through the outbound door (CREDGATE_RESOLVE, CREDGATE_CONNECT_TO,
// CREDGATE_UPSTREAM_CA_FILE, the upstream proxy) — the gateway's own path. In cloud mode a store on a private
// address therefore needs CREDGATE_EGRESS_ALLOW. Redirects are never followed: one would carry a token elsewhere.
// Under an upstream proxy there is no direct fallback: a proxy that refuses fails the read, and its reason is kept
// for the operator's Test (docs/injection.md#testing-a-store-reference).
import { StoreError, type StoreFetch } from "../vault/stores/types.ts";
import type { EgressCheck } from "./notifications/index.ts";
import { UpstreamProxyError, type Outbound } from "./outbound.ts";

export function storeFetch(outbound: Outbound, egress: EgressCheck): StoreFetch {
  return async (url, init) => {
    const port = Number(url.port) || (url.protocol === "https:" ? 443 : 80);
    const verdict = await egress.check(url.hostname, port);
    if (verdict.kind === "denied") throw new StoreError("egress_denied", `credgate does not connect to ${verdict.address} (${url.hostname}): the destination is an internal or reserved address (CREDGATE_EGRESS_ALLOW)`);
    if (verdict.kind === "unresolved") throw new StoreError("unresolved", `${url.hostname} could not be resolved`);
    try {
      return await outbound.fetchAt(url, verdict.target, { ...init, redirect: "manual" });
    } catch (err) {
      if (init.signal.aborted) throw new StoreError("timeout", `${url.host} did not answer in time`);
      const why = err instanceof UpstreamProxyError ? `through the upstream proxy: ${err.message}` : undefined;
      throw new StoreError("unreachable", `${url.host} could not be reached${why ? ` ${why}` : ""}`, why);
    }
  };
}
