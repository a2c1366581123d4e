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

/** Past this many bytes gathered in one turn, the writer is asked to wait for `drain`. */
export const BATCH_HIGH_WATER = 64 * 1024;

/** What a Bun native socket's write answers: how many bytes it took (-1 when closed). */
interface NativeWrite {
  write(data: Uint8Array): number;
}

/**
 * The bytes one socket owes: those gathered this turn, written together at its end, and those the socket did
 * not take yet, written again on its `drain`. The agent side and the upstream side share it; each decides
 * whom to tell when everything has gone.
 */
export class OutgoingBytes {
  #batch: Uint8Array[] = [];
  #batchBytes = 0;
  readonly #queue: Uint8Array[] = [];

  constructor(private readonly owner: BatchedSocket) {}

  /** Queued bytes wait for the socket, or this turn's batch is past the high-water mark. */
  get needsDrain(): boolean {
    return this.#queue.length > 0 || this.#batchBytes >= BATCH_HIGH_WATER;
  }

  get empty(): boolean {
    return this.#queue.length === 0 && this.#batch.length === 0;
  }

  /** Gathers `bytes` for the end of the turn (behind the queue when the socket is backed up); false when the writer should wait for `drain`. */
  add(bytes: Uint8Array): boolean {
    if (this.#queue.length > 0) {
      this.#queue.push(bytes);
      return false;
    }
    if (this.#batch.length === 0) writeAtEndOfTurn(this.owner);
    this.#batch.push(bytes);
    this.#batchBytes += bytes.byteLength;
    return this.#batchBytes < BATCH_HIGH_WATER;
  }

  /** This turn's bytes as one buffer, no longer owed; null when there are none. */
  takeBatch(): Uint8Array | null {
    const batch = this.#batch;
    if (batch.length === 0) return null;
    const size = this.#batchBytes;
    this.#batch = [];
    this.#batchBytes = 0;
    return batch.length === 1 ? batch[0]! : Buffer.concat(batch, size);
  }

  /** Writes `bytes`; what the socket does not take is queued. True when it took them all. */
  write(socket: NativeWrite, bytes: Uint8Array): boolean {
    const n = socket.write(bytes);
    if (n >= bytes.byteLength) return true;
    this.#queue.push(bytes.subarray(Math.max(n, 0)));
    return false;
  }

  /** On `drain`: writes what is queued; true once it has all gone. */
  writeQueued(socket: NativeWrite): boolean {
    while (this.#queue.length > 0) {
      const next = this.#queue[0]!;
      const n = socket.write(next);
      if (n < next.byteLength) {
        this.#queue[0] = next.subarray(Math.max(n, 0));
        return false;
      }
      this.#queue.shift();
    }
    return true;
  }

  /** Forgets everything owed (the socket is gone or being torn down). */
  clear(): void {
    this.#queue.length = 0;
    this.#batch = [];
    this.#batchBytes = 0;
  }
}

