// The cleartext rule (docs/guards.md#cleartext-rule): a credential goes over plain HTTP only to a loopback or
// private address, or to a host the operator listed (CREDGATE_PLAINTEXT_HOSTS); otherwise 403 before any
// connection. Requests that received no injection pass unchanged.
import { isLocalAddress, parseAddress } from "../../core/addressRules.ts";
import { compileHostPattern } from "../../core/patterns.ts";
import { insecureTransport } from "../errors.ts";
import { answer, INJECTIONS, PASS, type Stage } from "../stage.ts";

export interface CleartextDeps {
  plaintextHosts: readonly string[];
}

export function cleartextStage({ plaintextHosts }: CleartextDeps): Stage {
  const listed = plaintextHosts.map(compileHostPattern);
  return {
    name: "cleartext",
    reads: ["dial", ...INJECTIONS],
    provides: [],
    request(rq) {
      // A placeholder secret that applies counts: its value may go into the body (placeholder stage, later).
      if (rq.scheme !== "http" || (rq.injectionCount === 0 && rq.placeholders.length === 0)) return PASS;
      const address = rq.dial ? parseAddress(rq.dial.address) : null;
      if (address && isLocalAddress(address)) return PASS;
      for (const match of listed) if (match(rq.host)) return PASS;
      return answer("blocked", insecureTransport(rq.host));
    },
  };
}
