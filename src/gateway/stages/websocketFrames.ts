// What reads a WebSocket's frames after 101 (docs/gateway.md#websocket): client → server, the leak guard
// (docs/guards.md#credential-leak-guard) and placeholder substitution on the `websocket` surface
// (docs/injection.md#placeholders), set up here; server → client, the echo guard's redaction
// (docs/guards.md#echo-guard), set up by the relay once the 101 is in (websocket.ts), with every value injected by
// then. When any of them may read the frames, `permessage-deflate` is taken out of the extensions the client
// offers, so that frames travel uncompressed. Frames are read by the WebSocket relay (wsFrames.ts); a request
// that is not an upgrade costs one check.
import { NeedleStream } from "../../core/needleStream.ts";
import type { ProxyRequest } from "../request.ts";
import { INJECTIONS, PASS, type Stage } from "../stage.ts";
import type { FrameScan } from "../wsFrames.ts";
import { leakScan, leakWatchOf } from "./leakGuard.ts";
import type { KnownTokens } from "../../core/knownTokens.ts";
import type { KnownValues } from "../../core/knownValues.ts";
import { substitutionFor, SurfaceRewriter } from "./placeholder.ts";

export interface WebSocketFramesDeps {
  /** CREDGATE_LEAK_GUARD is not `off`. */
  leakGuard: boolean;
  /** The cloud tokens the leak guard watches too (the same as leak-guard's, so both read one compiled watch). */
  minted?: KnownTokens | null;
  /** The values read from external vaults and secret stores (the resolver's), watched once known. */
  fetched?: KnownValues | null;
}

/** The offer without permessage-deflate (null: nothing left to offer). */
export function withoutDeflate(offer: string): string | null {
  const kept = offer
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "" && e.split(";")[0]!.trim().toLowerCase() !== "permessage-deflate");
  return kept.length === 0 ? null : kept.join(", ");
}

/** What reads the agent's frames: the leak guard (control frames too, across messages), then placeholder substitution. */
function toUpstream(rq: ProxyRequest, leakGuard: boolean, minted: KnownTokens | null, fetched: KnownValues | null): FrameScan[] | null {
  const watch = leakGuard ? leakWatchOf(rq.credentials, minted, fetched) : null;
  const uses = rq.placeholders.some((u) => u.surfaces.includes("websocket")) ? rq.placeholders : null;
  if (watch === null && uses === null) return null;
  const scans: FrameScan[] = [];
  if (watch) scans.push({ stream: leakScan(rq, watch), controls: leakScan(rq, watch) });
  if (uses) {
    const sub = substitutionFor(uses);
    // One rewriter for the whole connection: the surface is counted once, at the first replacement.
    scans.push({ stream: new NeedleStream(sub.set, new SurfaceRewriter(rq, sub.websocket)), controls: null });
  }
  return scans;
}

export function websocketFramesStage({ leakGuard, minted = null, fetched = null }: WebSocketFramesDeps): Stage {
  return {
    name: "websocket-frames",
    reads: ["agent", ...INJECTIONS],
    provides: ["agentFrames"],
    request(rq) {
      if (!rq.websocket) return PASS;
      const up = toUpstream(rq, leakGuard, minted, fetched);
      // Signing secrets inject later (aws-sign): their values are redacted from server frames too.
      if (leakGuard || up !== null || rq.injectedValues.length > 0 || rq.injectionCount > 0 || rq.signing.length > 0) {
        const offer = rq.headers.get("sec-websocket-extensions");
        if (offer !== null) {
          const kept = withoutDeflate(offer);
          if (kept === null) rq.headers.delete("sec-websocket-extensions");
          else rq.headers.set("sec-websocket-extensions", kept);
        }
      }
      rq.agentFrames = up;
      return PASS;
    },
  };
}
