// The server's side of a session (docs/databases.md#the-relay): its bytes stream to the agent untouched, while
// only the message headers are read, to know (1) when each statement the agent sent has been answered —
// CommandComplete, EmptyQueryResponse, PortalSuspended or ErrorResponse — for its log row, and (2) where a
// ReadyForQuery ends a reply, so that what credgate answers itself (a refused statement) reaches the agent in
// the order the agent asked: behind the replies the server still owes for what was sent before it.
//
// The replies owed are kept as slots, one per ReadyForQuery the server will send: one per forwarded Query and
// one per forwarded Sync (with the extended-protocol messages sent since the previous one). The slot still being
// filled by the agent's messages (extended messages with no Sync yet) is `open`.

import type { MatchedRule } from "./dbSession.ts";
import type { RequestLogDecision } from "../../services/requestLogs.ts";

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
  /** Written just before this slot's ReadyForQuery (a refused Parse that followed unsynced messages). */
  before: Uint8Array | null;
  /** Written just after it. */
  after: Insert[] | null;
}

const newSlot = (): Slot => ({ completions: [], done: 0, unclaimed: [], error: false, before: null, after: null });

const Z = 0x5a, C = 0x43, I = 0x49, S_SUSPENDED = 0x73, E = 0x45;
const IDLE = 0x49;

export interface ReplyOutput {
  /** To the agent; false when the agent's socket is full. */
  write(bytes: Uint8Array): boolean;
  /** A statement's answer has come (200: completed, 400: the server answered an error). */
  settle(record: StatementRecord, status: 200 | 400): void;
  readyForQuery(status: number): Uint8Array;
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
  #type = 0;
  /** A header split between two reads: held back (not yet passed on) until it is whole. */
  readonly #hdr = Buffer.alloc(5);
  #hdrLen = 0;
  #atBoundary: Insert[] | null = null;

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

  /** A Sync was forwarded: the slot is owed its ReadyForQuery; `before` goes to the agent just ahead of it. */
  syncForwarded(before: Uint8Array | null): void {
    const slot = this.#open ?? newSlot();
    this.#open = null;
    slot.before = before;
    this.#queue.push(slot);
  }

  /** Extended-protocol messages have been forwarded since the last Sync. */
  get unsynced(): boolean {
    return this.#open !== null;
  }

  /** Nothing owed, nothing half-sent: a message of credgate's may go to the agent now. */
  get idle(): boolean {
    return this.#queue.length === 0 && this.#open === null && this.#rem === 0;
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
        pos += take;
        this.#rem -= take;
        if (this.#rem > 0) break;
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
      if (this.#hdrLen > 0 || n - pos < 5) {
        if (from < pos) this.#write(chunk.subarray(from, pos));
        const k = Math.min(5 - this.#hdrLen, n - pos);
        chunk.copy(this.#hdr, this.#hdrLen, pos, pos + k);
        this.#hdrLen += k;
        pos += k;
        from = pos;
        if (this.#hdrLen < 5) break;
        this.#hdrLen = 0;
        type = this.#hdr[0]!;
        len = this.#hdr.readInt32BE(1);
        held = true;
      } else {
        type = chunk[pos]!;
        len = chunk.readInt32BE(pos + 1);
        pos += 5;
      }
      // A server's length below 4 cannot be framed: pass the bytes on and let the agent's driver fail on them.
      const body = len < 4 ? 0 : len - 4;
      if (type === Z) {
        const slot = this.#queue[0];
        if (slot !== undefined && slot.before !== null) {
          if (!held) {
            this.#write(chunk.subarray(from, pos - 5));
            from = pos - 5;
          }
          this.#write(slot.before);
          slot.before = null;
        }
      } else if (type === C || type === I || type === S_SUSPENDED || type === E) this.#completed(type === E);
      if (held) this.#write(Buffer.from(this.#hdr));
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
