// The streams a server-role HTTP/2 session ended with RST_STREAM NO_ERROR after a complete answer, the agent still
// sending their request body (docs/gateway.md#http2-and-grpc): frames already on their way for them are ignored,
// not answered as on a closed stream (RFC 9113 §5.1). The agent has only its stream window to send on one, and
// the oldest are forgotten past a bound.

/** How many are remembered at most: twice the streams an agent may have open. */
const MAX_REMEMBERED = 200;

export class StoppedStreams {
  /** Made on the first stopped stream: most connections never have one. */
  #ids: Set<number> | null = null;

  add(id: number): void {
    const ids = (this.#ids ??= new Set());
    ids.add(id);
    if (ids.size > MAX_REMEMBERED) ids.delete(ids.values().next().value!);
  }

  /** Whether `id` is a stopped stream; forgotten once the agent has ended it (`ends`: END_STREAM, trailers, a reset). */
  has(id: number, ends: boolean): boolean {
    const ids = this.#ids;
    if (ids === null || !ids.has(id)) return false;
    if (ends) ids.delete(id);
    return true;
  }
}
