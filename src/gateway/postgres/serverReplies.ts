// The server's side of a session (docs/databases.md#the-relay): its bytes stream to the agent untouched, while
// only the message headers are read, to know (1) when each statement the agent sent has been answered —
// CommandComplete, EmptyQueryResponse, PortalSuspended or ErrorResponse — for its log row, and (2) where a
// ReadyForQuery ends a reply, so that what credgate answers itself (a refused statement) reaches the agent in
// the order the agent asked: behind the replies the server still owes for what was sent before it.
//
// The replies owed are kept as slots, one per ReadyForQuery the server will send: one per forwarded Query and
// one per forwarded Sync (with the extended-protocol messages sent since the previous one). The slot still being
// filled by the agent's messages (extended messages with no Sync yet) is `open`.
//
// One kind of message is read whole as it passes: ParameterStatus (a setting the server reports as changed), so
// the session can end when the server would now read statements otherwise than credgate's checks.

import type { MatchedRule } from "./dbSession.ts";
import type { RequestLogDecision } from "../../services/requestLogs.ts";
import { HeaderAssembler } from "./wire.ts";

/** A statement the server was sent, until its answer comes and its log row is written. */
export interface StatementRecord {
  statement: string;
  decision: RequestLogDecision;
  approvalId?: string;
  rule?: MatchedRule;
  /** performance.now() when it was forwarded. */
  sentAt: number;
}

/** Bytes credgate answers itself; null: a ReadyForQuery with the transaction status the server last reported. */
export type Insert = Uint8Array | null;

interface Slot {
  /** What each CommandComplete / EmptyQueryResponse / PortalSuspended / ErrorResponse answers, in order (null: no row). */
  completions: (StatementRecord | null)[];
  done: number;
  /** Parsed statements no Execute has run yet (a prepare-only Parse): settled at the ReadyForQuery. */
  unclaimed: StatementRecord[];
  error: boolean;
  /**
   * In place of this slot's ReadyForQuery, which credgate asked for itself (a Sync of its own after a refused Parse
   * that followed unsynced messages): the refusal is written, the ReadyForQuery is read (its status kept) but not
   * passed on.
   */
  replaced: Uint8Array | null;
  /** Written just after it. */
  after: Insert[] | null;
}

const newSlot = (): Slot => ({ completions: [], done: 0, unclaimed: [], error: false, replaced: null, after: null });

const Z = 0x5a, C = 0x43, I = 0x49, S_SUSPENDED = 0x73, E = 0x45, S_PARAMETER = 0x53;
/** What of a ParameterStatus is kept: a setting's name and a short value (the settings watched have short ones). */
const PARAMETER_PEEK = 1024;
const IDLE = 0x49;

export interface ReplyOutput {
  /** To the agent; false when the agent's socket is full. */
  write(bytes: Uint8Array): boolean;
  /** A statement's answer has come (200: completed, 400: the server answered an error). */
  settle(record: StatementRecord, status: 200 | 400): void;
  readyForQuery(status: number): Uint8Array;
  /** The server reported a setting (ParameterStatus; a value longer than PARAMETER_PEEK bytes is cut). */
  parameterStatus?(name: string, value: string): void;
}

export class ServerReplies {
  /** The transaction status of the server's last ReadyForQuery ('I', 'T' or 'E'). */
  lastStatus = IDLE;
  /** A write to the agent returned false since the flag was last cleared (the caller pauses the server). */
  full = false;
  readonly #queue: Slot[] = [];
  #open: Slot | null = null;
  /** Body bytes of the current server message still to come (its header has been passed on). */
  #rem = 0;
  /** The current server message is not passed on (a ReadyForQuery credgate asked for itself). */
  #dropping = false;
  #type = 0;
  /** A header split between two reads: held back (not yet passed on) until it is whole. */
  readonly #header = new HeaderAssembler();
  #atBoundary: Insert[] | null = null;
  /** The ParameterStatus passing, read as it goes, and how much of it has come. */
  #parameter: Buffer | null = null;
  #parameterAt = 0;

  constructor(private readonly out: ReplyOutput) {}

  // --- what the agent's side tells ---

  /** A Query was forwarded: one slot, its statements answered in order. */
  queryForwarded(records: StatementRecord[]): void {
    const slot = this.#open ?? newSlot();
    this.#open = null;
    for (const r of records) slot.completions.push(r);
    this.#queue.push(slot);
  }

  /** A function call or Query with no statement to log (still owes a ReadyForQuery). */
  readyOwed(): void {
    this.queryForwarded([]);
  }

  parseForwarded(record: StatementRecord): void {
    (this.#open ??= newSlot()).unclaimed.push(record);
  }

  /** An Execute: it runs the oldest statement parsed in this slot and not run yet, or one prepared earlier (no row). */
  executeForwarded(): void {
    const slot = (this.#open ??= newSlot());
    slot.completions.push(slot.unclaimed.shift() ?? null);
  }

  /** Bind, Describe, Close, Flush: part of the slot, answered before its ReadyForQuery. */
  extendedForwarded(): void {
    this.#open ??= newSlot();
  }

  /** A Sync was forwarded: the slot is owed its ReadyForQuery. */
  syncForwarded(): void {
    const slot = this.#open ?? newSlot();
    this.#open = null;
    this.#queue.push(slot);
  }

  /** credgate sent a Sync of its own: the agent gets `replacement` where that Sync's ReadyForQuery would be. */
  ownSyncForwarded(replacement: Uint8Array): void {
    const slot = this.#open ?? newSlot();
    this.#open = null;
    slot.replaced = replacement;
    this.#queue.push(slot);
  }

  /** Extended-protocol messages have been forwarded since the last Sync. */
  get unsynced(): boolean {
    return this.#open !== null;
  }

  /** ReadyForQuery messages the server still owes (one per Query and per Sync forwarded). */
  get readiesOwed(): number {
    return this.#queue.length;
  }

  /** Nothing owed, nothing half-sent: a message of credgate's may go to the agent now. */
  get idle(): boolean {
    return this.#queue.length === 0 && this.#open === null && this.#rem === 0;
  }

  /** The session closed: the statements still waiting for an answer get their rows (400: none came). */
  abandon(): void {
    const slots = this.#open === null ? this.#queue : [...this.#queue, this.#open];
    for (const slot of slots) {
      for (let i = slot.done; i < slot.completions.length; i++) {
        const record = slot.completions[i];
        if (record) this.out.settle(record, 400);
      }
      for (const record of slot.unclaimed) this.out.settle(record, 400);
    }
    this.#queue.length = 0;
    this.#open = null;
  }

  /** Everything inserted so far has been written (nothing owed is left to put it behind). */
  get delivered(): boolean {
    return this.#queue.length === 0 && this.#rem === 0 && this.#atBoundary === null;
  }

  /** Sends credgate's own answer in order: after the last ReadyForQuery owed, or now (at a message boundary). */
  insert(inserts: Insert[]): void {
    const last = this.#queue.at(-1);
    if (last !== undefined) (last.after ??= []).push(...inserts);
    else if (this.#rem === 0) this.#writeInserts(inserts);
    else (this.#atBoundary ??= []).push(...inserts);
  }

  // --- the server's bytes ---

  /** Passes a chunk from the server to the agent, with credgate's answers put in their places. */
  push(chunk: Buffer): void {
    const n = chunk.length;
    let pos = 0;
    let from = 0;
    while (pos < n) {
      if (this.#rem > 0) {
        const take = Math.min(this.#rem, n - pos);
        if (this.#parameter !== null) this.#parameterAt += chunk.copy(this.#parameter, this.#parameterAt, pos, pos + take);
        pos += take;
        this.#rem -= take;
        if (this.#dropping) from = pos;
        if (this.#rem > 0) break;
        this.#dropping = false;
        if (this.#parameter !== null) this.#reportParameter();
        if (this.#type === Z) {
          const after = this.#readyForQuery(chunk[pos - 1]!);
          if (after !== null) {
            this.#write(chunk.subarray(from, pos));
            from = pos;
            this.#writeInserts(after);
          }
        }
        if (this.#atBoundary !== null) {
          this.#write(chunk.subarray(from, pos));
          from = pos;
          this.#flushBoundary();
        }
        continue;
      }
      let type: number;
      let len: number;
      let held = false;
      const header = this.#header;
      if (header.splitAt(chunk, pos)) {
        if (from < pos) this.#write(chunk.subarray(from, pos));
        pos = header.take(chunk, pos);
        from = pos;
        if (header.partial) break;
        type = header.type;
        len = header.length;
        held = true;
      } else {
        type = chunk[pos]!;
        len = chunk.readInt32BE(pos + 1);
        pos += 5;
      }
      // A server's length below 4 cannot be framed: pass the bytes on and let the agent's driver fail on them.
      const body = len < 4 ? 0 : len - 4;
      let dropped = false;
      if (type === Z) {
        const slot = this.#queue[0];
        if (slot !== undefined && slot.replaced !== null) {
          if (!held) this.#write(chunk.subarray(from, pos - 5));
          from = pos;
          this.#write(slot.replaced);
          slot.replaced = null;
          dropped = true;
          this.#dropping = body > 0;
        }
      } else if (type === C || type === I || type === S_SUSPENDED || type === E) this.#completed(type === E);
      else if (type === S_PARAMETER && body > 0 && this.out.parameterStatus !== undefined) {
        this.#parameter = Buffer.allocUnsafe(Math.min(body, PARAMETER_PEEK));
        this.#parameterAt = 0;
      }
      if (held && !dropped) this.#write(Buffer.from(this.#header.bytes));
      this.#type = type;
      this.#rem = body;
      if (body === 0 && this.#atBoundary !== null) {
        this.#write(chunk.subarray(from, pos));
        from = pos;
        this.#flushBoundary();
      }
    }
    if (from < n) this.#write(chunk.subarray(from, n));
  }

  /** A statement's answer: the next completion of the slot being answered. */
  #completed(error: boolean): void {
    const slot = this.#queue[0] ?? this.#open;
    if (slot === undefined || slot === null) return;
    if (error) slot.error = true;
    if (slot.done < slot.completions.length) {
      const record = slot.completions[slot.done++];
      if (record) this.out.settle(record, error ? 400 : 200);
    }
  }

  /** The end of a slot: what was not answered one by one is settled with the slot's outcome. */
  #readyForQuery(status: number): Insert[] | null {
    this.lastStatus = status;
    const slot = this.#queue.shift();
    if (slot === undefined) return null;
    const outcome = slot.error ? 400 : 200;
    for (let i = slot.done; i < slot.completions.length; i++) {
      const record = slot.completions[i];
      if (record) this.out.settle(record, outcome);
    }
    for (const record of slot.unclaimed) this.out.settle(record, outcome);
    return slot.after;
  }

  /** A ParameterStatus has passed whole: `name\0value\0`. */
  #reportParameter(): void {
    const body = this.#parameter!.subarray(0, this.#parameterAt);
    this.#parameter = null;
    const nameEnd = body.indexOf(0);
    if (nameEnd < 0) return;
    const valueEnd = body.indexOf(0, nameEnd + 1);
    this.out.parameterStatus!(body.toString("utf8", 0, nameEnd), body.toString("utf8", nameEnd + 1, valueEnd < 0 ? body.length : valueEnd));
  }

  #flushBoundary(): void {
    const inserts = this.#atBoundary!;
    this.#atBoundary = null;
    this.#writeInserts(inserts);
  }

  #writeInserts(inserts: Insert[]): void {
    for (const part of inserts) this.#write(part ?? this.out.readyForQuery(this.lastStatus));
  }

  #write(bytes: Uint8Array): void {
    if (bytes.length > 0 && !this.out.write(bytes)) this.full = true;
  }
}
