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

/** What a batch holds: bytes, or latin1 text (heads, chunk-size lines: one byte per character, as heads are read). */
export type Outgoing = Uint8Array | string;

const byteLength = (part: Outgoing): number => (typeof part === "string" ? part.length : part.byteLength);

/**
 * Where a turn's parts are joined before the write. The socket's `write` copies what it takes (into the TLS
 * record or the kernel) before it returns, so one buffer serves every batch: a response is no longer a head
 * buffer, a joined buffer and the body's, each a native allocation held until a collection finds it dead.
 */
const JOIN_BYTES = BATCH_HIGH_WATER + 16 * 1024;
const joinBuffer = Buffer.allocUnsafe(JOIN_BYTES);

function join(parts: Outgoing[], size: number): Uint8Array {
  const into = size <= JOIN_BYTES ? joinBuffer : Buffer.allocUnsafe(size);
  let at = 0;
  for (const part of parts) {
    if (typeof part === "string") at += into.write(part, at, "latin1");
    else {
      into.set(part, at);
      at += part.byteLength;
    }
  }
  return into.subarray(0, at);
}

/**
 * The bytes one socket owes: those gathered this turn, written together at its end, and those the socket did
 * not take yet, written again on its `drain`. The agent side and the upstream side share it; each decides
 * whom to tell when everything has gone.
 */
export class OutgoingBytes {
  /** This turn's parts; one array for the socket's life, emptied once written. */
  readonly #batch: Outgoing[] = [];
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

  /** Bytes gathered this turn, not yet written. */
  get batchBytes(): number {
    return this.#batchBytes;
  }

  /** Gathers `part` for the end of the turn (behind the queue when the socket is backed up); false when the writer should wait for `drain`. */
  add(part: Outgoing): boolean {
    if (this.#queue.length > 0) {
      this.#queue.push(typeof part === "string" ? Buffer.from(part, "latin1") : part);
      return false;
    }
    if (this.#batch.length === 0) writeAtEndOfTurn(this.owner);
    this.#batch.push(part);
    this.#batchBytes += byteLength(part);
    return this.#batchBytes < BATCH_HIGH_WATER;
  }

  /**
   * Writes this turn's parts in one write; what the socket does not take is queued. True when it took them
   * all, false when some wait for `drain`, null when there was nothing to write.
   */
  writeBatch(socket: NativeWrite): boolean | null {
    const parts = this.#batch;
    if (parts.length === 0) return null;
    const size = this.#batchBytes;
    this.#batchBytes = 0;
    const only = parts.length === 1 ? parts[0]! : null;
    if (only !== null && typeof only !== "string") {
      parts.length = 0;
      return this.write(socket, only);
    }
    const joined = join(parts, size);
    parts.length = 0;
    const n = socket.write(joined);
    if (n >= joined.byteLength) return true;
    // The join buffer is the next batch's: what is left is copied out.
    this.#queue.push(Buffer.from(joined.subarray(Math.max(n, 0))));
    return false;
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
    this.#batch.length = 0;
    this.#batchBytes = 0;
  }
}

