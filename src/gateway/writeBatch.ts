// Socket writes of one event-loop turn leave together, at its end. Under load a turn handles many
// connections' reads; writing each answer at once wakes the process at the other end once per write (on
// loopback the send pays the receiver's wake-up, and in a VM that is the dearest part of it), while writing
// them one after another at the end of the turn lets the first wake it and the rest find it running. One
// connection alone waits no longer than the rest of its own turn.

export interface BatchedSocket {
  /** Writes what it gathered this turn. */
  flushBatch(): void;
}

let dirty: BatchedSocket[] = [];
let scheduled = false;

function flushAll(): void {
  scheduled = false;
  const sockets = dirty;
  dirty = [];
  for (const s of sockets) s.flushBatch();
}

/** `socket` has bytes to write at the end of this turn (call once per turn, when its batch starts). */
export function writeAtEndOfTurn(socket: BatchedSocket): void {
  dirty.push(socket);
  if (!scheduled) {
    scheduled = true;
    setImmediate(flushAll);
  }
}
