// The anchor of the audit chain (docs/operations.md#the-checkpoint): the head of the chain (`seq`, `hash`) as
// of the last write, MACed with a key derived from the master key. A hash chain alone says nothing about rows cut
// from its end, and anyone who can write the database can recompute every plain hash; the checkpoint's MAC needs
// the master key, so a cut tail, a recomputed chain or an older database put back no longer matches it. Pure:
// the text form, the MAC and the verdict `credgate audit verify` prints.
import { createHmac, timingSafeEqual } from "node:crypto";

/** The head of the chain as of the last write: `seq` 0 and 64 zeros before the first event. */
export interface Checkpoint {
  seq: number;
  hash: string;
}

const VERSION = "ac1";
const HEX64 = /^[0-9a-f]{64}$/;

/** Lowercase hex HMAC-SHA256 of `credgate audit checkpoint v1:<seq>:<hash>` under `key`. */
export function checkpointMac(key: Buffer, cp: Checkpoint): string {
  return createHmac("sha256", key).update(`credgate audit checkpoint v1:${cp.seq}:${cp.hash}`).digest("hex");
}

/** `ac1:<seq>:<hash>:<mac>` ("audit checkpoint", version 1; unlike sealed values it does not start with `v1:`): the stored form, in the database and in the data dir's file alike. */
export function formatCheckpoint(key: Buffer, cp: Checkpoint): string {
  return `${VERSION}:${cp.seq}:${cp.hash}:${checkpointMac(key, cp)}`;
}

/** The checkpoint `text` holds when its MAC is right under `key`; null for anything else (absent, edited, other key). */
export function readCheckpoint(key: Buffer, text: string | null | undefined): Checkpoint | null {
  if (typeof text !== "string") return null;
  const parts = text.trim().split(":");
  if (parts.length !== 4 || parts[0] !== VERSION || !/^(0|[1-9][0-9]{0,15})$/.test(parts[1]!) || !HEX64.test(parts[2]!) || !HEX64.test(parts[3]!)) return null;
  const cp = { seq: Number(parts[1]), hash: parts[2]! };
  const expected = Buffer.from(checkpointMac(key, cp), "hex");
  return timingSafeEqual(expected, Buffer.from(parts[3]!, "hex")) ? cp : null;
}

/** What walking the rows found: the events in order, and where the first one that does not follow is. */
export type ChainWalk =
  | { kind: "linked"; events: number; head: Checkpoint & { id: string | null } }
  | { kind: "broken"; events: number; brokenAt: string };

export type ChainCheck =
  | { intact: true; events: number }
  /** An event edited, or one before it deleted (a `seq` skipped or a hash that does not follow). */
  | { intact: false; events: number; brokenAt: string }
  /** The checkpoint is further than the last event: events cut from the end (`after` null: every one). */
  | { intact: false; events: number; missing: number; after: string | null }
  /** The checkpoint is absent or forged, or names another head: a rewritten chain or an older database. */
  | { intact: false; events: number; checkpointMismatch: true };

/**
 * The verdict on a chain whose rows all link: `stored` is the database's checkpoint (null when absent or its MAC
 * is wrong); `beside` is the data dir's copy (SQLite; `undefined` with PostgreSQL, null when absent or forged)
 * and `besideOnChain` says whether the event at its `seq` has its hash. The copy beside may lag behind the
 * database (it is written after each commit), never lead it: a database older than its copy was put back.
 */
export function judgeChain(walk: Extract<ChainWalk, { kind: "linked" }>, stored: Checkpoint | null, beside?: Checkpoint | null, besideOnChain?: boolean): ChainCheck {
  const { events, head } = walk;
  const mismatch: ChainCheck = { intact: false, events, checkpointMismatch: true };
  if (stored === null) return mismatch;
  if (stored.seq > head.seq) return { intact: false, events, missing: stored.seq - head.seq, after: head.id };
  if (stored.seq !== head.seq || stored.hash !== head.hash) return mismatch;
  if (beside !== undefined) {
    if (beside === null || beside.seq > head.seq) return mismatch;
    if (beside.seq === head.seq ? beside.hash !== head.hash : !besideOnChain) return mismatch;
  }
  return { intact: true, events };
}

/** The line `credgate audit verify` prints. */
export function chainCheckLine(check: ChainCheck): string {
  if (check.intact) return `audit chain intact: ${check.events} events`;
  if ("brokenAt" in check) return `audit chain broken at ${check.brokenAt}`;
  if ("missing" in check) return `audit chain broken: ${check.missing} events missing after ${check.after ?? "genesis"}`;
  return "audit chain broken: checkpoint does not match";
}
