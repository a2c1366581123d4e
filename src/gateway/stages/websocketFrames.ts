// What reads a WebSocket's messages after 101 (docs/gateway.md#websocket): client → server, the leak guard
// (docs/guards.md#credential-leak-guard) and placeholder substitution on the `websocket` surface
// (docs/injection.md#placeholders); server → client, the echo guard's redaction (docs/guards.md#echo-guard).
// When any of them may read the frames, `permessage-deflate` is taken out of the extensions the client offers,
// so that frames travel uncompressed. Frames are read by the WebSocket relay (wsFrames.ts); a request that is
// not an upgrade costs one check.
import { NeedleStream } from "../../core/needleStream.ts";
import { StreamRedactor } from "../../core/redactor.ts";
import type { ProxyRequest } from "../request.ts";
import { PASS, type Stage } from "../stage.ts";
import type { MessageScans } from "../wsFrames.ts";
import { echoNeedlesOf } from "./echo.ts";
import { leakScan, leakWatchOf } from "./leakGuard.ts";
import { substitutionFor, SurfaceRewriter } from "./placeholder.ts";

export interface WebSocketFramesDeps {
  /** CREDGATE_LEAK_GUARD is not `off`. */
  leakGuard: boolean;
}

/** The offer without permessage-deflate (null: nothing left to offer). */
export function withoutDeflate(offer: string): string | null {
  const kept = offer
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "" && e.split(";")[0]!.trim().toLowerCase() !== "permessage-deflate");
  return kept.length === 0 ? null : kept.join(", ");
}

function toUpstream(rq: ProxyRequest, leakGuard: boolean): MessageScans | null {
  const watch = leakGuard ? leakWatchOf(rq.credentials) : null;
  const uses = rq.placeholders.some((u) => u.surfaces.includes("websocket")) ? rq.placeholders : null;
  if (watch === null && uses === null) return null;
  const sub = uses ? substitutionFor(uses) : null;
  const values = sub ? sub.websocket : null;
  // One rewriter for the whole connection: the surface is counted once, at the first replacement.
  const rewriter = sub ? new SurfaceRewriter(rq, values!) : null;
  return () => {
    const scans: NeedleStream[] = [];
    if (watch) scans.push(leakScan(rq, watch));
    if (sub) scans.push(new NeedleStream(sub.set, rewriter!));
    return scans;
  };
}

export function websocketFramesStage({ leakGuard }: WebSocketFramesDeps): Stage {
  return {
    name: "websocket-frames",
    request(rq) {
      if (!rq.websocket) return PASS;
      const up = toUpstream(rq, leakGuard);
      const echo = rq.injectedValues.length > 0 ? echoNeedlesOf(rq.injectedValues) : null;
      if (leakGuard || up !== null || echo !== null || rq.injectionCount > 0) {
        const offer = rq.headers.get("sec-websocket-extensions");
        if (offer !== null) {
          const kept = withoutDeflate(offer);
          if (kept === null) rq.headers.delete("sec-websocket-extensions");
          else rq.headers.set("sec-websocket-extensions", kept);
        }
      }
      if (up !== null || echo !== null) rq.frames = { toUpstream: up, toAgent: echo ? () => [new StreamRedactor(echo)] : null };
      return PASS;
    },
  };
}
