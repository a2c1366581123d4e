// Passthrough (docs/gateway.md#tunnels): a CONNECT to a host listed in CREDGATE_PASSTHROUGH_HOSTS is tunnelled
// raw instead of intercepted — no injection, no policy, one log row. Decided here, after authentication and
// the egress guard; the claim check that follows applies to such tunnels; the listener dials them.
import { compileHostPattern } from "../../core/patterns.ts";
import { PASS, type Stage } from "../stage.ts";

export interface PassthroughDeps {
  passthroughHosts: readonly string[];
}

export function passthroughStage({ passthroughHosts }: PassthroughDeps): Stage {
  const listed = passthroughHosts.map(compileHostPattern);
  return {
    name: "passthrough",
    reads: [],
    provides: ["passthrough"],
    connect(tunnel) {
      // A tunnel the gateway answers itself (cloud metadata) is never relayed raw.
      if (!tunnel.local && listed.some((match) => match(tunnel.host))) tunnel.passthrough = true;
      return PASS;
    },
  };
}
