// Rapid reset (CVE-2023-44487) and MadeYouReset (CVE-2025-8671), counted on the server side of an HTTP/2 session:
// the client's RST_STREAM frames, and the resets it provokes us into sending, both free a stream slot while the
// work it started goes on. More than MAX_RESETS within RAPID_RESET_MS ends the session (docs/gateway.md#http2-and-grpc).
import * as f from "./frames.ts";

const MAX_RESETS = 200;
const RAPID_RESET_MS = 10_000;

/** The error codes of a stream reset the peer provoked (it broke the protocol on that stream). */
export function blamesPeer(code: number): boolean {
  return code === f.PROTOCOL_ERROR || code === f.FLOW_CONTROL_ERROR || code === f.STREAM_CLOSED || code === f.FRAME_SIZE_ERROR;
}

export class ResetCounter {
  /** The times of the last MAX_RESETS resets, a ring (allocated on the first reset). */
  #times: number[] | null = null;
  #at = 0;

  /** Counts a reset; true when it is one too many: the MAX_RESETS+1st within RAPID_RESET_MS of the oldest kept. */
  tooMany(): boolean {
    const now = performance.now();
    const times = (this.#times ??= new Array<number>(MAX_RESETS).fill(-Infinity));
    const oldest = times[this.#at]!;
    times[this.#at] = now;
    this.#at = (this.#at + 1) % times.length;
    return now - oldest < RAPID_RESET_MS;
  }
}
