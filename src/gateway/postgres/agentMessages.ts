// The agent→server half of a relayed database session (docs/databases.md#the-relay): the walk over the agent's
// message stream. Runs of messages pass on byte for byte, with only their headers read; a Query, Parse or
// FunctionCall is read whole and handed to the session to judge; after a refused Parse the messages up to the
// next Sync are dropped, as the server itself drops them after an error. What a verdict means (forward, refuse,
// hold for a person, end the session) is the session's (session.ts).
import { protocolViolation, statementTooLarge, type Refusal } from "./refusals.ts";
import type { ServerReplies } from "./serverReplies.ts";
import { HeaderAssembler, MAX_MESSAGE } from "./wire.ts";

export const Q = 0x51, P = 0x50, F = 0x46, S = 0x53, X = 0x58;
const E = 0x45, B = 0x42, D = 0x44, C = 0x43, H = 0x48;
/** What credgate reads whole to judge (a Query or Parse larger than this is refused, the session goes on). */
export const MAX_JUDGED_BYTES = 16 * 1024 * 1024;

/** What the walk hands to its session. */
export interface WalkSession {
  readonly replies: ServerReplies;
  toServer(bytes: Uint8Array): void;
  /** A whole Query, Parse or FunctionCall (`raw`, with its header): true when the walk goes on, false when it stops here (held, or ended). */
  judge(raw: Buffer, chunk: Buffer, pos: number): boolean;
  /** Refuses a message that was not forwarded (type Q, P or F). */
  refuse(type: number, refusal: Refusal): void;
  fatal(refusal: Refusal): void;
  /** The agent's Terminate has been passed on. */
  terminate(): void;
}

export class AgentMessageWalk {
  // What is left of the current message, passed on or (`#discard`) dropped.
  #skip = 0;
  #discard = false;
  /** A header split between two reads: held back (not yet passed on) until it is whole. */
  readonly #header = new HeaderAssembler();
  /** A Query or Parse being read whole, and how much of it has come. */
  #msg: Buffer | null = null;
  #msgAt = 0;
  /** Dropping the agent's messages up to its next Sync (after a refused Parse). */
  #ignoreTillSync = false;

  constructor(private readonly session: WalkSession) {}

  /** A Parse was refused: its extended-protocol messages up to the next Sync are dropped, that Sync answered by credgate. */
  dropTillSync(): void {
    this.#ignoreTillSync = true;
  }

  /** Walks the agent's messages in `chunk` from `pos`: passes runs of them on, reads SQL whole, drops what must be. */
  walk(chunk: Buffer, pos: number): void {
    const session = this.session;
    const n = chunk.length;
    let from = pos;
    while (pos < n) {
      if (this.#skip > 0) {
        const take = Math.min(this.#skip, n - pos);
        if (this.#discard) {
          session.toServer(chunk.subarray(from, pos));
          from = pos + take;
        }
        pos += take;
        this.#skip -= take;
        continue;
      }
      if (this.#msg !== null) {
        const msg = this.#msg;
        const take = Math.min(msg.length - this.#msgAt, n - pos);
        chunk.copy(msg, this.#msgAt, pos, pos + take);
        this.#msgAt += take;
        pos += take;
        from = pos;
        if (this.#msgAt < msg.length) break;
        this.#msg = null;
        if (!session.judge(msg, chunk, pos)) return;
        continue;
      }
      let type: number;
      let len: number;
      let held = false;
      const header = this.#header;
      if (header.splitAt(chunk, pos)) {
        session.toServer(chunk.subarray(from, pos));
        pos = header.take(chunk, pos);
        from = pos;
        if (header.partial) break;
        type = header.type;
        len = header.length;
        held = true;
      } else {
        type = chunk[pos]!;
        len = chunk.readInt32BE(pos + 1);
      }
      if (len < 4 || len > MAX_MESSAGE) return session.fatal(protocolViolation(`invalid message length ${len} for message type "${String.fromCharCode(type)}"`));
      if (this.#ignoreTillSync && type !== X) {
        session.toServer(chunk.subarray(from, pos));
        if (!held) pos += 5;
        from = pos;
        this.#skip = len - 4;
        this.#discard = true;
        if (type === S) this.#syncAfterRefusal();
        continue;
      }
      if (type === Q || type === P || type === F) {
        if (len - 4 > MAX_JUDGED_BYTES) {
          // Read past, unjudged and unforwarded, and refused as any refused statement is.
          session.toServer(chunk.subarray(from, pos));
          if (!held) pos += 5;
          from = pos;
          this.#skip = len - 4;
          this.#discard = true;
          session.refuse(type, statementTooLarge(MAX_JUDGED_BYTES));
          continue;
        }
        session.toServer(chunk.subarray(from, pos));
        if (!held && n - pos >= len + 1) {
          const raw = chunk.subarray(pos, pos + len + 1);
          pos += len + 1;
          from = pos;
          if (!session.judge(raw, chunk, pos)) return;
          continue;
        }
        const msg = Buffer.allocUnsafe(len + 1);
        if (held) {
          this.#header.bytes.copy(msg, 0);
          this.#msgAt = 5;
        } else this.#msgAt = 0;
        this.#msg = msg;
        from = pos;
        continue;
      }
      // Passed on: everything else, byte for byte.
      if (held) session.toServer(Buffer.from(this.#header.bytes));
      else pos += 5;
      this.#skip = len - 4;
      this.#discard = false;
      switch (type) {
        case S:
          session.replies.syncForwarded();
          break;
        case E:
          session.replies.executeForwarded();
          break;
        case B:
        case D:
        case C:
        case H:
          session.replies.extendedForwarded();
          break;
        case X:
          session.toServer(chunk.subarray(from, pos));
          return session.terminate();
      }
    }
    session.toServer(chunk.subarray(from, n));
  }

  /** The Sync that ends the messages dropped after a refused Parse: a ReadyForQuery with the server's last status. */
  #syncAfterRefusal(): void {
    this.#ignoreTillSync = false;
    this.session.replies.insert([null]);
  }
}
