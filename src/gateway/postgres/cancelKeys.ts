// credgate's own BackendKeyData (docs/databases.md#cancelling-a-statement): every session gets a random process id
// and secret key, so the agent never learns the server's; a CancelRequest carrying them is matched here to its
// session, which forwards the cancel with the server's real key.
import { randomInt } from "node:crypto";

export interface CancelTarget {
  cancel(): void;
}

export interface CancelKey {
  processId: number;
  secretKey: number;
}

const INT32_MAX = 2 ** 31 - 1;

export class CancelKeys {
  readonly #byProcessId = new Map<number, { secretKey: number; target: CancelTarget }>();

  /** A fresh key for `target` (a positive process id, as PostgreSQL's are; unique among live sessions). */
  issue(target: CancelTarget): CancelKey {
    let processId: number;
    do processId = randomInt(1, INT32_MAX);
    while (this.#byProcessId.has(processId));
    // Any 32-bit value, as a signed Int32 on the wire.
    const secretKey = randomInt(0, 2 ** 32) | 0;
    this.#byProcessId.set(processId, { secretKey, target });
    return { processId, secretKey };
  }

  release(key: CancelKey): void {
    this.#byProcessId.delete(key.processId);
  }

  /** The session a CancelRequest names, or null when no live session has that key (wrong keys are ignored, as PostgreSQL does). */
  find(processId: number, secretKey: number): CancelTarget | null {
    const entry = this.#byProcessId.get(processId);
    return entry !== undefined && entry.secretKey === secretKey ? entry.target : null;
  }

  get size(): number {
    return this.#byProcessId.size;
  }
}
